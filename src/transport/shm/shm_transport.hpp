// SPDX-License-Identifier: BSD-3-Clause
// Shared-memory transport between processes of one machine.
//
// Each endpoint listens on a Unix socket named after its (nid, pid) in a directory only its user
// may enter (rendezvous.hpp): holding the name's lock is how a pid is reserved (PTL_PID_IN_USE
// when taken), and another user can neither take a name nor connect. A sender that first talks to
// a peer creates an anonymous memfd holding two rings (one per direction), connects and passes the
// memfd over the socket; the peer's progress thread maps it. The rings have no file name, so a
// killed process leaks no memory, and only processes of the same user are accepted (SO_PEERCRED).
// The socket stays open as the doorbell (one byte wakes a sleeping peer) and as the liveness
// signal (hang-up = peer gone).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

#include "common/spin_lock.hpp"
#include "transport/shm/rendezvous.hpp"
#include "transport/shm/ring.hpp"
#include "transport/transport.hpp"

namespace portico::transport::shm {

struct ShmConfig {
    size_t ring_bytes = 256 * 1024; // per direction per link; a power of two
    size_t max_links = 4096;
    bool single_copy = true;              // process_vm_readv/writev between peers, where the kernel allows it
    size_t single_copy_bytes = 32 * 1024; // the smallest message sent single copy
    std::string directory;                // where endpoints meet; empty: the default (rendezvous.hpp)
    // The job's secret, proven in every link's hello (hello.hpp) when not empty: links of processes
    // that cannot prove it are refused, and so are proven links when it is empty.
    std::string secret;
    // How long an accepted connection may take to send its hello. A connector sends it right
    // after connect(), but on a saturated machine (hundreds of runnable processes on 2 cores) it
    // can be descheduled for seconds in between: 2 s refused a 64-rank job's own links. Only a
    // process of our own user can connect (the directory is 0700, SO_PEERCRED is checked), and
    // the pending table evicts its oldest when full, so a generous bound costs nothing.
    uint64_t hello_timeout_ns = 30'000'000'000;
};

class ShmLink;

// An accepted connection whose hello has not arrived yet (see ShmTransport::accept_one).
struct PendingAccept {
    int fd;
    pid_t os_pid;
    uint64_t deadline_ns;
};

class ShmTransport final : public Transport {
public:
    // Opens the endpoint. Throws std::system_error: EADDRINUSE when the pid is taken, anything
    // else when the endpoint directory cannot serve (endpoint_directory).
    ShmTransport(uint32_t nid, uint32_t pid, const ShmConfig &cfg);
    ~ShmTransport() override;

    const std::string &directory() const { return dir_; }

    PeerId self() const override { return self_; }
    const char *name() const override { return "shm"; }
    size_t max_frame_payload() const override { return max_frame_payload_; }
    SendStatus send(PeerId to, const FrameHeader &h, const Gather &payload, uint64_t token, bool copy_payload,
                    bool defer_wakeup = false, Hold hold = Hold::No) override;
    int poll(Receiver &r) override;
    void arm_sleep() override;
    void disarm_sleep() override;
    void wait(Receiver &r, int timeout_ms) override;
    bool has_pending() const override;
    void interrupt() override;
    uint64_t malformed_frames() const override { return malformed_.load(std::memory_order_relaxed); }
    uint64_t refused_connections() const override { return refused_.load(std::memory_order_relaxed); }

    void flush_wakeups() override;
    bool direct_access(PeerId to, size_t length) override;
    bool shares_memory(PeerId) override { return true; } // every peer it reaches is on this machine
    size_t direct_access_from() const override { return cfg_.single_copy ? cfg_.single_copy_bytes : SIZE_MAX; }

    // Pushes queued messages for a bounded time (at shutdown), so that what was sent is delivered.
    void flush(Receiver &r, int timeout_ms) override;
    void farewell() override;
    int wait_fd() const override { return epoll_fd_; }

private:
    ShmLink *link_for(PeerId to);
    ShmLink *connect_to(PeerId to);
    void accept_one(Receiver &r);
    bool try_hello(int s, pid_t os_pid);
    void watch_pending(const PendingAccept &p);
    void service_pending(PendingAccept *p);
    void give_up_oldest(const char *why); // the oldest pending accept: a last read, else refused
    void expire_pending(uint64_t before); // those whose deadline passed before `before`
    PendingAccept *pending_of(void *tag) const;
    void refuse(const std::string &what);
    void refused_by_peer(const ShmLink &l, char code); // the acceptor said why it closed our link
    void add_link(std::unique_ptr<ShmLink> l, bool use_for_send);
    void fail_link(ShmLink &l, Receiver &r);
    int drain_link(ShmLink &l, Receiver &r, int budget);
    int flush_backlog(ShmLink &l, Receiver &r);
    bool push_frames(ShmLink &l, struct OutMessage &m, bool defer_wakeup);
    void published(ShmLink &l, bool defer_wakeup); // frames were committed to l: its doorbell (l.tx_lock held)
    void service_events(const void *events, int count, Receiver &r);
    int look_at_sockets(Receiver &r); // new connections, hang-ups, stray doorbells (poll lock held)
    void probe_peer(ShmLink &l);

    PeerId self_;
    ShmConfig cfg_;
    size_t max_frame_payload_;
    std::string dir_;
    pid_t os_pid_ = 0;                         // this process, as its peers see it (SO_PEERCRED) when it listened
    std::unique_ptr<Reservation> reservation_; // the pid's lock and the listening socket
    int listen_fd_ = -1;                       // reservation_'s
    int epoll_fd_ = -1;
    int wake_fd_ = -1; // eventfd: interrupt()

    std::mutex links_mutex_; // guards send_links_ and appending to links_
    std::unordered_map<uint64_t, ShmLink *> send_links_;
    std::atomic<ShmLink *> last_send_link_{nullptr}; // the link link_for() returned last
    std::unique_ptr<ShmLink *[]> links_;
    std::atomic<size_t> nlinks_{0};
    std::vector<std::unique_ptr<ShmLink>> owned_;
    std::atomic<int> backlogged_{0};      // links with queued messages
    std::atomic<bool> sleeping_{false};   // between arm_sleep() and disarm_sleep()
    SpinLock poll_lock_;                  // one poller at a time: each ring has a single consumer
    std::atomic<unsigned> poll_turns_{0}; // spaces out looks at the sockets (a racy count is fine)

    std::mutex deferred_mutex_;
    std::vector<ShmLink *> deferred_; // links whose consumer we owe a wakeup (inside a bundle)
    std::atomic<bool> have_deferred_{false};
    std::atomic<uint64_t> malformed_{0};
    std::atomic<uint64_t> refused_{0};
    // Connections still owing their hello, oldest first (poll lock held). A connector sends its
    // hello right after connect(), so these are few; the bounds keep a hostile process from
    // holding file descriptors or memory here.
    static constexpr size_t kMaxPendingAccepts = 64;
    std::vector<std::unique_ptr<PendingAccept>> pending_accepts_;
};

} // namespace portico::transport::shm
