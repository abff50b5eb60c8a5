// SPDX-License-Identifier: BSD-3-Clause
// Conformance: portal table entries and flow control (spec §2.8, §3.7, §3.13.3, §3.13.5).
//
// In the two-rank tests rank 0 is the target and rank 1 the initiator.
#include <set>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class PtTest : public PtlTest {};
class FlowControl : public PtlTest {};

// PT_DISABLED (Table 3-3: type, pt_index, ni_fail_type). §3.13.3 reserves PTL_NI_PT_DISABLED for
// initiator events while §2.8 says "any generated full event" carries it: accept either.
void check_pt_disabled(const ptl_event_t &ev, ptl_pt_index_t pt) {
    EXPECT_EQ(Kind{PTL_EVENT_PT_DISABLED}, Kind{ev.type}) << describe(ev);
    EXPECT_EQ(pt, ev.pt_index) << describe(ev);
    EXPECT_TRUE(ev.ni_fail_type == PTL_NI_OK || ev.ni_fail_type == PTL_NI_PT_DISABLED) << describe(ev);
}

// §3.7.1, §3.7.2.
TEST_F(PtTest, AllocFreeAndErrors) {
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_eq_t eq = make_eq(ni);
    const int max = ni.limits.max_pt_index;
    ASSERT_GE(max, 249);

    ptl_pt_index_t any = PTL_PT_ANY;
    ASSERT_PTL(PtlPTAlloc(ni.h, 0, eq, PTL_PT_ANY, &any));
    EXPECT_LE(any, static_cast<ptl_pt_index_t>(max));
    ptl_pt_index_t again = PTL_PT_ANY;
    EXPECT_RC(PTL_PT_IN_USE, PtlPTAlloc(ni.h, 0, eq, any, &again));

    // The largest index is valid.
    ptl_pt_index_t top = PTL_PT_ANY;
    if (any != static_cast<ptl_pt_index_t>(max)) {
        ASSERT_PTL(PtlPTAlloc(ni.h, 0, PTL_EQ_NONE, static_cast<ptl_pt_index_t>(max), &top));
        EXPECT_EQ(static_cast<ptl_pt_index_t>(max), top);
    }

    // FLOWCTRL needs an EQ.
    ptl_pt_index_t fc = PTL_PT_ANY;
    EXPECT_RC(PTL_PT_EQ_NEEDED, PtlPTAlloc(ni.h, PTL_PT_FLOWCTRL, PTL_EQ_NONE, PTL_PT_ANY, &fc));

    // Exhaust the table: exactly max_pt_index + 1 entries exist.
    std::set<ptl_pt_index_t> taken = {any};
    if (top != PTL_PT_ANY) taken.insert(top);
    for (;;) {
        ptl_pt_index_t pt = PTL_PT_ANY;
        const int rc = PtlPTAlloc(ni.h, 0, PTL_EQ_NONE, PTL_PT_ANY, &pt);
        if (rc == PTL_PT_FULL) break;
        ASSERT_PTL(rc);
        ASSERT_LE(pt, static_cast<ptl_pt_index_t>(max));
        ASSERT_TRUE(taken.insert(pt).second) << "index " << pt << " handed out twice";
        ASSERT_LE(taken.size(), static_cast<size_t>(max) + 1);
    }
    EXPECT_EQ(static_cast<size_t>(max) + 1, taken.size());

    // Freeing one makes exactly that one available to PTL_PT_ANY.
    const ptl_pt_index_t victim = static_cast<ptl_pt_index_t>(max / 2);
    ASSERT_PTL(PtlPTFree(ni.h, victim));
    ptl_pt_index_t got = PTL_PT_ANY;
    ASSERT_PTL(PtlPTAlloc(ni.h, 0, eq, PTL_PT_ANY, &got));
    EXPECT_EQ(victim, got);

    // PTFree with an attached ME: PT_IN_USE until it is unlinked.
    static char buf[8];
    ptl_handle_me_t me = append_me(ni, got, me_desc(buf, sizeof buf, PTL_ME_OP_PUT), PTL_PRIORITY_LIST, tag(1), eq);
    EXPECT_RC(PTL_PT_IN_USE, PtlPTFree(ni.h, got));
    ASSERT_PTL(PtlMEUnlink(me));
    EXPECT_PTL(PtlPTFree(ni.h, got));
    // A freed index can be requested again by number.
    ptl_pt_index_t back = PTL_PT_ANY;
    EXPECT_PTL(PtlPTAlloc(ni.h, PTL_PT_FLOWCTRL, eq, victim, &back));
    EXPECT_EQ(victim, back);
    // PT_ANY on a full table.
    EXPECT_RC(PTL_PT_FULL, PtlPTAlloc(ni.h, 0, eq, PTL_PT_ANY, &got));
}

