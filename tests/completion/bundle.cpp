// SPDX-License-Identifier: BSD-3-Clause
// Completion conformance: bundles (spec §3.17).
//
// "Delivered by EndBundle" is checked strictly (phase()): the receiver is already blocked in
// PtlEQWait, in a thread started before an out-of-band job barrier (so most likely asleep, past any
// polling), when the sender leaves that barrier, sends inside its bundle, ends the bundle and then
// makes no Portals call at all (it sits in the next job barrier) until the receiver has every
// message. A deferral that EndBundle did not start would hang the job (the launcher's timeout
// reports where). Portico decisions used here: bundles are reference-counted per NI, PtlEndBundle
// without a matching PtlStartBundle is PTL_ARG_INVALID, every PtlEndBundle (also an inner one)
// starts what was deferred, and waiting inside a bundle does not deadlock.
#include <sched.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "completion_helpers.hpp"

extern "C" char portico_test_wait_note[256]; // tests/support/mpjob.cpp

using namespace cpltest;

namespace {

class Bundle : public CompletionTest {};
constexpr ptl_pt_index_t kPt = 25;
constexpr ptl_match_bits_t kAny = ~0ull;
constexpr size_t kSlot = 64; // bytes per message slot

// A receive area for `senders` x `per_sender` messages of kSlot bytes: one ME (put, get) whose
// EQ records every arrival; message i of sender s lands at ((s * per_sender) + i) * kSlot.
struct Inbox {
    const Ni &ni;
    Buf buf;
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    Inbox(const Ni &n, size_t slots) : ni(n), buf(slots * kSlot) {
        eq = make_eq(ni, 4 * slots + 16);
        make_pt(ni, eq, 0, kPt);
        append_entry(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, 0, kAny),
                     PTL_PRIORITY_LIST, tag(0xB), eq);
    }
    // Waits for `n` messages (PUT or ATOMIC) and checks each slot's pattern and the sender.
    void expect(size_t n, size_t per_sender, std::source_location at = std::source_location::current()) {
        for (size_t i = 0; i < n; ++i) {
            const ptl_event_t ev = wait_event(eq, at);
            ASSERT_TRUE(ev.type == PTL_EVENT_PUT || ev.type == PTL_EVENT_ATOMIC) << describe(ev);
            ASSERT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
            const size_t slot = ev.remote_offset / kSlot;
            const int sender = static_cast<int>(slot / per_sender);
            EXPECT_TRUE(same_process(ni.id_of(sender), ev.initiator, ni.logical())) << describe(ev);
            EXPECT_EQ(-1, check_pattern(buf.at(slot * kSlot), kSlot, seed(slot)))
                << "slot " << slot << " (line " << at.line() << ")";
        }
    }
    static uint32_t seed(size_t slot) { return static_cast<uint32_t>(0xB0000 + slot); }

    // Every rank sends a 0-byte put to every other rank and waits for its ACK and for the peers'
    // puts: the links between all processes exist before a phase (a first contact wakes the
    // receiver by itself, which would hide a deferred wakeup).
    void warm_links() {
        barrier(); // every rank's inbox is linked
        ptl_handle_eq_t aeq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, nullptr, 0, aeq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
        for (int r = 0; r < job_size(); ++r) {
            if (r != my_rank()) {
                EXPECT_PTL(PtlPut(md, 0, 0, PTL_ACK_REQ, ni.id_of(r), kPt, 0, 0, nullptr, 0));
            }
        }
        for (int i = 1; i < job_size(); ++i) {
            EXPECT_EQ(Kind{PTL_EVENT_ACK}, Kind{wait_event(aeq).type});
            const ptl_event_t ev = wait_event(eq);
            EXPECT_EQ(Kind{PTL_EVENT_PUT}, Kind{ev.type}) << describe(ev);
            EXPECT_EQ(0u, ev.mlength) << describe(ev);
        }
        EXPECT_PTL(PtlMDRelease(md));
        EXPECT_PTL(PtlEQFree(aeq));
        barrier();
    }
};

