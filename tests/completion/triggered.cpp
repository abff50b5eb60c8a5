// SPDX-License-Identifier: BSD-3-Clause
// Completion conformance: triggered operations (spec §3.14.3, §3.14.4, §3.16, Note 16;
// triggers fired by incoming traffic).
//
// Rank 0 is usually the target: every message lands in one "log" ME whose EQ shows the arrival
// order, which for one initiator is the order the operations fired (§2.6: matching order per
// pair). "Did not fire" is shown deterministically with a witness: a later operation on the same
// counter that must fire after it (threshold order, ties in posting order, Note 16), so a wrong
// early firing would arrive before the witness. Portico decisions used here: triggers fire from
// whatever raises the counter (also incoming traffic, with no application call); an MD used by a
// pending triggered operation cannot be released (PTL_IN_USE); max_triggered_ops pending at most.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <string>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

#include "completion_helpers.hpp"

using namespace cpltest;

namespace {

class Triggered : public CompletionTest {};
constexpr ptl_pt_index_t kPt = 24;
constexpr ptl_match_bits_t kAny = ~0ull;

// Rank 0's log: one ME (put and get allowed) over `buf`, events on `eq`.
struct Log {
    const Ni &ni;
    Buf buf;
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    Log(const Ni &n, size_t size, uint8_t fill = 0, ptl_size_t eq_count = 1024) : ni(n), buf(size, fill) {
        eq = make_eq(ni, eq_count);
        make_pt(ni, eq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), size, PTL_ME_OP_PUT | PTL_ME_OP_GET, 0, kAny), PTL_PRIORITY_LIST,
                  tag(0x10), eq);
    }
    // The next message's event: kind and hdr_data (the tests' message id).
    ptl_hdr_data_t next(ptl_event_kind_t kind = PTL_EVENT_PUT,
                        std::source_location at = std::source_location::current()) {
        const ptl_event_t ev = wait_event(eq, at);
        EXPECT_EQ(Kind{kind}, Kind{ev.type}) << describe(ev) << " (called at line " << at.line() << ")";
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        return ev.hdr_data;
    }
};

ptl_ct_event_t ctv(ptl_size_t success, ptl_size_t failure = 0) { return ptl_ct_event_t{success, failure}; }

// Waits for the SEND and ACK events of `n` puts/atomics on `eq` (any order), all successful, and
// returns how many of each user_ptr were seen.
std::vector<int> drain_send_ack(ptl_handle_eq_t eq, size_t n, size_t max_tag,
                                std::source_location at = std::source_location::current()) {
    std::vector<int> seen(max_tag + 1, 0);
    for (size_t i = 0; i < 2 * n; ++i) {
        const ptl_event_t ev = wait_event(eq, at);
        EXPECT_TRUE(ev.type == PTL_EVENT_SEND || ev.type == PTL_EVENT_ACK) << describe(ev);
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        const auto u = reinterpret_cast<uintptr_t>(ev.user_ptr);
        if (u <= max_tag)
            ++seen[u];
        else
            ADD_FAILURE() << "unexpected user_ptr: " << describe(ev);
    }
    return seen;
}

// ---- processes and connections (the test of two connections per pair, TCP only) ---------------

// The TCP connection this process opened to `to` (the one whose far end is `to`'s listening port,
// PORTICO_TCP_PORT_BASE + pid, see tcp_transport.hpp), or -1.
int tcp_connection_to(const ptl_process_t &to) {
    const char *b = std::getenv("PORTICO_TCP_PORT_BASE");
    const unsigned long port = (b && *b ? std::strtoul(b, nullptr, 10) : 16384ul) + to.phys.pid;
    int found = -1;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const int fd = std::atoi(e->d_name);
        sockaddr_in a{};
        socklen_t len = sizeof a;
        if (getpeername(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0 && a.sin_family == AF_INET &&
            ntohl(a.sin_addr.s_addr) == to.phys.nid && ntohs(a.sin_port) == port)
            found = fd;
    }
    closedir(d);
    return found;
}

// Set by rank 1's SIGCONT handler in TwoConnectionsAcksOutliveTheEndOfOne.
std::atomic<int> g_continued{0};
void on_continue(int) { g_continued.store(1); }

// §3.16: a trigger fires when the counter's success field reaches the threshold;
// failures never count (success 1 + failure 1 does not reach threshold 2), and the buffer is read
// when the operation fires, not when it is posted.
TEST_F(Triggered, FiresOnSuccessOnlyWithFireTimeData) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Log> log;
    if (rank() == 0) log.emplace(ni, 64);
    barrier();
    if (rank() == 1) {
        Buf src(16);
        src.as<uint64_t>()[0] = 0x1111111111111111ull; // P's data when posted
        src.as<uint64_t>()[1] = 0x2222222222222222ull; // the witness's
        ptl_handle_eq_t eq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 16, eq);
        ptl_handle_ct_t a = make_ct(ni);
        ASSERT_PTL(PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 0, tag(1), 1, a, 2));
        ASSERT_PTL(PtlCTInc(a, ctv(1)));
        ASSERT_PTL(PtlCTInc(a, ctv(0, 1)));
        EXPECT_EQ((Ct{1, 1}), ct_get(a));
        src.as<uint64_t>()[0] = 0x3333333333333333ull; // what P must carry when it fires
        // Witness: threshold 1 is already met, so it fires now, before P.
        ASSERT_PTL(PtlTriggeredPut(md, 8, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 8, tag(2), 2, a, 1));
        std::vector<int> seen = drain_send_ack(eq, 1, 2);
        EXPECT_EQ(0, seen[1]) << "P fired on a failure increment";
        EXPECT_EQ(2, seen[2]);
        EXPECT_RC(PTL_IN_USE, PtlMDRelease(md)) << "P is still pending on the MD";
        ASSERT_PTL(PtlCTInc(a, ctv(1))); // success 2: P fires
        seen = drain_send_ack(eq, 1, 2);
        EXPECT_EQ(2, seen[1]);
        EXPECT_EQ((Ct{2, 1}), ct_get(a)) << "firing does not change the trigger counter";
        EXPECT_PTL(PtlMDRelease(md)) << "nothing pending or in flight on the MD any more";
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(2u, log->next()) << "the witness arrives first";
        EXPECT_EQ(1u, log->next());
        expect_eq_empty(log->eq);
        EXPECT_EQ(0x3333333333333333ull, log->buf.as<uint64_t>()[0]) << "P carries the data at fire time";
        EXPECT_EQ(0x2222222222222222ull, log->buf.as<uint64_t>()[1]);
    }
}

