// SPDX-License-Identifier: BSD-3-Clause
// Conformance: network interfaces, identifiers, handles and the logical map
// (spec §3.6, §3.8, §3.9, §3.18).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

bool limits_equal(const ptl_ni_limits_t &a, const ptl_ni_limits_t &b) {
    return a.max_entries == b.max_entries && a.max_unexpected_headers == b.max_unexpected_headers &&
           a.max_mds == b.max_mds && a.max_cts == b.max_cts && a.max_eqs == b.max_eqs &&
           a.max_pt_index == b.max_pt_index && a.max_iovecs == b.max_iovecs && a.max_list_size == b.max_list_size &&
           a.max_triggered_ops == b.max_triggered_ops && a.max_msg_size == b.max_msg_size &&
           a.max_atomic_size == b.max_atomic_size && a.max_fetch_atomic_size == b.max_fetch_atomic_size &&
           a.max_waw_ordered_size == b.max_waw_ordered_size && a.max_war_ordered_size == b.max_war_ordered_size &&
           a.max_volatile_size == b.max_volatile_size && a.features == b.features;
}

class NiTest : public PtlTest {};

// §3.6, §3.6.2, §3.9: the four logical NIs of one physical NI share one nid/pid; a
// repeated PtlNIInit returns the first handle and limits, ignores pid, and needs two PtlNIFini.
TEST_F(NiTest, FourKindsShareOnePhysIdAndInitIsRefCounted) {
    const unsigned kinds[4] = {kMatchingPhysical, kNonMatchingPhysical, kMatchingLogical, kNonMatchingLogical};
    ptl_handle_ni_t h[4];
    ptl_ni_limits_t lim[4];
    ptl_process_t phys[4];
    for (int i = 0; i < 4; ++i) {
        ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kinds[i], PTL_PID_ANY, nullptr, &lim[i], &h[i]))
            << ni_kind_name(kinds[i]);
        ASSERT_PTL(PtlGetPhysId(h[i], &phys[i]));
    }
    for (int i = 0; i < 4; ++i) {
        for (int j = i + 1; j < 4; ++j) EXPECT_FALSE(PtlHandleIsEqual(h[i], h[j])) << i << " vs " << j;
        EXPECT_EQ(phys[0].phys.nid, phys[i].phys.nid) << ni_kind_name(kinds[i]);
        EXPECT_EQ(phys[0].phys.pid, phys[i].phys.pid) << ni_kind_name(kinds[i]);
        ptl_handle_ni_t back;
        ASSERT_PTL(PtlNIHandle(h[i], &back));
        EXPECT_TRUE(PtlHandleIsEqual(h[i], back));
    }
    // PtlGetId: nid/pid on physical NIs, the rank on logical ones.
    for (int i = 0; i < 4; ++i) {
        ptl_process_t id;
        ASSERT_PTL(PtlGetId(h[i], &id));
        if (kinds[i] & PTL_NI_LOGICAL) {
            EXPECT_EQ(static_cast<ptl_rank_t>(rank()), id.rank) << ni_kind_name(kinds[i]);
        } else {
            EXPECT_TRUE(same_process(phys[0], id, false)) << ni_kind_name(kinds[i]);
        }
    }
    // Distinct ranks have distinct physical ids.
    std::vector<ptl_process_t> all = job().allgather_pod(phys[0]);
    for (size_t a = 0; a < all.size(); ++a)
        for (size_t b = a + 1; b < all.size(); ++b)
            EXPECT_FALSE(same_process(all[a], all[b], false)) << "ranks " << a << " and " << b;

    // Repeated init of the matching physical NI with a different pid: same handle and limits.
    ptl_handle_ni_t again = PTL_INVALID_HANDLE;
    ptl_ni_limits_t lim2{};
    const ptl_pid_t other_pid = (phys[0].phys.pid + 1) % PTL_PID_MAX;
    ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, other_pid, nullptr, &lim2, &again));
    EXPECT_TRUE(PtlHandleIsEqual(h[0], again));
    EXPECT_TRUE(limits_equal(lim[0], lim2)) << "a repeated PtlNIInit must return the first caller's actual limits";
    ptl_process_t id_again;
    ASSERT_PTL(PtlGetPhysId(again, &id_again));
    EXPECT_TRUE(same_process(phys[0], id_again, false)) << "the pid argument must be ignored";

    // One PtlNIFini of two: the NI still works, including for communication.
    ASSERT_PTL(PtlNIFini(h[0]));
    Ni ni;
    ni.h = h[0];
    ni.options = kMatchingPhysical;
    ni.limits = lim[0];
    ni.phys = all;
    ptl_uid_t uid;
    ASSERT_PTL(PtlGetUid(ni.h, &uid));
    ni.uids = job().allgather_pod(uid);
    ptl_handle_eq_t eq = make_eq(ni);
    const ptl_pt_index_t pt = make_pt(ni, eq, 0, 4);
    std::vector<uint8_t> rbuf(64, 0), sbuf(64);
    fill_pattern(sbuf.data(), sbuf.size(), 100 + rank());
    append_me(ni, pt, me_desc(rbuf.data(), rbuf.size(), PTL_ME_OP_PUT), PTL_PRIORITY_LIST, tag(1), eq);
    ptl_handle_eq_t ieq = make_eq(ni);
    ptl_handle_md_t md = bind_md(ni, sbuf.data(), sbuf.size(), ieq);
    barrier();
    ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(peer()), pt, 0, 0, tag(2), 0));
    expect_send_and_ack(ieq, tag(2), 64, 64, 0);
    expect_event(eq, PTL_EVENT_PUT);
    EXPECT_EQ(-1, check_pattern(rbuf.data(), 64, 100 + peer()));
    barrier();
    ASSERT_PTL(PtlMDRelease(md));
    for (int i = 0; i < 4; ++i) EXPECT_PTL(PtlNIFini(h[i])) << ni_kind_name(kinds[i]);
}

