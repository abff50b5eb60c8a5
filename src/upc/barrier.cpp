// SPDX-License-Identifier: BSD-3-Clause
// upc_notify / upc_wait (docs/UPC.md, *Barriers*): a reduction up a tree rooted at thread 0 with
// PTL_MIN atomics, and the agreed value sent down by triggered puts, so that an inner thread's part
// of a barrier proceeds in the engine while the thread itself computes between notify and wait.
//
// What a simpler barrier on triggered operations gets wrong, and how this one avoids it:
// - Counters are never reset: every threshold is a running total (episode e waits for
//   (e + 1) * (children + 1) arrivals), so a fast child's next contribution cannot be lost to a
//   reset, and no reset races the engine.
// - The accumulator is double-buffered by episode parity and re-armed by its owner in wait:
//   contributions to episode e + 2 (same slot) can only come after this thread notified e + 1,
//   which is after the re-arm. No triggered re-arm put, so nothing bumps the UP counter.
// - IDs are 64-bit {min, -max} pairs reduced with one MIN: a mismatch is seen by every thread
//   (MIN alone would hide it from the holders of the minimum), and anonymous is {MAX, MAX}.
// - notify completes earlier writes (a strict write, UPC §5.2) and wait fences after.
// - No barrier message asks for an acknowledgement (a barrier of two threads sent eight messages
//   with them, four without): what this thread sent is counted by its SEND (notify_ct, fwd_ct),
//   and wait returns once its forwards have left. That a child got the agreed value is the
//   child's own wait; teardown after the final barrier adds a job-service barrier, so no
//   process closes its portals while a forward to it is in flight.
#include "state.hpp"

#include <atomic>
#include <climits>
#include <cstring>

