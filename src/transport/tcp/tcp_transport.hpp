// SPDX-License-Identifier: BSD-3-Clause
// TCP transport between machines (and, when forced, between processes of one machine).
//
// Addressing: the endpoint (nid, pid) listens on IPv4 address nid, TCP port port_base + pid, so a
// peer's address follows from its Portals id alone; binding the port is how a pid is reserved.
// A connection is used only after both ends proved they hold the job's secret (handshake.hpp).
// Frames are written straight from the caller's memory with writev (no staging copy) and read
// into a per-connection buffer, many frames per recv (frame_decoder.hpp). Small frames that follow
// one another closely to the same peer are copied into one buffer and leave together at the next
// poll (coalescing: see send), so that a burst of small messages costs a few system calls. Nothing blocks: a message
// that does not fit into the socket waits in the link's backlog and is pushed when the socket
// becomes writable, so a sender never stops serving incoming traffic. Connections are opened
// lazily by the first send to a peer; until they are up, messages wait in the backlog.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "transport/transport.hpp"

namespace portico::transport::tcp {

struct TcpConfig {
    uint32_t port_base = 16384;
    std::string secret; // empty: every connection is refused
    size_t max_links = 4096;
    size_t max_frame_payload = 64 * 1024 - sizeof(FrameHeader);
    int connect_timeout_ms = 30000; // connect plus handshake, connecting again as often as it takes
    // Accepted connections that have not authenticated yet (see accept_some): at most this many,
    // at most max_pending_per_address of them from one address that no peer of the job has.
    size_t max_pending_accepts = 256;
    size_t max_pending_per_address = 64;
    int hello_timeout_ms = 1000;        // for an accepted connection's hello
    int hello_timeout_pressed_ms = 250; // the same while the pending table is half full (a flood)
    int proof_timeout_ms = 5000;        // for the rest of its handshake
    int keepalive_idle_s = 10;          // a silent broken connection is found within idle + 3 * 5 s
    // A request (Hold::Burst) sent to a peer less than this long after the previous one waits to
    // share a write with what follows (0: never).
    uint64_t coalesce_ns = 10000;
};

class TcpLink;
struct TcpOutMessage;
struct HandshakeMessage;

class TcpTransport final : public Transport {
public:
    // Throws std::system_error: EADDRINUSE when the port of pid is taken, EADDRNOTAVAIL when nid
    // is not an address of this machine.
    TcpTransport(uint32_t nid, uint32_t pid, const TcpConfig &cfg);
    ~TcpTransport() override;

    static uint32_t port_of(uint32_t pid, uint32_t base) { return base + pid; }