// §3.6.1, §3.6.2: a requested pid is honoured, a pid in use is refused with
// PTL_PID_IN_USE, and the actual limits meet the spec minimums.
TEST_F(NiTest, PidRequestAndLimits) {
    REQUIRE_RANKS(2);
    // Rank 0 takes a well-known pid (the first free one of a few candidates).
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_ni_limits_t lim{};
    ptl_process_t id{};
    if (rank() == 0) {
        const ptl_pid_t base = 20000 + static_cast<ptl_pid_t>(getpid() % 10000);
        int rc = PTL_PID_IN_USE;
        ptl_pid_t want = base;
        for (ptl_pid_t k = 0; k < 64 && rc == PTL_PID_IN_USE; ++k) {
            want = (base + k * 7) % PTL_PID_MAX;
            rc = PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, want, nullptr, &lim, &ni);
        }
        ASSERT_PTL(rc);
        ASSERT_PTL(PtlGetPhysId(ni, &id));
        EXPECT_EQ(want, id.phys.pid) << "the requested pid must be honoured";
    }
    std::vector<ptl_process_t> ids = job().allgather_pod(id);
    std::vector<ptl_nid_t> nids;
    if (rank() == 1) {
        // Learn this node's nid with a throw-away NI, then ask for rank 0's pid.
        ptl_handle_ni_t probe;
        ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, nullptr, &lim, &probe));
        ptl_process_t mine;
        ASSERT_PTL(PtlGetPhysId(probe, &mine));
        ASSERT_PTL(PtlNIFini(probe));
        if (mine.phys.nid == ids[0].phys.nid) {
            EXPECT_RC(PTL_PID_IN_USE,
                      PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, ids[0].phys.pid, nullptr, &lim, &ni));
        }
        ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, nullptr, &lim, &ni));
    }
    barrier();
    // Spec minimums (§3.6.1) and Portico's decision to bind inaccessible memory.
    EXPECT_GE(lim.max_pt_index, 249);
    EXPECT_GE(lim.max_waw_ordered_size, 64u);
    EXPECT_GE(lim.max_war_ordered_size, 8u);
    EXPECT_GT(lim.max_entries, 0);
    EXPECT_GT(lim.max_unexpected_headers, 0);
    EXPECT_GT(lim.max_mds, 0);
    EXPECT_GT(lim.max_cts, 0);
    EXPECT_GT(lim.max_eqs, 0);
    EXPECT_GT(lim.max_iovecs, 0);
    EXPECT_GT(lim.max_list_size, 0);
    EXPECT_GT(lim.max_msg_size, 0u);
    EXPECT_NE(0u, lim.features & PTL_TARGET_BIND_INACCESSIBLE);
    EXPECT_PTL(PtlNIFini(ni));
}

