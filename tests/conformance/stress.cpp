// SPDX-License-Identifier: BSD-3-Clause
// Stress: all-to-all traffic between every rank (8 under ctest), a bounded number of rounds, every
// byte checked and every event counted: no event is lost under stress.
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class Stress : public PtlTest {};
constexpr ptl_pt_index_t kPt = 90;
constexpr ptl_size_t kMaxSize = 64 * 1024;

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

// Size of the message from `src` to `dst` in `round`: 1 B .. 64 KiB, log-uniform-ish.
ptl_size_t msg_size(int src, int dst, int round) {
    const uint64_t h = mix((uint64_t(src) << 40) ^ (uint64_t(dst) << 20) ^ uint64_t(round));
    const auto exp = static_cast<unsigned>(h % 17); // 2^0 .. 2^16
    return 1 + (h >> 8) % (ptl_size_t{1} << exp);
}

uint32_t data_seed(int src, int round) { return static_cast<uint32_t>(src * 100003 + round); }

// All-to-all PtlPut with ACK_REQ, kRounds rounds, sizes 1 B..64 KiB. Each rank packs what every peer
// sends it into one locally managed ME per peer (match bits = peer rank), so the target knows the
// offset of every message (matching order per pair) and checks every byte, every PUT field, and
// that each peer's rounds arrive in order; the initiator checks every SEND and ACK.
TEST_F(Stress, AllToAllPutsWithAcks) {
    constexpr int kRounds = 200;
    constexpr int kSlots = 4; // source buffers in rotation (a slot is reused after its SENDs)
    const int n = nranks(), me = rank();
    Ni ni = open_ni(kMatchingPhysical);

    // Target side: one ME per peer, sized for everything that peer sends.
    std::vector<std::vector<uint8_t>> rbuf(static_cast<size_t>(n));
    ptl_handle_eq_t teq = make_eq(ni, static_cast<ptl_size_t>(n * kRounds + 64));
    make_pt(ni, teq, 0, kPt);
    for (int s = 0; s < n; ++s) {
        if (s == me) continue;
        ptl_size_t total = 0;
        for (int r = 0; r < kRounds; ++r) total += msg_size(s, me, r);
        rbuf[s].assign(total, 0);
        ptl_me_t d = me_desc(rbuf[s].data(), total, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_LINK_DISABLE,
                             static_cast<ptl_match_bits_t>(s));
        d.match_id = ni.id_of(s);
        append_me(ni, kPt, d, PTL_PRIORITY_LIST, tag(s), teq);
    }
    // Initiator side.
    std::vector<uint8_t> src(kSlots * kMaxSize);
    ptl_handle_eq_t ieq = make_eq(ni, static_cast<ptl_size_t>(2 * n * kRounds + 64));
    ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), ieq);
    // Where my messages land in each peer's ME for me: the running offset per destination.
    std::vector<ptl_size_t> next_off(static_cast<size_t>(n), 0);
    std::vector<std::vector<ptl_size_t>> off_at(static_cast<size_t>(n), std::vector<ptl_size_t>(kRounds));
    std::vector<int> sends_of_round(kRounds, 0);
    std::map<std::pair<int, int>, int> sends, acks; // (round, dst) -> count
    auto handle_initiator_event = [&](const ptl_event_t &ev) {
        const uintptr_t u = reinterpret_cast<uintptr_t>(ev.user_ptr);
        const int r = static_cast<int>(u >> 16), dst = static_cast<int>(u & 0xFFFF);
        ASSERT_LT(r, kRounds) << describe(ev);
        ASSERT_LT(dst, n) << describe(ev);
        const ptl_size_t size = msg_size(me, dst, r);
        if (ev.type == PTL_EVENT_SEND) {
            check_init_event(ev, {.type = PTL_EVENT_SEND, .user_ptr = ev.user_ptr, .mlength = size});
            ++sends[{r, dst}];
            ++sends_of_round[r];
        } else {
            check_init_event(ev, {.type = PTL_EVENT_ACK,
                                  .user_ptr = ev.user_ptr,
                                  .mlength = size,
                                  .remote_offset = off_at[dst][r],
                                  .list = PTL_PRIORITY_LIST});
            ++acks[{r, dst}];
        }
    };
    barrier();
    for (int r = 0; r < kRounds; ++r) {
        // Reuse the slot of round r - kSlots only once all its SENDs arrived.
        if (r >= kSlots) {
            while (sends_of_round[r - kSlots] < n - 1) handle_initiator_event(wait_event(ieq));
        }
        uint8_t *slot = src.data() + (r % kSlots) * kMaxSize;
        fill_pattern(slot, kMaxSize, data_seed(me, r));
        for (int k = 1; k < n; ++k) {
            const int dst = (me + k) % n;
            const ptl_size_t size = msg_size(me, dst, r);
            off_at[dst][r] = next_off[dst];
            next_off[dst] += size;
            ASSERT_PTL(PtlPut(md, (r % kSlots) * kMaxSize, size, PTL_ACK_REQ, ni.id_of(dst), kPt,
                              static_cast<ptl_match_bits_t>(me), 999999, tag((uintptr_t(r) << 16) | uintptr_t(dst)),
                              static_cast<ptl_hdr_data_t>(r)));
        }
    }
    const size_t expected = static_cast<size_t>((n - 1) * kRounds);
    while (sends.size() < expected || acks.size() < expected) handle_initiator_event(wait_event(ieq));
    for (const auto &[key, count] : sends) EXPECT_EQ(1, count) << "SEND of round " << key.first << " to " << key.second;
    for (const auto &[key, count] : acks) EXPECT_EQ(1, count) << "ACK of round " << key.first << " to " << key.second;

    // Everything sent to me.
    std::vector<int> next_round(static_cast<size_t>(n), 0);
    std::vector<ptl_size_t> recv_off(static_cast<size_t>(n), 0);
    for (size_t k = 0; k < expected; ++k) {
        ptl_event_t ev = wait_event(teq);
        const int s = static_cast<int>(reinterpret_cast<uintptr_t>(ev.user_ptr));
        ASSERT_TRUE(s >= 0 && s < n && s != me) << describe(ev);
        const int r = next_round[s]++;
        const ptl_size_t size = msg_size(s, me, r);
        check_target_event(ev,
                           {.type = PTL_EVENT_PUT,
                            .initiator = s,
                            .pt_index = kPt,
                            .match_bits = static_cast<ptl_match_bits_t>(s),
                            .rlength = size,
                            .mlength = size,
                            .remote_offset = 999999,
                            .start = rbuf[s].data() + recv_off[s],
                            .user_ptr = tag(s),
                            .hdr_data = static_cast<ptl_hdr_data_t>(r)},
                           ni);
        ASSERT_EQ(-1, check_pattern(rbuf[s].data() + recv_off[s], size, data_seed(s, r)))
            << "round " << r << " from rank " << s << ", " << size << " bytes";
        recv_off[s] += size;
    }
    ptl_size_t received = 0;
    for (int s = 0; s < n; ++s) {
        if (s != me) {
            EXPECT_EQ(kRounds, next_round[s]);
            EXPECT_EQ(rbuf[s].size(), recv_off[s]);
            received += recv_off[s];
        }
    }
    if (me == 0)
        std::printf("[rank 0] received %zu messages, %llu bytes, all checked\n", expected,
                    static_cast<unsigned long long>(received));
    barrier();
    expect_eq_empty(teq);
    expect_eq_empty(ieq);
    EXPECT_EQ(Sr{}, read_sr(ni)) << "nothing dropped, no violation";
}

