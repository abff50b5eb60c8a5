// SPDX-License-Identifier: BSD-3-Clause
// Split-phase barriers (§3.5): a dissemination barrier over Portals puts.
//
// In round r (r < ceil(log2 N)) a node sends its combined value to node + 2^r and combines what
// node - 2^r sent it; after the last round every node has combined the (id, flags) of all nodes,
// so every node detects a mismatch. A round's value is a 16-byte put into the partner's barrier
// slot for (parity, round); the PUT event tells the partner it arrived (no AM handler involved).
// Consecutive barriers alternate parity: a node can be at most one barrier ahead of another.
#include <cstring>

#include "internal.hpp"

namespace gasnetp {

namespace {

constexpr uint32_t kNamed = 1u << 31;

struct Barrier {
    std::mutex mu;
    uint32_t phase = 0;    // barriers notified so far
    bool notified = false; // between notify and wait/try
    int notify_id = 0, notify_flags = 0;
    // The combined value so far.
    bool named = false, mismatch = false;
    int32_t id = 0;
    int recv_round = 0, sent_rounds = 0;
    uint32_t arrived[2] = {0, 0}; // rounds that arrived, per parity
    std::atomic<bool> done{false};
    // The last completed barrier, for gasnet_barrier_result: named by some node, and that id.
    bool result_named = false;
    int32_t result_id = 0;
};
Barrier *bar = nullptr;

void combine(bool named, int32_t id, bool mismatch) {
    if (mismatch) bar->mismatch = true;
    if (named) {
        if (bar->named && bar->id != id) bar->mismatch = true;
        bar->named = true;
        bar->id = id;
    }
}

void send_round(int r) {
    const uint32_t par = bar->phase & 1;
    BarrierSlot s{};
    s.seq = bar->phase;
    s.id = bar->id;
    s.flags = (bar->named ? kNamed : 0) | (bar->mismatch ? GASNET_BARRIERFLAG_MISMATCH : 0);
    const gasnet_node_t to = gasnet_node_t((uint64_t(state->mynode) + (uint64_t(1) << r)) % state->nodes);
    put_copy(to, state->pt_ctrl, kMbBarrier,
             (uint64_t(par) * uint64_t(state->barrier_rounds) + uint64_t(r)) * sizeof(BarrierSlot), &s, sizeof s,
             PTL_NO_ACK_REQ, nullptr, 0);
}

// Sends and combines rounds as far as the arrivals allow. Caller holds bar->mu.
void advance() {
    const uint32_t par = bar->phase & 1;
    while (bar->notified && !bar->done.load(std::memory_order_relaxed)) {
        const int r = bar->recv_round;
        if (r == state->barrier_rounds) {
            bar->done.store(true, std::memory_order_release);
            break;
        }
        if (bar->sent_rounds <= r) {
            send_round(r);
            bar->sent_rounds = r + 1;
        }
        if (!(bar->arrived[par] & (1u << r))) break;
        bar->arrived[par] &= ~(1u << r);
        const BarrierSlot &s = state->barrier_slots[size_t(par) * size_t(state->barrier_rounds) + size_t(r)];
        if (s.seq != bar->phase)
            fatal("barrier protocol error (round %d of barrier %u got barrier %u)", r, bar->phase, s.seq);
        combine(s.flags & kNamed, s.id, s.flags & GASNET_BARRIERFLAG_MISMATCH);
        ++bar->recv_round;
    }
}

int finish(int id, int flags, const char *fn) {
    // Caller holds bar->mu and the barrier is done.
    int rc = GASNET_OK;
    if (bar->mismatch || flags != bar->notify_flags || (flags == 0 && id != bar->notify_id))
        rc = GASNET_ERR_BARRIER_MISMATCH;
    (void)fn;
    bar->notified = false;
    bar->result_named = bar->named;
    bar->result_id = bar->id;
    return rc;
}

void check_flags(int flags, const char *fn) {
    if (flags & ~(GASNET_BARRIERFLAG_UNNAMED | GASNET_BARRIERFLAG_MISMATCH))
        fatal("%s: unknown flags 0x%x", fn, unsigned(flags));
}

} // namespace

void barrier_setup() {
    bar = new Barrier;
    int rounds = 0;
    while ((uint64_t(1) << rounds) < state->nodes) ++rounds;
    state->barrier_rounds = rounds;
    if (rounds == 0) return;
    state->barrier_slots = new BarrierSlot[2 * size_t(rounds)]();
    append_me(state->pt_ctrl,
              ck::me_desc(state->barrier_slots, 2 * sizeof(BarrierSlot) * size_t(rounds),
                          PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE, kMbBarrier),
              "PtlMEAppend (barrier)");
}

void barrier_arrival(const ptl_event_t &ev) {
    const size_t idx = size_t(static_cast<BarrierSlot *>(ev.start) - state->barrier_slots);
    const uint32_t par = uint32_t(idx / size_t(state->barrier_rounds));
    const int r = int(idx % size_t(state->barrier_rounds));
    std::lock_guard lk(bar->mu);
    bar->arrived[par] |= 1u << r;
    advance();
}

} // namespace gasnetp

