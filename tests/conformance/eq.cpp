// SPDX-License-Identifier: BSD-3-Clause
// Conformance: event queues (spec §2.8, §3.13.5-9).
#include <atomic>
#include <fstream>
#include <mutex>
#include <sched.h>
#include <string>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include <portico_ext.h>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class EventQueue : public PtlTest {};
constexpr ptl_pt_index_t kPt = 60;

// §2.8, §3.13.5, §3.13.7: without flow control a full EQ still delivers and acknowledges
// every message; the target events that do not fit are lost (the oldest are overwritten) and the
// next read returns PTL_EQ_DROPPED together with an event.
TEST_F(EventQueue, OverflowWithoutFlowControlDropsOldestEvents) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    constexpr ptl_size_t kCount = 8; // requested EQ size
    constexpr size_t kPuts = 2048;   // far more events than any sane EQ of 8 holds
    constexpr size_t kWindow = 32;   // puts in flight
    std::vector<uint8_t> buf(8 * kPuts, 0);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni, kCount);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE),
                  PTL_PRIORITY_LIST, tag(1), teq);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(8 * kPuts);
        fill_pattern(src.data(), src.size(), 37);
        ptl_handle_eq_t ieq = make_eq(ni, 2 * kWindow);
        ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), ieq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
        size_t sent = 0, acked = 0;
        while (acked < kPuts) {
            while (sent < kPuts && sent - acked < kWindow) {
                ASSERT_PTL(PtlPut(md, 8 * sent, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 8 * sent, tag(sent), sent));
                ++sent;
            }
            ptl_event_t ev = expect_event(ieq, PTL_EVENT_ACK);
            EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
            EXPECT_EQ(8u, ev.mlength) << describe(ev);
            ++acked;
        }
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(-1, check_pattern(buf.data(), buf.size(), 37)) << "every put must be delivered";
        ptl_event_t ev;
        ASSERT_RC(PTL_EQ_DROPPED, PtlEQGet(teq, &ev));
        std::vector<ptl_hdr_data_t> kept;
        for (;;) {
            EXPECT_EQ(Kind{PTL_EVENT_PUT}, Kind{ev.type}) << describe(ev);
            kept.push_back(ev.hdr_data);
            const int rc = PtlEQGet(teq, &ev);
            if (rc == PTL_EQ_EMPTY) break;
            ASSERT_RC(PTL_OK, rc) << "only the first read after the loss reports it";
        }
        EXPECT_GE(kept.size(), kCount);
        EXPECT_LT(kept.size(), kPuts);
        for (size_t i = 1; i < kept.size(); ++i) EXPECT_LT(kept[i - 1], kept[i]) << "events must come out in order";
        EXPECT_EQ(kPuts - 1, kept.back()) << "the newest events are kept";
    }
    barrier();
    // After draining, the EQ works normally again.
    if (rank() == 1) {
        Sender s(ni, 8, 137);
        s.put(kPt, 8, 0, 0, 4242, 8, 0);
    }
    barrier();
    if (rank() == 0) {
        ptl_event_t ev;
        ASSERT_RC(PTL_OK, PtlEQWait(teq, &ev));
        EXPECT_EQ(4242u, ev.hdr_data);
    }
}

