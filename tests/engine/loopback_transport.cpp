// SPDX-License-Identifier: BSD-3-Clause
// The loopback transport (loopback_transport.hpp): endpoints are inboxes in one process-global
// fabric. A send copies the message into frames and appends them, all at once, to the peer's
// inbox; a poll takes frames out of our own inbox one at a time and hands each to the receiver
// with no lock held (the receiver may send, to us too). One thread delivers at a time, so frames
// reach the engine in the order they were sent.
//
// The framing — what a frame carries and how it reaches the receiver — is in cut_message() and
// deliver_frame() only, the two places that follow the transport interface's frame format.
#include "loopback_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/futex.hpp"
#include "common/guarded_copy.hpp"
#include "transport/registry.hpp"
#include "transport/transport.hpp"

namespace portico::loopback {

namespace {

using transport::Gather;
using transport::Link;
using transport::PeerId;
using transport::Receiver;
using transport::SendStatus;

std::atomic<uint64_t> g_frames{0};
std::atomic<uint64_t> g_data_frames{0};

// ---- framing ------------------------------------------------------------------------------------

// One frame as it travels: its frame header and its payload bytes.
struct Frame {
    transport::FrameHeader h{};
    std::vector<std::byte> payload;
};

// Copies n bytes of the gather list, from byte `from` on, into dst; false if the memory faulted.
bool gather_copy(std::byte *dst, const Gather &g, size_t from, size_t n) {
    bool ok = true;
    for (int i = 0; i < g.iovcnt && n > 0; ++i) {
        const size_t len = g.iov[i].iov_len;
        if (from >= len) {
            from -= len;
            continue;
        }
        const size_t take = std::min(n, len - from);
        ok &= guarded_copy(dst, static_cast<const std::byte *>(g.iov[i].iov_base) + from, take);
        dst += take;
        n -= take;
        from = 0;
    }
    return ok;
}

// Cuts a message into its first frame and continuation frames of at most max_payload bytes each,
// copying the payload. Returns false if the first frame's payload cannot be read (nothing may be
// sent); a later frame that cannot be read goes with zeros and kFrameSourceFault, and sets *fault.
bool cut_message(const transport::FrameHeader &h, const Gather &payload, size_t max_payload, std::vector<Frame> *out,
                 bool *fault) {
    const size_t total = payload.length;
    size_t sent = 0;
    for (uint64_t index = 0; index == 0 || sent < total; ++index) {
        const size_t chunk = std::min(max_payload, total - sent);
        Frame f;
        f.h = transport::frame_header(h, total, index, static_cast<uint32_t>(chunk));
        f.payload.resize(chunk);
        if (!gather_copy(f.payload.data(), payload, sent, chunk)) {
            if (index == 0) return false;
            std::fill(f.payload.begin(), f.payload.end(), std::byte{0});
            f.h.t.flags |= transport::kFrameSourceFault;
            *fault = true;
        }
        out->push_back(std::move(f));
        sent += chunk;
    }
    return true;
}

void deliver_frame(Receiver &r, Link &link, const Frame &f) { r.on_frame(link, f.h, f.payload.data()); }

// ---- the fabric ---------------------------------------------------------------------------------

// What an inbox holds: a frame from a peer, or the news that the peer closed its endpoint.
struct Item {
    PeerId from;
    bool closed = false;
    Frame frame;
};

struct Inbox {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<Item> items;                // guarded by mutex
    bool open = true;                      // guarded by mutex
    bool interrupted = false;              // guarded by mutex
    std::atomic<size_t> pending{0};        // items.size(), for has_pending() without the lock
    std::atomic<uint64_t> hidden_until{0}; // hide_arrivals_until