// §3.6.1-§3.6.2: smaller desired limits are honoured (down to the spec's minimums, and Portico's
// 32-byte floor for atomics, README "Limits") and enforced, each with the spec's return code; a
// zero field states no wish; a repeated PtlNIInit returns the same limits.
TEST_F(NiTest, DesiredLimitsAreHonouredAndEnforced) {
    ptl_ni_limits_t want{}, defaults{}, lim{}, again{};
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, nullptr, &defaults, &ni));
    ASSERT_PTL(PtlNIFini(ni));
    want.max_pt_index = 3;           // below the spec's 249: 249
    want.max_atomic_size = 8;        // below 32: 32
    want.max_fetch_atomic_size = 40; // honoured
    want.max_list_size = 2;
    want.max_entries = 5;
    want.max_eqs = 2;
    want.max_cts = 2;
    want.max_mds = 3;
    want.max_iovecs = 2;
    want.max_triggered_ops = 2;
    want.max_msg_size = 1000;
    want.max_volatile_size = 16;
    want.max_waw_ordered_size = 1; // below the spec's 64
    want.max_war_ordered_size = 100;
    ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, &want, &lim, &ni));
    EXPECT_EQ(249, lim.max_pt_index);
    EXPECT_EQ(32u, lim.max_atomic_size);
    EXPECT_EQ(40u, lim.max_fetch_atomic_size);
    EXPECT_EQ(2, lim.max_list_size);
    EXPECT_EQ(5, lim.max_entries);
    EXPECT_EQ(2, lim.max_eqs);
    EXPECT_EQ(2, lim.max_cts);
    EXPECT_EQ(3, lim.max_mds);
    EXPECT_EQ(2, lim.max_iovecs);
    EXPECT_EQ(2, lim.max_triggered_ops);
    EXPECT_EQ(1000u, lim.max_msg_size);
    EXPECT_EQ(16u, lim.max_volatile_size);
    EXPECT_EQ(64u, lim.max_waw_ordered_size);
    EXPECT_EQ(100u, lim.max_war_ordered_size);
    EXPECT_EQ(defaults.max_unexpected_headers, lim.max_unexpected_headers) << "a zero field states no wish";
    ptl_handle_ni_t same = PTL_INVALID_HANDLE;
    ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, nullptr, &again, &same));
    EXPECT_TRUE(limits_equal(lim, again));
    ASSERT_PTL(PtlNIFini(same));

    // EQs, CTs and MDs.
    ptl_handle_eq_t eq, eq2, eq3;
    ASSERT_PTL(PtlEQAlloc(ni, 64, &eq));
    ASSERT_PTL(PtlEQAlloc(ni, 64, &eq2));
    EXPECT_RC(PTL_NO_SPACE, PtlEQAlloc(ni, 64, &eq3));
    ptl_handle_ct_t ct, ct2, ct3;
    ASSERT_PTL(PtlCTAlloc(ni, &ct));
    ASSERT_PTL(PtlCTAlloc(ni, &ct2));
    EXPECT_RC(PTL_NO_SPACE, PtlCTAlloc(ni, &ct3));
    static uint8_t buf[2048];
    ptl_iovec_t iov[3] = {{buf, 8}, {buf + 8, 8}, {buf + 16, 8}};
    ptl_md_t d{};
    d.start = iov;
    d.length = 3;
    d.options = PTL_IOVEC;
    d.eq_handle = PTL_EQ_NONE;
    d.ct_handle = PTL_CT_NONE;
    ptl_handle_md_t md, md2, md3, md4;
    EXPECT_RC(PTL_ARG_INVALID, PtlMDBind(ni, &d, &md)) << "3 iovecs, max_iovecs 2";
    d.length = 2;
    ASSERT_PTL(PtlMDBind(ni, &d, &md)); // 16 bytes, no EQ
    d = ptl_md_t{};
    d.start = buf;
    d.length = sizeof buf;
    d.eq_handle = eq;
    d.ct_handle = PTL_CT_NONE;
    ASSERT_PTL(PtlMDBind(ni, &d, &md2));
    ASSERT_PTL(PtlMDBind(ni, &d, &md3));
    EXPECT_RC(PTL_NO_SPACE, PtlMDBind(ni, &d, &md4));

    // Portal table: 250 entries (0..249), then PT_FULL; an index beyond is invalid everywhere.
    ptl_pt_index_t pt;
    EXPECT_RC(PTL_ARG_INVALID, PtlPTAlloc(ni, 0, eq, 250, &pt));
    for (int i = 0; i < 250; ++i) ASSERT_PTL(PtlPTAlloc(ni, 0, eq, PTL_PT_ANY, &pt)) << "entry " << i;
    EXPECT_EQ(249u, pt);
    EXPECT_RC(PTL_PT_FULL, PtlPTAlloc(ni, 0, eq, PTL_PT_ANY, &pt));
    ptl_me_t me = me_desc(buf, 64, PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE, 1);
    ptl_handle_me_t meh;
    EXPECT_RC(PTL_ARG_INVALID, PtlMEAppend(ni, 250, &me, PTL_PRIORITY_LIST, nullptr, &meh));
    EXPECT_RC(PTL_ARG_INVALID, PtlMESearch(ni, 250, &me, PTL_SEARCH_ONLY, nullptr));

    // List lengths (each list of each PT) and the NI's entries.
    ptl_handle_me_t entries[5];
    ASSERT_PTL(PtlMEAppend(ni, 1, &me, PTL_PRIORITY_LIST, nullptr, &entries[0]));
    ASSERT_PTL(PtlMEAppend(ni, 1, &me, PTL_PRIORITY_LIST, nullptr, &entries[1]));
    EXPECT_RC(PTL_LIST_TOO_LONG, PtlMEAppend(ni, 1, &me, PTL_PRIORITY_LIST, nullptr, &meh));
    ASSERT_PTL(PtlMEAppend(ni, 1, &me, PTL_OVERFLOW_LIST, nullptr, &entries[2]));
    ASSERT_PTL(PtlMEAppend(ni, 1, &me, PTL_OVERFLOW_LIST, nullptr, &entries[3]));
    EXPECT_RC(PTL_LIST_TOO_LONG, PtlMEAppend(ni, 1, &me, PTL_OVERFLOW_LIST, nullptr, &meh));
    ASSERT_PTL(PtlMEAppend(ni, 2, &me, PTL_PRIORITY_LIST, nullptr, &entries[4]));
    EXPECT_RC(PTL_NO_SPACE, PtlMEAppend(ni, 3, &me, PTL_PRIORITY_LIST, nullptr, &meh)) << "max_entries 5";
    ASSERT_PTL(PtlMEUnlink(entries[0]));
    ASSERT_PTL(PtlMEAppend(ni, 1, &me, PTL_PRIORITY_LIST, nullptr, &entries[0])) << "room again";

    // Message sizes. The target is this process; nothing below is sent except where noted.
    ptl_process_t self;
    ASSERT_PTL(PtlGetPhysId(ni, &self));
    EXPECT_RC(PTL_ARG_INVALID, PtlPut(md2, 0, 1001, PTL_NO_ACK_REQ, self, 200, 0, 0, nullptr, 0));
    EXPECT_RC(PTL_ARG_INVALID, PtlGet(md2, 0, 1001, self, 200, 0, 0, nullptr));
    // The triggered forms alike, when posted: once fired, nobody would see the error.
    EXPECT_RC(PTL_ARG_INVALID, PtlTriggeredPut(md2, 0, 1001, PTL_NO_ACK_REQ, self, 200, 0, 0, nullptr, 0, ct, 100));
    EXPECT_RC(PTL_ARG_INVALID, PtlTriggeredGet(md2, 0, 1001, self, 200, 0, 0, nullptr, ct, 100));
    // Atomics: max_atomic_size 32, max_fetch_atomic_size 40; the triggered forms alike.
    EXPECT_RC(PTL_ARG_INVALID,
              PtlAtomic(md2, 0, 40, PTL_NO_ACK_REQ, self, 200, 0, 0, nullptr, 0, PTL_SUM, PTL_INT64_T));
    EXPECT_RC(PTL_ARG_INVALID, PtlFetchAtomic(md2, 0, md3, 0, 48, self, 200, 0, 0, nullptr, 0, PTL_SUM, PTL_INT64_T));
    EXPECT_RC(PTL_ARG_INVALID,
              PtlSwap(md2, 0, md3, 0, 48, self, 200, 0, 0, nullptr, 0, nullptr, PTL_SWAP, PTL_INT64_T));
    EXPECT_RC(PTL_ARG_INVALID, PtlTriggeredAtomic(md2, 0, 40, PTL_NO_ACK_REQ, self, 200, 0, 0, nullptr, 0, PTL_SUM,
                                                  PTL_INT64_T, ct, 100));
    EXPECT_RC(PTL_ARG_INVALID,
              PtlTriggeredFetchAtomic(md2, 0, md3, 0, 48, self, 200, 0, 0, nullptr, 0, PTL_SUM, PTL_INT64_T, ct, 100));
    EXPECT_RC(PTL_ARG_INVALID, PtlTriggeredSwap(md2, 0, md3, 0, 48, self, 200, 0, 0, nullptr, 0, nullptr, PTL_SWAP,
                                                PTL_INT64_T, ct, 100));
    // At the limits the calls are accepted: PT 200 has no entry, so each is dropped and reported.
    ASSERT_PTL(PtlAtomic(md2, 0, 32, PTL_ACK_REQ, self, 200, 0, 0, tag(1), 0, PTL_SUM, PTL_INT64_T));
    ASSERT_PTL(PtlFetchAtomic(md3, 0, md2, 0, 40, self, 200, 0, 0, tag(2), 0, PTL_SUM, PTL_INT64_T));
    int acks = 0, replies = 0;
    while (acks + replies < 2) {
        ptl_event_t ev = wait_event(eq);
        if (ev.type == PTL_EVENT_SEND) continue;
        if (ev.type == PTL_EVENT_ACK) ++acks;
        if (ev.type == PTL_EVENT_REPLY) ++replies;
        EXPECT_EQ(Fail{PTL_NI_DROPPED}, Fail{ev.ni_fail_type}) << describe(ev);
    }
    EXPECT_EQ(1, acks);
    EXPECT_EQ(1, replies);

    // Triggered operations: two pending, the third has no room.
    ASSERT_PTL(PtlTriggeredPut(md2, 0, 8, PTL_NO_ACK_REQ, self, 200, 0, 0, nullptr, 0, ct, 100));
    ASSERT_PTL(PtlTriggeredCTInc(ct2, ptl_ct_event_t{1, 0}, ct, 100));
    EXPECT_RC(PTL_NO_SPACE, PtlTriggeredPut(md2, 0, 8, PTL_NO_ACK_REQ, self, 200, 0, 0, nullptr, 0, ct, 100));
    ASSERT_PTL(PtlCTCancelTriggered(ct));
    ASSERT_PTL(PtlTriggeredPut(md2, 0, 8, PTL_NO_ACK_REQ, self, 200, 0, 0, nullptr, 0, ct, 100))
        << "room again after the cancel";
    ASSERT_PTL(PtlCTCancelTriggered(ct));
    EXPECT_PTL(PtlNIFini(ni));
}

