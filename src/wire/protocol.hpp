// Portico's Portals protocol: the header of every message the engine sends, carried as the
// protocol header of the message's first frame (transport/transport.hpp frames it: which protocol,
// payload sizes, continuation frames, a sender's read fault).
//
// A message is one first frame followed by continuation frames carrying the rest of its payload
// (transports bound the payload of one frame), never interleaved with another message on the same
// link, so a receiver keeps at most one partly received message per link. No field is a pointer
// that the receiver dereferences: `cookie` is an opaque initiator-side operation id echoed back in
// acks and replies. Fields are little-endian (the transport layer asserts the machine is).
#pragma once

#include <cstddef>
#include <cstdint>

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
    uint32_t src_nid; // physical id of the sender
    uint32_t src_pid;
    uint32_t src_rank; // sender's rank when it sent from a logical NI
    uint32_t reserved;
    uint64_t match_bits;
    uint64_t hdr_data;
    uint64_t remote_offset; // requested offset (request) / offset used at the target (Ack/Reply)
    uint64_t length;        // rlength (request) / mlength (Ack/Reply)
    uint64_t cookie;        // initiator's operation id, echoed in Ack/Reply
    uint64_t rdv_addr;      // kFlagRendezvous: initiator address of the source (Put) or destination (Get)
};
static_assert(sizeof(Header) == 80, "the Portals header fills the transport's protocol header exactly");

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
