#include "transport/router.hpp"

#include <cerrno>
#include <sys/epoll.h>
#include <system_error>
#include <unistd.h>

#include "common/log.hpp"

namespace portico::transport {

namespace {

// Both transports behind one Transport: sends go by nid, polling and sleeping cover both.
class Router final : public Transport {
public:
    Router(std::unique_ptr<shm::ShmTransport> s, std::unique_ptr<tcp::TcpTransport> t)
        : shm_(std::move(s)), tcp_(std::move(t)) {
        epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
        if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
        for (Transport *x : {static_cast<Transport *>(shm_.get()), static_cast<Transport *>(tcp_.get())}) {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.ptr = x;
            epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, x->wait_fd(), &ev);
        }
    }
    ~Router() override { ::close(epoll_fd_); }

    PeerId self() const override { return shm_->self(); }
    const char *name() const override { return "shm+tcp"; }
    size_t max_frame_payload() const override { return std::min(shm_->max_frame_payload(), tcp_->max_frame_payload()); }
    SendStatus send(PeerId to, wire::Header h, const Gather &payload, uint64_t token, bool copy_payload,
                    bool defer_wakeup, bool may_hold) override {
        return route(to).send(to, h, payload, token, copy_payload, defer_wakeup, may_hold);
    }
    int poll(Receiver &r) override { return shm_->poll(r) + tcp_->poll(r); }
    void arm_sleep() override {
        shm_->arm_sleep();
        tcp_->arm_sleep();
    }
    void disarm_sleep() override {
        shm_->disarm_sleep();
        tcp_->disarm_sleep();
    }
    void wait(Receiver &r, int timeout_ms) override {
        epoll_event evs[2];
        const int k = epoll_wait(epoll_fd_, evs, 2, timeout_ms);
        for (int i = 0; i < k; ++i) static_cast<Transport *>(evs[i].data.ptr)->wait(r, 0);
    }
    bool has_pending() const override { return shm_->has_pending() || tcp_->has_pending(); }
    void interrupt() override { shm_->interrupt(); }
    bool peer_can_access_me(PeerId to) override { return to.nid == self().nid && shm_->peer_can_access_me(to); }
    // Only shared-memory links ever say yes to peer_can_access_me.
    int read_peer(Link &l, const struct iovec *local, int n, uint64_t remote_addr, size_t len) override {
        return shm_->read_peer(l, local, n, remote_addr, len);
    }
    int write_peer(Link &l, const struct iovec *local, int n, uint64_t remote_addr, size_t len) override {
        return shm_->write_peer(l, local, n, remote_addr, len);
    }
    void flush_wakeups() override {
        shm_->flush_wakeups();
        tcp_->flush_wakeups();
    }
    int wait_fd() const override { return epoll_fd_; }
    void flush(Receiver &r, int timeout_ms) override {
        shm_->flush(r, timeout_ms);
        tcp_->flush(r, timeout_ms);
    }
    uint64_t malformed_frames() const override { return shm_->malformed_frames() + tcp_->malformed_frames(); }
    uint64_t refused_connections() const override { return shm_->refused_connections() + tcp_->refused_connections(); }

private:
    Transport &route(PeerId to) {
        if (to.nid == self().nid) return *shm_;
        return *tcp_;
    }
    std::unique_ptr<shm::ShmTransport> shm_;
    std::unique_ptr<tcp::TcpTransport> tcp_;
    int epoll_fd_ = -1;
};

bool taken(const std::system_error &e) { return e.code().value() == EADDRINUSE; }

// Opens the transports for one candidate pid; nullptr if the pid is taken on any of them.
std::unique_ptr<Transport> try_pid(const EndpointConfig &cfg, uint32_t pid, bool *tcp_unusable) {
    std::unique_ptr<shm::ShmTransport> s;
    if (cfg.mode != TransportMode::Tcp) {
        try {
            s = std::make_unique<shm::ShmTransport>(cfg.nid, pid, cfg.shm);
        } catch (const std::system_error &e) {
            if (taken(e)) return nullptr;
            throw;
        }
        if (cfg.mode == TransportMode::Shm || *tcp_unusable) return s;
    }
    std::unique_ptr<tcp::TcpTransport> t;
    try {
        t = std::make_unique<tcp::TcpTransport>(cfg.nid, pid, cfg.tcp);
    } catch (const std::system_error &e) {
        if (taken(e)) return nullptr;
        if (cfg.mode == TransportMode::Tcp) throw;
        // Shared memory still serves this machine; say why other machines cannot reach us.
        log_error("TCP disabled for this process (%s); only peers on this machine are reachable", e.what());
        *tcp_unusable = true;
        return s;
    }
    if (!s) return t;
    return std::make_unique<Router>(std::move(s), std::move(t));
}

} // namespace

std::unique_ptr<Transport> open_endpoint(const EndpointConfig &cfg) {
    bool tcp_unusable = false;
    if (cfg.pid != UINT32_MAX) {
        auto t = try_pid(cfg, cfg.pid, &tcp_unusable);
        if (!t)
            throw std::system_error(EADDRINUSE, std::generic_category(),
                                    "pid " + std::to_string(cfg.pid) + " is in use");
        return t;
    }
    // Start from a per-process point so that processes starting together rarely collide.
    const uint32_t start = static_cast<uint32_t>(getpid()) % kAnyPidCount;
    for (uint32_t i = 0; i < kAnyPidCount; ++i) {
        const uint32_t pid = kFirstAnyPid + (start + i) % kAnyPidCount;
        if (auto t = try_pid(cfg, pid, &tcp_unusable)) return t;
    }
    throw std::system_error(EADDRINUSE, std::generic_category(), "no free pid");
}

} // namespace portico::transport