    PeerId self() const override { return self_; }
    const char *name() const override { return "tcp"; }
    size_t max_frame_payload() const override { return cfg_.max_frame_payload; }
    SendStatus send(PeerId to, const FrameHeader &h, const Gather &payload, uint64_t token, bool copy_payload,
                    bool defer_wakeup = false, Hold hold = Hold::No) override;
    bool holds_frames() const override { return held_links_.load(std::memory_order_seq_cst) > 0; }
    int poll(Receiver &r) override { return poll_links(r, false); }
    int poll_in_background(Receiver &r) override { return poll_links(r, true); }
    void arm_sleep() override;
    void disarm_sleep() override;
    void flush_wakeups() override;
    void wait(Receiver &r, int timeout_ms) override;
    bool has_pending() const override { return false; }
    void interrupt() override;
    int wait_fd() const override { return epoll_fd_; }
    void flush(Receiver &r, int timeout_ms) override;
    void farewell() override;
    uint64_t malformed_frames() const override { return malformed_.load(std::memory_order_relaxed); }
    uint64_t refused_connections() const override { return refused_.load(std::memory_order_relaxed); }
    void know_peers(const PeerId *peers, size_t n) override;

private:
    TcpLink *link_for(PeerId to);
    TcpLink *connect_to(PeerId to);
    int open_connection(PeerId to, std::string *remote); // a socket connecting to `to`, or -1
    void add_link(std::unique_ptr<TcpLink> l);
    void service(uint64_t data, uint32_t events, Receiver &r);
    int on_readable(TcpLink &l, Receiver &r); // frames delivered (a failure counts as work)
    enum class HandshakeRead { Done, More, Closed };
    HandshakeRead read_handshake(TcpLink &l);
    void advance_handshake(TcpLink &l, Receiver &r); // a connection we opened
    void retry_connect(TcpLink &l, Receiver &r, const std::string &why);
    void reconnect(TcpLink &l, Receiver &r);
    void become_up(TcpLink &l, Receiver &r);
    void fail_link(TcpLink &l, Receiver &r, bool refused);
    int flush_backlog(TcpLink &l, Receiver &r);
    void want_write(TcpLink &l, bool on);
    void expire_handshakes(Receiver &r);
    void arm_timer();
    int service_ready(Receiver &r, int timeout_ms);
    void end_batch(); // after a batch of events: nothing refers to the links dropped in it any more
    // Accepted connections, until they authenticate (poll lock held throughout).
    void accept_some(Receiver &r);
    void admit(int fd, uint32_t from_addr, uint16_t from_port, Receiver &r);
    void advance_accepted(TcpLink &l, Receiver &r);
    TcpLink *pick_victim(uint32_t only_from);
    bool evict_one(Receiver &r, uint32_t only_from); // 0: from anywhere
    size_t silent_from(uint32_t addr) const;
    void drop_accepting(TcpLink &l, const HandshakeMessage *tell, const std::string &what);
    void pause_listening();
    void resume_listening();
    void refused(const std::string &what); // counted; logged at 1, 2, 4, 8, ... refusals
    int poll_links(Receiver &r, bool background);
    // Writes the frames held back (see send); due_only: only acks, and requests held for
    // coalesce_ns (the progress thread's poll).
    void flush_held(bool due_only = false);
    // Appends a frame to l's held bytes (l.tx_mutex held); false if the payload is unreadable.
    bool hold_frame(TcpLink &l, const FrameHeader &h, const Gather &payload);
    void enlist_held(TcpLink &l, bool ack);

    PeerId self_;
    TcpConfig cfg_;
    int listen_fd_ = -1;
    int epoll_fd_ = -1;
    int wake_fd_ = -1;  // eventfd: interrupt() and "a backlog needs pushing"
    int timer_fd_ = -1; // timerfd: handshake deadlines

    std::mutex links_mutex_; // guards send_links_, owned_, peer_reads_, known_ids_, known_addrs_
    std::unordered_map<uint64_t, std::shared_ptr<std::atomic<uint64_t>>> peer_reads_; // TcpLink::reads
    std::unordered_map<uint64_t, TcpLink *> send_links_;
    std::vector<std::unique_ptr<TcpLink>> owned_; // links we opened, and accepted ones once authenticated
    std::unordered_set<uint64_t> known_ids_;      // the job's peers (know_peers)
    std::unordered_set<uint32_t> known_addrs_;    // and their addresses
    std::atomic<size_t> handshaking_{0};
    std::atomic<size_t> live_links_{0};
    // Accepted connections not authenticated yet, by accept id (their epoll tag); the poller's.
    std::unordered_map<uint64_t, std::unique_ptr<TcpLink>> accepting_;
    uint64_t next_accept_id_ = 1;
    std::vector<std::unique_ptr<TcpLink>> graveyard_; // dropped during this batch (end_batch)
    bool listen_paused_ = false;                      // out of descriptors (accept_some)
    std::mutex poll_mutex_;                           // one poller at a time
    std::atomic<unsigned> idle_polls_{0};
    std::atomic<bool> warned_no_secret_{false};
    static constexpr size_t kDirectReadLinks = 4;
    static constexpr int kAcceptsPerTurn = 16; // accept_some
    std::vector<TcpLink *> up_links_;          // links that are up (under poll_mutex_)
    unsigned direct_turns_ = 0;                // under poll_mutex_
    std::atomic<int> writers_{0};              // links waiting for EPOLLOUT
    std::mutex held_mutex_;                    // guards held_list_
    std::vector<TcpLink *> held_list_;         // links that may hold frames
    std::atomic<size_t> held_links_{0};
    std::atomic<bool> sleeping_{false};    // between arm_sleep() and disarm_sleep()
    std::atomic<bool> bundle_held_{false}; // a frame of an open bundle is held (flush_wakeups)
    std::atomic<uint64_t> malformed_{0};
    std::atomic<uint64_t> refused_{0};
};

} // namespace portico::transport::tcp