// §3.6.1, README's *Limits*: max_msg_size is 2^62, or PORTICO_MAX_MSG_SIZE when
// set: larger than any address space, yet a client's rounding up on it ((len + max - 1) / max, the
// fragment count of Open MPI's mtl and coll) cannot wrap for any len up to it, as it did when
// Portico reported PTL_SIZE_MAX (0 fragments: no get was issued and the receive hung). A desired
// limit above it is capped. A put or get one byte longer is refused with PTL_ARG_INVALID (the
// triggered forms when posted) and produces nothing; one of exactly the limit is delivered whole
// (sent where the limit is small enough to send, as under PORTICO_MAX_MSG_SIZE=1048576).
TEST_F(NiTest, MaxMsgSizeLeavesClientsHeadroomAndIsEnforced) {
    REQUIRE_RANKS(2);
    const char *set = std::getenv("PORTICO_MAX_MSG_SIZE");
    const ptl_size_t expected = set ? std::strtoull(set, nullptr, 10) : ptl_size_t{1} << 62;
    ptl_ni_limits_t want{};
    want.max_msg_size = PTL_SIZE_MAX; // a client asking for everything
    Ni ni = open_ni(kMatchingPhysical, &want);
    const ptl_size_t max = ni.limits.max_msg_size;
    EXPECT_EQ(expected, max);
    if (!set) {
        EXPECT_GE(max, ptl_size_t{1} << 57) << "larger than any address space (57-bit with 5-level paging)";
    }
    for (ptl_size_t limit : {max, ni.limits.max_waw_ordered_size, ni.limits.max_war_ordered_size}) {
        for (ptl_size_t len : {ptl_size_t{1}, limit / 2 + 1, limit - 1, limit}) {
            if (len == 0 || len > limit) continue;
            EXPECT_GE(len + limit - 1, len) << "len " << len << " + limit " << limit << " - 1 wraps";
            EXPECT_EQ(1u, (len + limit - 1) / limit) << "fragments of " << len << " bytes, limit " << limit;
        }
        EXPECT_GE(limit + limit, limit) << "len + limit wraps at len = limit " << limit;
    }

    ptl_handle_eq_t eq = make_eq(ni);
    ptl_handle_ct_t ct = make_ct(ni);
    ptl_handle_md_t all = bind_md(ni, nullptr, PTL_SIZE_MAX, eq); // any length fits the MD
    const ptl_process_t target = ni.id_of(peer());
    EXPECT_RC(PTL_ARG_INVALID, PtlPut(all, 0, max + 1, PTL_ACK_REQ, target, 0, 0, 0, tag(1), 0));
    EXPECT_RC(PTL_ARG_INVALID, PtlGet(all, 0, max + 1, target, 0, 0, 0, tag(2)));
    EXPECT_RC(PTL_ARG_INVALID, PtlTriggeredPut(all, 0, max + 1, PTL_ACK_REQ, target, 0, 0, 0, tag(3), 0, ct, 1));
    EXPECT_RC(PTL_ARG_INVALID, PtlTriggeredGet(all, 0, max + 1, target, 0, 0, 0, tag(4), ct, 1));
    ASSERT_PTL(PtlCTInc(ct, ptl_ct_event_t{1, 0})); // would fire anything that had been posted
    expect_eq_empty(eq, "refused operations produce no events");

    if (max > (ptl_size_t{16} << 20)) return;
    // Exactly the limit: rank 0 puts max bytes into rank 1's entry and gets them back.
    const size_t n = static_cast<size_t>(max);
    std::vector<uint8_t> buf(n);
    ptl_handle_eq_t teq = make_eq(ni);
    const ptl_pt_index_t pt = make_pt(ni, teq);
    if (rank() == 1) {
        fill_pattern(buf.data(), n, 29);
        append_me(ni, pt, me_desc(buf.data(), n, PTL_ME_OP_PUT | PTL_ME_OP_GET, 1), PTL_PRIORITY_LIST, tag(5), teq);
    }
    barrier();
    if (rank() == 0) {
        ptl_handle_md_t md = bind_md(ni, buf.data(), n, eq);
        ASSERT_PTL(PtlGet(md, 0, n, target, pt, 1, 0, tag(6)));
        ptl_event_t reply = expect_event(eq, PTL_EVENT_REPLY);
        EXPECT_EQ(n, reply.mlength);
        EXPECT_EQ(-1, check_pattern(buf.data(), n, 29));
        fill_pattern(buf.data(), n, 30);
        ASSERT_PTL(PtlPut(md, 0, n, PTL_ACK_REQ, target, pt, 1, 0, tag(7), 0));
        expect_send_and_ack(eq, tag(7), n, n, 0);
    } else {
        EXPECT_EQ(n, expect_event(teq, PTL_EVENT_GET).mlength);
        EXPECT_EQ(n, expect_event(teq, PTL_EVENT_PUT).mlength);
        EXPECT_EQ(-1, check_pattern(buf.data(), n, 30));
    }
    barrier();
}

