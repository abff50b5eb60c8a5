// SPDX-License-Identifier: BSD-3-Clause
#include "transport/endpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <sys/epoll.h>
#include <system_error>
#include <unistd.h>

#include "common/log.hpp"
#include "transport/registry.hpp"
#include "transport/transport_settings.hpp"

namespace portico::transport {

namespace {

struct Member {
    const TransportInfo *info;
    std::unique_ptr<Transport> transport;
};

// Several transports behind one Transport: each peer is sent to on the first member (in order of
// preference) that reaches it; polling and sleeping cover them all, in one epoll set made of the
// members' own wait_fds, so the progress thread sleeps in one system call whatever woke it.
class Router final : public Transport {
public:
    explicit Router(std::vector<Member> members) : members_(std::move(members)) {
        epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
        if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
        for (Member &m : members_) {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.ptr = m.transport.get();
            if (m.transport->wait_fd() >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, m.transport->wait_fd(), &ev);
            name_ += (name_.empty() ? "" : "+") + std::string(m.info->name);
            max_frame_payload_ = std::min(max_frame_payload_, m.transport->max_frame_payload());
        }
        self_ = members_.front().transport->self();
    }
    ~Router() override { ::close(epoll_fd_); }

    PeerId self() const override { return self_; }
    const char *name() const override { return name_.c_str(); }
    size_t max_frame_payload() const override { return max_frame_payload_; }
    SendStatus send(PeerId to, const FrameHeader &h, const Gather &payload, uint64_t token, bool copy_payload,
                    bool defer_wakeup, Hold hold) override {
        Transport *t = route(to);
        return t ? t->send(to, h, payload, token, copy_payload, defer_wakeup, hold) : SendStatus::Unreachable;
    }
    int poll(Receiver &r) override {
        int work = 0;
        for (Member &m : members_) work += m.transport->poll(r);
        return work;
    }
    int poll_in_background(Receiver &r) override {
        int work = 0;
        for (Member &m : members_) work += m.transport->poll_in_background(r);
        return work;
    }
    void arm_sleep() override {
        for (Member &m : members_) m.transport->arm_sleep();
    }
    void disarm_sleep() override {
        for (Member &m : members_) m.transport->disarm_sleep();
    }
    void wait(Receiver &r, int timeout_ms) override {
        epoll_event evs[8];
        const int k = epoll_wait(epoll_fd_, evs, 8, timeout_ms);
        for (int i = 0; i < k; ++i) static_cast<Transport *>(evs[i].data.ptr)->wait(r, 0);
    }
    bool has_pending() const override {
        return std::any_of(members_.begin(), members_.end(),
                           [](const Member &m) { return m.transport->has_pending(); });
    }
    // Any member's interrupt makes its wait_fd, and so ours, readable.
    void interrupt() override { members_.front().transport->interrupt(); }
    bool direct_access(PeerId to, size_t length) override {
        Transport *t = route(to);
        return t && t->direct_access(to, length);
    }
    bool shares_memory(PeerId to) override {
        Transport *t = route(to);
        return t && t->shares_memory(to);
    }
    size_t direct_access_from() const override {
        size_t from = SIZE_MAX;
        for (const Member &m : members_) from = std::min(from, m.transport->direct_access_from());
        return from;
    }
    void flush_wakeups() override {
        for (Member &m : members_) m.transport->flush_wakeups();
    }
    bool holds_frames() const override {
        return std::any_of(members_.begin(), members_.end(),
                           [](const Member &m) { return m.transport->holds_frames(); });
    }
    int wait_fd() const override { return epoll_fd_; }
    void flush(Receiver &r, int timeout_ms) override {
        for (Member &m : members_) m.transport->flush(r, timeout_ms);
    }
    void farewell() override {
        for (Member &m : members_) m.transport->farewell();
    }
    void know_peers(const PeerId *peers, size_t n) override {
        for (Member &m : members_) m.transport->know_peers(peers, n);
    }
    uint64_t malformed_frames() const override {
        uint64_t n = 0;
        for (const Member &m : members_) n += m.transport->malformed_frames();
        return n;
    }
    uint64_t refused_connections() const override {
        uint64_t n = 0;
        for (const Member &m : members_) n += m.transport->refused_connections();
        return n;
    }

private:
    Transport *route(PeerId to) {
        for (Member &m : members_)
            if (m.info->reaches(self_, to)) return m.transport.get();
        return nullptr;
    }
    std::vector<Member> members_;
    PeerId self_;
    std::string name_;
    size_t max_frame_payload_ = SIZE_MAX;
    int epoll_fd_ = -1;
};

bool taken(const std::system_error &e) { return e.code().value() == EADDRINUSE; }

// Opens the selected transports for one candidate pid; nullptr if the pid is taken on any of them
// (*taken_on says which). A transport the user did not name that cannot run here (TCP when
// PORTICO_NID is not an address of this machine; shared memory when another user owns its
// directory) is left out once, with a word on why, and not tried again for other pids.
std::unique_ptr<Transport> try_pid(const EndpointRequest &req, std::vector<const TransportInfo *> &selected, bool named,
                                   uint32_t pid, const TransportInfo **taken_on) {
    std::vector<Member> members;
    OpenRequest open{req.nid, pid, req.job_secret, req.shared_secret};
    open.local_processes = req.local_processes;
    open.local_rank = req.local_rank;
    for (auto it = selected.begin(); it != selected.end();) {
        try {
            members.push_back({*it, (*it)->open(open)});
            ++it;
        } catch (const std::system_error &e) {
            if (taken(e)) {
                *taken_on = *it;
                return nullptr;
            }
            if (named || selected.size() == 1) throw;
            log_error("the %s transport is disabled for this process (%s)", (*it)->name, e.what());
            it = selected.erase(it);
        }
    }
    if (members.size() == 1) return std::move(members.front().transport);
    return std::make_unique<Router>(std::move(members));
}

} // namespace

namespace {
struct ClientChoice {
    std::mutex mutex;
    std::string selection;
};
ClientChoice &client_choice() {
    static ClientChoice c;
    return c;
}
std::string chosen_by_client() {
    ClientChoice &c = client_choice();
    std::lock_guard g(c.mutex);
    return c.selection.empty() ? std::string("auto") : c.selection;
}
} // namespace

Choice choose_transports(std::string_view selection, std::string *error) {
    Selection unused;
    if (selection.empty()) {
        *error = "no transport named";
        return Choice::invalid;
    }
    if (!select_transports(selection, &unused, error)) return Choice::invalid;
    if (settings::kTransport.is_set()) return Choice::environment_wins;
    ClientChoice &c = client_choice();
    std::lock_guard g(c.mutex);
    c.selection = selection;
    return Choice::taken;
}

std::unique_ptr<Transport> open_endpoint(const EndpointRequest &req) {
    Selection selection;
    std::string error;
    const std::string wanted = !req.selection.empty()          ? req.selection
                               : settings::kTransport.is_set() ? settings::kTransport.get()
                                                               : chosen_by_client();
    if (!select_transports(wanted, &selection, &error)) throw std::invalid_argument(error);
    if (selection.transports.empty()) throw std::invalid_argument("no transport is registered");
    std::vector<const TransportInfo *> selected = selection.transports;
    // The job's secret first, if a transport will ask for it (a collective under some launchers):
    // then every transport of the endpoint sees the same one (shared memory asks without a
    // collective, and would otherwise open before TCP had the ranks agree).
    if (req.job_secret && std::any_of(selected.begin(), selected.end(), [](auto *t) { return t->needs_job_secret; }))
        req.job_secret();
    const TransportInfo *taken_on = nullptr;
    if (req.pid != UINT32_MAX) {
        auto t = try_pid(req, selected, selection.named, req.pid, &taken_on);
        if (!t) {
            const std::string who = taken_on->holders ? taken_on->holders(req.nid, req.pid, 1) : std::string{};
            throw std::system_error(EADDRINUSE, std::generic_category(),
                                    "pid " + std::to_string(req.pid) + " is in use on this machine (" + taken_on->name +
                                        ": " + (who.empty() ? "its holder cannot be told" : who) + ")");
        }
        return t;
    }
    // Start from a per-process point so that processes starting together rarely collide.
    const uint32_t start = static_cast<uint32_t>(getpid()) % kAnyPidCount;
    std::string why;
    for (;;) {
        std::vector<std::pair<const TransportInfo *, uint32_t>> taken_count; // per transport
        for (uint32_t i = 0; i < kAnyPidCount; ++i) {
            const uint32_t pid = kFirstAnyPid + (start + i) % kAnyPidCount;
            if (auto t = try_pid(req, selected, selection.named, pid, &taken_on)) return t;
            auto it =
                std::find_if(taken_count.begin(), taken_count.end(), [&](auto &c) { return c.first == taken_on; });
            if (it == taken_count.end())
                taken_count.emplace_back(taken_on, 1);
            else
                ++it->second;
        }
        // Every pid taken: say by whom, so that a user denied by another one's sockets learns it.
        std::string round;
        for (const auto &[info, count] : taken_count) {
            const std::string who = info->holders ? info->holders(req.nid, kFirstAnyPid, kAnyPidCount) : std::string{};
            round += std::string(round.empty() ? "" : "; ") + std::to_string(count) + " taken on " + info->name +
                     (who.empty() ? "" : " (" + who + ")");
        }
        why += (why.empty() ? "" : "; then ") + round;
        // Under `auto`, names held on one transport (another user can hold every TCP port of the
        // range on this machine) must not deny the process the others: leave out the transport
        // that refused the most pids and search again. Peers it alone reaches become unreachable,
        // which its error message says.
        if (selection.named || selected.size() < 2) break;
        const auto worst = std::max_element(taken_count.begin(), taken_count.end(),
                                            [](auto &a, auto &b) { return a.second < b.second; });
        log_error("the %s transport is disabled for this process: no pid in %u..%u is free on it (%s); the process "
                  "reaches only peers the other transports reach",
                  worst->first->name, kFirstAnyPid, kFirstAnyPid + kAnyPidCount - 1, round.c_str());
        selected.erase(std::find(selected.begin(), selected.end(), worst->first));
    }
    throw std::system_error(EADDRINUSE, std::generic_category(),
                            "no free pid in " + std::to_string(kFirstAnyPid) + ".." +
                                std::to_string(kFirstAnyPid + kAnyPidCount - 1) + ": " + why);
}

} // namespace portico::transport