// §3.13.9: PtlEQPoll with timeout 0 (or a short one) on empty EQs returns PTL_EQ_EMPTY;
// with events in several EQs it returns one from the first non-empty EQ of the array and its index
// in `which`; EQs may belong to different logical NIs of one physical NI.
TEST_F(EventQueue, PollReturnsFirstNonEmptyEqAndWhich) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    Ni nm = open_ni(kNonMatchingPhysical);
    ptl_handle_eq_t e[3] = {}, en = PTL_INVALID_HANDLE;
    const ptl_pt_index_t pts[3] = {kPt, kPt + 1, kPt + 2};
    static uint8_t sink[8];
    if (rank() == 0) {
        for (int i = 0; i < 3; ++i) {
            e[i] = make_eq(ni);
            make_pt(ni, e[i], 0, pts[i]);
            append_me(ni, pts[i], me_desc(sink, sizeof sink, PTL_ME_OP_PUT, 0, ~0ull), PTL_PRIORITY_LIST, tag(i), e[i]);
        }
        en = make_eq(nm);
        make_pt(nm, en, 0, kPt);
        append_le(nm, kPt, le_desc(sink, sizeof sink, PTL_LE_OP_PUT), PTL_PRIORITY_LIST, tag(9), en);
        ptl_event_t ev;
        unsigned which = 99;
        EXPECT_RC(PTL_EQ_EMPTY, PtlEQPoll(e, 3, 0, &ev, &which));
        EXPECT_RC(PTL_EQ_EMPTY, PtlEQPoll(e, 3, 5, &ev, &which));
    }
    barrier();
    if (rank() == 1) {
        Sender s(ni, 8, 38);
        s.put(pts[2], 8, 0, 0, 2, 8, 0);
        s.put(pts[1], 8, 0, 0, 1, 8, 0);
    }
    barrier();
    if (rank() == 0) {
        // PtlPTDisable returns once every event of its PT is delivered (§3.7.3).
        ASSERT_PTL(PtlPTDisable(ni.h, pts[1]));
        ASSERT_PTL(PtlPTDisable(ni.h, pts[2]));
        ptl_event_t ev;
        unsigned which = 99;
        ASSERT_PTL(PtlEQPoll(e, 3, 0, &ev, &which));
        EXPECT_EQ(1u, which);
        EXPECT_EQ(1u, ev.hdr_data) << describe(ev);
        ASSERT_PTL(PtlEQPoll(e, 3, 0, &ev, &which));
        EXPECT_EQ(2u, which);
        EXPECT_EQ(2u, ev.hdr_data) << describe(ev);
        EXPECT_RC(PTL_EQ_EMPTY, PtlEQPoll(e, 3, 0, &ev, &which));
        ASSERT_PTL(PtlPTEnable(ni.h, pts[1]));
        ASSERT_PTL(PtlPTEnable(ni.h, pts[2]));
    }
    barrier();
    if (rank() == 1) {
        Sender s(ni, 8, 38);
        s.put(pts[1], 8, 0, 0, 11, 8, 0);
        s.put(pts[2], 8, 0, 0, 12, 8, 0);
        Sender n(nm, 8, 38);
        n.put(kPt, 8, 0, 0, 13, 8, 0);
    }
    barrier();
    if (rank() == 0) {
        ASSERT_PTL(PtlPTDisable(ni.h, pts[1]));
        ASSERT_PTL(PtlPTDisable(ni.h, pts[2]));
        ASSERT_PTL(PtlPTDisable(nm.h, kPt));
        // Array order decides, not arrival order; the EQ of the other logical NI takes part.
        const ptl_handle_eq_t order[4] = {en, e[2], e[0], e[1]};
        const ptl_hdr_data_t expect[3] = {13, 12, 11};
        const unsigned expect_which[3] = {0, 1, 3};
        for (int k = 0; k < 3; ++k) {
            ptl_event_t ev;
            unsigned which = 99;
            ASSERT_PTL(PtlEQPoll(order, 4, PTL_TIME_FOREVER, &ev, &which));
            EXPECT_EQ(expect_which[k], which);
            EXPECT_EQ(expect[k], ev.hdr_data) << describe(ev);
        }
        ptl_event_t ev;
        unsigned which;
        EXPECT_RC(PTL_EQ_EMPTY, PtlEQPoll(order, 4, 0, &ev, &which));
    }
}

