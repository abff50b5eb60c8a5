// The transport layer: moves wire frames between endpoints, reliably and in order per link.
//
// The engine (the "NIC") sits above it and never sees sockets or rings; a transport never looks
// inside a frame beyond the wire header. Transports bound the payload of one frame; longer
// messages are sent as a header frame plus Data frames, which a transport never interleaves with
// another message on the same link.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>

#include "wire/protocol.hpp"

namespace portico::transport {

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
    // payload points at h.frame_payload bytes, valid only during the call.
    virtual void on_frame(Link &link, const wire::Header &h, const std::byte *payload) = 0;
    // The link is gone (peer exited, crashed or misbehaved); every frame it delivered came first.
    // last: no other link with that peer is up. Two processes that send to each other at the same
    // moment each open a connection, and each answers on its own: a peer's responses may still be
    // on the way in on another link when this one ends (a peer that exits closes them all, in no
    // particular order on our side). Only when the last one ends can nothing more come from it.
    virtual void on_link_failed(Link &link, bool last) = 0;
    // A message that send() returned Queued for has left (ok) or was abandoned (!ok).
    virtual void on_send_complete(uint64_t token, bool ok, bool source_fault) = 0;
};

// The payload of a message: a gather list read at the time the bytes are pushed.
struct Gather {
    const struct iovec *iov = nullptr;
    int iovcnt = 0;
    size_t length = 0; // sum of iov lengths
};

enum class SendStatus {
    Sent,        // every frame is in the peer's queue; the payload memory may be reused
    SourceFault, // nothing was sent: the payload could not be read (unmapped memory)
    Queued,      // part or all of it waits for room; on_send_complete(token) reports the end
    Unreachable, // no such peer, or the link is dead
};

class Transport {
public:
    virtual ~Transport() = default;
    virtual PeerId self() const = 0;
    virtual const char *name() const = 0;
    virtual size_t max_frame_payload() const = 0;

    // Sends header h (kind, fields; frame_payload/payload_total are filled in) and payload.
    // copy_payload: a queued message must not keep referring to the caller's memory.
    // defer_wakeup: a sleeping peer's wakeup may wait for flush_wakeups() (a bundle, §3.17).
    // may_hold: a header-only frame (an ack) that may wait for the next write to that peer or the
    // next poll(), whichever comes first (never past a sleep: arm_sleep() writes it).
    virtual SendStatus send(PeerId to, wire::Header h, const Gather &payload, uint64_t token, bool copy_payload,
                            bool defer_wakeup = false, bool may_hold = false) = 0;

    // Delivers waiting frames to r and pushes queued messages; returns the amount of work done.
    virtual int poll(Receiver &r) = 0;

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
    // Sends the wakeups that sends with defer_wakeup collected.
    virtual void flush_wakeups() {}
    // A file descriptor that becomes readable when wait() would return (for waiting on several
    // transports at once), or -1.
    virtual int wait_fd() const { return -1; }
    // Pushes queued messages for at most timeout_ms (before closing), so that what was sent arrives.
    virtual void flush(Receiver &r, int timeout_ms) = 0;
    // Counters for status registers and diagnostics.
    virtual uint64_t malformed_frames() const = 0;
    virtual uint64_t refused_connections() const = 0;
};

} // namespace portico::transport