// §3.16: an operation whose threshold is already met when it is posted fires at once,
// with no further counter update: threshold equal to, below the count, and 0 on a fresh counter;
// for puts and for a TriggeredCTInc.
TEST_F(Triggered, FiresImmediatelyWhenThresholdAlreadyMet) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Log> log;
    if (rank() == 0) log.emplace(ni, 64);
    barrier();
    if (rank() == 1) {
        Buf src(24);
        for (int i = 0; i < 3; ++i) src.as<uint64_t>()[i] = 100 + i;
        ptl_handle_eq_t eq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 24, eq);
        ptl_handle_ct_t b = make_ct(ni), fresh = make_ct(ni), d = make_ct(ni);
        ASSERT_PTL(PtlCTSet(b, ctv(5)));
        ASSERT_PTL(PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 0, tag(1), 1, b, 5));
        ASSERT_PTL(PtlTriggeredPut(md, 8, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 8, tag(2), 2, b, 3));
        ASSERT_PTL(PtlTriggeredPut(md, 16, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 16, tag(3), 3, fresh, 0));
        ASSERT_PTL(PtlTriggeredCTInc(d, ctv(7), b, 4));
        // Only waits from here on.
        EXPECT_EQ((Ct{7, 0}), ct_wait(d, 7));
        const std::vector<int> seen = drain_send_ack(eq, 3, 3);
        EXPECT_EQ((std::vector<int>{0, 2, 2, 2}), seen);
        EXPECT_EQ((Ct{5, 0}), ct_get(b));
        EXPECT_EQ((Ct{0, 0}), ct_get(fresh));
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(1u, log->next()) << "posting order: each fired when posted";
        EXPECT_EQ(2u, log->next());
        EXPECT_EQ(3u, log->next());
        for (int i = 0; i < 3; ++i) EXPECT_EQ(uint64_t(100 + i), log->buf.as<uint64_t>()[i]);
    }
}

// §3.16: every triggered data movement call reads its data at fire time: a triggered
// atomic and fetch-atomic use the initiator's values as they are when they fire, a triggered swap
// too, and a triggered get reads the target as it is when it fires (changed after posting).
TEST_F(Triggered, EveryKindUsesStateAtFireTime) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Log> log;
    if (rank() == 0) {
        log.emplace(ni, 64);
        int64_t *w = log->buf.as<int64_t>();
        w[0] = 100;  // TriggeredAtomic SUM
        w[1] = 1000; // TriggeredFetchAtomic SUM
        w[2] = 7;    // TriggeredGet (changed before it fires)
        w[3] = 333;  // TriggeredSwap SWAP
        w[4] = 444;  // TriggeredSwap CSWAP
    }
    barrier();
    Buf src(40), got(40, 0xEE), operand(8);
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    ptl_handle_ct_t a = PTL_INVALID_HANDLE;
    if (rank() == 1) {
        int64_t *s = src.as<int64_t>();
        s[0] = 1;
        s[1] = 10;
        s[3] = 77;
        s[4] = 88;
        *operand.as<int64_t>() = 444;
        eq = make_eq(ni);
        ptl_handle_md_t put_md = bind_md(ni, src.data(), 40, eq);
        ptl_handle_md_t get_md = bind_md(ni, got.data(), 40, eq);
        a = make_ct(ni);
        const ptl_process_t t = ni.id_of(0);
        ASSERT_PTL(PtlTriggeredAtomic(put_md, 0, 8, PTL_ACK_REQ, t, kPt, 0, 0, tag(1), 1, PTL_SUM, PTL_INT64_T, a, 1));
        ASSERT_PTL(
            PtlTriggeredFetchAtomic(get_md, 8, put_md, 8, 8, t, kPt, 0, 8, tag(2), 2, PTL_SUM, PTL_INT64_T, a, 1));
        ASSERT_PTL(PtlTriggeredGet(get_md, 16, 8, t, kPt, 0, 16, tag(3), a, 1));
        ASSERT_PTL(PtlTriggeredSwap(get_md, 24, put_md, 24, 8, t, kPt, 0, 24, tag(4), 4, nullptr, PTL_SWAP, PTL_INT64_T,
                                    a, 1));
        ASSERT_PTL(PtlTriggeredSwap(get_md, 32, put_md, 32, 8, t, kPt, 0, 32, tag(5), 5, operand.data(), PTL_CSWAP,
                                    PTL_INT64_T, a, 1));
        s[0] = 5;
        s[1] = 50;
        s[3] = 99;
        s[4] = 111;
    }
    barrier();
    if (rank() == 0) log->buf.as<int64_t>()[2] = 0xBEEF; // no operation is in flight on this ME
    barrier();
    if (rank() == 1) {
        ASSERT_PTL(PtlCTInc(a, ctv(1)));
        // SEND+ACK (atomic), SEND+REPLY (fetch), REPLY (get), SEND+REPLY (swap), SEND+REPLY (cswap).
        std::map<std::pair<int, uintptr_t>, int> seen;
        for (int i = 0; i < 9; ++i) {
            const ptl_event_t ev = wait_event(eq);
            EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
            ++seen[{ev.type, reinterpret_cast<uintptr_t>(ev.user_ptr)}];
        }
        const std::map<std::pair<int, uintptr_t>, int> want = {
            {{PTL_EVENT_SEND, 1}, 1},  {{PTL_EVENT_ACK, 1}, 1},   {{PTL_EVENT_SEND, 2}, 1},
            {{PTL_EVENT_REPLY, 2}, 1}, {{PTL_EVENT_REPLY, 3}, 1}, {{PTL_EVENT_SEND, 4}, 1},
            {{PTL_EVENT_REPLY, 4}, 1}, {{PTL_EVENT_SEND, 5}, 1},  {{PTL_EVENT_REPLY, 5}, 1}};
        EXPECT_TRUE(want == seen) << "the events of the five fired operations";
        const int64_t *g = got.as<int64_t>();
        EXPECT_EQ(1000, g[1]);
        EXPECT_EQ(0xBEEF, g[2]) << "the get read the target at fire time";
        EXPECT_EQ(333, g[3]);
        EXPECT_EQ(444, g[4]);
    }
    barrier();
    if (rank() == 0) {
        ASSERT_PTL(PtlAtomicSync());
        const int64_t *w = log->buf.as<int64_t>();
        EXPECT_EQ(105, w[0]);
        EXPECT_EQ(1050, w[1]);
        EXPECT_EQ(0xBEEF, w[2]);
        EXPECT_EQ(99, w[3]);
        EXPECT_EQ(111, w[4]) << "CSWAP with operand 444 == target: swapped in the fire-time value";
        // Same threshold: fired (and arrived) in posting order.
        EXPECT_EQ(1u, log->next(PTL_EVENT_ATOMIC));
        EXPECT_EQ(2u, log->next(PTL_EVENT_FETCH_ATOMIC));
        log->next(PTL_EVENT_GET);
        EXPECT_EQ(4u, log->next(PTL_EVENT_FETCH_ATOMIC));
        EXPECT_EQ(5u, log->next(PTL_EVENT_FETCH_ATOMIC));
    }
}