// §3.13.8: with two threads in PtlEQWait on one EQ, one event wakes exactly one of them
// (each event goes to exactly one caller).
TEST_F(EventQueue, TwoWaitersOneEventWakeExactlyOne) {
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_eq_t eq = make_eq(ni);
    make_pt(ni, eq, 0, kPt);
    std::atomic<int> returned{0};
    std::mutex m;
    std::vector<std::pair<int, void *>> got;
    auto waiter = [&] {
        ptl_event_t ev;
        const int rc = PtlEQWait(eq, &ev);
        {
            std::lock_guard g(m);
            got.emplace_back(rc, ev.user_ptr);
        }
        returned.fetch_add(1);
    };
    std::thread a(waiter), b(waiter);
    static uint8_t buf[8];
    ptl_me_t d = me_desc(buf, sizeof buf, PTL_ME_OP_PUT);
    ptl_handle_me_t h;
    ASSERT_PTL(PtlMEAppend(ni.h, kPt, &d, PTL_PRIORITY_LIST, tag(1), &h)); // one LINK event
    while (returned.load() == 0) sched_yield();
    {
        std::lock_guard g(m);
        EXPECT_EQ(1, returned.load()) << "one event woke two waiters";
        ASSERT_EQ(1u, got.size());
        EXPECT_EQ(Rc{PTL_OK}, Rc{got[0].first});
        EXPECT_EQ(tag(1), got[0].second);
    }
    ASSERT_PTL(PtlMEAppend(ni.h, kPt, &d, PTL_PRIORITY_LIST, tag(2), &h)); // wakes the other one
    a.join();
    b.join();
    ASSERT_EQ(2u, got.size());
    EXPECT_EQ(Rc{PTL_OK}, Rc{got[1].first});
    EXPECT_EQ(tag(2), got[1].second);
    expect_eq_empty(eq);
}

// A thread asleep in PtlEQWait on a quiet EQ is not woken by the events of other EQs (it would
// cost a system call and a context switch per event of the process). Measured by the thread's own
// voluntary context switches while 20000 events go to another EQ; no timing is involved: the
// traffic starts once /proc says the waiter sleeps.
TEST_F(EventQueue, QuietWaiterSleepsThroughOtherQueuesEvents) {
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_eq_t quiet = make_eq(ni), busy = make_eq(ni);
    make_pt(ni, quiet, 0, kPt);
    make_pt(ni, busy, 0, kPt + 1);
    std::atomic<pid_t> tid{0};
    long switches = -1;
    int rc = -1;
    ptl_event_t got{};
    std::thread waiter([&] {
        rusage before{}, after{};
        getrusage(RUSAGE_THREAD, &before);
        tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
        rc = PtlEQWait(quiet, &got);
        getrusage(RUSAGE_THREAD, &after);
        switches = after.ru_nvcsw - before.ru_nvcsw;
    });
    while (tid.load() == 0) sched_yield();
    // Wait until the waiter has given up polling and sleeps.
    const std::string stat = "/proc/self/task/" + std::to_string(tid.load()) + "/stat";
    for (;;) {
        std::ifstream f(stat);
        std::string line;
        std::getline(f, line);
        const size_t p = line.rfind(')');
        if (p != std::string::npos && p + 2 < line.size() && line[p + 2] == 'S') break;
        sched_yield();
    }
    static uint8_t buf[8];
    ptl_me_t d = me_desc(buf, sizeof buf, PTL_ME_OP_PUT);
    for (int i = 0; i < 20000; ++i) {
        ptl_handle_me_t h;
        ASSERT_PTL(PtlMEAppend(ni.h, kPt + 1, &d, PTL_PRIORITY_LIST, tag(3), &h)); // a LINK event on busy
        ptl_event_t ev;
        ASSERT_PTL(PtlEQWait(busy, &ev));
        ASSERT_EQ(PTL_EVENT_LINK, ev.type);
        ASSERT_PTL(PtlMEUnlink(h));
    }
    ptl_handle_me_t h;
    ASSERT_PTL(PtlMEAppend(ni.h, kPt, &d, PTL_PRIORITY_LIST, tag(4), &h)); // the waiter's event
    waiter.join();
    EXPECT_EQ(Rc{PTL_OK}, Rc{rc});
    EXPECT_EQ(PTL_EVENT_LINK, got.type);
    EXPECT_EQ(tag(4), got.user_ptr);
    // One sleep and one wakeup, a few more if the scheduler moved it; hundreds if events of the other
    // EQ woke it.
    EXPECT_LT(switches, 100) << "the waiter on the quiet EQ was woken by the other EQ's events";
    ASSERT_PTL(PtlMEUnlink(h));
    expect_eq_empty(quiet);
    expect_eq_empty(busy);
}