    bool hidden() const {
        const uint64_t until = hidden_until.load(std::memory_order_acquire);
        return until != 0 && monotonic_ns() < until;
    }
};

// Appends items in one go (one message's frames are never interleaved with another's) and wakes a
// waiter. False if the inbox's endpoint has closed.
bool push(Inbox &in, std::vector<Item> &&items) {
    {
        std::lock_guard g(in.mutex);
        if (!in.open) return false;
        for (Item &it : items) in.items.push_back(std::move(it));
        in.pending.store(in.items.size(), std::memory_order_release);
    }
    if (!in.hidden()) in.cv.notify_all();
    return true;
}

class Fabric {
public:
    bool attach(PeerId id, std::shared_ptr<Inbox> inbox) {
        std::lock_guard g(mutex_);
        return inboxes_.emplace(id.key(), std::move(inbox)).second;
    }
    void detach(PeerId id) {
        std::lock_guard g(mutex_);
        inboxes_.erase(id.key());
    }
    std::shared_ptr<Inbox> find(PeerId id) {
        std::lock_guard g(mutex_);
        auto it = inboxes_.find(id.key());
        return it == inboxes_.end() ? nullptr : it->second;
    }

private:
    std::mutex mutex_;
    std::unordered_map<uint64_t, std::shared_ptr<Inbox>> inboxes_;
};

Fabric &fabric() {
    static Fabric *f = new Fabric; // never destroyed: endpoints may close during exit
    return *f;
}

// ---- the transport ------------------------------------------------------------------------------

class LoopbackLink final : public Link {
public:
    explicit LoopbackLink(PeerId p) { peer = p; }
};

class LoopbackTransport final : public transport::Transport {
public:
    explicit LoopbackTransport(PeerId self) : self_(self), inbox_(std::make_shared<Inbox>()) {
        if (!fabric().attach(self, inbox_))
            throw std::system_error(EADDRINUSE, std::generic_category(), "loopback: pid in use");
    }

    ~LoopbackTransport() override {
        fabric().detach(self_);
        // Whoever we talked to, or who sent us what we never read, learns that we are gone, after
        // everything we sent (it is already in their inbox).
        std::vector<uint64_t> peers;
        {
            std::lock_guard g(inbox_->mutex);
            inbox_->open = false;
            for (const Item &it : inbox_->items) peers.push_back(it.from.key());
        }
        {
            std::lock_guard g(links_mutex_);
            for (auto &[key, link] : links_) peers.push_back(key);
        }
        std::sort(peers.begin(), peers.end());
        peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
        for (uint64_t key : peers) {
            const PeerId p{static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key)};
            if (std::shared_ptr<Inbox> in = fabric().find(p)) {
                std::vector<Item> bye(1);
                bye[0].from = self_;
                bye[0].closed = true;
                push(*in, std::move(bye));
            }
        }
    }

    PeerId self() const override { return self_; }
    const char *name() const override { return "loopback"; }
    size_t max_frame_payload() const override { return kFramePayload; }

    SendStatus send(PeerId to, const transport::FrameHeader &h, const Gather &payload, uint64_t, bool, bool,
                    transport::Hold) override {
        std::shared_ptr<Inbox> in = fabric().find(to);
        if (!in) return SendStatus::Unreachable;
        std::vector<Frame> frames;
        bool fault = false;
        if (!cut_message(h, payload, kFramePayload, &frames, &fault)) return SendStatus::SourceFault;
        std::vector<Item> items(frames.size());
        for (size_t i = 0; i < frames.size(); ++i) {
            items[i].from = self_;
            items[i].frame = std::move(frames[i]);
        }
        link_to(to); // first contact
        if (!push(*in, std::move(items))) return SendStatus::Unreachable;
        g_frames.fetch_add(frames.size(), std::memory_order_relaxed);
        g_data_frames.fetch_add(frames.size() - 1, std::memory_order_relaxed);
        return fault ? SendStatus::SourceFault : SendStatus::Sent;
    }

