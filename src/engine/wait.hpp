// How a thread waits for an event or a count: poll the transport itself for a short, bounded time
// (a ping-pong then never pays a thread hand-off), then sleep. The first thread to sleep sleeps in
// the transport itself (epoll on the doorbells and sockets), so a message from a peer wakes it
// directly and it handles the message itself; the endpoint's progress thread parks meanwhile.
// Other waiting threads sleep on the engine's notification word.
#pragma once

#include <algorithm>
#include <climits>

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
    // Arms the doorbells if nobody polls any more and somebody sleeps (in the transport or the
    // progress thread in its wait); caller holds sleep_mutex. True if it did.
    auto arm_if_unwatched = [ep] {
        // Re-arming is not redundant when already armed: a peer that rang cleared its flag.
        if (ep->active_waiters > 0 || !(ep->progress_sleeping || ep->app_sleeping)) return false;
        ep->transport->arm_sleep();
        ep->armed = true;
        return true;
    };
    // A frame that arrived after our last poll but before the arm rang no doorbell: deliver it.
    auto drain_after_arm = [ep] {
        while (ep->transport->has_pending() && ep->poll() > 0) {
        }
    };
    // Stops polling; the first thread to go to sleep becomes the one that sleeps in the transport
    // (peers' doorbells wake it directly, without a hand-off through the progress thread).
    auto leave_polling = [this, ep, &arm_if_unwatched, &drain_after_arm](bool to_sleep) {
        bool armed_now, unpark = false, sleeper = false;
        {
            std::lock_guard g(ep->sleep_mutex);
            Endpoint *none = nullptr;
            if (to_sleep && transport_sleeper_.compare_exchange_strong(none, ep, std::memory_order_seq_cst))
                sleeper = ep->app_sleeping = true;
            --ep->active_waiters;
            armed_now = arm_if_unwatched();
            if (!ep->app_watching() && ep->progress_parked) unpark = true;
        }
        if (unpark) unpark_progress(*ep);
        if (armed_now) drain_after_arm();
        return sleeper;
    };
    auto leave_transport = [this, ep] {
        bool unpark = false;
        {
            std::lock_guard g(ep->sleep_mutex);
            ep->app_sleeping = false;
            transport_sleeper_.store(nullptr, std::memory_order_seq_cst);
            if (ep->armed && !ep->progress_sleeping && ep->active_waiters == 0) {
                ep->transport->disarm_sleep();
                ep->armed = false;
            }
            unpark = !ep->app_watching() && ep->progress_parked;
        }
        if (unpark) unpark_progress(*ep);
    };
    bool polling = true, in_transport = false;
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
            in_transport = leave_polling(true);
            continue;
        }
        const int wait_ms = forever ? -1 : static_cast<int>(std::min<uint64_t>((deadline - now + 999999) / 1000000, INT32_MAX));
        if (in_transport) {
            // Sleep in the transport: notify_waiters() wakes it, frames and doorbells end it.
            bool armed_now;
            {
                std::lock_guard g(ep->sleep_mutex);
                armed_now = arm_if_unwatched();
            }
            if (armed_now) drain_after_arm();
            if (notify_seq_.load(std::memory_order_seq_cst) == seq && !ep->transport->has_pending())
                ep->sleep_in_transport(wait_ms);
            {
                std::lock_guard g(ep->sleep_mutex);
                if (ep->armed && !ep->progress_sleeping && ep->active_waiters == 0) {
                    ep->transport->disarm_sleep();
                    ep->armed = false;
                }
            }
            while (ep->poll() > 0) {
            }
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
    if (polling) leave_polling(false);
    if (in_transport) leave_transport();
    return rc;
}

} // namespace portico::engine
