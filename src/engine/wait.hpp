// How a thread waits for an event or a count: poll the transport itself for a short, bounded time
// (a ping-pong then never pays a thread hand-off), then sleep on the engine's notification word
// while the endpoint's progress thread, told to listen for peers' doorbells, keeps things moving.
#pragma once

#include "common/futex.hpp"
#include "engine/engine.hpp"

namespace portico::engine {

// The EQs or CTs one PtlEQPoll/PtlCTPoll waits on: resolved once, all on one physical interface,
// and pinned (users) until the wait ends so that a concurrent Free keeps them alive. No allocation
// for the usual handful of objects: waiting is on the fast path.
template <class T> class WaitSet {
public:
    WaitSet() = default;
    WaitSet(const WaitSet &) = delete;
    WaitSet &operator=(const WaitSet &) = delete;
    ~WaitSet() {
        for (unsigned i = 0; i < pinned_; ++i) objs_[i]->users.fetch_sub(1);
    }
    // Engine lock held. PTL_ARG_INVALID for an unknown handle or objects of different interfaces.
    template <class Lookup> int resolve(const ptl_handle_any_t *hs, unsigned n, Lookup lookup) {
        if (n > 8) {
            large_.resize(n);
            objs_ = large_.data();
        }
        for (unsigned i = 0; i < n; ++i) {
            objs_[i] = lookup(hs[i]);
            if (!objs_[i] || (ep_ && objs_[i]->ni->ep != ep_)) return PTL_ARG_INVALID;
            ep_ = objs_[i]->ni->ep;
        }
        for (pinned_ = 0; pinned_ < n; ++pinned_) objs_[pinned_]->users.fetch_add(1);
        return PTL_OK;
    }
    T *operator[](unsigned i) const { return objs_[i]; }
    Endpoint *endpoint() const { return ep_; }

private:
    T *small_[8];
    std::vector<T *> large_;
    T **objs_ = small_;
    unsigned pinned_ = 0;
    Endpoint *ep_ = nullptr;
};

template <class Ready> int Engine::wait_for(Endpoint *ep, ptl_time_t timeout_ms, int timeout_rc, Ready ready) {
    const uint64_t start = monotonic_ns();
    const bool forever = timeout_ms < 0;
    const uint64_t deadline = forever ? UINT64_MAX : start + static_cast<uint64_t>(timeout_ms) * 1000000ull;
    const uint64_t spin_until = start + Tunables::get().wait_spin_ns;

    // A thread that waits wants its bundled messages delivered: never deadlock inside a bundle.
    ep->transport->flush_wakeups();
    // While we poll, peers need not ring the progress thread's doorbell.
    {
        std::lock_guard g(ep->sleep_mutex);
        if (ep->active_waiters++ == 0 && ep->armed) {
            ep->transport->disarm_sleep();
            ep->armed = false;
        }
    }
    auto leave_polling = [ep] {
        bool armed_now = false;
        {
            std::lock_guard g(ep->sleep_mutex);
            if (--ep->active_waiters == 0 && ep->progress_sleeping && !ep->armed) {
                ep->transport->arm_sleep();
                ep->armed = armed_now = true;
            }
        }
        // A frame that arrived after our last poll but before the arm rang no doorbell, and the
        // progress thread sleeps: deliver it now, whichever way we leave.
        if (armed_now)
            while (ep->transport->has_pending() && ep->poll() > 0) {
            }
    };
    bool polling = true;
    int rc;
    for (;;) {
        const uint32_t seq = notify_seq_.load(std::memory_order_acquire);
        if (ready()) {
            rc = PTL_OK;
            break;
        }
        if (aborted_.load(std::memory_order_acquire)) {
            rc = PTL_ABORTED;
            break;
        }
        const uint64_t now = monotonic_ns();
        if (now >= deadline) {
            rc = timeout_rc;
            break;
        }
        if (polling && now < spin_until) {
            if (ep->poll() == 0) cpu_relax();
            continue;
        }
        if (polling) {
            polling = false;
            leave_polling();
            continue;
        }
        // ready() may consume what it finds (an EQ event), so a success here is the result:
        // calling it again would lose that event.
        bool got = false;
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (notify_seq_.load(std::memory_order_seq_cst) == seq) {
            got = ready();
            if (!got) futex_wait(notify_seq_, seq, forever ? -1 : static_cast<int64_t>(deadline - now));
        }
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        if (got) {
            rc = PTL_OK;
            break;
        }
    }
    if (polling) leave_polling();
    return rc;
}

} // namespace portico::engine