// The sending side: a source buffer holding every slot's pattern, one MD without events.
struct Outbox {
    Buf buf;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    Outbox(const Ni &ni, size_t slots) : buf(slots * kSlot) {
        for (size_t s = 0; s < slots; ++s) fill_pattern(buf.at(s * kSlot), kSlot, Inbox::seed(s));
        md = bind_md(ni, buf.data(), buf.size(), PTL_EQ_NONE);
    }
    // Message `slot` to `target`: a put, or (odd slots, with `atomics`) a PtlAtomic BXOR onto the
    // zeroed target slot, which leaves the same bytes.
    int send(const Ni &ni, int target, size_t slot, bool atomics) {
        const ptl_size_t off = slot * kSlot;
        if (atomics && slot % 2)
            return PtlAtomic(md, off, kSlot, PTL_NO_ACK_REQ, ni.id_of(target), kPt, 0, off, nullptr, slot, PTL_BXOR,
                             PTL_UINT64_T);
        return PtlPut(md, off, kSlot, PTL_NO_ACK_REQ, ni.id_of(target), kPt, 0, off, nullptr, slot);
    }
};

// For the strength of the tests only, never for their correctness: returns once every other
// thread of this process (the waiting test thread, the engine's threads) has been blocked in the
// kernel on several consecutive looks, so that what peers send next finds this process asleep and
// must wake it; gives up after a bounded number of looks.
void let_other_threads_block() {
    const pid_t self = gettid();
    int calm = 0;
    for (int look = 0; look < 20000 && calm < 5; ++look) {
        bool all_blocked = true;
        std::error_code ec;
        for (const auto &e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
            if (e.path().filename() == std::to_string(self)) continue;
            std::ifstream f(e.path() / "stat");
            std::string line;
            std::getline(f, line);
            const size_t p = line.rfind(')'); // the state follows the command name
            const char state = p != std::string::npos && p + 2 < line.size() ? line[p + 2] : 'S';
            if (state != 'S' && state != 'D') {
                all_blocked = false;
                break;
            }
        }
        calm = all_blocked ? calm + 1 : 0;
        sched_yield();
    }
}

// One strict delivery phase: `receive` runs on the receiving ranks in a thread that is blocked
// (most likely asleep) before the senders start; `send` runs on the sending ranks between two job
// barriers, after which they make no Portals call until every receiver is done. Other ranks only
// take part in the barriers.
void phase(bool receiver, bool sender, const std::function<void()> &receive, const std::function<void()> &send) {
    std::thread t;
    if (receiver) {
        t = std::thread(receive);
        let_other_threads_block();
    }
    barrier();
    if (sender) send();
    if (receiver) {
        std::snprintf(portico_test_wait_note, sizeof portico_test_wait_note,
                      "joining the receiving thread (blocked in PtlEQWait for the senders' messages)");
        t.join();
        portico_test_wait_note[0] = '\0';
    }
    barrier();
}

// §3.17: StartBundle/EndBundle are reference-counted per NI: every start needs its own end, an end
// without a start is PTL_ARG_INVALID (also on another NI than the one bundling), and a bundle
// can be restarted after it ended.
TEST_F(Bundle, ReferenceCountedPerInterface) {
    Ni a = open_ni(kMatchingPhysical);
    Ni b = open_ni(kNonMatchingPhysical);
    EXPECT_RC(PTL_ARG_INVALID, PtlEndBundle(a.h)) << "no bundle started";
    for (int i = 0; i < 3; ++i) ASSERT_PTL(PtlStartBundle(a.h));
    EXPECT_RC(PTL_ARG_INVALID, PtlEndBundle(b.h)) << "the bundle belongs to the other NI";
    for (int i = 0; i < 3; ++i) EXPECT_PTL(PtlEndBundle(a.h)) << "end " << i + 1 << " of 3";
    EXPECT_RC(PTL_ARG_INVALID, PtlEndBundle(a.h)) << "one end more than starts";
    ASSERT_PTL(PtlStartBundle(a.h));
    ASSERT_PTL(PtlStartBundle(b.h));
    EXPECT_PTL(PtlEndBundle(b.h));
    EXPECT_PTL(PtlEndBundle(a.h));
    EXPECT_RC(PTL_ARG_INVALID, PtlEndBundle(b.h));
    EXPECT_RC(PTL_ARG_INVALID, PtlStartBundle(PTL_INVALID_HANDLE));
    EXPECT_RC(PTL_ARG_INVALID, PtlEndBundle(PTL_INVALID_HANDLE));
}