// §3.16, Note 16: one PtlCTInc(+5) fires thresholds 1..5 in threshold order, whatever
// the posting order, ties in posting order, across puts and atomics; threshold 6 waits for the
// next increment (a witness posted after the +5 arrives before it).
TEST_F(Triggered, OneIncrementFiresInThresholdOrder) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Log> log;
    if (rank() == 0) log.emplace(ni, 64);
    barrier();
    struct Post {
        ptl_size_t threshold;
        uint64_t id;
        bool atomic;
    };
    const Post posts[] = {{3, 1, false}, {1, 2, false}, {5, 3, false}, {2, 4, false}, {4, 5, true},
                          {3, 6, false}, {1, 7, true},  {6, 8, false}, {5, 9, false}, {2, 10, true}};
    // Fired by +5: threshold order, ties in posting order; then the witness (11), then 8 (+1).
    const std::vector<uint64_t> order = {2, 7, 4, 10, 1, 6, 5, 3, 9, 11, 8};
    if (rank() == 1) {
        Buf src(8 * 12);
        for (uint64_t i = 0; i < 12; ++i) src.as<uint64_t>()[i] = i;
        ptl_handle_ct_t acks = make_ct(ni), a = make_ct(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, acks, PTL_MD_EVENT_CT_ACK);
        const ptl_process_t t = ni.id_of(0);
        for (const Post &p : posts) {
            if (p.atomic) {
                ASSERT_PTL(PtlTriggeredAtomic(md, p.id * 8, 8, PTL_ACK_REQ, t, kPt, 0, 8, nullptr, p.id, PTL_SUM,
                                              PTL_UINT64_T, a, p.threshold));
            } else {
                ASSERT_PTL(PtlTriggeredPut(md, p.id * 8, 8, PTL_ACK_REQ, t, kPt, 0, 0, nullptr, p.id, a, p.threshold));
            }
        }
        ASSERT_PTL(PtlCTInc(a, ctv(5)));
        ASSERT_PTL(PtlTriggeredPut(md, 11 * 8, 8, PTL_ACK_REQ, t, kPt, 0, 0, nullptr, 11, a, 5));
        EXPECT_EQ((Ct{10, 0}), ct_wait(acks, 10));
        ASSERT_PTL(PtlCTInc(a, ctv(1)));
        EXPECT_EQ((Ct{11, 0}), ct_wait(acks, 11));
        EXPECT_EQ((Ct{6, 0}), ct_get(a));
    }
    barrier();
    if (rank() == 0) {
        for (uint64_t id : order) {
            const bool atomic = id == 5 || id == 7 || id == 10;
            EXPECT_EQ(id, log->next(atomic ? PTL_EVENT_ATOMIC : PTL_EVENT_PUT))
                << "expected order 2 7 4 10 1 6 5 3 9 11 8";
        }
        expect_eq_empty(log->eq);
        EXPECT_EQ(8u, log->buf.as<uint64_t>()[0]) << "the last put";
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(5u + 7 + 10, log->buf.as<uint64_t>()[1]) << "the three atomics";
    }
}

// §3.16.6, §3.16.7: TriggeredCTInc chains counters (the spec's example: a put and a
// CTInc of B on A, a put on B: the second put follows the first); a failure increment chained
// into a counter fires nothing there; TriggeredCTSet resets a counter (both fields), and a
// TriggeredCTSet that raises a counter fires that counter's triggers.
TEST_F(Triggered, CounterChainsAndResets) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Log> log;
    if (rank() == 0) log.emplace(ni, 64);
    barrier();
    if (rank() == 1) {
        Buf src(16);
        src.as<uint64_t>()[0] = 1;
        src.as<uint64_t>()[1] = 2;
        ptl_handle_ct_t acks = make_ct(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 16, PTL_EQ_NONE, acks, PTL_MD_EVENT_CT_ACK);
        ptl_handle_ct_t A = make_ct(ni), B = make_ct(ni), C = make_ct(ni), D = make_ct(ni), E = make_ct(ni),
                        F = make_ct(ni), G = make_ct(ni), H = make_ct(ni);
        const ptl_process_t t = ni.id_of(0);
        ASSERT_PTL(PtlCTSet(F, ctv(4, 2)));
        ASSERT_PTL(PtlCTSet(C, ctv(7, 3)));
        // Threshold 1 on A: P1, then B += 1, which fires P2 (on B).
        ASSERT_PTL(PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, t, kPt, 0, 0, nullptr, 1, A, 1));
        ASSERT_PTL(PtlTriggeredCTInc(B, ctv(1), A, 1));
        ASSERT_PTL(PtlTriggeredPut(md, 8, 8, PTL_ACK_REQ, t, kPt, 0, 8, nullptr, 2, B, 1));
        // A failure chained into G: G's success trigger must not fire.
        ASSERT_PTL(PtlTriggeredCTInc(G, ctv(0, 1), A, 1));
        ASSERT_PTL(PtlTriggeredCTInc(H, ctv(1), G, 1));
        // Threshold 2 on A: reset F, then D += 1, which sets C to 10, which fires E += 1.
        ASSERT_PTL(PtlTriggeredCTSet(F, ctv(0, 0), A, 2));
        ASSERT_PTL(PtlTriggeredCTInc(D, ctv(1), A, 2));
        ASSERT_PTL(PtlTriggeredCTSet(C, ctv(10), D, 1));
        ASSERT_PTL(PtlTriggeredCTInc(E, ctv(1), C, 10));

        ASSERT_PTL(PtlCTInc(A, ctv(1)));
        EXPECT_EQ((Ct{2, 0}), ct_wait(acks, 2)) << "P1 and P2";
        EXPECT_EQ((Ct{1, 0}), ct_get(B));
        EXPECT_EQ((Ct{0, 1}), ct_get(G));
        EXPECT_EQ((Ct{7, 3}), ct_get(C)) << "threshold 2 not reached yet";
        EXPECT_EQ((Ct{4, 2}), ct_get(F));
        ASSERT_PTL(PtlCTInc(A, ctv(1)));
        EXPECT_EQ((Ct{1, 0}), ct_wait(E, 1)) << "A -> D -> C -> E";
        EXPECT_EQ((Ct{0, 0}), ct_get(F)) << "reset before D fired (posting order)";
        EXPECT_EQ((Ct{1, 0}), ct_get(D));
        EXPECT_EQ((Ct{10, 0}), ct_get(C)) << "TriggeredCTSet sets both fields";
        EXPECT_EQ((Ct{2, 0}), ct_get(A));
        EXPECT_EQ((Ct{0, 0}), ct_get(H)) << "a failure increment fired a success trigger";
        EXPECT_PTL(PtlCTCancelTriggered(G)); // H's trigger never fires
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(1u, log->next()) << "P1 before P2";
        EXPECT_EQ(2u, log->next());
        expect_eq_empty(log->eq);
    }
}

