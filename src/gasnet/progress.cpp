// SPDX-License-Identifier: BSD-3-Clause
// Progress and waiting: draining the event queues (completing operations, running handlers) and
// blocking without burning a core.
//
// One thread at a time (the "poller") sleeps in PtlEQPoll over the queues its context may serve;
// the engine polls the network itself while that thread waits, so a ping-pong never pays a thread
// hand-off. Other waiting threads sleep on a condition variable and are woken whenever any thread
// has processed events (the generation counter), so a thread blocked in GASNET_BLOCKUNTIL wakes
// when another thread's gasnet_AMPoll ran the handler it waits for.
#include <gasnet_tools.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "internal.hpp"

namespace gasnetp {

namespace {
std::mutex thread_states_mu;
std::vector<ThreadState *> *thread_states = nullptr; // keeps every thread's state reachable
std::atomic<unsigned> client_threads{0};             // threads that have called GASNet

// The special user_ptr of a SEND that nobody waits for (LongAsync payloads), and of the loopback
// "tick" that bounds a spinning thread's wait in the engine (poll_try).
constexpr uintptr_t kIgnore = 4;
constexpr uintptr_t kTick = 8;
std::atomic<int> ticks_in_flight{0};

void handle_op_event(const ptl_event_t &ev) {
    state->inflight.fetch_sub(1, std::memory_order_relaxed);
    if (ev.ni_fail_type != PTL_NI_OK) {
        // The target has left because some node exited non-collectively: that exit decides how
        // this process ends, not the failure it left behind.
        if (ev.ni_fail_type == PTL_NI_UNDELIVERABLE && exit_under_way(true)) follow_exit();
        const char *what = ev.type == PTL_EVENT_ACK     ? "put"
                           : ev.type == PTL_EVENT_REPLY ? "get"
                           : ev.type == PTL_EVENT_SEND  ? "send"
                                                        : "operation";
        fatal("a %s failed: %s%s", what, ck::fail_name(ev.ni_fail_type),
              ev.ni_fail_type == PTL_NI_SEGV            ? " (a remote address is not accessible)"
              : ev.ni_fail_type == PTL_NI_UNDELIVERABLE ? " (the peer is gone)"
                                                        : "");
    }
    const uintptr_t u = reinterpret_cast<uintptr_t>(ev.user_ptr);
    if (u == kIgnore) return;
    if (u == kTick) {
        ticks_in_flight.fetch_sub(1, std::memory_order_relaxed);
        return;
    }
    switch (u & kTagMask) {
    case 0: reinterpret_cast<OpCounter *>(u)->pending.fetch_sub(1, std::memory_order_release); break;
    case kTagFlag: reinterpret_cast<std::atomic<int> *>(u & ~kTagMask)->store(1, std::memory_order_release); break;
    case kTagDual: {
        Dual *d = reinterpret_cast<Dual *>(u & ~kTagMask);
        if (ev.type == PTL_EVENT_SEND)
            d->sent.store(1, std::memory_order_release);
        else
            d->ctr->pending.fetch_sub(1, std::memory_order_release);
        if (d->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete d;
        break;
    }
    default: fatal("corrupt completion event");
    }
}

int drain_ops(int max) {
    int n = 0;
    ptl_event_t ev;
    while (n < max) {
        const int rc = PtlEQGet(state->eq_ops, &ev);
        if (rc == PTL_EQ_EMPTY) break;
        if (rc == PTL_EQ_DROPPED) fatal("the completion queue overflowed (raise GASNET_OPS_EQ_SIZE)");
        check_ptl(rc, "PtlEQGet");
        handle_op_event(ev);
        ++n;
    }
    return n;
}

int drain_am(int cls, int max) {
    int n = 0;
    ptl_event_t ev;
    while (n < max) {
        const int rc = PtlEQGet(state->zones[cls].eq, &ev);
        if (rc == PTL_EQ_EMPTY) break;
        if (rc == PTL_EQ_DROPPED) fatal("the active-message event queue overflowed");
        check_ptl(rc, "PtlEQGet");
        handle_am_event(cls, ev);
        ++n;
    }
    return n;
}
} // namespace

constinit thread_local ThreadState *t_thread_state = nullptr;

ThreadState &first_thread_state() {
    auto *t = new ThreadState;
    {
        std::lock_guard lk(thread_states_mu);
        if (!thread_states) thread_states = new std::vector<ThreadState *>;
        thread_states->push_back(t);
    }
    client_threads.fetch_add(1, std::memory_order_relaxed);
    t_thread_state = t;
    return *t;
}

Ctx ctx_of(const ThreadState &t) {
    if (t.nis || t.hsl_held) return Ctx::Restricted;
    if (t.in_handler) return t.replying ? Ctx::Replying : Ctx::Restricted;
    return Ctx::Normal;
}

void bump_generation() {
    state->generation.fetch_add(1, std::memory_order_seq_cst);
    if (state->followers.load(std::memory_order_seq_cst) > 0) {
        std::lock_guard lk(state->wait_mu);
        state->wait_cv.notify_all();
    }
}

int poll(Ctx ctx) {
    if (!state || !state->inited) return 0;
    int n = drain_ops(256);
    if (state->attached.load(std::memory_order_acquire) && ctx != Ctx::Restricted) {
        n += drain_am(kRep, 64);
        if (ctx == Ctx::Normal) n += drain_am(kReq, 64);
    }
    if (n) bump_generation();
    return n;
}

void block_step(Ctx ctx, unsigned *iter) {
    const uint64_t gen0 = state->generation.load(std::memory_order_seq_cst);
    if (state->poller.exchange(1, std::memory_order_acq_rel) == 0) {
        // We sleep in the engine until the next event; PtlEQPoll looks at the queues first and
        // the engine polls the network itself before it sleeps. One event per step: the caller
        // re-checks its condition after each.
        ptl_handle_eq_t eqs[3];
        unsigned n = 0;
        eqs[n++] = state->eq_ops;
        if (state->attached.load(std::memory_order_acquire) && ctx != Ctx::Restricted) {
            eqs[n++] = state->zones[kRep].eq;
            if (ctx == Ctx::Normal) eqs[n++] = state->zones[kReq].eq;
        }
        // Conditions that no event announces (a flag another client thread set, or a handler it
        // ran) are re-checked every few ms. A process's only client thread backs off to 128 ms
        // instead: nothing but its own events can change its condition, and each wake-up of a
        // waiter polls every link of the process (at 1 ms, a 1024-process job on 2 cores did
        // nothing but those wake-ups). The bound covers a second thread that starts meanwhile.
        const ptl_time_t timeout = client_threads.load(std::memory_order_relaxed) > 1
                                       ? (*iter < 64 ? 1 : 8)
                                       : ptl_time_t{1} << std::min(*iter, 7u);
        ptl_event_t ev;
        unsigned which = 0;
        const int rc = PtlEQPoll(eqs, n, timeout, &ev, &which);
        state->poller.store(0, std::memory_order_release);
        if (rc == PTL_OK) {
            if (which == 0)
                handle_op_event(ev);
            else
                handle_am_event(which == 1 ? kRep : kReq, ev);
            bump_generation();
            *iter = 0;
        } else if (rc == PTL_EQ_EMPTY) {
            ++*iter;
        } else if (rc == PTL_EQ_DROPPED) {
            fatal("an event queue overflowed");
        } else {
            fatal("PtlEQPoll failed: %s", ptl_rc_name(rc));
        }
        return;
    }
    // Somebody else sleeps in the engine: drain what is there, then wait until any thread has
    // handled something.
    if (poll(ctx) > 0) {
        *iter = 0;
        return;
    }
    if (state->wait_mode == GASNET_WAIT_SPIN) {
        sched_yield();
        ++*iter;
        return;
    }
    std::unique_lock lk(state->wait_mu);
    state->followers.fetch_add(1, std::memory_order_seq_cst);
    if (state->generation.load(std::memory_order_seq_cst) == gen0)
        state->wait_cv.wait_for(lk, std::chrono::milliseconds(*iter < 64 ? 1 : 8));
    state->followers.fetch_sub(1, std::memory_order_seq_cst);
    ++*iter;
}

// A non-blocking poll for the try-style calls (gasnet_AMPoll, try_sync*, barrier_try). Clients
// spin on these, and PtlEQGet does not move the network (nor does PtlEQPoll with timeout 0):
// that is left to the engine's progress thread, which sleeps when idle and then needs a wake-up
// per message (tens of microseconds). So when a thread spins — kSpinCalls calls in a row, each
// within kSpinGapNs of the previous one's return, all finding nothing — it lets the engine poll
// the network on its behalf: it sleeps in PtlEQPoll until the next event. (A compute loop that
// polls between pieces of work is not spinning and never waits here.) If such a wait ever times out (1 ms: the client waits for something no event
// announces, such as a flag written by a put), the thread's later waits are bounded by a 0-byte
// loopback get (the "tick", a few microseconds), until a real event comes again; and while
// waits keep ending with nothing but the tick, only every 2^k-th spinning call waits (k <= 3),
// so a loop that polls between very short pieces of work pays little for it.
int poll_try(Ctx ctx) {
    constexpr uint64_t kSpinGapNs = 2000;
    constexpr unsigned kSpinCalls = 8;
    ThreadState &t = ts();
    const uint64_t entry = gasnett_ticks_to_ns(gasnett_ticks_now());
    t.try_streak = entry - t.last_try_ns < kSpinGapNs ? t.try_streak + 1 : 0;
    int n = poll(ctx);
    t.last_try_ns = gasnett_ticks_to_ns(gasnett_ticks_now());
    if (n > 0) t.try_streak = 0;
    if (n > 0 || t.try_streak < kSpinCalls || !state->inited) return n;
    if (t.tick_mode && (t.try_streak & ((1u << t.idle_ticks) - 1)) != 0) return n;
    if (state->poller.exchange(1, std::memory_order_acq_rel) != 0) return n; // another thread drives it
    if (t.tick_mode && ticks_in_flight.fetch_add(1, std::memory_order_relaxed) == 0) {
        reserve_events(1);
        check_ptl(PtlGet(state->md_bulk, 0, 0, proc(state->mynode), state->pt_ctrl, kMbPoke, 0,
                         reinterpret_cast<void *>(kTick)),
                  "PtlGet (tick)");
    } else if (t.tick_mode) {
        ticks_in_flight.fetch_sub(1, std::memory_order_relaxed); // one tick in flight is enough
    }
    ptl_handle_eq_t eqs[3];
    unsigned k = 0;
    eqs[k++] = state->eq_ops;
    if (state->attached.load(std::memory_order_acquire) && ctx != Ctx::Restricted) {
        eqs[k++] = state->zones[kRep].eq;
        if (ctx == Ctx::Normal) eqs[k++] = state->zones[kReq].eq;
    }
    ptl_event_t ev;
    unsigned which = 0;
    const int rc = PtlEQPoll(eqs, k, 1, &ev, &which);
    state->poller.store(0, std::memory_order_release);
    if (rc == PTL_OK) {
        if (which == 0)
            handle_op_event(ev);
        else
            handle_am_event(which == 1 ? kRep : kReq, ev);
        if (ev.user_ptr != reinterpret_cast<void *>(kTick)) {
            ++n;
            t.tick_mode = false;
            t.idle_ticks = 0;
        } else if (t.idle_ticks < 3) {
            ++t.idle_ticks;
        }
        n += poll(ctx);
        bump_generation();
    } else if (rc == PTL_EQ_EMPTY) {
        t.tick_mode = true;
    } else if (rc == PTL_EQ_DROPPED) {
        fatal("an event queue overflowed");
    }
    t.last_try_ns = gasnett_ticks_to_ns(gasnett_ticks_now());
    return n;
}

void reserve_events(int64_t k) {
    const int64_t cap = int64_t(state->eq_ops_size) - 8;
    unsigned iter = 0;
    int64_t cur = state->inflight.load(std::memory_order_relaxed);
    for (;;) {
        if (cur + k <= cap) {
            if (state->inflight.compare_exchange_weak(cur, cur + k, std::memory_order_relaxed)) return;
            continue;
        }
        block_step(Ctx::Restricted, &iter); // completions need no handler: never deadlocks
        cur = state->inflight.load(std::memory_order_relaxed);
    }
}

void put_copy(gasnet_node_t dest, ptl_pt_index_t pt, ptl_match_bits_t mb, uint64_t remote_offset, const void *buf,
              size_t len, ptl_ack_req_t ack, void *user_ptr, ptl_hdr_data_t hdr, size_t copy_max) {
    const uint64_t local = reinterpret_cast<uint64_t>(buf);
    if (len <= state->vol_max && len <= copy_max) {
        // The volatile MD copies the bytes before PtlPut returns. Without an ack nothing comes
        // back, so the MD without an EQ serves (Active Messages, credits, barrier signals).
        if (ack != PTL_NO_ACK_REQ) reserve_events(1);
        check_ptl(PtlPut(ack == PTL_NO_ACK_REQ ? state->md_quiet : state->md_vol, local, len, ack, proc(dest), pt, mb,
                         remote_offset, user_ptr, hdr),
                  "PtlPut");
        return;
    }
    // Too large to be copied at once: wait for the SEND event (the engine, not the target
    // application, completes it), completing other operations meanwhile but running no handler.
    if (ack == PTL_NO_ACK_REQ) {
        std::atomic<int> sent{0};
        reserve_events(1);
        check_ptl(PtlPut(state->md_send, local, len, ack, proc(dest), pt, mb, remote_offset,
                         reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(&sent) | kTagFlag), hdr),
                  "PtlPut");
        wait_until(Ctx::Restricted, [&] { return sent.load(std::memory_order_acquire) != 0; });
        return;
    }
    Dual *d = new Dual;
    d->ctr = static_cast<OpCounter *>(user_ptr);
    reserve_events(2);
    check_ptl(PtlPut(state->md_send, local, len, ack, proc(dest), pt, mb, remote_offset,
                     reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(d) | kTagDual), hdr),
              "PtlPut");
    wait_until(Ctx::Restricted, [&] { return d->sent.load(std::memory_order_acquire) != 0; });
    if (d->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete d;
}

void *ignore_send_tag() { return reinterpret_cast<void *>(kIgnore); }

} // namespace gasnetp

using namespace gasnetp;

GASNETP_EXPORT int gasnet_AMPoll(void) {
    if (!state || !state->attached.load(std::memory_order_acquire)) return GASNET_ERR_NOT_INIT;
    ThreadState &t = ts();
    if (t.in_handler) return GASNET_ERR_BAD_ARG; // handlers may not poll (§2.4.1)
    poll_try(ctx_of(t));
    return GASNET_OK;
}

GASNETP_EXPORT void gasnetp_blockuntil_step(unsigned *iteration) {
    if (!state || !state->inited) fatal("GASNET_BLOCKUNTIL before gasnet_init");
    block_step(ctx_of(ts()), iteration);
}