// §3.17.2: at PtlEndBundle the implementation starts everything it deferred. Fan-in: every rank
// but 0 bundles puts and atomics to rank 0 and ends the bundle; fan-out: rank 0 does the same to
// every other rank.
TEST_F(Bundle, EndBundleDeliversEverything) {
    REQUIRE_RANKS(2);
    constexpr size_t kPer = 24;
    const int n = nranks(), me = rank();
    Ni ni = open_ni(kMatchingPhysical);
    Inbox in(ni, size_t(n) * kPer);
    Outbox out(ni, size_t(n) * kPer);
    in.warm_links();
    phase(
        me == 0, me != 0, [&] { in.expect(size_t(n - 1) * kPer, kPer); },
        [&] {
            ASSERT_PTL(PtlStartBundle(ni.h));
            for (size_t i = 0; i < kPer; ++i) ASSERT_PTL(out.send(ni, 0, size_t(me) * kPer + i, true));
            ASSERT_PTL(PtlEndBundle(ni.h));
        });
    phase(
        me != 0, me == 0, [&] { in.expect(kPer, kPer); },
        [&] {
            ASSERT_PTL(PtlStartBundle(ni.h));
            for (size_t i = 0; i < kPer; ++i)
                for (int r = 1; r < n; ++r) ASSERT_PTL(out.send(ni, r, i, true));
            ASSERT_PTL(PtlEndBundle(ni.h));
        });
    expect_eq_empty(in.eq);
}

// §3.17.2 ("at each call to PtlEndBundle"): an inner PtlEndBundle of nested bundles starts what
// was deferred so far, while the outer bundle is still open; then the outer end starts the rest.
TEST_F(Bundle, InnerEndBundleFlushesToo) {
    REQUIRE_RANKS(2);
    constexpr size_t kPer = 16;
    Ni ni = open_ni(kMatchingPhysical);
    Inbox in(ni, 4 * kPer); // rank 1's messages: slots 2*kPer .. 4*kPer-1
    Outbox out(ni, 4 * kPer);
    in.warm_links();
    const bool r0 = rank() == 0, r1 = rank() == 1;
    phase(
        r0, r1, [&] { in.expect(kPer, 2 * kPer); },
        [&] {
            ASSERT_PTL(PtlStartBundle(ni.h));
            ASSERT_PTL(PtlStartBundle(ni.h));
            for (size_t i = 0; i < kPer; ++i) ASSERT_PTL(out.send(ni, 0, 2 * kPer + i, true));
            ASSERT_PTL(PtlEndBundle(ni.h)); // inner: the outer bundle stays open
        });
    phase(
        r0, r1, [&] { in.expect(kPer, 2 * kPer); },
        [&] {
            for (size_t i = kPer; i < 2 * kPer; ++i) ASSERT_PTL(out.send(ni, 0, 2 * kPer + i, false));
            ASSERT_PTL(PtlEndBundle(ni.h)); // outer
        });
    if (r1) {
        EXPECT_RC(PTL_ARG_INVALID, PtlEndBundle(ni.h));
    }
}