// All-to-all PtlGet: every rank reads slices of every peer's patterned region, a bounded number of
// rounds with a bounded window; every REPLY field and byte checked; GETs counted at the target.
TEST_F(Stress, AllToAllGets) {
    constexpr int kRounds = 50;
    constexpr ptl_size_t kRegion = 256 * 1024;
    const int n = nranks(), me = rank();
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> region(kRegion);
    fill_pattern(region.data(), kRegion, 7000 + me);
    ptl_handle_eq_t teq = make_eq(ni, 64);
    make_pt(ni, teq, 0, kPt);
    ptl_handle_ct_t ct = make_ct(ni);
    append_me(ni, kPt,
              me_desc(region.data(), kRegion,
                      PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES, 0x6E7,
                      0, ct),
              PTL_PRIORITY_LIST, tag(1), teq);
    const int ops = (n - 1) * kRounds;
    constexpr int kWindow = 16; // gets in flight, each with its own reply slot
    std::vector<uint8_t> dst(kWindow * kMaxSize);
    ptl_handle_eq_t ieq = make_eq(ni, 2 * kWindow);
    ptl_handle_md_t md = bind_md(ni, dst.data(), dst.size(), ieq);
    barrier();
    struct Op {
        int peer;
        ptl_size_t size, roff;
        int slot;
    };
    std::vector<Op> op(static_cast<size_t>(ops));
    std::vector<int> free_slots;
    for (int i = 0; i < kWindow; ++i) free_slots.push_back(i);
    int issued = 0, done = 0;
    auto complete_one = [&] {
        ptl_event_t ev = expect_event(ieq, PTL_EVENT_REPLY);
        const size_t i = reinterpret_cast<uintptr_t>(ev.user_ptr);
        ASSERT_LT(i, op.size());
        check_init_event(ev, {.type = PTL_EVENT_REPLY,
                              .user_ptr = ev.user_ptr,
                              .mlength = op[i].size,
                              .remote_offset = op[i].roff,
                              .list = PTL_PRIORITY_LIST});
        ASSERT_EQ(-1, check_pattern(dst.data() + op[i].slot * kMaxSize, op[i].size, 7000 + op[i].peer, op[i].roff))
            << "get " << i << " from rank " << op[i].peer;
        free_slots.push_back(op[i].slot);
        ++done;
    };
    for (int r = 0; r < kRounds; ++r) {
        for (int k = 1; k < n; ++k) {
            const int peer = (me + k) % n;
            const ptl_size_t size = msg_size(me, peer, r + 1000);
            const ptl_size_t roff = mix(uint64_t(r) * 31 + uint64_t(peer)) % (kRegion - size + 1);
            while (free_slots.empty()) complete_one();
            const int slot = free_slots.back();
            free_slots.pop_back();
            op[issued] = {peer, size, roff, slot};
            ASSERT_PTL(PtlGet(md, static_cast<ptl_size_t>(slot) * kMaxSize, size, ni.id_of(peer), kPt, 0x6E7, roff,
                              tag(issued)));
            ++issued;
        }
    }
    while (done < ops) complete_one();
    barrier();
    // Every peer's gets from me are counted, in bytes.
    ptl_size_t bytes = 0;
    for (int s = 0; s < n; ++s)
        for (int r = 0; s != me && r < kRounds; ++r) bytes += msg_size(s, me, r + 1000);
    EXPECT_EQ((Ct{bytes, 0}), ct_wait(ct, bytes));
    expect_eq_empty(teq);
    expect_eq_empty(ieq);
}

