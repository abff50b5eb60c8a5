// Portico's Portals protocol: the header of every message the engine sends, encoded (encode,
// decode: only its non-zero words travel) as the protocol header of the message's first frame
// (transport/transport.hpp frames it: which protocol, payload sizes, continuation frames, a
// sender's read fault).
//
// A message is one first frame followed by continuation frames carrying the rest of its payload
// (transports bound the payload of one frame), never interleaved with another message on the same
// link, so a receiver keeps at most one partly received message per link. No field is a pointer
// that the receiver dereferences: `cookie` is an opaque initiator-side operation id echoed back in
// acks and replies. Fields are little-endian (the transport layer asserts the machine is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace portico::wire {

enum class Kind : uint8_t {
    Put = 1,         // initiator -> target: data follows (payload = rlength)
    Get = 2,         // initiator -> target: no payload
    Ack = 3,         // target -> initiator: result of a put (length = mlength)
    Reply = 4,       // target -> initiator: result of a get, data follows (payload = mlength)
    Atomic = 6,      // initiator -> target: like Put, the target applies atomic_op to its data
    FetchAtomic = 7, // initiator -> target: like Atomic, and the old data comes back in a Reply
};                   // (5 was a continuation frame before the transport layer framed messages)

// NI addressed: bit 0 = matching, bit 1 = logical. The four NIs of one endpoint share nid/pid.
inline constexpr uint8_t kNiMatching = 1;
inline constexpr uint8_t kNiLogical = 2;

// Header flags. Rendezvous: the initiator's memory at rdv_addr lies in a shared segment
// (portico_ext.h), described by the SegmentRef that is the request's payload; the target copies
// through its own mapping of the segment instead of reading or writing the initiator's memory.
inline constexpr uint8_t kFlagSegment = 1;
inline constexpr uint8_t kFlagWantAck = 2;   // target must answer a Put with an Ack
inline constexpr uint8_t kFlagUnordered = 4; // PTL_MD_UNORDERED (informational)
// Single copy: the payload is not in frames; the target reads it from (Put) or writes it to (Get)
// the initiator's memory at rdv_addr, on transports that can (shared memory).
inline constexpr uint8_t kFlagRendezvous = 8;
inline constexpr uint8_t kFlagAckValid = 16;   // Ack: a real acknowledgment (event and/or count)
inline constexpr uint8_t kFlagSendDone = 32;   // Ack: the target is done with a rendezvous source
inline constexpr uint8_t kFlagDataPlaced = 64; // Reply: the data was written into the initiator's MD
inline constexpr uint8_t kFlagOperand = 128;   // (Fetch)Atomic: the payload starts with one operand item

// A message's header as the engine handles it. On the wire it is encoded (encode/decode below):
// most of it is zero for the common small operation, and a small put's frame fits in one cache line.
struct Header {
    Kind kind;
    uint8_t ni_kind;
    uint8_t flags;
    uint8_t ack_req;     // ptl_ack_req_t of the request
    uint8_t ni_fail;     // ptl_ni_fail_t (Ack/Reply)
    uint8_t list;        // ptl_list_t where the request landed (Ack/Reply)
    uint8_t atomic_op;   // ptl_op_t of an Atomic/FetchAtomic
    uint8_t atomic_type; // ptl_datatype_t of an Atomic/FetchAtomic
    uint32_t pt_index;
    uint32_t uid;
    // Physical id of the sender: not carried on the wire. The receiver takes it from the link the
    // message came on, which the transport authenticated, so a peer cannot speak for another.
    uint32_t src_nid;
    uint32_t src_pid;
    uint32_t src_rank;   // sender's rank when it sent from a logical NI
    uint32_t unused = 0; // not on the wire; keeps the struct free of padding (it is compared bytewise)
    // The wide-match extension's upper 64 match bits (portico_put_wide; PSM2's 96-bit tags and
    // more); zero for Portals' own operations.
    uint64_t match_bits_hi;
    uint64_t match_bits;
    uint64_t hdr_data;
    uint64_t remote_offset; // requested offset (request) / offset used at the target (Ack/Reply)
    uint64_t length;        // rlength (request) / mlength (Ack/Reply)
    uint64_t cookie;        // initiator's operation id, echoed in Ack/Reply
    uint64_t rdv_addr;      // kFlagRendezvous: initiator address of the source (Put) or destination (Get)
};