// Waiting inside a bundle does not deadlock: every rank, inside a bundle, puts to the next rank
// and waits for its SEND and ACK, waits for the previous rank's put (which that rank issued inside
// its own bundle), gets from the next rank and fetch-adds there, waiting for each REPLY and for a
// counting event; only then ends the bundle.
TEST_F(Bundle, WaitingInsideABundle) {
    REQUIRE_RANKS(2);
    const int n = nranks(), me = rank();
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    Ni ni = open_ni(kMatchingPhysical);
    Buf area(64 + 8), src(64), dst(64 + 8, 0xEE), one(8);
    fill_pattern(src.data(), 64, 0x600 + me);
    fill_pattern(area.data(), 64, 0x700 + me);
    *area.as<uint64_t>(64) = 1000;
    *one.as<uint64_t>() = 1;
    ptl_handle_eq_t teq = make_eq(ni);
    make_pt(ni, teq, 0, kPt);
    // Bits 1: the put area (put only); bits 2: area (get) and the counter word (atomics).
    Buf putarea(64);
    append_me(ni, kPt, me_desc(putarea.data(), 64, PTL_ME_OP_PUT, 1), PTL_PRIORITY_LIST, tag(1), teq);
    append_me(ni, kPt, me_desc(area.data(), area.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE, 2),
              PTL_PRIORITY_LIST, tag(2), teq);
    ptl_handle_eq_t eq = make_eq(ni);
    ptl_handle_ct_t rct = make_ct(ni);
    ptl_handle_md_t smd = bind_md(ni, src.data(), 64, eq);
    ptl_handle_md_t dmd = bind_md(ni, dst.data(), dst.size(), eq, rct, PTL_MD_EVENT_CT_REPLY);
    ptl_handle_md_t omd = bind_md(ni, one.data(), 8, PTL_EQ_NONE);
    barrier();
    ASSERT_PTL(PtlStartBundle(ni.h));
    ASSERT_PTL(PtlPut(smd, 0, 64, PTL_ACK_REQ, ni.id_of(next), kPt, 1, 0, tag(10), 10));
    expect_send_and_ack(eq, tag(10), 64, 64, 0);
    const ptl_event_t p = expect_event(teq, PTL_EVENT_PUT);
    EXPECT_EQ(10u, p.hdr_data) << describe(p);
    EXPECT_TRUE(same_process(ni.id_of(prev), p.initiator, false)) << describe(p);
    EXPECT_EQ(-1, check_pattern(putarea.data(), 64, 0x600 + prev));
    ASSERT_PTL(PtlGet(dmd, 0, 64, ni.id_of(next), kPt, 2, 0, tag(11)));
    check_init_event(expect_event(eq, PTL_EVENT_REPLY), {.type = PTL_EVENT_REPLY, .user_ptr = tag(11), .mlength = 64});
    EXPECT_EQ(-1, check_pattern(dst.data(), 64, 0x700 + next));
    ASSERT_PTL(PtlFetchAtomic(dmd, 64, omd, 0, 8, ni.id_of(next), kPt, 2, 64, tag(12), 0, PTL_SUM, PTL_UINT64_T));
    EXPECT_EQ((Ct{2, 0}), ct_wait(rct, 2)) << "two replies counted";
    check_init_event(expect_event(eq, PTL_EVENT_REPLY), {.type = PTL_EVENT_REPLY, .user_ptr = tag(12), .mlength = 8});
    EXPECT_EQ(1000u, *dst.as<uint64_t>(64));
    ASSERT_PTL(PtlEndBundle(ni.h));
    barrier();
    ASSERT_PTL(PtlAtomicSync());
    EXPECT_EQ(1001u, *area.as<uint64_t>(64));
}

// Triggered operations that fire inside a bundle (from a PtlCTInc there) are started by
// PtlEndBundle like any other operation of the bundle.
TEST_F(Bundle, TriggeredOperationsFiredInsideABundle) {
    REQUIRE_RANKS(2);
    constexpr size_t kPer = 8;
    Ni ni = open_ni(kMatchingPhysical);
    Inbox in(ni, 2 * kPer); // rank 1's messages: slots kPer .. 2*kPer-1
    Outbox out(ni, 2 * kPer);
    ptl_handle_ct_t a = make_ct(ni);
    if (rank() == 1) {
        for (size_t i = kPer; i < 2 * kPer; ++i)
            ASSERT_PTL(PtlTriggeredPut(out.md, i * kSlot, kSlot, PTL_NO_ACK_REQ, ni.id_of(0), kPt, 0, i * kSlot,
                                       nullptr, i, a, i - kPer + 1));
    }
    in.warm_links();
    phase(
        rank() == 0, rank() == 1, [&] { in.expect(kPer, kPer); },
        [&] {
            ASSERT_PTL(PtlStartBundle(ni.h));
            ASSERT_PTL(PtlCTInc(a, ptl_ct_event_t{kPer, 0}));
            ASSERT_PTL(PtlEndBundle(ni.h));
        });
}

