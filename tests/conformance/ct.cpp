// SPDX-License-Identifier: BSD-3-Clause
// Conformance: counting events (spec §3.10.1, §3.12.1 CT options, §3.14, §3.15.1, §4.3).
#include <atomic>
#include <sched.h>
#include <thread>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class Counting : public PtlTest {};
constexpr ptl_pt_index_t kPt = 70;

// §3.10.1, §3.12.1 CT_BYTES: CTs count operations, or bytes (the mlength of the would-be
// full event: bytes sent for SEND, bytes delivered for ACK/REPLY/PUT/GET); a failure adds 1 to
// the failure count even with CT_BYTES.
TEST_F(Counting, CountsOperationsAndBytes) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> b1(1000, 0), b2(100);
    fill_pattern(b2.data(), b2.size(), 142);
    ptl_handle_ct_t t_ops = PTL_INVALID_HANDLE, t_bytes = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        ptl_handle_eq_t eq = make_eq(ni);
        make_pt(ni, eq, 0, kPt);
        t_ops = make_ct(ni);
        t_bytes = make_ct(ni);
        append_me(ni, kPt, me_desc(b1.data(), b1.size(), PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 1, 0, t_ops),
                  PTL_PRIORITY_LIST, tag(1), eq);
        append_me(ni, kPt,
                  me_desc(b2.data(), b2.size(),
                          PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES, 2, 0, t_bytes),
                  PTL_PRIORITY_LIST, tag(2), eq);
        append_me(ni, kPt, me_desc(b1.data(), b1.size(), PTL_ME_OP_GET, 3), PTL_PRIORITY_LIST, tag(3), eq);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(1000), dst(100, 0);
        fill_pattern(src.data(), src.size(), 42);
        ptl_handle_ct_t i_ops = make_ct(ni), i_bytes = make_ct(ni), i_reply = make_ct(ni);
        ptl_handle_md_t md_ops =
            bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, i_ops, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK);
        ptl_handle_md_t md_bytes = bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, i_bytes,
                                           PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_BYTES);
        ptl_handle_md_t md_reply =
            bind_md(ni, dst.data(), dst.size(), PTL_EQ_NONE, i_reply, PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_BYTES);
        ptl_size_t off = 0;
        for (ptl_size_t len : {100, 200, 300}) {
            ASSERT_PTL(PtlPut(md_ops, off, len, PTL_ACK_REQ, ni.id_of(0), kPt, 1, off, tag(1), 0));
            off += len;
        }
        EXPECT_EQ((Ct{6, 0}), ct_wait(i_ops, 6)) << "3 SEND + 3 ACK";
        // Into the 100-byte entry: SEND counts bytes sent, ACK the bytes delivered.
        ASSERT_PTL(PtlPut(md_bytes, 0, 150, PTL_ACK_REQ, ni.id_of(0), kPt, 2, 0, tag(2), 0));
        ASSERT_PTL(PtlPut(md_bytes, 0, 30, PTL_ACK_REQ, ni.id_of(0), kPt, 2, 50, tag(3), 0));
        EXPECT_EQ((Ct{150 + 100 + 30 + 30, 0}), ct_wait(i_bytes, 310));
        ASSERT_PTL(PtlGet(md_reply, 0, 80, ni.id_of(0), kPt, 2, 10, tag(4)));
        EXPECT_EQ((Ct{80, 0}), ct_wait(i_reply, 80));
        // A failed ACK (no OP_PUT on bits 3) adds 1 failure; its SEND still adds 10 bytes.
        ASSERT_PTL(PtlPut(md_bytes, 0, 10, PTL_ACK_REQ, ni.id_of(0), kPt, 3, 0, tag(5), 0));
        EXPECT_EQ((Ct{320, 1}), ct_reach(i_bytes, Ct{320, 1}));
        // The data the get returned: target bytes [10, 90) after both puts.
        std::vector<uint8_t> want(src.begin(), src.begin() + 100);
        std::memcpy(want.data() + 50, src.data(), 30);
        EXPECT_EQ(0, std::memcmp(dst.data(), want.data() + 10, 80));
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ((Ct{3, 0}), ct_get(t_ops));
        EXPECT_EQ((Ct{100 + 30 + 80, 0}), ct_get(t_bytes)) << "PUT 150->100, PUT 30, GET 80";
    }
}