// §2.8: no match on a flow-controlled PT disables it (PT_DISABLED event, ACK/REPLY with
// PTL_NI_PT_DISABLED); later messages are dropped without touching buffers; PtlPTEnable restores.
TEST_F(FlowControl, NoMatchDisablesPtUntilEnabled) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    const ptl_pt_index_t pt_req = 11;
    std::vector<uint8_t> buf(256, 0xEE);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE, ieq = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    std::vector<uint8_t> src(256);
    fill_pattern(src.data(), src.size(), 33);
    ptl_pt_index_t pt = pt_req;
    if (rank() == 0) {
        teq = make_eq(ni, 64);
        pt = make_pt(ni, teq, PTL_PT_FLOWCTRL, pt_req);
        append_me(ni, pt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, 1), PTL_PRIORITY_LIST,
                  tag(0x71), teq);
    } else if (rank() == 1) {
        ieq = make_eq(ni, 64);
        md = bind_md(ni, src.data(), src.size(), ieq);
    }
    barrier(); // A: the target is ready
    if (rank() == 1) {
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), pt, 2, 0, tag(1), 1));
        expect_send_and_failed_ack(ieq, tag(1), 64, PTL_NI_PT_DISABLED);
    }
    barrier(); // B: the no-match put was refused
    if (rank() == 0) {
        check_pt_disabled(wait_event(teq), pt);
    }
    barrier(); // C: the PT is known to be disabled
    if (rank() == 1) {
        // A put and a get that would match are refused as well.
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), pt, 1, 0, tag(2), 2));
        expect_send_and_failed_ack(ieq, tag(2), 64, PTL_NI_PT_DISABLED);
        ASSERT_PTL(PtlGet(md, 128, 32, ni.id_of(0), pt, 1, 0, tag(3)));
        check_init_event(wait_event(ieq), {.type = PTL_EVENT_REPLY, .user_ptr = tag(3), .fail = PTL_NI_PT_DISABLED});
    }
    barrier(); // D
    if (rank() == 0) {
        EXPECT_EQ(-1, check_fill(buf.data(), buf.size(), 0xEE)) << "a refused put wrote data";
        expect_eq_empty(teq, "on a disabled PT");
        ASSERT_PTL(PtlPTEnable(ni.h, pt));
    }
    barrier(); // E: enabled again
    if (rank() == 1) {
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), pt, 1, 16, tag(4), 4));
        expect_send_and_ack(ieq, tag(4), 64, 64, 16);
    } else if (rank() == 0) {
        check_target_event(wait_event(teq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = pt,
                            .match_bits = 1,
                            .rlength = 64,
                            .mlength = 64,
                            .remote_offset = 16,
                            .start = buf.data() + 16,
                            .user_ptr = tag(0x71),
                            .hdr_data = 4},
                           ni);
        EXPECT_EQ(-1, check_pattern(buf.data() + 16, 64, 33));
        EXPECT_EQ(-1, check_fill(buf.data(), 16, 0xEE));
        EXPECT_EQ(-1, check_fill(buf.data() + 80, buf.size() - 80, 0xEE));
    }
}