// Several threads per rank put to the next rank at once through one NI, each with its own MD and
// EQ; no event may be lost or duplicated on either side. (GoogleTest assertions are thread-safe;
// a failure in a worker thread ends the job like any other.)
TEST_F(Stress, ThreadedPutsLoseNoEvents) {
    constexpr int kThreads = 2, kPerThread = 200;
    const int n = nranks(), me = rank();
    if (n < 2) GTEST_SKIP() << "needs 2 ranks";
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> rbuf(kThreads * kPerThread * 16, 0);
    ptl_handle_eq_t teq = make_eq(ni, kThreads * kPerThread + 64);
    make_pt(ni, teq, 0, kPt);
    ptl_handle_ct_t ct = make_ct(ni);
    append_me(ni, kPt, me_desc(rbuf.data(), rbuf.size(), PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 0, ~0ull, ct),
              PTL_PRIORITY_LIST, tag(1), teq);
    barrier();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::vector<uint8_t> src(16 * kPerThread);
            fill_pattern(src.data(), src.size(), 300 + me * 10 + t);
            ptl_handle_eq_t eq = make_eq(ni, 2 * kPerThread + 8);
            ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), eq);
            for (int i = 0; i < kPerThread; ++i) {
                const ptl_size_t slot = static_cast<ptl_size_t>(t * kPerThread + i);
                EXPECT_PTL(PtlPut(md, 16 * i, 16, PTL_ACK_REQ, ni.id_of(next), kPt, 0, 16 * slot, tag(slot), slot));
            }
            std::set<std::pair<int, void *>> seen;
            for (int k = 0; k < 2 * kPerThread; ++k) {
                ptl_event_t ev = wait_event(eq);
                EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
                EXPECT_TRUE(seen.insert({ev.type, ev.user_ptr}).second) << "twice: " << describe(ev);
            }
            expect_eq_empty(eq);
        });
    }
    // Meanwhile the main thread takes the events of what the previous rank sends.
    std::set<ptl_hdr_data_t> got;
    for (int k = 0; k < kThreads * kPerThread; ++k) {
        ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        EXPECT_TRUE(same_process(ni.id_of(prev), ev.initiator, false)) << describe(ev);
        EXPECT_TRUE(got.insert(ev.hdr_data).second) << "duplicate " << describe(ev);
        EXPECT_EQ(16 * ev.hdr_data, ev.remote_offset);
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ((Ct{kThreads * kPerThread, 0}), ct_wait(ct, kThreads * kPerThread));
    for (int t = 0; t < kThreads; ++t)
        for (int i = 0; i < kPerThread; ++i)
            ASSERT_EQ(-1, check_pattern(rbuf.data() + 16 * (t * kPerThread + i), 16, 300 + prev * 10 + t, 16 * i))
                << "thread " << t << " put " << i;
    barrier();
    expect_eq_empty(teq);
}