// §3.15.1, §4.3: CT_ACK_REQ and ACK_REQ count on an MD without an EQ; OC_ACK_REQ counts
// success even when the target dropped the message (no match, permission violation), while
// CT_ACK_REQ counts a permission violation as a failure.
TEST_F(Counting, AckRequestTypes) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> buf(256, 0);
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    Sr before;
    if (rank() == 0) {
        eq = make_eq(ni);
        make_pt(ni, eq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT, 1), PTL_PRIORITY_LIST, tag(1), eq);
        ptl_me_t d = me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT, 2);
        d.uid = ni.uids[1] + 1;
        append_me(ni, kPt, d, PTL_PRIORITY_LIST, tag(2), eq);
        before = read_sr(ni);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(16);
        fill_pattern(src.data(), src.size(), 43);
        ptl_handle_ct_t ct = make_ct(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, ct, PTL_MD_EVENT_CT_ACK);
        struct Step {
            ptl_ack_req_t ack;
            ptl_match_bits_t bits;
            Ct after;
        };
        const Step steps[] = {{PTL_CT_ACK_REQ, 1, {1, 0}}, {PTL_ACK_REQ, 1, {2, 0}},    {PTL_OC_ACK_REQ, 1, {3, 0}},
                              {PTL_OC_ACK_REQ, 9, {4, 0}}, {PTL_OC_ACK_REQ, 2, {5, 0}}, {PTL_CT_ACK_REQ, 2, {5, 1}}};
        for (size_t i = 0; i < std::size(steps); ++i) {
            SCOPED_TRACE("step " + std::to_string(i));
            ASSERT_PTL(PtlPut(md, 0, 16, steps[i].ack, ni.id_of(0), kPt, steps[i].bits, 16 * i, tag(i), i));
            EXPECT_EQ(steps[i].after, ct_reach(ct, steps[i].after));
        }
        // NO_ACK_REQ: nothing counted. A later OC ack shows the count did not move meanwhile.
        ASSERT_PTL(PtlPut(md, 0, 16, PTL_NO_ACK_REQ, ni.id_of(0), kPt, 1, 128, tag(8), 8));
        ASSERT_PTL(PtlPut(md, 0, 16, PTL_OC_ACK_REQ, ni.id_of(0), kPt, 1, 144, tag(9), 9));
        EXPECT_EQ((Ct{6, 1}), ct_reach(ct, Ct{6, 1}));
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(sr_plus(before, 1, 2, 0), read_sr(ni)) << "1 no-match drop, 2 uid violations";
        for (ptl_hdr_data_t h : {0, 1, 2, 8, 9}) {
            ptl_event_t ev = expect_event(eq, PTL_EVENT_PUT);
            EXPECT_EQ(h, ev.hdr_data) << describe(ev);
        }
        expect_eq_empty(eq);
    }
}

