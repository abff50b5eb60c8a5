// SPDX-License-Identifier: BSD-3-Clause
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
    // The first eight bytes are laid out as the wire's small word with the lead's two bytes in
    // it (see kSmallWordMask), so that encoding and decoding them is a mask, not eight shifts.
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
    uint32_t src_rank; // sender's rank when it sent from a logical NI (after uid: the wire's ids word)
    // Physical id of the sender: not carried on the wire. The receiver takes it from the link the
    // message came on, which the transport authenticated, so a peer cannot speak for another.
    uint32_t src_nid;
    uint32_t src_pid;
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
static_assert(offsetof(Header, ni_kind) == 1 && offsetof(Header, flags) == 2 && offsetof(Header, atomic_type) == 7);
static_assert(offsetof(Header, src_rank) == offsetof(Header, uid) + 4);

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
    kWordSmall,     // Header's first 8 bytes with kind and flags (the lead's) zero: see kSmallWordMask
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

// The bytes of Header's first eight that the small word carries: all but kind (byte 0) and flags
// (byte 2), which the lead carries.
inline constexpr uint64_t kSmallWordMask = ~uint64_t{0x00ff00ff};

namespace detail {
inline uint64_t first_word(const Header &h) {
    uint64_t v;
    std::memcpy(&v, &h, 8);
    return v;
}
inline uint64_t ids_word(const Header &h) {
    uint64_t v;
    std::memcpy(&v, reinterpret_cast<const std::byte *>(&h) + offsetof(Header, uid), 8);
    return v;
}
} // namespace detail

// Writes h's wire form (without src_nid/src_pid) to out; returns its size, 8..kMaxEncodedBytes.
// Written word by word, straight: on the message path a loop over an array of the words cost
// twice the instructions (bench/instructions/hop_instructions.sh).
inline size_t encode(const Header &h, std::byte *out) {
    std::byte *p = out + sizeof(EncodedLead);
    unsigned present = 0;
    const auto word = [&p, &present](unsigned i, uint64_t v) {
        if (v == 0) return;
        std::memcpy(p, &v, 8);
        p += 8;
        present |= 1u << i;
    };
    word(kWordSmall, detail::first_word(h) & kSmallWordMask);
    word(kWordIds, detail::ids_word(h));
    word(kWordMatchBits, h.match_bits);
    word(kWordHdrData, h.hdr_data);
    word(kWordRemoteOffset, h.remote_offset);
    word(kWordLength, h.length);
    word(kWordCookie, h.cookie);
    word(kWordRdvAddr, h.rdv_addr);
    word(kWordMatchBitsHi, h.match_bits_hi);
    const EncodedLead lead{h.kind, h.flags, static_cast<uint16_t>(present), h.pt_index};
    std::memcpy(out, &lead, sizeof lead);
    return static_cast<size_t>(p - out);
}

namespace detail {
// The number of words `present` announces (its bits), without relying on a POPCNT instruction.
inline unsigned words_announced(unsigned present) {
    constexpr uint8_t kBits[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
    return unsigned{kBits[present & 15]} + kBits[(present >> 4) & 15] + kBits[(present >> 8) & 15];
}
} // namespace detail

// Reads a header of exactly n bytes (from the network: nothing is trusted). src_nid/src_pid are
// left zero for the caller to fill in from the link. False if the bytes are not an encoded header.
// Every byte is read once (a peer that shares the memory may still be writing it).
inline bool decode(const std::byte *in, size_t n, Header *h) {
    EncodedLead lead;
    if (n < sizeof lead) return false;
    std::memcpy(&lead, in, sizeof lead);
    const unsigned present = lead.present;
    if (present >> kEncodedWords) return false;
    if (n != sizeof lead + 8 * detail::words_announced(present)) return false; // fewer or more bytes than announced
    const std::byte *p = in + sizeof lead;
    const auto word = [&p, present](unsigned i) {
        uint64_t v = 0;
        if (present & (1u << i)) {
            std::memcpy(&v, p, 8);
            p += 8;
        }
        return v;
    };
    const uint64_t small = word(kWordSmall);
    if (small & ~kSmallWordMask) return false;
    const uint64_t first = small | uint64_t(lead.kind) | uint64_t(lead.flags) << 16;
    const uint64_t ids = word(kWordIds);
    auto *bytes = reinterpret_cast<std::byte *>(h);
    std::memcpy(bytes, &first, 8);
    h->pt_index = lead.pt_index;
    std::memcpy(bytes + offsetof(Header, uid), &ids, 8);
    h->src_nid = 0;
    h->src_pid = 0;
    h->unused = 0;
    h->match_bits = word(kWordMatchBits);
    h->hdr_data = word(kWordHdrData);
    h->remote_offset = word(kWordRemoteOffset);
    h->length = word(kWordLength);
    h->cookie = word(kWordCookie);
    h->rdv_addr = word(kWordRdvAddr);
    h->match_bits_hi = word(kWordMatchBitsHi);
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