using namespace gasnetp;

GASNETP_EXPORT void gasnet_barrier_notify(int id, int flags) {
    if (!state || !state->attached.load(std::memory_order_acquire))
        fatal("gasnet_barrier_notify called before gasnet_attach()");
    check_flags(flags, "gasnet_barrier_notify");
    std::lock_guard lk(bar->mu);
    if (bar->notified) fatal("gasnet_barrier_notify called twice without a gasnet_barrier_wait in between");
    ++bar->phase;
    bar->notified = true;
    bar->notify_id = id;
    bar->notify_flags = flags;
    bar->named = false;
    bar->mismatch = false;
    bar->id = 0;
    combine(!(flags & GASNET_BARRIERFLAG_ANONYMOUS), id, flags & GASNET_BARRIERFLAG_MISMATCH);
    bar->recv_round = 0;
    bar->sent_rounds = 0;
    bar->done.store(false, std::memory_order_relaxed);
    advance();
}

GASNETP_EXPORT int gasnet_barrier_wait(int id, int flags) {
    if (!state || !state->attached.load(std::memory_order_acquire))
        fatal("gasnet_barrier_wait called before gasnet_attach()");
    check_flags(flags, "gasnet_barrier_wait");
    {
        std::lock_guard lk(bar->mu);
        if (!bar->notified) fatal("gasnet_barrier_wait without a preceding gasnet_barrier_notify");
    }
    wait_until(ctx_of(ts()), [] { return bar->done.load(std::memory_order_acquire); });
    std::lock_guard lk(bar->mu);
    return finish(id, flags, "gasnet_barrier_wait");
}

GASNETP_EXPORT int gasnet_barrier_try(int id, int flags) {
    if (!state || !state->attached.load(std::memory_order_acquire))
        fatal("gasnet_barrier_try called before gasnet_attach()");
    check_flags(flags, "gasnet_barrier_try");
    {
        std::lock_guard lk(bar->mu);
        if (!bar->notified) fatal("gasnet_barrier_try without a preceding gasnet_barrier_notify");
    }
    if (!bar->done.load(std::memory_order_acquire)) poll_try(ctx_of(ts()));
    std::lock_guard lk(bar->mu);
    if (!bar->done.load(std::memory_order_acquire)) return GASNET_ERR_NOT_READY;
    return finish(id, flags, "gasnet_barrier_try");
}

// GASNet-1's blocking barrier and its result (extensions every GASNet-1 conduit has, not in the
// 1.8.1 spec): notify then wait; the result is nonzero when no node named the last barrier,
// else 0 with the id they named.
GASNETP_EXPORT int gasnet_barrier(int id, int flags) {
    gasnet_barrier_notify(id, flags);
    return gasnet_barrier_wait(id, flags);
}

GASNETP_EXPORT int gasnet_barrier_result(int *id) {
    if (!state || !state->attached.load(std::memory_order_acquire))
        fatal("gasnet_barrier_result called before gasnet_attach()");
    if (!id) fatal("gasnet_barrier_result: id is NULL");
    std::lock_guard lk(bar->mu);
    if (bar->notified) fatal("gasnet_barrier_result called between gasnet_barrier_notify and its wait or try");
    *id = bar->result_id;
    return bar->result_named ? 0 : 1;
}