// §3.14.6, §3.14.7: PtlCTWait returns at once when failure != 0; PtlCTPoll returns the
// first satisfied counter of the array (or one with a failure), PTL_CT_NONE_REACHED on timeout;
// every thread waiting on a counter wakes when it reaches the test.
TEST_F(Counting, WaitAndPoll) {
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_ct_t a = make_ct(ni), b = make_ct(ni), c = make_ct(ni);
    const ptl_ct_event_t one_failure{0, 1};
    ASSERT_PTL(PtlCTInc(a, one_failure));
    EXPECT_EQ((Ct{0, 1}), ct_wait(a, 100)) << "a failure ends the wait whatever the test";

    ptl_ct_event_t got{};
    unsigned which = 99;
    ptl_handle_ct_t cts[3] = {b, c, a};
    const ptl_size_t tests[3] = {5, 5, 5};
    ASSERT_PTL(PtlCTPoll(cts, tests, 3, 0, &got, &which));
    EXPECT_EQ(2u, which) << "only the counter with a failure is satisfied";
    EXPECT_EQ((Ct{0, 1}), ct_of(got));

    EXPECT_RC(PTL_CT_NONE_REACHED, PtlCTPoll(cts, tests, 2, 0, &got, &which));
    EXPECT_RC(PTL_CT_NONE_REACHED, PtlCTPoll(cts, tests, 2, 5, &got, &which));
    ASSERT_PTL(PtlCTSet(c, ptl_ct_event_t{7, 0}));
    ASSERT_PTL(PtlCTPoll(cts, tests, 2, 0, &got, &which));
    EXPECT_EQ(1u, which);
    EXPECT_EQ((Ct{7, 0}), ct_of(got));
    ASSERT_PTL(PtlCTSet(b, ptl_ct_event_t{5, 0}));
    ASSERT_PTL(PtlCTPoll(cts, tests, 2, 0, &got, &which));
    EXPECT_EQ(0u, which) << "the first satisfied counter of the array";
    EXPECT_EQ((Ct{5, 0}), ct_of(got));

    // Several waiters on one counter all wake; a poller with FOREVER wakes too.
    ptl_handle_ct_t d = make_ct(ni);
    std::atomic<int> done{0};
    std::vector<Ct> seen(3);
    std::vector<int> rcs(3, -1);
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) {
        threads.emplace_back([&, i] {
            ptl_ct_event_t e{};
            rcs[i] = PtlCTWait(d, 3, &e);
            seen[i] = ct_of(e);
            done.fetch_add(1);
        });
    }
    threads.emplace_back([&] {
        ptl_ct_event_t e{};
        unsigned w = 99;
        const ptl_size_t t3 = 3;
        rcs[2] = PtlCTPoll(&d, &t3, 1, PTL_TIME_FOREVER, &e, &w);
        seen[2] = ct_of(e);
        done.fetch_add(1);
    });
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(0, done.load()) << "a waiter returned before its test was reached";
        ASSERT_PTL(PtlCTInc(d, ptl_ct_event_t{1, 0}));
    }
    for (auto &t : threads) t.join();
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(Rc{PTL_OK}, Rc{rcs[i]}) << "waiter " << i;
        EXPECT_EQ((Ct{3, 0}), seen[i]) << "waiter " << i;
    }
}

// §3.14, §3.14.8, §3.14.9: CTSet/CTInc give exact values, per field, modulo 2^64.
TEST_F(Counting, SetAndIncAreExactAndWrap) {
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_ct_t ct = make_ct(ni);
    EXPECT_EQ((Ct{0, 0}), ct_get(ct)) << "a new counter starts at {0, 0}";
    ASSERT_PTL(PtlCTSet(ct, ptl_ct_event_t{10, 3}));
    EXPECT_EQ((Ct{10, 3}), ct_get(ct));
    ASSERT_PTL(PtlCTInc(ct, ptl_ct_event_t{5, 0}));
    EXPECT_EQ((Ct{15, 3}), ct_get(ct));
    ASSERT_PTL(PtlCTInc(ct, ptl_ct_event_t{0, 2}));
    EXPECT_EQ((Ct{15, 5}), ct_get(ct));
    ASSERT_PTL(PtlCTSet(ct, ptl_ct_event_t{UINT64_MAX - 1, UINT64_MAX}));
    ASSERT_PTL(PtlCTInc(ct, ptl_ct_event_t{3, 0}));
    EXPECT_EQ((Ct{1, UINT64_MAX}), ct_get(ct));
    ASSERT_PTL(PtlCTInc(ct, ptl_ct_event_t{0, 2}));
    EXPECT_EQ((Ct{1, 1}), ct_get(ct));
    // A "negative" increment is a huge unsigned one: modulo arithmetic makes it a decrement.
    ASSERT_PTL(PtlCTSet(ct, ptl_ct_event_t{5, 0}));
    ASSERT_PTL(PtlCTInc(ct, ptl_ct_event_t{static_cast<ptl_size_t>(-1), 0}));
    EXPECT_EQ((Ct{4, 0}), ct_get(ct));
    // Concurrent increments from several threads are all applied.
    ASSERT_PTL(PtlCTSet(ct, ptl_ct_event_t{0, 0}));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([ct] {
            for (int i = 0; i < 1000; ++i) PtlCTInc(ct, ptl_ct_event_t{1, 0});
        });
    for (auto &t : threads) t.join();
    EXPECT_EQ((Ct{4000, 0}), ct_get(ct));
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
