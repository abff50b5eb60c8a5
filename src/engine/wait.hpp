// SPDX-License-Identifier: BSD-3-Clause
// How a thread waits for an event or a count: poll the transport itself for a bounded time (a
// ping-pong then never pays a thread hand-off, and the progress thread stays parked), yielding the
// core after the first microseconds, then sleep until news about its EQs or CTs while the
// endpoint's progress thread, told to listen for peers' doorbells, keeps things moving.
#pragma once

#include <algorithm>
#include <sched.h>

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
        for (unsigned i = 0; i < pinned_; ++i) (*this)[i]->users.fetch_sub(1);
    }
    // No engine lock needed: pin (Engine::pin) returns each object with its users count raised,
    // or nullptr. PTL_ARG_INVALID for an unknown handle or objects of different interfaces.
    template <class Pin> int resolve(const ptl_handle_any_t *hs, unsigned n, Pin pin) {
        if (n > 8) {
            large_.resize(n);
            objs_ = large_.data();
        }
        for (unsigned i = 0; i < n; ++i) {
            T *o = pin(hs[i]);
            if (!o) return PTL_ARG_INVALID;
            objs_[pinned_++] = o;
            if (ep_ && o->ni->ep != ep_) return PTL_ARG_INVALID;
            ep_ = o->ni->ep;
        }
        return PTL_OK;
    }
    T *operator[](unsigned i) const { return static_cast<T *>(objs_[i]); }
    // The objects as a sleeper registers them (see Engine::Sleeper): kept in this form so that
    // registering costs nothing.
    Waitable *const *addresses() const { return objs_; }
    unsigned size() const { return pinned_; }
    Endpoint *endpoint() const { return ep_; }

private:
    Waitable *small_[8];
    std::vector<Waitable *> large_;
    Waitable **objs_ = small_;
    unsigned pinned_ = 0;
    Endpoint *ep_ = nullptr;
};

// A sched_yield that took this long ran somebody else meanwhile (a bare one costs well under 1 µs).
inline constexpr uint64_t kYieldSwitchedNs = 1500;