// §3.14.3, §3.14.4: PtlCTCancelTriggered deletes every pending trigger of the counter
// and changes nothing else (the counter keeps its value; other counters' triggers still fire);
// PtlCTFree drops the freed counter's pending triggers. Dropped operations never fire (a witness
// arrives alone) and release their MDs (PTL_IN_USE before, PTL_OK after).
TEST_F(Triggered, CancelAndFreeDropPendingTriggers) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Log> log;
    if (rank() == 0) log.emplace(ni, 64);
    barrier();
    if (rank() == 1) {
        Buf src(32);
        for (int i = 0; i < 4; ++i) src.as<uint64_t>()[i] = 0xCA0 + i;
        ptl_handle_eq_t eq = make_eq(ni);
        ptl_handle_md_t m1 = bind_md(ni, src.data(), 32, eq), m2 = bind_md(ni, src.data(), 32, eq),
                        m3 = bind_md(ni, src.data(), 32, eq);
        ptl_handle_ct_t A = make_ct(ni), B = make_ct(ni), H = make_ct(ni), X = make_ct(ni), G = make_ct(ni);
        const ptl_process_t t = ni.id_of(0);
        ASSERT_PTL(PtlCTSet(A, ctv(2, 1)));
        ASSERT_PTL(PtlTriggeredPut(m1, 0, 8, PTL_ACK_REQ, t, kPt, 0, 0, tag(1), 1, A, 5));
        ASSERT_PTL(PtlTriggeredCTInc(B, ctv(1), A, 5));
        ASSERT_PTL(PtlTriggeredAtomic(m1, 0, 8, PTL_ACK_REQ, t, kPt, 0, 8, tag(1), 1, PTL_SUM, PTL_INT64_T, A, 6));
        ASSERT_PTL(PtlTriggeredCTInc(X, ctv(1), H, 1));
        EXPECT_RC(PTL_IN_USE, PtlMDRelease(m1)) << "two pending triggered operations use it";
        ASSERT_PTL(PtlCTCancelTriggered(A));
        EXPECT_EQ((Ct{2, 1}), ct_get(A)) << "cancelling leaves the counter alone";
        EXPECT_PTL(PtlMDRelease(m1)) << "the cancelled operations no longer hold the MD";
        ASSERT_PTL(PtlCTInc(A, ctv(10)));
        // Witness on A (threshold met: fires now); a cancelled operation would have fired first.
        ASSERT_PTL(PtlTriggeredPut(m2, 8, 8, PTL_ACK_REQ, t, kPt, 0, 16, tag(2), 2, A, 1));
        std::vector<int> seen = drain_send_ack(eq, 1, 4);
        EXPECT_EQ(2, seen[2]);
        EXPECT_EQ((Ct{0, 0}), ct_get(B)) << "the cancelled TriggeredCTInc fired";
        EXPECT_EQ((Ct{12, 1}), ct_get(A));
        // Another counter's trigger was not cancelled.
        ASSERT_PTL(PtlCTInc(H, ctv(1)));
        EXPECT_EQ((Ct{1, 0}), ct_wait(X, 1));
        EXPECT_PTL(PtlCTCancelTriggered(A)) << "nothing pending: still OK";
        EXPECT_PTL(PtlCTCancelTriggered(H));
        // PtlCTFree drops G's pending triggers.
        ASSERT_PTL(PtlTriggeredPut(m3, 16, 8, PTL_ACK_REQ, t, kPt, 0, 24, tag(3), 3, G, 1));
        ASSERT_PTL(PtlTriggeredCTInc(B, ctv(1), G, 1));
        EXPECT_RC(PTL_IN_USE, PtlMDRelease(m3));
        ASSERT_PTL(PtlCTFree(G));
        EXPECT_PTL(PtlMDRelease(m3)) << "the freed counter's operations no longer hold the MD";
        ASSERT_PTL(PtlPut(m2, 24, 8, PTL_ACK_REQ, t, kPt, 0, 32, tag(4), 4));
        seen = drain_send_ack(eq, 1, 4);
        EXPECT_EQ(2, seen[4]);
        EXPECT_EQ((Ct{0, 0}), ct_get(B));
        expect_eq_empty(eq);
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(2u, log->next()) << "only the witnesses arrive";
        EXPECT_EQ(4u, log->next());
        expect_eq_empty(log->eq);
        EXPECT_EQ(0u, log->buf.as<uint64_t>()[0]);
        EXPECT_EQ(0u, log->buf.as<uint64_t>()[1]);
        EXPECT_EQ(0u, log->buf.as<uint64_t>()[3]);
    }
}

