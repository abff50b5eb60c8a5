// SPDX-License-Identifier: BSD-3-Clause
// Counting events (spec §3.14). Counts are atomics: reading them never takes the engine lock.
#include "engine/trace.hpp"
#include "engine/wait.hpp"

namespace portico::engine {

void Engine::retire_ct(CT *ct) {
    if (ct->users.load(std::memory_order_seq_cst) > 0) {
        dead_cts_.emplace_back(ct);
        notify_waiters();
        return;
    }
    // As retire_eq: only users may be touched by a thread that found it without the lock.
    ct->ni = nullptr;
    ct->handle = 0;
    ct->success.store(0, std::memory_order_relaxed);
    ct->failure.store(0, std::memory_order_relaxed);
    ct->triggers.clear();
    ct->firing = false;
    spare_cts_.emplace_back(ct);
}

int Engine::ct_alloc(ptl_handle_ni_t h, ptl_handle_ct_t *out) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !out) return PTL_ARG_INVALID;
    if (ni->n_cts >= ni->limits.max_cts) return PTL_NO_SPACE;
    CT *ct = reuse_or_new(spare_cts_);
    ct->ni = ni;
    ct->handle = cts_.insert(ObjType::CT, ct);
    if (ct->handle == 0) {
        retire_ct(ct);
        return PTL_NO_SPACE;
    }
    ++ni->n_cts;
    *out = ct->handle;
    if (trace::enabled()) trace::line("ct alloc %#lx", static_cast<unsigned long>(ct->handle));
    return PTL_OK;
}

int Engine::ct_free(ptl_handle_ct_t h) {
    std::lock_guard g(mutex_);
    CT *ct = ct_of(h);
    if (!ct) return PTL_ARG_INVALID;
    if (trace::enabled())
        trace::line("ct free %#lx at (%lu,%lu) dropping %zu triggers", static_cast<unsigned long>(h),
                    static_cast<unsigned long>(ct->success.load()), static_cast<unsigned long>(ct->failure.load()),
                    ct->triggers.size());
    // Its pending triggered operations go (§3.14.3), and so do those elsewhere that would change it.
    drop_triggers(ct);
    cts_.for_each([&](CT *other) {
        for (auto it = other->triggers.begin(); it != other->triggers.end();) {
            if (it->second.ct == ct) {
                --other->ni->n_triggered;
                it = other->triggers.erase(it);
            } else {
                ++it;
            }
        }
    });
    // MDs and entries that still name the CT stop counting into it.
    mds_.for_each([&](MD *m) {
        if (m->ct == ct) m->ct = nullptr;
    });
    entries_.for_each([&](Entry *e) {
        if (e->ct == ct) e->ct = nullptr;
    });
    for (Entry *e : ct->ni->retired) // perhaps out of the handle table, but still counting
        if (e->ct == ct) e->ct = nullptr;
    cts_.remove(h);
    --ct->ni->n_cts;
    retire_ct(ct);
    return PTL_OK;
}

void Engine::ct_add(CT *ct, uint64_t success, uint64_t failure) {
    if (!ct) return;
    // Every writer of a counter holds the engine lock (this, PtlCTSet, a triggered CTSet), so an
    // add is a load and a store: no locked instruction on the path of every counted message.
    if (success) ct->success.store(ct->success.load(std::memory_order_relaxed) + success, std::memory_order_release);
    if (failure) ct->failure.store(ct->failure.load(std::memory_order_relaxed) + failure, std::memory_order_release);
    if (trace::enabled())
        trace::line("ct %#lx +(%lu,%lu) = (%lu,%lu)", static_cast<unsigned long>(ct->handle),
                    static_cast<unsigned long>(success), static_cast<unsigned long>(failure),
                    static_cast<unsigned long>(ct->success.load()), static_cast<unsigned long>(ct->failure.load()));
    notify_waiters(ct);
    if (success && !ct->triggers.empty()) fire_triggers(ct); // only successes trigger (§3.16)
}

