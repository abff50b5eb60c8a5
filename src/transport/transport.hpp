// SPDX-License-Identifier: BSD-3-Clause
// The transport layer: moves messages between endpoints as frames, reliably and in order per link.
//
// The engine (the "NIC") sits above it and never sees sockets or rings; a transport never looks
// inside a protocol's header. Every frame starts with the transport's own 16 bytes (which
// protocol, whether this frame starts a message, how much payload it carries, whether the sender
// could read it, how long the protocol's header is), then a first frame's protocol header, opaque
// here and as long as the protocol made it (up to 80 bytes), then the payload. Transports bound
// the payload of one frame; a longer message is its first frame plus continuation frames, which a
// transport never interleaves with another message on the same link.
#pragma once

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sys/uio.h>

#include "common/fence.hpp"

namespace portico::transport {

// Frames travel as they sit in memory, so every field is little-endian on the wire. A big-endian
// port would byte-swap here; until one exists, building for such a machine fails.
static_assert(std::endian::native == std::endian::little, "Portico's frames are little-endian");

inline constexpr uint8_t kFrameVersion = 4;

// The protocols that share an endpoint's transports (links, progress, sleep and wake-up).
enum class Protocol : uint8_t {
    Portals = 1, // the engine's (src/wire/protocol.hpp)
};

inline constexpr uint8_t kFrameFirst = 1;       // a message's first frame: the protocol header is valid
inline constexpr uint8_t kFrameSourceFault = 2; // the sender could not read (part of) this payload: zeros
// The sender closes the link on purpose (it leaves the job, or exits normally): the close that
// follows is not a death. Header only, no protocol; transports that can say it otherwise (shared
// memory) need not send it.
inline constexpr uint8_t kFrameGoodbye = 4;

struct TransportHeader {
    uint8_t version; // kFrameVersion
    Protocol protocol;
    uint8_t flags;          // kFrame*
    uint8_t protocol_bytes; // length of the protocol header that follows (first frames; 0 after)
    uint32_t frame_payload; // payload bytes carried by this frame
    uint64_t payload_total; // first frame: payload bytes of the whole message, this frame and the rest
};
static_assert(sizeof(TransportHeader) == 16);

inline constexpr size_t kProtocolHeaderBytes = 80;

// A frame's header as senders pass it and receivers get it. On the wire only the first
// t.protocol_bytes of `protocol` follow the transport header (wire_header_bytes).
struct FrameHeader {
    TransportHeader t;
    std::byte protocol[kProtocolHeaderBytes]; // the protocol's header in a first frame
};
inline constexpr size_t kMaxWireHeaderBytes = sizeof(FrameHeader);

inline size_t wire_header_bytes(const FrameHeader &h) { return sizeof(TransportHeader) + h.t.protocol_bytes; }

// Reads the header of a frame from the first `available` bytes at p (from the network: nothing
// is trusted). Returns its size on the wire, or 0 if the bytes cannot hold the header they
// announce; the caller checks the rest with frame_is_sane.
inline size_t read_wire_header(const std::byte *p, size_t available, FrameHeader *h) {
    if (available < sizeof(TransportHeader)) return 0;
    std::memcpy(&h->t, p, sizeof h->t);
    const size_t n = wire_header_bytes(*h);
    if (h->t.protocol_bytes > kProtocolHeaderBytes || available < n) return 0;
    std::memcpy(h->protocol, p + sizeof h->t, h->t.protocol_bytes);
    return n;
}

// Writes h's wire form (wire_header_bytes(h) bytes) to p.
inline void write_wire_header(std::byte *p, const FrameHeader &h) { std::memcpy(p, &h, wire_header_bytes(h)); }

// The header of frame `index` of a message whose first frame header is `first` and whose payload
// is `total` bytes, carrying `frame_bytes` of it.
inline FrameHeader frame_header(const FrameHeader &first, uint64_t total, uint64_t index, uint32_t frame_bytes) {
    FrameHeader h;
    if (index == 0) {
        h = first;
        h.t.flags = kFrameFirst;
        h.t.payload_total = total;
    } else {
        h.t = TransportHeader{};
        h.t.protocol = first.t.protocol;
    }
    h.t.version = kFrameVersion;
    h.t.frame_payload = frame_bytes;
    return h;
}

// Writes the wire header of frame `index` of that message straight to p, as
// write_wire_header(p, frame_header(first, total, index, frame_bytes)) would, without building the
// header first; extra_flags go into its flags (kFrameSourceFault). Returns its length.
inline size_t write_frame_header(std::byte *p, const FrameHeader &first, uint64_t total, uint64_t index,
                                 uint32_t frame_bytes, uint8_t extra_flags = 0) {
    TransportHeader t{};
    size_t protocol_bytes = 0;
    if (index == 0) {
        t = first.t;
        t.flags = kFrameFirst;
        t.payload_total = total;
        protocol_bytes = first.t.protocol_bytes;
    } else {
        t.protocol = first.t.protocol;
    }
    t.version = kFrameVersion;
    t.frame_payload = frame_bytes;
    t.flags = static_cast<uint8_t>(t.flags | extra_flags);
    std::memcpy(p, &t, sizeof t);
    std::memcpy(p + sizeof t, first.protocol, protocol_bytes);
    return sizeof t + protocol_bytes;
}
// The length of that header.
inline size_t frame_header_bytes(const FrameHeader &first, uint64_t index) {
    return index == 0 ? wire_header_bytes(first) : sizeof(TransportHeader);
}

// What a transport checks before trusting a frame header from the network (the protocol checks
// its own header).
inline bool frame_is_sane(const FrameHeader &h, size_t frame_bytes_available) {
    if (h.t.version != kFrameVersion) return false;
    if (h.t.flags & ~(kFrameFirst | kFrameSourceFault | kFrameGoodbye)) return false;
    if (h.t.protocol_bytes > kProtocolHeaderBytes) return false;
    if (!(h.t.flags & kFrameFirst) && h.t.protocol_bytes != 0) return false;
    if ((h.t.flags & kFrameGoodbye) && (h.t.flags != kFrameGoodbye || h.t.frame_payload != 0)) return false;
    if (h.t.frame_payload > frame_bytes_available) return false;
    if ((h.t.flags & kFrameFirst) && h.t.frame_payload > h.t.payload_total) return false;
    return true;
}

struct PeerId {
    uint32_t nid = 0;
    uint32_t pid = 0;
    uint64_t key() const { return (uint64_t(nid) << 32) | pid; }
    bool operator==(const PeerId &) const = default;
};

// One connection to a peer. The engine may hang its per-link receive state on rx_state.
class Link {
public:
    PeerId peer;
    void *rx_state = nullptr;
    // The peer said goodbye before the link ended (Transport::farewell): it went on purpose.
    // Set by the transport before on_link_failed.
    bool said_goodbye = false;
    virtual ~Link() = default;
    // Single copy (transports that can, see Transport::direct_access): copies between our memory
    // (local) and the peer's at remote_addr. Returns 0 or an errno value (EFAULT: a range was not
    // mapped; ENOTSUP: this link cannot).
    virtual int read_peer(const struct iovec *, int, uint64_t, size_t) { return ENOTSUP; }
    virtual int write_peer(const struct iovec *, int, uint64_t, size_t) { return ENOTSUP; }
};

// Where the transport delivers what it receives. Called from Transport::poll(), never with a
// transport lock held, so the receiver may call Transport::send() from inside.
class Receiver {
public:
    virtual ~Receiver() = default;
    // payload points at h.t.frame_payload bytes; both are valid only during the call.
    virtual void on_frame(Link &link, const FrameHeader &h, const std::byte *payload) = 0;
    // The link is gone (peer exited, crashed or misbehaved); every frame it delivered came first.
    // last: no other link with that peer is up. Two processes that send to each other at the same
    // moment each open a connection, and each answers on its own: a peer's responses may still be
    // on the way in on another link when this one ends (a peer that exits closes them all, in no
    // particular order on our side). Only when the last one ends can nothing more come from it.
    virtual void on_link_failed(Link &link, bool last) = 0;
    // A message that send() returned Queued for has left (ok) or was abandoned (!ok).
    virtual void on_send_complete(uint64_t token, bool ok, bool source_fault) = 0;
    // A run of frames that one poll delivers from one link: nothing but on_frame is called
    // between begin_frames() and end_frames(), so a receiver may take its lock once for the run.
    virtual void begin_frames() {}
    virtual void end_frames() {}
    // After end_frames, once a full fence has followed it: the stores of the run are visible to
    // every thread, so a receiver may now make the looks its own sleep handshakes (Dekker) need
    // after such a fence, without paying one of its own. A shared-memory drain ends with that
    // fence anyway (for its producers' flags); elsewhere FrameRun pays it.
    virtual void frames_published() {}
};

// A transport's side of Receiver::begin_frames/end_frames/frames_published: begun before the
// first frame of a run, ended before anything else is said to the receiver (and at the end of the
// scope). A transport that fences after the run itself says so (fences_after) and calls
// published() after its fence; otherwise end() fences and publishes.
class FrameRun {
public:
    explicit FrameRun(Receiver &r, bool fences_after = false) : r_(r), fences_after_(fences_after) {}
    ~FrameRun() {
        end();
        if (ended_) {
            full_fence();
            published();
        }
    }
    FrameRun(const FrameRun &) = delete;
    FrameRun &operator=(const FrameRun &) = delete;
    void frame(Link &link, const FrameHeader &h, const std::byte *payload) {
        if (!open_) r_.begin_frames();
        open_ = true;
        r_.on_frame(link, h, payload);
    }
    void end() {
        if (!open_) return;
        r_.end_frames();
        open_ = false;
        ended_ = true;
        if (!fences_after_) {
            full_fence();
            published();
        }
    }
    // The caller has executed a full fence since end().
    void published() {
        if (!ended_) return;
        ended_ = false;
        r_.frames_published();
    }

private:
    Receiver &r_;
    bool fences_after_;
    bool open_ = false;
    bool ended_ = false; // ended, not yet published
};

// The payload of a message: a gather list read at the time the bytes are pushed.
struct Gather {
    const struct iovec *iov = nullptr;
    int iovcnt = 0;
    size_t length = 0; // sum of iov lengths
};

enum class SendStatus {
    Sent, // every frame is in the peer's queue; the payload memory may be reused
    // Every frame was taken (the payload copied: its memory may be reused), but it waits in the
    // transport for the next poll(), flush_wakeups() or arm_sleep() (Hold::Burst), or for a
    // poll_in_background() once it has waited long enough, and nothing else held makes one come:
    // the caller sees to it that one comes soon, waking a resting poller (holds_frames() tells a
    // thread about to rest to poll instead).
    Held,
    SourceFault, // nothing was sent: the payload could not be read (unmapped memory)
    Queued,      // part or all of it waits for room; on_send_complete(token) reports the end
    Unreachable, // no such peer, or the link is dead
};

// May a frame wait in the transport to share a later system call with others?
enum class Hold : uint8_t {
    No,
    // A header-only frame (an ack): it may wait for the next write to that peer or the next
    // poll(), whichever comes first (never past a sleep: arm_sleep() writes it). Returns Sent.
    Ack,
    // A request of the application's: it may wait for the next poll() (or a background poll
    // once it has waited its time) if the transport finds the link streaming (TCP: it wrote to that peer moments ago, and nothing came back since: a
    // request that answers the peer, as in a ping-pong, leaves at once), so that a burst of small
    // messages leaves in a few system calls while a lone message leaves at once. Returns Held if
    // it waits.
    Burst,
    // As Burst, from a sender with earlier requests still unanswered (a window of puts whose acks
    // are coming back): what comes in is those answers, not something this request answers, so
    // only the time since the previous request counts.
    Stream,
};

class Transport {
public:
    virtual ~Transport() = default;
    virtual PeerId self() const = 0;
    virtual const char *name() const = 0;
    virtual size_t max_frame_payload() const = 0;

