// SPDX-License-Identifier: BSD-3-Clause
// Event queues (spec §3.13).
#include "engine/trace.hpp"
#include "engine/wait.hpp"

namespace portico::engine {

void Engine::retire_eq(EQ *eq) {
    if (eq->users.load(std::memory_order_seq_cst) > 0) {
        dead_eqs_.emplace_back(eq); // a waiter is still inside; it leaves when woken
        notify_waiters();
        return;
    }
    // Only users is ever touched by a thread that finds it without the lock, before it sees the
    // handle is gone: the rest can be reset.
    eq->events.release();
    eq->ni = nullptr;
    eq->handle = 0;
    spare_eqs_.emplace_back(eq);
}

int Engine::eq_alloc(ptl_handle_ni_t h, ptl_size_t count, ptl_handle_eq_t *out) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !out || count == 0) return PTL_ARG_INVALID;
    if (ni->n_eqs >= ni->limits.max_eqs || count > (1u << 26)) return PTL_NO_SPACE;
    EQ *eq = reuse_or_new(spare_eqs_);
    eq->ni = ni;
    eq->events.reset(count);
    eq->handle = eqs_.insert(ObjType::EQ, eq);
    if (eq->handle == 0) {
        retire_eq(eq);
        return PTL_NO_SPACE;
    }
    ++ni->n_eqs;
    *out = eq->handle;
    return PTL_OK;
}

int Engine::eq_free(ptl_handle_eq_t h) {
    std::lock_guard g(mutex_);
    EQ *eq = eq_of(h);
    if (!eq) return PTL_ARG_INVALID;
    // PTs and MDs that still name the EQ stop producing full events into it.
    for (PT &pt : eq->ni->pts)
        if (pt.eq == eq) pt.eq = nullptr;
    mds_.for_each([&](MD *m) {
        if (m->eq == eq) m->eq = nullptr;
    });
    eqs_.remove(h);
    --eq->ni->n_eqs;
    retire_eq(eq);
    return PTL_OK;
}

void Engine::push_event(EQ *eq, const ptl_event_t &ev) {
    if (trace::enabled())
        trace::line("event eq=%#lx type=%d user_ptr=%p bits=%#lx mlength=%lu fail=%d",
                    static_cast<unsigned long>(eq->handle), ev.type, ev.user_ptr,
                    static_cast<unsigned long>(ev.match_bits), static_cast<unsigned long>(ev.mlength), ev.ni_fail_type);
    eq->events.push(ev, ev.type == PTL_EVENT_PT_DISABLED);
    notify_waiters(eq);
}

namespace {
[[gnu::noinline]] int take_from_ring(EQ *eq, ptl_event_t *ev) {
    const EventRing::Take took = eq->events.take(ev);
    if (took == EventRing::Take::Empty) return PTL_EQ_EMPTY;
    if (trace::enabled())
        trace::line("take eq=%#lx type=%d user_ptr=%p%s", static_cast<unsigned long>(eq->handle), ev->type,
                    ev->user_ptr, took == EventRing::Take::Dropped ? " after dropped events" : "");
    return took == EventRing::Take::Dropped ? PTL_EQ_DROPPED : PTL_OK;
}
// Most queues a poll looks at are empty (GASNet's steps look at three, PtlEQGet spins): that is
// two loads here, not a call.
inline int take_event(EQ *eq, ptl_event_t *ev) { return eq->events.empty() ? PTL_EQ_EMPTY : take_from_ring(eq, ev); }
} // namespace

int Engine::eq_get(ptl_handle_eq_t h, ptl_event_t *ev) {
    // No engine lock: applications poll with PtlEQGet, and the progress thread holds that lock
    // while it delivers.
    if (!ev) return PTL_ARG_INVALID;
    EQ *eq = pin_eq(h);
    if (!eq) return PTL_ARG_INVALID;
    int rc = take_event(eq, ev);
    if (rc == PTL_EQ_EMPTY) {
        // An application that polls with PtlEQGet moves its own messages (see poll_once).
        poll_once(eq->ni->ep);
        rc = take_event(eq, ev);
    }
    eq->users.fetch_sub(1);
    return rc;
}

int Engine::eq_poll(const ptl_handle_eq_t *hs, unsigned n, ptl_time_t timeout, ptl_event_t *ev, unsigned *which,
                    WaitStyle style) {
    // After PtlAbort every wait returns at once (§3.5.3), whatever its handles: a program that
    // freed its EQs since still leaves its wait loop (README decision 22).
    if (aborted_.load(std::memory_order_acquire)) return PTL_ABORTED;
    if (!hs || n == 0 || !ev) return PTL_ARG_INVALID;
    WaitSet<EQ> eqs;
    if (eqs.resolve(hs, n, [this](ptl_handle_any_t h) { return pin_eq(h); }) != PTL_OK) return PTL_ARG_INVALID;
    int result = PTL_EQ_EMPTY;
    auto ready = [&] {
        for (unsigned i = 0; i < n; ++i) {
            // The first EQ of the array that has an event wins.
            int rc = take_event(eqs[i], ev);
            if (rc != PTL_EQ_EMPTY) {
                result = rc;
                if (which) *which = i;
                return true;
            }
        }
        return false;
    };
    const int rc = wait_for(
        eqs.endpoint(), timeout, PTL_EQ_EMPTY, ready, [] { return uint64_t{0}; }, eqs.addresses(), eqs.size(), style);
    return rc == PTL_OK ? result : rc;
}

} // namespace portico::engine