namespace portico::upc {

namespace {

constexpr int kFanout = 4;

struct BarrierState {
    uint64_t episode = 0;
    bool active = false;
    bool anonymous = true;
    int64_t id = 0;
    int parent = -1;
    std::vector<int> children;
    BarrierValue contribution[2]{}; // the source of this thread's own MIN, by parity
    uint64_t notifies = 0;          // this thread's own contributions sent (notify_ct)
    uint64_t forwards = 0;          // triggered forwards posted (fwd_ct)
};

BarrierState g_bar;

constexpr uint64_t up_offset(uint64_t parity) {
    return control_offset(&Control::bar_up) + parity * sizeof(BarrierValue);
}
constexpr uint64_t down_offset(uint64_t parity) {
    return control_offset(&Control::bar_down) + parity * sizeof(BarrierValue);
}

void require(int rc, const char *call) {
    if (rc != PTL_OK) fatal(ck::failure(rc, call));
}

ptl_process_t target(int thread) { return ck::rank_id(static_cast<ptl_rank_t>(thread)); }

} // namespace

void barrier_start(Runtime &r) {
    g_bar = BarrierState{};
    g_bar.parent = r.me == 0 ? -1 : (r.me - 1) / kFanout;
    for (int c = r.me * kFanout + 1; c <= r.me * kFanout + kFanout && c < r.n; ++c) g_bar.children.push_back(c);
    const auto limit = static_cast<uint64_t>(r.ni.limits().max_triggered_ops);
    if (limit < g_bar.children.size() + 1)
        throw ck::Error(PTL_NO_SPACE, "the NI allows " + std::to_string(limit) +
                                          " triggered operations; a barrier needs " +
                                          std::to_string(g_bar.children.size() + 1));
}

bool barrier_active() { return g_bar.active; }

void notify(int64_t id, bool anonymous) {
    Runtime &r = rt();
    BarrierState &b = g_bar;
    if (b.active) fatal("upc_notify called twice without an intervening upc_wait");
    fence();
    const uint64_t e = b.episode, p = e & 1;
    b.contribution[p] = anonymous ? BarrierValue{INT64_MAX, INT64_MAX} : BarrierValue{id, -id};
    b.active = true;
    b.anonymous = anonymous;
    b.id = id;
    auto *control = reinterpret_cast<Control *>(r.segment);
    const ptl_handle_md_t own = r.notify_md.get(), fwd = r.fwd_md.get();
    const auto contribution = reinterpret_cast<ptl_size_t>(&b.contribution[p]);
    if (b.children.empty() && b.parent >= 0) {
        // A leaf: its contribution goes straight to its parent's accumulator.
        require(PtlAtomic(own, contribution, sizeof(BarrierValue), PTL_NO_ACK_REQ, target(b.parent), kPtBarUp, 0,
                          up_offset(p), nullptr, 0, PTL_MIN, PTL_INT64_T),
                "PtlAtomic");
        ++b.notifies;
        return;
    }
    // An inner thread or the root: once every child and this thread have contributed, the
    // subtree's value goes up (the root sends it down to itself), and once the agreed value
    // arrives it goes on to every child.
    const ptl_size_t all_in = (e + 1) * (b.children.size() + 1);
    const auto accumulated = reinterpret_cast<ptl_size_t>(&control->bar_up[p]);
    if (b.parent < 0) {
        require(PtlTriggeredPut(fwd, accumulated, sizeof(BarrierValue), PTL_NO_ACK_REQ, target(r.me), kPtBarDown, 0,
                                down_offset(p), nullptr, 0, r.up_ct.get(), all_in),
                "PtlTriggeredPut");
    } else {
        require(PtlTriggeredAtomic(fwd, accumulated, sizeof(BarrierValue), PTL_NO_ACK_REQ, target(b.parent), kPtBarUp,
                                   0, up_offset(p), nullptr, 0, PTL_MIN, PTL_INT64_T, r.up_ct.get(), all_in),
                "PtlTriggeredAtomic");
    }
    ++b.forwards;
    const auto agreed = reinterpret_cast<ptl_size_t>(&control->bar_down[p]);
    for (int c : b.children) {
        require(PtlTriggeredPut(fwd, agreed, sizeof(BarrierValue), PTL_NO_ACK_REQ, target(c), kPtBarDown, 0,
                                down_offset(p), nullptr, 0, r.down_ct.get(), e + 1),
                "PtlTriggeredPut");
        ++b.forwards;
    }
    require(PtlAtomic(own, contribution, sizeof(BarrierValue), PTL_NO_ACK_REQ, target(r.me), kPtBarUp, 0, up_offset(p),
                      nullptr, 0, PTL_MIN, PTL_INT64_T),
            "PtlAtomic");
    ++b.notifies;
}

void wait(int64_t id, bool anonymous) {
    Runtime &r = rt();
    BarrierState &b = g_bar;
    if (!b.active) fatal("upc_wait called without a preceding upc_notify");
    if (!anonymous && !b.anonymous && id != b.id)
        fatal("upc_wait(" + std::to_string(id) + ") does not match the preceding upc_notify(" + std::to_string(b.id) +
              ")");
    const uint64_t e = b.episode, p = e & 1;
    wait_ct_at(r, r.down_ct.get(), e + 1, "the barrier's wait phase");
    wait_ct_at(r, r.notify_ct.get(), b.notifies, "a barrier notification");
    if (b.forwards) wait_ct_at(r, r.fwd_ct.get(), b.forwards, "the barrier's forwarding");
    full_fence();
    auto *control = reinterpret_cast<Control *>(r.segment);
    BarrierValue agreed;
    std::memcpy(&agreed, &control->bar_down[p], sizeof agreed); // written by the engine, read after the fence
    control->bar_up[p] = control->bar_identity;
    full_fence();
    b.active = false;
    b.episode = e + 1;
    const int64_t lo = agreed.min_id, hi = -agreed.neg_max_id;
    // Named ids that differ anywhere make every thread's barrier fail (UPC §6.6.1).
    if (lo != INT64_MAX && lo != hi)
        fatal("barrier id mismatch: the threads' named ids range from " + std::to_string(lo) + " to " +
              std::to_string(hi));
}

void barrier() {
    notify(0, true);
    wait(0, true);
}

void broadcast(void *data, size_t n, int root) {
    Runtime &r = rt();
    if (n > kBroadcastBytes) fatal("internal broadcast of " + std::to_string(n) + " bytes");
    // The root's buffer alternates by parity; a thread reads parity k only after barrier k, and
    // the root writes parity k again only after barrier k + 1, which every reader has passed.
    static uint64_t count = 0;
    const uint64_t slot = count++ & 1;
    const uint64_t offset = control_offset(&Control::bcast) + slot * kBroadcastBytes;
    if (r.me == root) std::memcpy(r.segment + offset, data, n);
    barrier();
    if (r.me != root) get(data, root, offset, n);
}

} // namespace portico::upc