template <class Ready, class Activity>
int Engine::wait_for(Endpoint *ep, ptl_time_t timeout_ms, int timeout_rc, Ready ready, Activity activity,
                     Waitable *const *objs, unsigned nobjs, WaitStyle style) {
    const bool passive = style == WaitStyle::Passive;
    // A thread that waits wants its bundled messages delivered: never deadlock inside a bundle.
    if (!passive) ep->transport->flush_wakeups();
    // What is there already (a SEND event, or what one poll brings) needs none of the bookkeeping
    // below: a ping-pong waits for several events per message and most are ready at once.
    if (ready()) return PTL_OK;
    if (!passive) {
        // While we poll, the progress thread parks (see Endpoint). Counted only once we poll: a
        // loop of waits that are all satisfied at once moves no frame, and a progress thread that
        // took it for polling would leave the frames to nobody.
        ep->note_app_call();
        if (ep->poll() > 0 && ready()) return PTL_OK;
    }
    if (timeout_ms == 0) return aborted_.load(std::memory_order_acquire) ? PTL_ABORTED : timeout_rc;

    const Tunables &t = Tunables::get();
    const uint64_t spin_ns = Tunables::wait_spin_ns();
    const uint64_t start = monotonic_ns();
    const bool forever = timeout_ms < 0;
    const uint64_t deadline = forever ? UINT64_MAX : start + static_cast<uint64_t>(timeout_ms) * 1000000ull;
    uint64_t pause_until = 0, spin_until = 0;
    bool polling = false, yielding = true;
    auto enter_polling = [&](uint64_t from) {
        pause_until = from + std::min(t.wait_pause_ns, spin_ns);
        spin_until = from + spin_ns;
        polling = yielding = true;
        std::lock_guard g(ep->sleep_mutex);
        // An armed progress thread would be rung for every frame we are about to poll for
        // ourselves: stop the doorbells; it re-decides (and parks) when it next wakes.
        if (ep->active_waiters++ == 0 && ep->armed) {
            ep->transport->disarm_sleep();
            ep->armed = false;
        }
    };
    if (!passive) enter_polling(start);
    auto leave_polling = [ep, &polling](bool to_sleep) {
        polling = false;
        bool rearmed = false;
        {
            std::lock_guard g(ep->sleep_mutex);
            --ep->active_waiters;
            if (ep->progress == Endpoint::Progress::Armed && !ep->armed && ep->active_waiters == 0) {
                // We disarmed it and it has slept through our wait: it is the one listening again.
                ep->transport->arm_sleep();
                ep->armed = rearmed = true;
            }
            // Whoever sleeps needs the progress thread listening for peers' doorbells.
            if (to_sleep) ep->request_arm();
        }
        // A frame that came after our last poll rang no doorbell: deliver it before leaving.
        if (rearmed)
            while (ep->transport->has_pending() && ep->poll() > 0) {
            }
    };
    // A timeout is reported only after one more look at the transport: after a stall longer than
    // the timeout (a descheduled host, a progress thread that never ran), what arrived meanwhile is
    // in the rings, and nobody has handled it yet.
    auto last_look = [&] { return ready() || (!passive && ep->poll() > 0 && ready()); };
    int rc;
    unsigned spins = 0;
    uint64_t now = start;
    for (;;) {
        if (ready()) {
            rc = PTL_OK;
            break;
        }
        if (aborted_.load(std::memory_order_acquire)) {
            rc = PTL_ABORTED;
            break;
        }
        if (polling) {
            const int work = ep->poll();
            // The clock is read every few turns only: polling an empty ring is cheaper than it.
            const bool clock_read = (++spins & 7) == 0;
            if (clock_read) now = monotonic_ns();
            if (now >= deadline && (work == 0 || clock_read)) {
                rc = last_look() ? PTL_OK : timeout_rc;
                break;
            }
            if (work > 0 || now < pause_until) {
                if (work == 0) cpu_relax();
                continue;
            }
            // Past the first microseconds, give the core away on every turn: with more processes
            // than cores the peer we wait for may need exactly this one. A yield that comes back
            // at once had nobody to give the core to; then plain spinning is cheaper (a system
            // call per turn slows down the thread that polls and everybody's caches).
            if (now < spin_until) {
                if (yielding) {
                    const uint64_t before = now;
                    sched_yield();
                    now = monotonic_ns();
                    if (now - before < kYieldSwitchedNs) yielding = false;
                } else {
                    cpu_relax();
                }
                continue;
            }
            leave_polling(true);
            continue;
        }
        now = monotonic_ns();
        if (now >= deadline) {
            rc = last_look() ? PTL_OK : timeout_rc;
            break;
        }
        // Registered before the last look, so news that comes after it wakes us (notify_waiters).
        // ready() may consume what it finds (an EQ event), so a success here is the result:
        // calling it again would lose that event.
        const uint64_t before = activity();
        Sleeper me;
        me.objs = objs;
        me.nobjs = nobjs;
        std::atomic<int> &kind = passive ? passive_sleepers_ : sleepers_;
        kind.fetch_add(1, std::memory_order_seq_cst);
        for (unsigned i = 0; i < nobjs; ++i) objs[i]->sleepers.fetch_add(1, std::memory_order_seq_cst);
        if (nobjs == 0) wildcard_sleepers_.fetch_add(1, std::memory_order_seq_cst);
        {
            std::lock_guard g(sleepers_mutex_);
            sleeping_.push_back(&me);
        }
        const bool got = ready();
        if (!got) futex_wait(me.word, 0, forever ? -1 : static_cast<int64_t>(deadline - now));
        {
            std::lock_guard g(sleepers_mutex_);
            std::erase(sleeping_, &me);
        }
        if (nobjs == 0) wildcard_sleepers_.fetch_sub(1, std::memory_order_relaxed);
        for (unsigned i = 0; i < nobjs; ++i) objs[i]->sleepers.fetch_sub(1, std::memory_order_relaxed);
        kind.fetch_sub(1, std::memory_order_relaxed);
        if (got) {
            rc = PTL_OK;
            break;
        }
        // What we wait for moved but is not there yet (a counter on its way to its threshold):
        // the traffic is here, so poll for it ourselves again instead of being woken per message.
        if (!passive && activity() != before) enter_polling(monotonic_ns());
    }
    if (polling) leave_polling(false);
    return rc;
}

} // namespace portico::engine