// The encoded header: 8 lead bytes, then, in this order, only the 8-byte words that are not all
// zero, each announced by its bit in `present`. An 8-byte put with ack from a matching NI is
// lead + small + ids + length (+ cookie when tracked): 32-40 bytes, against 80 for all of Header.
struct EncodedLead {
    Kind kind;
    uint8_t flags;
    uint16_t present;
    uint32_t pt_index;
};
static_assert(sizeof(EncodedLead) == 8);
enum EncodedWord : unsigned {
    kWordSmall,     // ni_kind, ack_req, ni_fail, list, atomic_op, atomic_type, 2 zero bytes
    kWordIds,       // uid, src_rank
    kWordMatchBits, //
    kWordHdrData,   //
    kWordRemoteOffset,
    kWordLength,
    kWordCookie,
    kWordRdvAddr,
    kWordMatchBitsHi, // match_bits_hi
    kEncodedWords
};
inline constexpr size_t kMaxEncodedBytes = sizeof(EncodedLead) + 8 * kEncodedWords;
static_assert(kMaxEncodedBytes == 80, "the encoded header fits the transport's protocol header");

namespace detail {
inline uint64_t pack(uint32_t lo, uint32_t hi) { return lo | (uint64_t(hi) << 32); }
inline uint64_t pack_small(const Header &h) {
    return uint64_t(h.ni_kind) | uint64_t(h.ack_req) << 8 | uint64_t(h.ni_fail) << 16 | uint64_t(h.list) << 24 |
           uint64_t(h.atomic_op) << 32 | uint64_t(h.atomic_type) << 40;
}
} // namespace detail

// Writes h's wire form (without src_nid/src_pid) to out; returns its size, 8..kMaxEncodedBytes.
inline size_t encode(const Header &h, std::byte *out) {
    const uint64_t words[kEncodedWords] = {detail::pack_small(h),
                                           detail::pack(h.uid, h.src_rank),
                                           h.match_bits,
                                           h.hdr_data,
                                           h.remote_offset,
                                           h.length,
                                           h.cookie,
                                           h.rdv_addr,
                                           h.match_bits_hi};
    EncodedLead lead{h.kind, h.flags, 0, h.pt_index};
    size_t n = sizeof lead;
    for (unsigned i = 0; i < kEncodedWords; ++i) {
        if (words[i] == 0) continue;
        lead.present = static_cast<uint16_t>(lead.present | (1u << i));
        std::memcpy(out + n, &words[i], 8);
        n += 8;
    }
    std::memcpy(out, &lead, sizeof lead);
    return n;
}

// Reads a header of exactly n bytes (from the network: nothing is trusted). src_nid/src_pid are
// left zero for the caller to fill in from the link. False if the bytes are not an encoded header.
inline bool decode(const std::byte *in, size_t n, Header *h) {
    EncodedLead lead;
    if (n < sizeof lead) return false;
    std::memcpy(&lead, in, sizeof lead);
    if (lead.present >> kEncodedWords) return false;
    uint64_t words[kEncodedWords] = {};
    size_t at = sizeof lead;
    for (unsigned i = 0; i < kEncodedWords; ++i) {
        if (!(lead.present & (1u << i))) continue;
        if (n - at < 8) return false; // fewer words than announced
        std::memcpy(&words[i], in + at, 8);
        at += 8;
    }
    if (at != n) return false; // more bytes than announced
    const uint64_t small = words[kWordSmall];
    if ((small >> 48) != 0) return false;
    *h = Header{};
    h->kind = lead.kind;
    h->flags = lead.flags;
    h->pt_index = lead.pt_index;
    h->ni_kind = static_cast<uint8_t>(small);
    h->ack_req = static_cast<uint8_t>(small >> 8);
    h->ni_fail = static_cast<uint8_t>(small >> 16);
    h->list = static_cast<uint8_t>(small >> 24);
    h->atomic_op = static_cast<uint8_t>(small >> 32);
    h->atomic_type = static_cast<uint8_t>(small >> 40);
    h->uid = static_cast<uint32_t>(words[kWordIds]);
    h->src_rank = static_cast<uint32_t>(words[kWordIds] >> 32);
    h->match_bits = words[kWordMatchBits];
    h->hdr_data = words[kWordHdrData];
    h->remote_offset = words[kWordRemoteOffset];
    h->length = words[kWordLength];
    h->cookie = words[kWordCookie];
    h->rdv_addr = words[kWordRdvAddr];
    h->match_bits_hi = words[kWordMatchBitsHi];
    return true;
}

// The payload of a kFlagSegment request: the segment's id (common/shared_segment.hpp's
// SharedSegmentId, as bytes) and where in it rdv_addr is.
struct SegmentRef {
    std::byte id[32];
    uint64_t offset;
};
static_assert(sizeof(SegmentRef) == 40);

// What a receiver checks of a header from the network before acting on it.
inline bool header_is_sane(const Header &h) {
    return h.kind == Kind::Put || h.kind == Kind::Get || h.kind == Kind::Ack || h.kind == Kind::Reply ||
           h.kind == Kind::Atomic || h.kind == Kind::FetchAtomic;
}

} // namespace portico::wire
