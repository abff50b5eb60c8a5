// Portico's wire protocol: one fixed-size, versioned header for every frame, on every transport.
//
// A message is one header frame followed by zero or more Data frames carrying the rest of its
// payload (transports bound the payload of one frame). Frames of one message are never interleaved
// with frames of another message on the same link, so a receiver keeps at most one partly received
// message per link. No field is a pointer that the receiver dereferences: `cookie` is an opaque
// initiator-side operation id echoed back in acks and replies.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace portico::wire {

inline constexpr uint8_t kVersion = 1;

// Headers travel as they sit in memory, so every field is little-endian on the wire. A big-endian
// port would byte-swap here; until one exists, building for such a machine fails.
static_assert(std::endian::native == std::endian::little, "Portico's wire format is little-endian");

enum class Kind : uint8_t {
    Put = 1,         // initiator -> target: data follows (payload_total = rlength)
    Get = 2,         // initiator -> target: no payload
    Ack = 3,         // target -> initiator: result of a put (length = mlength)
    Reply = 4,       // target -> initiator: result of a get, data follows (payload_total = mlength)
    Data = 5,        // continuation of the previous message's payload
    Atomic = 6,      // initiator -> target: like Put, the target applies atomic_op to its data
    FetchAtomic = 7, // initiator -> target: like Atomic, and the old data comes back in a Reply
};

// NI addressed: bit 0 = matching, bit 1 = logical. The four NIs of one endpoint share nid/pid.
inline constexpr uint8_t kNiMatching = 1;
inline constexpr uint8_t kNiLogical = 2;

// Header flags.
inline constexpr uint8_t kFlagSourceFault = 1; // initiator could not read (part of) the payload
inline constexpr uint8_t kFlagWantAck = 2;     // target must answer a Put with an Ack
inline constexpr uint8_t kFlagUnordered = 4;   // PTL_MD_UNORDERED (informational)
// Single copy: the payload is not in frames; the target reads it from (Put) or writes it to (Get)
// the initiator's memory at rdv_addr, on transports that can (shared memory).
inline constexpr uint8_t kFlagRendezvous = 8;
inline constexpr uint8_t kFlagAckValid = 16;   // Ack: a real acknowledgment (event and/or count)
inline constexpr uint8_t kFlagSendDone = 32;   // Ack: the target is done with a rendezvous source
inline constexpr uint8_t kFlagDataPlaced = 64; // Reply: the data was written into the initiator's MD
inline constexpr uint8_t kFlagOperand = 128;   // (Fetch)Atomic: the payload starts with one operand item

struct Header {
    uint8_t version;
    Kind kind;
    uint8_t ni_kind;
    uint8_t flags;
    uint8_t ack_req;   // ptl_ack_req_t of the request
    uint8_t ni_fail;   // ptl_ni_fail_t (Ack/Reply)
    uint8_t list;      // ptl_list_t where the request landed (Ack/Reply)
    uint8_t atomic_op; // ptl_op_t of an Atomic/FetchAtomic
    uint32_t pt_index;
    uint32_t uid;
    uint32_t src_nid; // physical id of the sender
    uint32_t src_pid;
    uint32_t src_rank;      // sender's rank when it sent from a logical NI
    uint32_t frame_payload; // payload bytes carried by this frame
    uint64_t match_bits;
    uint64_t hdr_data;
    uint64_t remote_offset; // requested offset (request) / offset used at the target (Ack/Reply)
    uint64_t length;        // rlength (request) / mlength (Ack/Reply)
    uint64_t cookie;        // initiator's operation id, echoed in Ack/Reply
    uint64_t payload_total; // payload bytes of the whole message, this frame and its Data frames
    uint64_t rdv_addr;      // kFlagRendezvous: initiator address of the source (Put) or destination (Get)
    uint8_t atomic_type;    // ptl_datatype_t of an Atomic/FetchAtomic
    uint8_t reserved[7];
};
static_assert(sizeof(Header) == 96, "wire header layout is part of the protocol");

// The header of frame `index` of a message whose first header is `first` and whose payload is
// `total` bytes: the message's own header first, then Data headers; `frame_bytes` of payload.
inline Header frame_header(const Header &first, uint64_t total, uint64_t index, uint32_t frame_bytes) {
    Header h;
    if (index == 0) {
        h = first;
        h.payload_total = total;
    } else {
        h = Header{};
        h.version = kVersion;
        h.kind = Kind::Data;
    }
    h.frame_payload = frame_bytes;
    return h;
}

// Checks what a receiver must check before trusting a header from the network.
inline bool header_is_sane(const Header &h, size_t frame_bytes_available) {
    if (h.version != kVersion) return false;
    if (h.kind < Kind::Put || h.kind > Kind::FetchAtomic) return false;
    if (h.frame_payload > frame_bytes_available) return false;
    if (h.kind != Kind::Data && h.frame_payload > h.payload_total) return false;
    return true;
}

} // namespace portico::wire