// Four threads of one process put into four targets at once while each target's application appends
// and unlinks entries of the same portal table entry (the send path without the engine lock,
// docs/ARCHITECTURE.md's *Sending without the lock*, and matching, under TSan). Every put must
// match: two persistent MEs with the put's match bits take turns (one is unlinked and appended
// again at the end of the list while the other stays), and transient MEs with other bits come and
// go between them, so matching walks a list that changes. Every ACK and every byte is checked; the
// targets stop when the initiator says it is done. Two of the threads put from an MD without EQ or
// CT, which takes no engine lock at all.
TEST_F(Stress, FourThreadsPutIntoFourTargetsWhileTheirListsChange) {
    constexpr int kTargets = 4, kPerThread = 1000;
    constexpr ptl_match_bits_t kBits = 0x10, kOtherBits = 0x20;
    constexpr ptl_pt_index_t kDonePt = kPt + 1;
    const int me = rank();
    if (nranks() < 1 + kTargets) GTEST_SKIP() << "needs " << 1 + kTargets << " ranks";
    Ni ni = open_ni(kMatchingPhysical);
    const bool target = me >= 1 && me <= kTargets;
    std::vector<uint64_t> buf(kPerThread, 0);
    ptl_handle_ct_t recv_ct = PTL_INVALID_HANDLE, done_ct = PTL_INVALID_HANDLE;
    uint64_t done_word = 0;
    if (target) {
        recv_ct = make_ct(ni);
        done_ct = make_ct(ni);
        make_pt(ni, PTL_EQ_NONE, 0, kPt);
        make_pt(ni, PTL_EQ_NONE, 0, kDonePt);
        append_me(ni, kDonePt,
                  me_desc(&done_word, sizeof done_word, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 0, ~0ull, done_ct),
                  PTL_PRIORITY_LIST, tag(9), PTL_EQ_NONE);
    }
    const unsigned quiet = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE |
                           PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE;
    auto append_quiet = [&](ptl_match_bits_t bits) {
        ptl_handle_me_t h = PTL_INVALID_HANDLE;
        const ptl_me_t d = me_desc(buf.data(), buf.size() * sizeof(uint64_t), quiet, bits, 0, recv_ct);
        EXPECT_PTL(PtlMEAppend(ni.h, kPt, &d, PTL_PRIORITY_LIST, nullptr, &h));
        return h;
    };
    auto unlink = [](ptl_handle_me_t h) {
        int rc;
        while ((rc = PtlMEUnlink(h)) == PTL_IN_USE) sched_yield();
        EXPECT_RC(PTL_OK, rc);
    };
    ptl_handle_me_t persistent[2] = {PTL_INVALID_HANDLE, PTL_INVALID_HANDLE};
    if (target) {
        persistent[0] = append_quiet(kBits);
        persistent[1] = append_quiet(kBits);
    }
    barrier();
    if (me == 0) {
        std::vector<std::thread> threads;
        for (int t = 0; t < kTargets; ++t) {
            threads.emplace_back([&, t] {
                std::vector<uint64_t> src(kPerThread);
                for (int i = 0; i < kPerThread; ++i) src[i] = (uint64_t(t + 1) << 32) | uint64_t(i);
                ptl_handle_ct_t acks = make_ct(ni);
                ptl_handle_md_t md =
                    bind_md(ni, src.data(), src.size() * sizeof(uint64_t), PTL_EQ_NONE, acks, PTL_MD_EVENT_CT_ACK);
                // Without EQ or CT: puts from it take no engine lock.
                ptl_handle_md_t silent = bind_md(ni, src.data(), src.size() * sizeof(uint64_t), PTL_EQ_NONE);
                const ptl_process_t to = ni.id_of(1 + t);
                // Threads 0 and 1 ask for every ack; 2 and 3 put quietly and ask for the last one
                // only (Portico delivers one initiator's messages to one target in order).
                const bool quietly = t >= 2;
                for (int i = 0; i < kPerThread; ++i) {
                    const bool last = i == kPerThread - 1;
                    EXPECT_PTL(PtlPut(quietly && !last ? silent : md, 8 * static_cast<ptl_size_t>(i), 8, PTL_ACK_REQ,
                                      to, kPt, kBits, 8 * static_cast<ptl_size_t>(i), nullptr, 0));
                }
                const ptl_size_t acked = quietly ? 1 : kPerThread;
                EXPECT_EQ((Ct{acked, 0}), ct_wait(acks, acked)) << "thread " << t;
                // Done: one put to the target's other PT.
                EXPECT_PTL(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, to, kDonePt, 0, 0, nullptr, 0));
            });
        }
        for (auto &th : threads) th.join();
    } else if (target) {
        uint64_t turns = 0;
        for (;;) {
            ptl_ct_event_t done{};
            ASSERT_PTL(PtlCTGet(done_ct, &done));
            if (done.success > 0) break;
            const int which = static_cast<int>(turns++ & 1);
            const ptl_handle_me_t transient = append_quiet(kOtherBits + (turns & 7));
            unlink(persistent[which]);
            persistent[which] = append_quiet(kBits); // the other one matches meanwhile
            unlink(transient);
        }
        EXPECT_EQ((Ct{kPerThread, 0}), ct_wait(recv_ct, kPerThread)) << "every put matched, none twice";
        for (int i = 0; i < kPerThread; ++i)
            ASSERT_EQ((uint64_t(me) << 32) | uint64_t(i), buf[i]) << "slot " << i << " after " << turns << " turns";
        unlink(persistent[0]);
        unlink(persistent[1]);
    }
    barrier();
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