    // Sends a message: first's protocol and protocol header (the transport fills in the rest of
    // each frame's header) and payload.
    // copy_payload: a queued message must not keep referring to the caller's memory.
    // defer_wakeup: a sleeping peer's wakeup may wait for flush_wakeups() (a bundle, §3.17).
    // hold: whether the frame may wait to share a later system call (see Hold).
    virtual SendStatus send(PeerId to, const FrameHeader &first, const Gather &payload, uint64_t token,
                            bool copy_payload, bool defer_wakeup = false, Hold hold = Hold::No) = 0;
    // True while frames wait for a poll() (SendStatus::Held, or held acks), and possibly until the
    // next poll() after they left with another write. Lock-free; a thread about to rest without
    // polling (the progress thread parking) polls once more instead.
    virtual bool holds_frames() const { return false; }

    // Delivers waiting frames to r and pushes queued messages; returns the amount of work done.
    // A poll by the application (it stopped sending to look for what came) also sends everything
    // held back (SendStatus::Held).
    virtual int poll(Receiver &r) = 0;
    // The same by the progress thread, which polls while the application may still be sending: a
    // request held back to share a write with the next ones leaves only once it has waited as
    // long as the transport lets it (TCP: PORTICO_TCP_COALESCE_US), unless the application polls
    // or waits first. Held acks leave as from poll().
    virtual int poll_in_background(Receiver &r) { return poll(r); }