// §3.16.1-7 (PTL_NO_SPACE, new in 4.3): with max_triggered_ops = 4 (desired at PtlNIInit), a fifth
// pending operation of any triggered kind is PTL_NO_SPACE, whatever its counter; slots come back
// when operations fire, are cancelled, or their counter is freed.
TEST_F(Triggered, NoSpaceBeyondMaxTriggeredOps) {
    REQUIRE_RANKS(2);
    ptl_ni_limits_t want = generous_limits();
    want.max_triggered_ops = 4;
    Ni ni = open_ni(kMatchingPhysical, &want);
    EXPECT_EQ(4, ni.limits.max_triggered_ops) << "a smaller desired limit is honoured";
    const int k = ni.limits.max_triggered_ops;
    ASSERT_GE(k, 1);
    ASSERT_LE(k, 4);
    std::optional<Log> log;
    if (rank() == 0) log.emplace(ni, 64);
    barrier();
    if (rank() == 1) {
        Buf src(16), dst(16), operand(8);
        ptl_handle_eq_t eq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 16, eq), gmd = bind_md(ni, dst.data(), 16, eq);
        ptl_handle_ct_t A = make_ct(ni), A2 = make_ct(ni), B = make_ct(ni), D = make_ct(ni);
        const ptl_process_t t = ni.id_of(0);
        // One call of every triggered kind, on counter `c` with `threshold`.
        auto post = [&](int kind, ptl_handle_ct_t c, ptl_size_t threshold) {
            switch (kind % 7) {
            case 0: return PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, t, kPt, 0, 0, tag(1), 1, c, threshold);
            case 1: return PtlTriggeredCTInc(B, ctv(1), c, threshold);
            case 2: return PtlTriggeredCTSet(B, ctv(0), c, threshold);
            case 3:
                return PtlTriggeredAtomic(md, 0, 8, PTL_ACK_REQ, t, kPt, 0, 8, tag(1), 1, PTL_SUM, PTL_INT64_T, c,
                                          threshold);
            case 4: return PtlTriggeredGet(gmd, 0, 8, t, kPt, 0, 0, tag(1), c, threshold);
            case 5:
                return PtlTriggeredFetchAtomic(gmd, 0, md, 0, 8, t, kPt, 0, 8, tag(1), 1, PTL_SUM, PTL_INT64_T, c,
                                               threshold);
            default:
                return PtlTriggeredSwap(gmd, 0, md, 0, 8, t, kPt, 0, 8, tag(1), 1, operand.data(), PTL_CSWAP,
                                        PTL_INT64_T, c, threshold);
            }
        };
        // Fill: the put (threshold 1) first, the rest pending on thresholds that are not reached.
        ASSERT_PTL(post(0, A, 1));
        for (int i = 1; i < k; ++i)
            ASSERT_PTL(post(i, i % 2 ? A : A2, 100)) << "pending operation " << i + 1 << " of " << k;
        for (int kind = 0; kind < 7; ++kind) {
            EXPECT_RC(PTL_NO_SPACE, post(kind, A, 100)) << "kind " << kind << " beyond max_triggered_ops";
            EXPECT_RC(PTL_NO_SPACE, post(kind, D, 100)) << "kind " << kind << " on another counter";
        }
        // The put fires: its slot comes back (once it completed, to be independent of when).
        ASSERT_PTL(PtlCTInc(A, ctv(1)));
        EXPECT_EQ(2, drain_send_ack(eq, 1, 1)[1]);
        ASSERT_PTL(post(1, D, 100)) << "a slot freed by firing";
        EXPECT_RC(PTL_NO_SPACE, post(3, D, 100));
        // Cancelling A and A2 frees the rest.
        ASSERT_PTL(PtlCTCancelTriggered(A));
        ASSERT_PTL(PtlCTCancelTriggered(A2));
        for (int i = 1; i < k; ++i) ASSERT_PTL(post(i + 2, A, 100)) << "after cancel, pending operation " << i + 1;
        EXPECT_RC(PTL_NO_SPACE, post(0, A2, 100));
        // Freeing D frees its slot.
        ASSERT_PTL(PtlCTFree(D));
        ASSERT_PTL(post(2, A2, 100)) << "a slot freed by PtlCTFree";
        EXPECT_RC(PTL_NO_SPACE, post(4, A2, 100));
        ASSERT_PTL(PtlCTCancelTriggered(A));
        ASSERT_PTL(PtlCTCancelTriggered(A2));
        EXPECT_EQ((Ct{0, 0}), ct_get(B)) << "nothing but the put fired";
        expect_eq_empty(eq);
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(1u, log->next());
        expect_eq_empty(log->eq);
    }
}

// PTL_NO_SPACE with traffic (§3.16, §3.6.1): two ranks each fill their triggered-op table with puts
// to the other (PTL_NO_SPACE beyond it), then fire them all at once, both directions at the same
// moment, on a fresh NI each round (so links are set up while the puts fire). Every put must
// succeed: the MD's counter reaches max_triggered_ops successes and no failure.
TEST_F(Triggered, FullTableFiredBothWaysHasNoFailures) {
    REQUIRE_RANKS(2);
    constexpr int kRounds = 8;
    constexpr int kOps = 64;
    for (int round = 0; round < kRounds; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        ptl_ni_limits_t want = generous_limits();
        want.max_triggered_ops = kOps;
        Ni ni = open_ni(kMatchingPhysical, &want);
        const int k = ni.limits.max_triggered_ops;
        ASSERT_EQ(kOps, k);
        if (rank() > 1) { // not involved, but in every barrier
            barrier();
            barrier();
            close_ni(ni);
            continue;
        }
        Log log(ni, 8 * static_cast<size_t>(k), 0, static_cast<ptl_size_t>(k) + 16);
        Buf src(8 * static_cast<size_t>(k));
        for (int i = 0; i < k; ++i)
            src.as<uint64_t>()[i] = 1000u * static_cast<unsigned>(rank()) + static_cast<unsigned>(i);
        ptl_handle_ct_t acks = make_ct(ni), trig = make_ct(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, acks, PTL_MD_EVENT_CT_ACK);
        const ptl_process_t t = ni.id_of(peer());
        for (int i = 0; i < k; ++i)
            ASSERT_PTL(PtlTriggeredPut(md, 8 * static_cast<ptl_size_t>(i), 8, PTL_CT_ACK_REQ, t, kPt, 0,
                                       8 * static_cast<ptl_size_t>(i), nullptr, static_cast<ptl_hdr_data_t>(i), trig,
                                       1))
                << "triggered put " << i;
        EXPECT_RC(PTL_NO_SPACE, PtlTriggeredPut(md, 0, 8, PTL_CT_ACK_REQ, t, kPt, 0, 0, nullptr, 0, trig, 1));
        barrier(); // both logs exist
        ASSERT_PTL(PtlCTInc(trig, ctv(1)));
        EXPECT_EQ((Ct{static_cast<ptl_size_t>(k), 0}), ct_reach(acks, Ct{static_cast<ptl_size_t>(k), 0}))
            << "every fired put acknowledged, none failed";
        std::vector<bool> got(static_cast<size_t>(k), false);
        for (int i = 0; i < k; ++i) {
            const ptl_hdr_data_t id = log.next();
            ASSERT_LT(id, static_cast<ptl_hdr_data_t>(k));
            EXPECT_FALSE(got[id]) << "message " << id << " twice";
            got[id] = true;
            EXPECT_EQ(1000u * static_cast<unsigned>(peer()) + id, log.buf.as<uint64_t>()[id]);
        }
        expect_eq_empty(log.eq);
        EXPECT_EQ((Ct{1, 0}), ct_get(trig));
        barrier(); // nothing is in flight when the NI closes
        close_ni(ni);
    }
}