// §3.6.5, §3.18.1: PtlNIHandle on every object kind; PtlHandleIsEqual.
TEST_F(NiTest, NIHandleAndHandleIsEqual) {
    Ni m = open_ni(kMatchingPhysical);
    Ni n = open_ni(kNonMatchingPhysical);
    for (const Ni *ni : {&m, &n}) {
        ptl_handle_eq_t eq = make_eq(*ni);
        ptl_handle_ct_t ct = make_ct(*ni);
        static char buf[16];
        ptl_handle_md_t md = bind_md(*ni, buf, sizeof buf, eq, ct);
        const ptl_pt_index_t pt = make_pt(*ni, eq);
        ptl_handle_any_t entry =
            append_entry(*ni, pt, me_desc(buf, sizeof buf, PTL_ME_OP_PUT), PTL_PRIORITY_LIST, tag(7), eq);
        for (ptl_handle_any_t obj : {ni->h, eq, ct, md, entry}) {
            ptl_handle_ni_t back = PTL_INVALID_HANDLE;
            ASSERT_PTL(PtlNIHandle(obj, &back));
            EXPECT_TRUE(PtlHandleIsEqual(ni->h, back)) << ni_kind_name(ni->options);
            EXPECT_TRUE(PtlHandleIsEqual(obj, obj));
            EXPECT_FALSE(PtlHandleIsEqual(obj, PTL_INVALID_HANDLE));
        }
        EXPECT_FALSE(PtlHandleIsEqual(eq, ct));
        EXPECT_FALSE(PtlHandleIsEqual(md, entry));
        EXPECT_FALSE(PtlHandleIsEqual(eq, PTL_EQ_NONE));
        EXPECT_FALSE(PtlHandleIsEqual(ct, PTL_CT_NONE));
    }
    EXPECT_FALSE(PtlHandleIsEqual(m.h, n.h));
    EXPECT_TRUE(PtlHandleIsEqual(PTL_INVALID_HANDLE, PTL_INVALID_HANDLE));
    EXPECT_TRUE(PtlHandleIsEqual(PTL_EQ_NONE, PTL_EQ_NONE));
    EXPECT_TRUE(PtlHandleIsEqual(PTL_CT_NONE, PTL_CT_NONE));
    // Objects of two EQs of one NI are distinct.
    ptl_handle_eq_t e1 = make_eq(m), e2 = make_eq(m);
    EXPECT_FALSE(PtlHandleIsEqual(e1, e2));
}