// Portico's passive waits (portico_ext.h): the same results as PtlEQPoll and PtlCTPoll, but the
// waiting thread never moves the network itself. Rank 0 makes no other Portals call while rank 1's
// put comes, so the event and the count it waits for can only be delivered by the engine's
// progress thread.
TEST_F(EventQueue, PassiveWaitGetsWhatTheProgressThreadDelivers) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    static uint8_t sink[8];
    const ptl_size_t one = 1;
    if (rank() == 0) {
        eq = make_eq(ni);
        make_pt(ni, eq, 0, kPt);
        ASSERT_PTL(PtlCTAlloc(ni.h, &ct));
        ptl_me_t d =
            me_desc(sink, sizeof sink, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_CT_COMM, 0, ~0ull);
        d.ct_handle = ct;
        append_me(ni, kPt, d, PTL_PRIORITY_LIST, tag(5), eq);
        ptl_event_t ev;
        ptl_ct_event_t cv{};
        unsigned which = 99;
        EXPECT_RC(PTL_EQ_EMPTY, portico_eq_poll_passive(&eq, 1, 0, &ev, &which));
        EXPECT_RC(PTL_CT_NONE_REACHED, portico_ct_poll_passive(&ct, &one, 1, 0, &cv, &which));
        EXPECT_RC(PTL_ARG_INVALID, portico_eq_poll_passive(nullptr, 1, 0, &ev, &which));
        EXPECT_RC(PTL_ARG_INVALID, portico_eq_poll_passive(&eq, 0, 0, &ev, &which));
        EXPECT_RC(PTL_ARG_INVALID, portico_ct_poll_passive(&ct, nullptr, 1, 0, &cv, &which));
        const ptl_handle_ct_t bad = PTL_INVALID_HANDLE;
        EXPECT_RC(PTL_ARG_INVALID, portico_ct_poll_passive(&bad, &one, 1, 0, &cv, &which));
    }
    barrier();
    if (rank() == 1) {
        Sender s(ni, 8, 40);
        s.put(kPt, 8, 0, 0, 77, 8, 0);
    } else {
        ptl_event_t ev;
        unsigned which = 99;
        ASSERT_PTL(portico_eq_poll_passive(&eq, 1, 60000, &ev, &which)) << "the progress thread delivered nothing";
        EXPECT_EQ(0u, which);
        EXPECT_EQ(Kind{PTL_EVENT_PUT}, Kind{ev.type}) << describe(ev);
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        EXPECT_EQ(77u, ev.hdr_data) << describe(ev);
        EXPECT_EQ(8u, ev.mlength) << describe(ev);
        EXPECT_EQ(tag(5), ev.user_ptr) << describe(ev);
        ptl_ct_event_t cv{};
        which = 99;
        ASSERT_PTL(portico_ct_poll_passive(&ct, &one, 1, 60000, &cv, &which));
        EXPECT_EQ(0u, which);
        EXPECT_EQ(1u, cv.success);
        EXPECT_EQ(0u, cv.failure);
        EXPECT_EQ(-1, check_pattern(sink, sizeof sink, 40));
        expect_eq_empty(eq);
        ASSERT_PTL(PtlCTFree(ct));
    }
    barrier();
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
