// SPDX-License-Identifier: BSD-3-Clause
// Conformance: PtlAbort (spec §3.5.3, §3.13.6, §3.14.3).
//
// PtlAbort is permanent for the process, so this is the only test of its binary.
#include <atomic>
#include <thread>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class Abort : public PtlTest {};

// Threads blocked in PtlEQWait, PtlEQPoll, PtlCTWait and PtlCTPoll return PTL_ABORTED;
// every later wait or poll returns PTL_ABORTED at once; PtlEQGet and PtlCTGet are unaffected;
// PtlEQFree and PtlCTFree then succeed.
TEST_F(Abort, WaitersAndLaterWaitsReturnAborted) {
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_eq_t eq = make_eq(ni);
    ptl_handle_ct_t ct = make_ct(ni);
    const ptl_pt_index_t pt = make_pt(ni, eq, 0, 3);
    std::atomic<int> rc_eq_wait{-1}, rc_eq_poll{-1}, rc_ct_wait{-1}, rc_ct_poll{-1};
    std::thread t1([&] {
        ptl_event_t ev;
        rc_eq_wait = PtlEQWait(eq, &ev);
    });
    std::thread t2([&] {
        ptl_event_t ev;
        unsigned which;
        rc_eq_poll = PtlEQPoll(&eq, 1, PTL_TIME_FOREVER, &ev, &which);
    });
    std::thread t3([&] {
        ptl_ct_event_t c;
        rc_ct_wait = PtlCTWait(ct, 1, &c);
    });
    std::thread t4([&] {
        ptl_ct_event_t c;
        unsigned which;
        const ptl_size_t test = 1;
        rc_ct_poll = PtlCTPoll(&ct, &test, 1, PTL_TIME_FOREVER, &c, &which);
    });
    // Whether a thread is already blocked or not yet in its call, it must return PTL_ABORTED.
    PtlAbort();
    t1.join();
    t2.join();
    t3.join();
    t4.join();
    EXPECT_EQ(Rc{PTL_ABORTED}, Rc{rc_eq_wait.load()});
    EXPECT_EQ(Rc{PTL_ABORTED}, Rc{rc_eq_poll.load()});
    EXPECT_EQ(Rc{PTL_ABORTED}, Rc{rc_ct_wait.load()});
    EXPECT_EQ(Rc{PTL_ABORTED}, Rc{rc_ct_poll.load()});

    ptl_event_t ev;
    unsigned which;
    ptl_ct_event_t c;
    const ptl_size_t test = 1;
    EXPECT_RC(PTL_ABORTED, PtlEQWait(eq, &ev));
    EXPECT_RC(PTL_ABORTED, PtlEQPoll(&eq, 1, 0, &ev, &which));
    EXPECT_RC(PTL_ABORTED, PtlCTWait(ct, 1, &c));
    EXPECT_RC(PTL_ABORTED, PtlCTPoll(&ct, &test, 1, 0, &c, &which));

    // Non-blocking calls are unaffected.
    EXPECT_RC(PTL_EQ_EMPTY, PtlEQGet(eq, &ev));
    static uint8_t buf[8];
    ptl_me_t d = me_desc(buf, sizeof buf, PTL_ME_OP_PUT);
    ptl_handle_me_t h;
    ASSERT_PTL(PtlMEAppend(ni.h, pt, &d, PTL_PRIORITY_LIST, tag(40), &h));
    ASSERT_RC(PTL_OK, PtlEQGet(eq, &ev));
    check_entry_event(ev, PTL_EVENT_LINK, pt, tag(40));
    ASSERT_PTL(PtlCTInc(ct, ptl_ct_event_t{3, 0}));
    ASSERT_PTL(PtlCTGet(ct, &c));
    EXPECT_EQ((Ct{3, 0}), ct_of(c));

    EXPECT_PTL(PtlMEUnlink(h));
    EXPECT_PTL(PtlPTFree(ni.h, pt));
    EXPECT_PTL(PtlEQFree(eq));
    EXPECT_PTL(PtlCTFree(ct));

    // Waits on handles freed since the abort (or never valid) return PTL_ABORTED too: the abort is
    // looked at before the handles (§3.5.3 "must immediately return", README decision 22).
    EXPECT_RC(PTL_ABORTED, PtlEQWait(eq, &ev));
    EXPECT_RC(PTL_ABORTED, PtlEQPoll(&eq, 1, PTL_TIME_FOREVER, &ev, &which));
    EXPECT_RC(PTL_ABORTED, PtlCTWait(ct, 1, &c));
    EXPECT_RC(PTL_ABORTED, PtlCTPoll(&ct, &test, 1, 10, &c, &which));
    const ptl_handle_eq_t never_eq = PTL_INVALID_HANDLE;
    EXPECT_RC(PTL_ABORTED, PtlEQPoll(&never_eq, 1, 0, &ev, &which));
    // The non-blocking reads validate their handles as before.
    EXPECT_RC(PTL_ARG_INVALID, PtlEQGet(eq, &ev));
    EXPECT_RC(PTL_ARG_INVALID, PtlCTGet(ct, &c));
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