// §3.6.6-§3.6.7: a map belongs to logically addressed NIs; PtlGetMap and PtlSetMap on a
// physically addressed NI are erroneous: PTL_ARG_INVALID, nothing written.
TEST_F(NiTest, MapCallsOnPhysicalNiAreInvalid) {
    for (unsigned kind : {kMatchingPhysical, kNonMatchingPhysical}) {
        SCOPED_TRACE(ni_kind_name(kind));
        Ni ni = open_ni(kind);
        ptl_process_t map[2];
        map[0].phys.nid = map[1].phys.nid = 0xA5A5A5A5u;
        map[0].phys.pid = map[1].phys.pid = 0x5A5A5A5Au;
        ptl_size_t actual = 12345;
        EXPECT_RC(PTL_ARG_INVALID, PtlGetMap(ni.h, 2, map, &actual));
        EXPECT_RC(PTL_ARG_INVALID, PtlGetMap(ni.h, 0, map, &actual));
        EXPECT_EQ(12345u, actual);
        EXPECT_EQ(0xA5A5A5A5u, map[0].phys.nid);
        EXPECT_RC(PTL_ARG_INVALID, PtlSetMap(ni.h, 2, map));
        close_ni(ni);
    }
}

// §3.6.6, §3.6.7, §3.9.2 (Portico: a static map from the launcher).
TEST_F(NiTest, LogicalMapAndRanks) {
    REQUIRE_RANKS(2);
    for (unsigned kind : {kMatchingLogical, kNonMatchingLogical}) {
        SCOPED_TRACE(ni_kind_name(kind));
        Ni ni = open_ni(kind);
        const size_t n = static_cast<size_t>(nranks());

        // Actual size with a zero-size request.
        ptl_process_t dummy{};
        ptl_size_t actual = 0;
        ASSERT_PTL(PtlGetMap(ni.h, 0, &dummy, &actual));
        EXPECT_EQ(n, actual);

        // Truncated copy: only map_size entries are written.
        std::vector<ptl_process_t> map(n + 2);
        for (auto &p : map) {
            p.phys.nid = 0xA5A5A5A5u;
            p.phys.pid = 0x5A5A5A5Au;
        }
        ASSERT_PTL(PtlGetMap(ni.h, 1, map.data(), &actual));
        EXPECT_EQ(n, actual);
        EXPECT_TRUE(same_process(ni.phys[0], map[0], false)) << process_str(map[0], false);
        for (size_t i = 1; i < map.size(); ++i) {
            EXPECT_EQ(0xA5A5A5A5u, map[i].phys.nid) << "entry " << i << " must be left untouched";
            EXPECT_EQ(0x5A5A5A5Au, map[i].phys.pid) << "entry " << i << " must be left untouched";
        }
        // Larger buffer: the whole map, the tail untouched. Entry r = physical id of rank r.
        ASSERT_PTL(PtlGetMap(ni.h, map.size(), map.data(), &actual));
        EXPECT_EQ(n, actual);
        for (size_t r = 0; r < n; ++r) EXPECT_TRUE(same_process(ni.phys[r], map[r], false)) << "rank " << r;
        for (size_t i = n; i < map.size(); ++i)
            EXPECT_EQ(0xA5A5A5A5u, map[i].phys.nid) << "entry " << i << " must be left untouched";

        // The launcher's map is static: PtlSetMap is ignored and leaves the map unchanged.
        std::vector<ptl_process_t> reversed(map.begin(), map.begin() + static_cast<long>(n));
        std::reverse(reversed.begin(), reversed.end());
        EXPECT_RC(PTL_IGNORED, PtlSetMap(ni.h, n, reversed.data()));
        std::vector<ptl_process_t> after(n);
        ASSERT_PTL(PtlGetMap(ni.h, n, after.data(), &actual));
        for (size_t r = 0; r < n; ++r) EXPECT_TRUE(same_process(ni.phys[r], after[r], false)) << "rank " << r;

        // Ids.
        ptl_process_t id;
        ASSERT_PTL(PtlGetId(ni.h, &id));
        EXPECT_EQ(static_cast<ptl_rank_t>(rank()), id.rank);
        ASSERT_PTL(PtlGetPhysId(ni.h, &id));
        EXPECT_TRUE(same_process(map[static_cast<size_t>(rank())], id, false));

        // Communication by rank, both directions at once: the initiator field holds a rank.
        if (rank() < 2) {
            ptl_handle_eq_t teq = make_eq(ni), ieq = make_eq(ni);
            const ptl_pt_index_t pt = make_pt(ni, teq, 0, 9);
            std::vector<uint8_t> rbuf(128, 0), sbuf(128);
            fill_pattern(sbuf.data(), sbuf.size(), 7 + rank());
            append_entry(ni, pt, me_desc(rbuf.data(), rbuf.size(), PTL_ME_OP_PUT, 0x77), PTL_PRIORITY_LIST, tag(0x10),
                         teq);
            ptl_handle_md_t md = bind_md(ni, sbuf.data(), sbuf.size(), ieq);
            barrier();
            ASSERT_PTL(PtlPut(md, 0, 100, PTL_ACK_REQ, ni.id_of(peer()), pt, 0x77, 8, tag(0x20), 0x1234 + rank()));
            expect_send_and_ack(ieq, tag(0x20), 100, 100, 8);
            ptl_event_t ev = wait_event(teq);
            check_target_event(ev,
                               {.type = PTL_EVENT_PUT,
                                .initiator = peer(),
                                .pt_index = pt,
                                .match_bits = 0x77,
                                .rlength = 100,
                                .mlength = 100,
                                .remote_offset = 8,
                                .start = rbuf.data() + 8,
                                .user_ptr = tag(0x10),
                                .hdr_data = 0x1234u + static_cast<unsigned>(peer())},
                               ni);
            EXPECT_EQ(static_cast<ptl_rank_t>(peer()), ev.initiator.rank);
            EXPECT_EQ(-1, check_pattern(rbuf.data() + 8, 100, 7 + peer()));
            barrier();
        } else {
            barrier();
            barrier();
        }
        close_ni(ni);
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