    int poll(Receiver &r) override {
        if (!has_pending()) return 0;
        // One deliverer at a time keeps the frames in order; another poller finds nothing to do
        // (has_pending() still tells the truth). An atomic flag, not a mutex: a receiver that
        // polls from inside on_frame gets 0 instead of undefined behaviour.
        if (delivering_.exchange(true, std::memory_order_acquire)) return 0;
        int work = 0;
        while (work < kMaxPerPoll) {
            Item it;
            {
                std::lock_guard g(inbox_->mutex);
                if (inbox_->items.empty()) break;
                it = std::move(inbox_->items.front());
                inbox_->items.pop_front();
                inbox_->pending.store(inbox_->items.size(), std::memory_order_release);
            }
            deliver(r, it); // no lock of ours is held
            ++work;
        }
        delivering_.store(false, std::memory_order_release);
        return work;
    }

    // Every push notifies the inbox's condition variable, so there is nothing to arm.
    void arm_sleep() override {}
    void disarm_sleep() override {}

    void wait(Receiver &r, int timeout_ms) override {
        {
            std::unique_lock g(inbox_->mutex);
            auto ready = [&] { return (!inbox_->items.empty() && !inbox_->hidden()) || inbox_->interrupted; };
            if (timeout_ms < 0)
                inbox_->cv.wait(g, ready);
            else
                inbox_->cv.wait_for(g, std::chrono::milliseconds(timeout_ms), ready);
            inbox_->interrupted = false;
        }
        poll(r);
    }

    bool has_pending() const override {
        return inbox_->pending.load(std::memory_order_acquire) > 0 && !inbox_->hidden();
    }

    void interrupt() override {
        {
            std::lock_guard g(inbox_->mutex);
            inbox_->interrupted = true;
        }
        inbox_->cv.notify_all();
    }

    void flush(Receiver &, int) override {} // nothing is ever queued on our side
    uint64_t malformed_frames() const override { return 0; }
    uint64_t refused_connections() const override { return 0; }

private:
    static constexpr int kMaxPerPoll = 64;

    // The link with a peer, made at first contact. Links live as long as the transport.
    LoopbackLink &link_to(PeerId p) {
        std::lock_guard g(links_mutex_);
        std::unique_ptr<LoopbackLink> &l = links_[p.key()];
        if (!l) l = std::make_unique<LoopbackLink>(p);
        return *l;
    }

    void deliver(Receiver &r, const Item &it) {
        if (!it.closed) {
            deliver_frame(r, link_to(it.from), it.frame);
            return;
        }
        // The peer closed: its link fails (a later endpoint at the same id gets a new one).
        LoopbackLink *failed = nullptr;
        {
            std::lock_guard g(links_mutex_);
            auto found = links_.find(it.from.key());
            if (found == links_.end()) return;
            failed = found->second.get();
            failed_links_.push_back(std::move(found->second));
            links_.erase(found);
        }
        r.on_link_failed(*failed, true);
    }

    const PeerId self_;
    const std::shared_ptr<Inbox> inbox_;
    std::atomic<bool> delivering_{false};
    std::mutex links_mutex_;
    std::unordered_map<uint64_t, std::unique_ptr<LoopbackLink>> links_; // guarded by links_mutex_
    std::vector<std::unique_ptr<LoopbackLink>> failed_links_;           // guarded by links_mutex_
};

const transport::TransportInfo kInfo{"loopback", -1000, "in-memory peers within this process (Portico's engine tests)",
                                     [](PeerId, PeerId) { return true; },
                                     [](const transport::OpenRequest &req) -> std::unique_ptr<transport::Transport> {
                                         return std::make_unique<LoopbackTransport>(PeerId{req.nid, req.pid});
                                     }};

} // namespace

const transport::TransportInfo &transport_info() { return kInfo; }
void register_loopback() { transport::add_transport(&kInfo); }
uint64_t frames_sent() { return g_frames.load(std::memory_order_relaxed); }
uint64_t data_frames_sent() { return g_data_frames.load(std::memory_order_relaxed); }

void hide_arrivals_until(uint32_t nid, uint32_t pid, uint64_t visible_at_ns) {
    const std::shared_ptr<Inbox> in = fabric().find(PeerId{nid, pid});
    if (!in) throw std::logic_error("loopback: hide_arrivals_until for an endpoint that is not open");
    in->hidden_until.store(visible_at_ns, std::memory_order_release);
}

} // namespace portico::loopback