int Engine::ct_get(ptl_handle_ct_t h, ptl_ct_event_t *ev) {
    if (!ev) return PTL_ARG_INVALID;
    CT *ct = pin_ct(h); // no engine lock: reading a counter is two loads
    if (!ct) return PTL_ARG_INVALID;
    // An application that polls with PtlCTGet moves its own messages (see poll_once).
    poll_once(ct->ni->ep);
    // A completion whose event the caller may already have seen finishes its count first.
    const uint64_t seq = completion_seq_.load(std::memory_order_acquire);
    if (seq & 1)
        while (completion_seq_.load(std::memory_order_acquire) == seq) cpu_relax();
    ev->success = ct->success.load(std::memory_order_acquire);
    ev->failure = ct->failure.load(std::memory_order_acquire);
    ct->users.fetch_sub(1);
    return PTL_OK;
}

int Engine::ct_poll(const ptl_handle_ct_t *hs, const ptl_size_t *tests, unsigned n, ptl_time_t timeout,
                    ptl_ct_event_t *ev, unsigned *which, WaitStyle style) {
    if (aborted_.load(std::memory_order_acquire)) return PTL_ABORTED; // before the handles: see eq_poll
    if (!hs || !tests || n == 0 || !ev) return PTL_ARG_INVALID;
    WaitSet<CT> cts;
    if (cts.resolve(hs, n, [this](ptl_handle_any_t h) { return pin_ct(h); }) != PTL_OK) return PTL_ARG_INVALID;
    auto ready = [&] {
        for (unsigned i = 0; i < n; ++i) {
            const uint64_t s = cts[i]->success.load(std::memory_order_acquire);
            const uint64_t f = cts[i]->failure.load(std::memory_order_acquire);
            // A counter with failures satisfies every wait, so that errors are never missed.
            if (s >= tests[i] || f != 0) {
                ev->success = s;
                ev->failure = f;
                if (which) *which = i;
                return true;
            }
        }
        return false;
    };
    auto activity = [&] {
        uint64_t sum = 0;
        for (unsigned i = 0; i < n; ++i)
            sum += cts[i]->success.load(std::memory_order_relaxed) + cts[i]->failure.load(std::memory_order_relaxed);
        return sum;
    };
    if (!trace::enabled())
        return wait_for(cts.endpoint(), timeout, PTL_CT_NONE_REACHED, ready, activity, cts.addresses(), cts.size(),
                        style);
    trace::line("wait ct=%#lx test=%lu of %u, timeout %lld ms", static_cast<unsigned long>(hs[0]),
                static_cast<unsigned long>(tests[0]), n, static_cast<long long>(timeout));
    const int rc =
        wait_for(cts.endpoint(), timeout, PTL_CT_NONE_REACHED, ready, activity, cts.addresses(), cts.size(), style);
    if (rc == PTL_OK)
        trace::line("waited ct=%#lx (%lu,%lu)", static_cast<unsigned long>(hs[which ? *which : 0]),
                    static_cast<unsigned long>(ev->success), static_cast<unsigned long>(ev->failure));
    else
        trace::line("waited ct=%#lx rc=%d", static_cast<unsigned long>(hs[0]), rc);
    return rc;
}

int Engine::ct_set(ptl_handle_ct_t h, ptl_ct_event_t v) {
    std::lock_guard g(mutex_);
    CT *ct = ct_of(h);
    if (!ct) return PTL_ARG_INVALID;
    ct->success.store(v.success, std::memory_order_release);
    ct->failure.store(v.failure, std::memory_order_release);
    if (trace::enabled())
        trace::line("ct %#lx set (%lu,%lu)", static_cast<unsigned long>(h), static_cast<unsigned long>(v.success),
                    static_cast<unsigned long>(v.failure));
    notify_waiters(ct);
    fire_triggers(ct);
    return PTL_OK;
}

int Engine::ct_inc(ptl_handle_ct_t h, ptl_ct_event_t v) {
    std::lock_guard g(mutex_);
    CT *ct = ct_of(h);
    if (!ct || (v.success != 0 && v.failure != 0)) return PTL_ARG_INVALID; // one field at a time
    ct_add(ct, v.success, v.failure);
    return PTL_OK;
}

} // namespace portico::engine