// A process inside a bundle still answers its peers (§3.17.1: a bundle defers the operations the
// application starts on that NI; §1.6: progress needs no application call): while rank 0 sits in
// an open bundle making no Portals call, rank 1's put gets its ACK and its get its REPLY. Rank 1
// waits for them in a thread that is already blocked when the requests go out.
TEST_F(Bundle, ResponsesAreNotHeldBack) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    Inbox in(ni, 4);
    in.warm_links();
    if (rank() == 0) {
        fill_pattern(in.buf.at(2 * kSlot), kSlot, 0xCAFE);
        ASSERT_PTL(PtlStartBundle(ni.h));
    }
    barrier();
    if (rank() == 1) {
        Buf src(kSlot), dst(kSlot);
        fill_pattern(src.data(), kSlot, Inbox::seed(1));
        ptl_handle_eq_t eq = make_eq(ni);
        ptl_handle_md_t smd = bind_md(ni, src.data(), kSlot, eq);
        ptl_handle_md_t dmd = bind_md(ni, dst.data(), kSlot, eq);
        std::thread w([&] {
            std::vector<int> kinds(PTL_EVENT_ERROR + 1, 0);
            for (int i = 0; i < 3; ++i) {
                const ptl_event_t ev = wait_event(eq);
                EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
                ++kinds[ev.type];
            }
            EXPECT_EQ(1, kinds[PTL_EVENT_SEND]);
            EXPECT_EQ(1, kinds[PTL_EVENT_ACK]);
            EXPECT_EQ(1, kinds[PTL_EVENT_REPLY]);
        });
        let_other_threads_block();
        ASSERT_PTL(PtlPut(smd, 0, kSlot, PTL_ACK_REQ, ni.id_of(0), kPt, 0, kSlot, tag(1), 1));
        ASSERT_PTL(PtlGet(dmd, 0, kSlot, ni.id_of(0), kPt, 0, 2 * kSlot, tag(2)));
        std::snprintf(portico_test_wait_note, sizeof portico_test_wait_note,
                      "joining the thread blocked in PtlEQWait for the ACK and the REPLY");
        w.join();
        portico_test_wait_note[0] = '\0';
        EXPECT_EQ(-1, check_pattern(dst.data(), kSlot, 0xCAFE));
    }
    barrier();
    if (rank() == 0) {
        ASSERT_PTL(PtlEndBundle(ni.h));
        in.expect(1, 1);
        EXPECT_EQ(Kind{PTL_EVENT_GET}, Kind{wait_event(in.eq).type});
    }
}

// §3.17.1: a bundle only impacts operations on its own NI: while one NI of a process is inside a
// bundle, what the process sends on another NI is delivered without any further call.
TEST_F(Bundle, OnlyItsOwnInterface) {
    REQUIRE_RANKS(2);
    constexpr size_t kPer = 8;
    Ni a = open_ni(kMatchingPhysical);
    Ni b = open_ni(kNonMatchingPhysical);
    Inbox in(b, 2 * kPer); // rank 1's messages: slots kPer .. 2*kPer-1
    Outbox out(b, 2 * kPer);
    in.warm_links();
    phase(
        rank() == 0, rank() == 1, [&] { in.expect(kPer, kPer); },
        [&] {
            ASSERT_PTL(PtlStartBundle(a.h));
            for (size_t i = kPer; i < 2 * kPer; ++i) ASSERT_PTL(out.send(b, 0, i, true));
        });
    if (rank() == 1) {
        ASSERT_PTL(PtlEndBundle(a.h));
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