// The reported race ("a full table of triggered puts fired over TCP: one run in four saw a failure
// on the ack counter"): two processes that start sending to each other at the same moment open a
// TCP connection each, and each answers on the connection it opened; a rank that exits right after
// its last ack closes both, and whichever end the initiator read first decided: the end of the
// connection that carried its puts failed every put still waiting for its ACK (PTL_NI_UNDELIVERABLE)
// while the ACKs sat unread in the other. Made deterministic here: the two connections are opened
// in a fixed order (rank 2 conducts, with SIGSTOP/SIGCONT), rank 0 fills its table with puts to
// rank 1 and fires them while rank 1 is stopped, then ends the connection its puts took (its read
// side, as the peer's close would) and waits until its transport has dropped it; only then does
// rank 1 run and answer on its own connection. Every put must be acknowledged, none failed.
TEST_F(Triggered, TwoConnectionsAcksOutliveTheEndOfOne) {
    REQUIRE_RANKS(3);
    const char *transport = std::getenv("PORTICO_TRANSPORT");
    if (!transport || std::string(transport) != "tcp")
        GTEST_SKIP() << "needs PORTICO_TRANSPORT=tcp (a connection per direction and handshakes)";
    if (!same_host()) GTEST_SKIP() << "needs all ranks on one host (SIGSTOP)";
    constexpr int kOps = 64;
    ptl_ni_limits_t want = generous_limits();
    want.max_triggered_ops = kOps;
    Ni ni = open_ni(kMatchingPhysical, &want);
    ASSERT_EQ(kOps, ni.limits.max_triggered_ops);
    const std::vector<pid_t> pids = job().allgather_pod(getpid());
    std::optional<Log> log;
    Buf src(8 * (kOps + 1));
    ptl_handle_ct_t acks = PTL_INVALID_HANDLE, trig = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    struct sigaction old_cont {};
    if (rank() < 2) {
        log.emplace(ni, 8 * (kOps + 1), 0, kOps + 16);
        for (int i = 0; i <= kOps; ++i)
            src.as<uint64_t>()[i] = 1000u * static_cast<unsigned>(rank()) + static_cast<unsigned>(i);
        acks = make_ct(ni);
        trig = make_ct(ni);
        md = bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, acks, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK);
    }
    if (rank() == 1) {
        struct sigaction sa {};
        sa.sa_handler = on_continue;
        sigemptyset(&sa.sa_mask);
        ASSERT_EQ(0, sigaction(SIGCONT, &sa, &old_cont));
    }
    g_continued = 0;
    barrier();
    // Each rank opens its own connection before it hears the other's handshake to the end (the
    // other is stopped meanwhile), so each answers on its own: rank 0's puts go one way, rank 1's
    // acks the other.
    const ptl_size_t first = 8 * kOps; // the slot of each rank's connection-opening put
    if (rank() == 0) {
        ASSERT_EQ(0, kill(pids[1], SIGSTOP));
        wait_until_stopped(pids[1]);
        ASSERT_PTL(PtlPut(md, first, 8, PTL_CT_ACK_REQ, ni.id_of(1), kPt, 0, first, nullptr, kOps));
        ASSERT_EQ(0, kill(getpid(), SIGSTOP)); // rank 1 resumes us once it has connected
    } else if (rank() == 1) {
        while (!g_continued.load()) sched_yield(); // stopped by rank 0 in here; rank 2 continues us
        ASSERT_PTL(PtlPut(md, first, 8, PTL_CT_ACK_REQ, ni.id_of(0), kPt, 0, first, nullptr, kOps));
        ASSERT_EQ(0, kill(pids[0], SIGCONT));
    } else {
        wait_until_stopped(pids[0]); // rank 0 stops itself after rank 1 and after its put
        ASSERT_EQ(0, kill(pids[1], SIGCONT));
    }
    if (rank() < 2) {
        EXPECT_EQ((Ct{2, 0}), ct_reach(acks, Ct{2, 0})) << "the connection-opening put: SEND and ACK";
        EXPECT_EQ(static_cast<ptl_hdr_data_t>(kOps), log->next());
    }
    if (rank() == 1) {
        ASSERT_EQ(0, sigaction(SIGCONT, &old_cont, nullptr));
    }
    barrier();

    if (rank() == 0) {
        const int fd = tcp_connection_to(ni.id_of(1));
        ASSERT_GE(fd, 0) << "rank 0's own connection to rank 1";
        struct stat st {};
        ASSERT_EQ(0, fstat(fd, &st));
        const ino_t conn = st.st_ino;
        for (int i = 0; i < kOps; ++i)
            ASSERT_PTL(PtlTriggeredPut(md, 8 * static_cast<ptl_size_t>(i), 8, PTL_CT_ACK_REQ, ni.id_of(1), kPt, 0,
                                       8 * static_cast<ptl_size_t>(i), nullptr, static_cast<ptl_hdr_data_t>(i), trig,
                                       1))
                << "triggered put " << i;
        EXPECT_RC(PTL_NO_SPACE, PtlTriggeredPut(md, 0, 8, PTL_CT_ACK_REQ, ni.id_of(1), kPt, 0, 0, nullptr, 0, trig, 1));
        ASSERT_EQ(0, kill(pids[1], SIGSTOP));
        wait_until_stopped(pids[1]);
        ASSERT_PTL(PtlCTInc(trig, ctv(1)));
        // Every put has left (a SEND each; rank 1 is stopped, so no ACK yet).
        EXPECT_EQ((Ct{2 + kOps, 0}), ct_reach(acks, Ct{2 + kOps, 0}));
        // That connection ends; the transport notices (and closes it) while we poll. Whether the
        // descriptor still names the socket is asked by path: an fstat on it would race with the
        // transport's close (TSan says so, rightly).
        ASSERT_EQ(0, shutdown(fd, SHUT_RD));
        const std::string fd_path = "/proc/self/fd/" + std::to_string(fd);
        const std::string socket_name = "socket:[" + std::to_string(conn) + "]";
        for (;;) {
            const Ct now = ct_get(acks);
            char target[64] = {};
            const ssize_t n = readlink(fd_path.c_str(), target, sizeof target - 1);
            if (n <= 0 || socket_name != target) break;
            if (now.failure != 0) break; // the bug: no need to wait for the close to see it
            sched_yield();
        }
        EXPECT_EQ((Ct{2 + kOps, 0}), ct_get(acks))
            << "the end of one connection failed puts whose ACKs come on the other";
        ASSERT_EQ(0, kill(pids[1], SIGCONT));
        EXPECT_EQ((Ct{2 + 2 * kOps, 0}), ct_reach(acks, Ct{2 + 2 * kOps, 0}))
            << "every fired put acknowledged, none failed";
        EXPECT_EQ((Ct{1, 0}), ct_get(trig));
    } else if (rank() == 1) {
        std::vector<bool> got(kOps, false);
        for (int i = 0; i < kOps; ++i) {
            const ptl_hdr_data_t id = log->next();
            ASSERT_LT(id, static_cast<ptl_hdr_data_t>(kOps));
            EXPECT_FALSE(got[id]) << "message " << id << " twice";
            got[id] = true;
            EXPECT_EQ(id, log->buf.as<uint64_t>()[id]);
        }
        expect_eq_empty(log->eq);
    }
}