// Sends 0-byte puts (one at a time, each waiting for its ACK) until one is refused with
// PTL_NI_PT_DISABLED; returns how many were accepted.
size_t puts_until_disabled(const Ni &ni, ptl_handle_md_t md, ptl_handle_eq_t ieq, ptl_pt_index_t pt,
                           ptl_match_bits_t bits) {
    const size_t kMax = size_t{1} << 16;
    for (size_t i = 0; i < kMax; ++i) {
        EXPECT_PTL(PtlPut(md, 0, 0, PTL_ACK_REQ, ni.id_of(0), pt, bits, 0, tag(i + 1), i));
        ptl_event_t ev = expect_event(ieq, PTL_EVENT_ACK);
        EXPECT_EQ(tag(i + 1), ev.user_ptr) << describe(ev);
        if (ev.ni_fail_type == PTL_NI_PT_DISABLED) return i;
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
    }
    ADD_FAILURE() << "an EQ allocated for 4 events held " << kMax << " events without triggering flow control";
    return kMax;
}

// §2.8, §3.11.1/§3.12.1 EVENT_FLOWCTRL_DISABLE, Implementation Note 13: a full EQ
// on a flow-controlled PT disables it; PT_DISABLED is still delivered (reserved slot) unless the
// entry that caused it has EVENT_FLOWCTRL_DISABLE, and a no-match always raises PT_DISABLED.
void full_eq_test(bool flowctrl_event_disabled) {
    Ni ni = open_ni(kMatchingPhysical);
    const ptl_pt_index_t pt = 12;
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE, ieq = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    static char dummy[8];
    if (my_rank() == 0) {
        teq = make_eq(ni, 4);
        make_pt(ni, teq, PTL_PT_FLOWCTRL, pt);
        const unsigned opts =
            PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | (flowctrl_event_disabled ? PTL_ME_EVENT_FLOWCTRL_DISABLE : 0u);
        append_me(ni, pt, me_desc(nullptr, 0, opts, 0, 0xFF), PTL_PRIORITY_LIST, tag(0x34), teq);
    } else if (my_rank() == 1) {
        ieq = make_eq(ni, 64);
        md = bind_md(ni, dummy, sizeof dummy, ieq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
    }
    barrier();
    size_t accepted = 0;
    if (my_rank() == 1) accepted = puts_until_disabled(ni, md, ieq, pt, 0x01);
    accepted = job().allgather_pod(accepted).at(1);
    EXPECT_GE(accepted, 4u) << "the EQ must hold at least the requested 4 events";
    barrier();
    if (my_rank() == 0) {
        // Every accepted put has its event (none lost), then PT_DISABLED unless disabled.
        std::set<ptl_hdr_data_t> seen;
        for (size_t i = 0; i < accepted; ++i) {
            ptl_event_t ev = wait_event(teq);
            check_target_event(ev,
                               {.type = PTL_EVENT_PUT,
                                .initiator = 1,
                                .pt_index = pt,
                                .match_bits = 0x01,
                                .start = nullptr,
                                .user_ptr = tag(0x34)},
                               ni);
            EXPECT_LT(ev.hdr_data, accepted);
            EXPECT_TRUE(seen.insert(ev.hdr_data).second) << describe(ev);
        }
        if (!flowctrl_event_disabled) check_pt_disabled(wait_event(teq), pt);
        expect_eq_empty(teq, "after draining");
        ASSERT_PTL(PtlPTEnable(ni.h, pt));
    }
    barrier();
    if (flowctrl_event_disabled) {
        // A no-match is not caused by the entry: PT_DISABLED is raised regardless.
        if (my_rank() == 1) {
            ASSERT_PTL(PtlPut(md, 0, 0, PTL_ACK_REQ, ni.id_of(0), pt, 0x100, 0, tag(0xA), 0xA));
            check_init_event(expect_event(ieq, PTL_EVENT_ACK),
                             {.type = PTL_EVENT_ACK, .user_ptr = tag(0xA), .fail = PTL_NI_PT_DISABLED});
        }
        barrier();
        if (my_rank() == 0) {
            check_pt_disabled(wait_event(teq), pt);
            expect_eq_empty(teq);
            ASSERT_PTL(PtlPTEnable(ni.h, pt));
        }
        barrier();
    }
    if (my_rank() == 1) {
        ASSERT_PTL(PtlPut(md, 0, 0, PTL_ACK_REQ, ni.id_of(0), pt, 0x02, 0, tag(0xB), 0xB));
        check_init_event(expect_event(ieq, PTL_EVENT_ACK), {.type = PTL_EVENT_ACK, .user_ptr = tag(0xB), .mlength = 0});
    } else if (my_rank() == 0) {
        ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(0xBu, ev.hdr_data) << describe(ev);
    }
}

TEST_F(FlowControl, FullEqDisablesPtAndPtDisabledIsDelivered) {
    REQUIRE_RANKS(2);
    full_eq_test(false);
}

TEST_F(FlowControl, EventFlowctrlDisableHidesOnlyEntryCausedPtDisabled) {
    REQUIRE_RANKS(2);
    full_eq_test(true);
}

// §3.7.1 PT_ALLOC_DISABLED, §3.7.3, §3.7.4: a PT allocated disabled refuses messages until
// enabled; PtlPTDisable raises no event; appends keep working on a disabled PT.
TEST_F(PtTest, AllocDisabledAndPtDisable) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    const ptl_pt_index_t pt = 13;
    std::vector<uint8_t> b1(64, 0xEE), b2(64, 0xEE), src(64);
    fill_pattern(src.data(), src.size(), 36);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE, ieq = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, PTL_PT_ALLOC_DISABLED, pt);
        append_me(ni, pt, me_desc(b1.data(), b1.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, 1), PTL_PRIORITY_LIST, tag(1),
                  teq);
    } else if (rank() == 1) {
        ieq = make_eq(ni);
        md = bind_md(ni, src.data(), src.size(), ieq);
    }
    barrier();
    if (rank() == 1) {
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), pt, 1, 0, tag(1), 1));
        expect_send_and_failed_ack(ieq, tag(1), 64, PTL_NI_PT_DISABLED);
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(-1, check_fill(b1.data(), b1.size(), 0xEE));
        expect_eq_empty(teq, "for a message to a PT allocated disabled");
        ASSERT_PTL(PtlPTEnable(ni.h, pt));
    }
    barrier();
    if (rank() == 1) {
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), pt, 1, 0, tag(2), 2));
        expect_send_and_ack(ieq, tag(2), 64, 64, 0);
    } else if (rank() == 0) {
        ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(2u, ev.hdr_data);
        EXPECT_EQ(-1, check_pattern(b1.data(), 64, 36));
        std::fill(b1.begin(), b1.end(), 0xEE);
        // PtlPTDisable blocks until done and raises no event; an append still links.
        ASSERT_PTL(PtlPTDisable(ni.h, pt));
        expect_eq_empty(teq, "after PtlPTDisable");
        append_me(ni, pt, me_desc(b2.data(), b2.size(), PTL_ME_OP_PUT, 2), PTL_PRIORITY_LIST, tag(2), teq);
    }
    barrier();
    if (rank() == 1) {
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), pt, 2, 0, tag(3), 3));
        expect_send_and_failed_ack(ieq, tag(3), 64, PTL_NI_PT_DISABLED);
        ASSERT_PTL(PtlGet(md, 0, 16, ni.id_of(0), pt, 1, 0, tag(4)));
        check_init_event(wait_event(ieq), {.type = PTL_EVENT_REPLY, .user_ptr = tag(4), .fail = PTL_NI_PT_DISABLED});
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(-1, check_fill(b1.data(), b1.size(), 0xEE));
        EXPECT_EQ(-1, check_fill(b2.data(), b2.size(), 0xEE));
        expect_eq_empty(teq, "on a disabled PT");
        ASSERT_PTL(PtlPTEnable(ni.h, pt));
    }
    barrier();
    if (rank() == 1) {
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), pt, 2, 0, tag(5), 5));
        expect_send_and_ack(ieq, tag(5), 64, 64, 0);
    } else if (rank() == 0) {
        ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(tag(2), ev.user_ptr) << describe(ev);
        EXPECT_EQ(5u, ev.hdr_data);
        EXPECT_EQ(-1, check_pattern(b2.data(), 64, 36));
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