    // Sleeping without losing a wakeup: arm_sleep() tells peers to wake us, then the caller polls
    // once more with has_pending(), and only if that found nothing calls wait(); disarm_sleep() after waking.
    virtual void arm_sleep() = 0;
    virtual void disarm_sleep() = 0;
    virtual void wait(Receiver &r, int timeout_ms) = 0;
    // True if frames wait to be delivered. Read-only and lock-free, so it
    // is the check to make after arm_sleep(): poll() may return 0 just because another thread polls.
    virtual bool has_pending() const = 0;
    // Makes a concurrent wait() return (used at shutdown).
    virtual void interrupt() = 0;
    // Single copy between processes (transports that can): should a contiguous message of
    // `length` bytes to `to` go as a rendezvous header, `to` reading or writing our memory itself
    // (Link::read_peer/write_peer)? The transport owns the size from which that pays.
    virtual bool direct_access(PeerId, size_t) { return false; }
    // The smallest length direct_access may say yes to (SIZE_MAX: never), so that a caller can
    // leave small messages, nearly all of them, without the question.
    virtual size_t direct_access_from() const { return SIZE_MAX; }
    // Whether traffic to `to` goes through memory this machine shares with it (shared memory), so
    // that a client may choose its protocol by it (portico_peer_shares_memory).
    virtual bool shares_memory(PeerId) { return false; }
    // Sends the wakeups that sends with defer_wakeup collected.
    virtual void flush_wakeups() {}
    // A file descriptor that becomes readable when wait() would return (for waiting on several
    // transports at once), or -1.
    virtual int wait_fd() const { return -1; }
    // Pushes queued messages for at most timeout_ms (before closing), so that what was sent arrives.
    virtual void flush(Receiver &r, int timeout_ms) = 0;
    // Tells every peer that the links about to close end on purpose (Link::said_goodbye on their
    // side). Best effort, never blocks; thread-safe. Transports call it when they close; the
    // engine also calls it when the process exits normally without closing them.
    virtual void farewell() {}
    // The peers of the job (a logical NI's map, as it becomes known): a transport may serve their
    // connections before strangers' (TCP under a flood of connections). Thread-safe.
    virtual void know_peers(const PeerId *, size_t) {}
    // Counters for status registers and diagnostics.
    virtual uint64_t malformed_frames() const = 0;
    virtual uint64_t refused_connections() const = 0;
};

} // namespace portico::transport