// Triggered operations fire from incoming traffic with no application call (§3.16, §1.6
// application bypass): rank 0's ME counts incoming puts; the put, atomic and CT increment it
// triggered on threshold 3 fire while rank 0 only waits in PtlEQWait, then PtlCTWait.
TEST_F(Triggered, FiredByIncomingTrafficWhileTheOwnerWaits) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    if (rank() > 1) { // not involved, but in every barrier
        barrier();
        barrier();
        return;
    }
    Buf inbox(64), src(16);
    src.as<uint64_t>()[0] = 0xF1F1F1F1ull;
    src.as<int64_t>()[1] = 41;
    ptl_handle_eq_t teq = make_eq(ni);
    make_pt(ni, teq, 0, kPt);
    ptl_handle_ct_t c = make_ct(ni);
    append_me(ni, kPt, me_desc(inbox.data(), 64, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 0, kAny, c), PTL_PRIORITY_LIST,
              tag(0x1B), teq);
    ptl_handle_eq_t meq = make_eq(ni);
    ptl_handle_md_t md = bind_md(ni, src.data(), 16, meq);
    if (rank() == 0) {
        ptl_handle_ct_t d = make_ct(ni);
        ASSERT_PTL(PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(1), kPt, 0, 0, tag(1), 0xF1, c, 3));
        ASSERT_PTL(PtlTriggeredAtomic(md, 8, 8, PTL_ACK_REQ, ni.id_of(1), kPt, 0, 8, tag(2), 0xF2, PTL_SUM, PTL_INT64_T,
                                      c, 3));
        ASSERT_PTL(PtlTriggeredCTInc(d, ctv(1), c, 3));
        ASSERT_PTL(PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(1), kPt, 0, 0, tag(3), 0xF3, c, 4)); // never
        barrier();
        // From here rank 0 only waits.
        const std::vector<int> seen = drain_send_ack(meq, 2, 3);
        EXPECT_EQ((std::vector<int>{0, 2, 2, 0}), seen);
        EXPECT_EQ((Ct{1, 0}), ct_wait(d, 1));
        for (int i = 0; i < 3; ++i) EXPECT_EQ(Kind{PTL_EVENT_PUT}, Kind{wait_event(teq).type});
        EXPECT_EQ((Ct{3, 0}), ct_get(c));
        ASSERT_PTL(PtlCTCancelTriggered(c));
    } else {
        barrier();
        for (int i = 0; i < 3; ++i) {
            ASSERT_PTL(PtlPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 8 * i, tag(10 + i), i));
            expect_send_and_ack(meq, tag(10 + i), 8, 8, 8 * i);
        }
        // What rank 0's triggers sent: the put, then the atomic (posting order).
        const ptl_event_t p = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(0xF1u, p.hdr_data) << describe(p);
        const ptl_event_t a = expect_event(teq, PTL_EVENT_ATOMIC);
        EXPECT_EQ(0xF2u, a.hdr_data) << describe(a);
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(0xF1F1F1F1ull, inbox.as<uint64_t>()[0]);
        EXPECT_EQ(41, inbox.as<int64_t>()[1]);
    }
    barrier();
    expect_eq_empty(teq);
}

// A token goes kLaps times around a ring of every rank, each hop a triggered put pre-posted on the
// receiver's incoming-put counter (threshold = number of receipts): after rank 0's first put,
// every process only waits in PtlCTWait while the whole ring runs by itself.
TEST_F(Triggered, RingOfTriggeredPuts) {
    constexpr int kLaps = 25;
    const int n = nranks(), me = rank();
    Ni ni = open_ni(kMatchingPhysical);
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    Buf inbox(8 * kLaps, 0xEE), src(8 * kLaps);
    for (int lap = 0; lap < kLaps; ++lap) src.as<uint64_t>()[lap] = uint64_t(lap) * 1000 + uint64_t(me);
    make_pt(ni, PTL_EQ_NONE, 0, kPt);
    ptl_handle_ct_t c = make_ct(ni);
    append_me(ni, kPt, me_desc(inbox.data(), inbox.size(), PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 0, kAny, c),
              PTL_PRIORITY_LIST, tag(1), PTL_EQ_NONE);
    // Counts this rank's SENDs: the source buffer must outlive every put that reads it.
    ptl_handle_ct_t sent = make_ct(ni);
    ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, sent, PTL_MD_EVENT_CT_SEND);
    // Rank 0 sends lap 0 itself and lap k after its k-th receipt; the others forward lap k after
    // their (k+1)-th receipt.
    for (int lap = me == 0 ? 1 : 0; lap < kLaps; ++lap)
        ASSERT_PTL(PtlTriggeredPut(md, ptl_size_t(lap) * 8, 8, PTL_NO_ACK_REQ, ni.id_of(next), kPt, 0,
                                   ptl_size_t(lap) * 8, nullptr, 0, c, me == 0 ? lap : lap + 1));
    barrier();
    if (me == 0) {
        ASSERT_PTL(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, ni.id_of(next), kPt, 0, 0, nullptr, 0));
    }
    EXPECT_EQ((Ct{kLaps, 0}), ct_wait(c, kLaps));
    EXPECT_EQ((Ct{kLaps, 0}), ct_wait(sent, kLaps)) << "every lap forwarded";
    for (int lap = 0; lap < kLaps; ++lap)
        EXPECT_EQ(uint64_t(lap) * 1000 + uint64_t(prev), inbox.as<uint64_t>()[lap]) << "lap " << lap;
}

// A reduction offloaded with triggered atomics (§3.16.3): every rank r > 0 pre-posts a
// TriggeredAtomic SUM of r+1 to rank 0, triggered by a "go" message; rank 0 sends the go messages
// and waits for the sum, while the others only wait for their atomic's ACK.
TEST_F(Triggered, ReductionTriggeredByGoMessages) {
    REQUIRE_RANKS(2);
    const int n = nranks(), me = rank();
    Ni ni = open_ni(kMatchingPhysical);
    constexpr ptl_match_bits_t kGo = 1, kSum = 2;
    Buf word(8), go(8), val(8);
    *val.as<int64_t>() = me + 1;
    make_pt(ni, PTL_EQ_NONE, 0, kPt);
    ptl_handle_ct_t gct = make_ct(ni), sct = make_ct(ni), acks = make_ct(ni);
    append_me(ni, kPt, me_desc(go.data(), 8, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, kGo, 0, gct), PTL_PRIORITY_LIST,
              tag(1), PTL_EQ_NONE);
    append_me(ni, kPt, me_desc(word.data(), 8, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, kSum, 0, sct), PTL_PRIORITY_LIST,
              tag(2), PTL_EQ_NONE);
    ptl_handle_md_t md = bind_md(ni, val.data(), 8, PTL_EQ_NONE, acks, PTL_MD_EVENT_CT_ACK);
    if (me > 0) {
        ASSERT_PTL(PtlTriggeredAtomic(md, 0, 8, PTL_CT_ACK_REQ, ni.id_of(0), kPt, kSum, 0, nullptr, 0, PTL_SUM,
                                      PTL_INT64_T, gct, 1));
    }
    barrier();
    if (me == 0) {
        for (int r = 1; r < n; ++r) ASSERT_PTL(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, ni.id_of(r), kPt, kGo, 0, nullptr, 0));
        EXPECT_EQ((Ct{ptl_size_t(n - 1), 0}), ct_wait(sct, ptl_size_t(n - 1)));
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(int64_t(n) * (n + 1) / 2 - 1, *word.as<int64_t>()) << "2 + 3 + ... + n";
    } else {
        EXPECT_EQ((Ct{1, 0}), ct_wait(acks, 1));
        EXPECT_EQ((Ct{1, 0}), ct_get(gct));
    }
}

// PORTICO_TRACE (engine/trace.hpp), run as completion.trace with the setting pointing at a
// temporary prefix: rank 1 posts a triggered put to rank 0 and fires it with a PtlCTInc; each
// process's own trace file must show its side of it: the post and the fire with their counter and
// threshold, the counter's increment (rank 1), and the put matched on rank 0's entry, counted on
// its counter. Skipped when the setting is not given (the other triggered tests).
std::string read_trace_file() {
    const char *prefix = std::getenv("PORTICO_TRACE");
    std::ifstream in(std::string(prefix) + "." + std::to_string(getpid()));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
std::string hex(uint64_t v) {
    char text[32];
    std::snprintf(text, sizeof text, "%#lx", static_cast<unsigned long>(v));
    return text;
}

TEST_F(Triggered, TraceShowsPostFireCountsAndMatching) {
    REQUIRE_RANKS(2);
    if (!std::getenv("PORTICO_TRACE")) GTEST_SKIP() << "PORTICO_TRACE is not set (ctest completion.trace sets it)";
    Ni ni = open_ni(kMatchingPhysical);
    constexpr ptl_match_bits_t kBits = 0x5a5a;
    Buf buf(8);
    make_pt(ni, PTL_EQ_NONE, 0, kPt);
    const ptl_handle_ct_t ct = make_ct(ni);
    ptl_handle_me_t me = PTL_INVALID_HANDLE;
    if (rank() == 0)
        me = append_me(ni, kPt, me_desc(buf.data(), 8, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, kBits, 0, ct),
                       PTL_PRIORITY_LIST, tag(1), PTL_EQ_NONE);
    barrier();
    if (rank() == 1) {
        const ptl_handle_md_t md = bind_md(ni, buf.data(), 8, PTL_EQ_NONE, ct, PTL_MD_EVENT_CT_SEND);
        ASSERT_PTL(PtlTriggeredPut(md, 0, 8, PTL_NO_ACK_REQ, ni.id_of(0), kPt, kBits, 0, nullptr, 0, ct, 1));
        ASSERT_PTL(PtlCTInc(ct, ctv(1)));
        EXPECT_EQ((Ct{2, 0}), ct_wait(ct, 2)) << "the increment and the put's SEND";
        const std::string trace = read_trace_file();
        const std::string post = "post ct=" + hex(ct) + " thr=1 at (0,0) put to=";
        const std::string fire = "fire ct=" + hex(ct) + " thr=1 at (1,0) put to=";
        EXPECT_NE(std::string::npos, trace.find(post)) << "no '" << post << "' in:\n" << trace;
        EXPECT_NE(std::string::npos, trace.find(fire)) << "no '" << fire << "' in:\n" << trace;
        EXPECT_LT(trace.find(post), trace.find(fire));
        EXPECT_NE(std::string::npos, trace.find("ct " + hex(ct) + " +(1,0) = (1,0)")) << trace;
        EXPECT_NE(std::string::npos, trace.find("bits=" + hex(kBits) + " len=8")) << trace;
        ASSERT_PTL(PtlMDRelease(md));
    } else if (rank() == 0) {
        EXPECT_EQ((Ct{1, 0}), ct_wait(ct, 1));
        const std::string trace = read_trace_file();
        const std::string rx = "rx put pt=" + std::to_string(kPt) + " bits=" + hex(kBits) + " len=8";
        const std::string to = "-> priority " + hex(me) + " ct=" + hex(ct);
        const size_t at = trace.find(rx);
        ASSERT_NE(std::string::npos, at) << "no '" << rx << "' in:\n" << trace;
        EXPECT_NE(std::string::npos, trace.find(to, at)) << trace;
        EXPECT_NE(std::string::npos, trace.find("ct " + hex(ct) + " +(1,0) = (1,0)", at)) << trace;
    }
    barrier();
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
