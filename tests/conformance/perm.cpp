// SPDX-License-Identifier: BSD-3-Clause
// Conformance: permission (uid) and operation (OP_PUT/OP_GET) checks (spec §2.5, §3.3.7, §3.11.1,
// §3.12.1, §3.13.3).
//
// Rank 0 is the target, rank 1 the initiator. A violation drops the message without changing any
// list, bumps PERMISSION_VIOLATIONS or OPERATION_VIOLATIONS (never DROP_COUNT, §3.3.7) and is
// reported in the initiator's ACK or REPLY.
#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class Perm : public PtlTest, public ::testing::WithParamInterface<unsigned> {};
class PermMatching : public PtlTest {};

constexpr ptl_pt_index_t kPtA = 40, kPtB = 41;

// Initiator helpers: a put whose ACK reports `fail`, a get whose REPLY reports `fail`.
void put_expect(const Ni &ni, ptl_handle_md_t md, ptl_handle_eq_t eq, ptl_pt_index_t pt, ptl_match_bits_t bits,
                uintptr_t id, ptl_ni_fail_t fail) {
    ASSERT_PTL(PtlPut(md, 0, 32, PTL_ACK_REQ, ni.id_of(0), pt, bits, 0, tag(id), id));
    if (fail == PTL_NI_OK)
        expect_send_and_ack(eq, tag(id), 32, 32, 0);
    else
        expect_send_and_failed_ack(eq, tag(id), 32, fail);
}

void get_expect(const Ni &ni, ptl_handle_md_t md, ptl_handle_eq_t eq, ptl_pt_index_t pt, ptl_match_bits_t bits,
                uintptr_t id, ptl_ni_fail_t fail) {
    ASSERT_PTL(PtlGet(md, 0, 32, ni.id_of(0), pt, bits, 0, tag(id)));
    check_init_event(wait_event(eq), {.type = PTL_EVENT_REPLY, .user_ptr = tag(id), .fail = fail});
}

// A put to an entry without OP_PUT and a get from one without OP_GET.
TEST_P(Perm, OperationViolation) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(GetParam());
    std::vector<uint8_t> ga(64, 0xEE), pb(64, 0xDD);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    ptl_handle_ct_t cta = PTL_INVALID_HANDLE, ctb = PTL_INVALID_HANDLE;
    Sr before;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPtA);
        make_pt(ni, teq, 0, kPtB);
        cta = make_ct(ni);
        ctb = make_ct(ni);
        append_entry(ni, kPtA, me_desc(ga.data(), 64, PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, 1, 0, cta),
                     PTL_PRIORITY_LIST, tag(1), teq);
        append_entry(ni, kPtB, me_desc(pb.data(), 64, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 1, 0, ctb),
                     PTL_PRIORITY_LIST, tag(2), teq);
        before = read_sr(ni);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(64);
        fill_pattern(src.data(), 64, 10);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 64, ieq);
        put_expect(ni, md, ieq, kPtA, 1, 1, PTL_NI_OP_VIOLATION);
        get_expect(ni, md, ieq, kPtB, 1, 2, PTL_NI_OP_VIOLATION);
        EXPECT_EQ(-1, check_pattern(src.data(), 64, 10)) << "a refused get wrote the MD";
        // The entries still serve the operations they allow.
        get_expect(ni, md, ieq, kPtA, 1, 3, PTL_NI_OK);
        EXPECT_EQ(-1, check_fill(src.data(), 32, 0xEE));
        put_expect(ni, md, ieq, kPtB, 1, 4, PTL_NI_OK);
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(sr_plus(before, 0, 0, 2), read_sr(ni));
        ptl_event_t ev = expect_event(teq, PTL_EVENT_GET);
        EXPECT_EQ(tag(1), ev.user_ptr);
        ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(tag(2), ev.user_ptr);
        EXPECT_EQ(4u, ev.hdr_data);
        expect_eq_empty(teq, "(violations raise no target event)");
        EXPECT_EQ((Ct{1, 0}), ct_wait(cta, 1)) << "a violation is not counted at the target";
        EXPECT_EQ((Ct{1, 0}), ct_wait(ctb, 1));
        EXPECT_EQ(-1, check_fill(ga.data(), 64, 0xEE));
        EXPECT_EQ(-1, check_fill(pb.data() + 32, 32, 0xDD));
    }
}

// A uid mismatch gives PERM_VIOLATION; a matching uid and PTL_UID_ANY pass.
TEST_P(Perm, UidCheck) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(GetParam());
    std::vector<uint8_t> b(3 * 64, 0xEE);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    const ptl_uid_t initiator_uid = ni.uids[1];
    // A uid that is not the initiator's.
    const ptl_uid_t other = initiator_uid + 1 == PTL_UID_ANY ? initiator_uid - 1 : initiator_uid + 1;
    const ptl_pt_index_t pts[3] = {kPtA, kPtB, kPtB + 1};
    const ptl_uid_t uids[3] = {other, initiator_uid, PTL_UID_ANY};
    Sr before;
    if (rank() == 0) {
        teq = make_eq(ni);
        for (int i = 0; i < 3; ++i) {
            make_pt(ni, teq, 0, pts[i]);
            ptl_me_t d = me_desc(b.data() + 64 * i, 64, PTL_ME_OP_PUT | PTL_ME_OP_GET, 1);
            d.uid = uids[i];
            append_entry(ni, pts[i], d, PTL_PRIORITY_LIST, tag(i), teq);
        }
        before = read_sr(ni);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(64);
        fill_pattern(src.data(), 64, 11);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 64, ieq);
        put_expect(ni, md, ieq, pts[0], 1, 1, PTL_NI_PERM_VIOLATION);
        get_expect(ni, md, ieq, pts[0], 1, 2, PTL_NI_PERM_VIOLATION);
        put_expect(ni, md, ieq, pts[1], 1, 3, PTL_NI_OK);
        put_expect(ni, md, ieq, pts[2], 1, 4, PTL_NI_OK);
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(sr_plus(before, 0, 2, 0), read_sr(ni));
        for (uintptr_t i : {1, 2}) {
            ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
            EXPECT_EQ(tag(i), ev.user_ptr) << describe(ev);
            EXPECT_EQ(i + 2, ev.hdr_data) << describe(ev);
            EXPECT_EQ(initiator_uid, ev.uid) << describe(ev);
        }
        expect_eq_empty(teq);
        EXPECT_EQ(-1, check_fill(b.data(), 64, 0xEE));
        EXPECT_EQ(-1, check_pattern(b.data() + 64, 32, 11));
        EXPECT_EQ(-1, check_pattern(b.data() + 128, 32, 11));
    }
}

INSTANTIATE_TEST_SUITE_P(NiKinds, Perm, ::testing::Values(kMatchingPhysical, kNonMatchingPhysical),
                         [](const ::testing::TestParamInfo<unsigned> &param) { return ni_kind_name(param.param); });

// §2.5.2, §4.2.2: once an ME matched, a failed permission or operation check drops the
// message: matching does not continue with the next ME, and no list changes (a use-once ME that
// refused a message is still linked).
TEST_F(PermMatching, FailedCheckDoesNotFallThrough) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> b(4 * 64, 0xEE);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    ptl_handle_me_t bad_uid = PTL_INVALID_HANDLE;
    Sr before;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPtA);
        ptl_me_t d = me_desc(b.data(), 64, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 1);
        d.uid = ni.uids[1] + 1;
        bad_uid = append_me(ni, kPtA, d, PTL_PRIORITY_LIST, tag(1), teq);
        append_me(ni, kPtA, me_desc(b.data() + 64, 64, PTL_ME_OP_PUT, 1), PTL_PRIORITY_LIST, tag(2), teq);
        append_me(ni, kPtA, me_desc(b.data() + 128, 64, PTL_ME_OP_GET, 2), PTL_PRIORITY_LIST, tag(3), teq);
        append_me(ni, kPtA, me_desc(b.data() + 192, 64, PTL_ME_OP_PUT, 2), PTL_PRIORITY_LIST, tag(4), teq);
        before = read_sr(ni);
    }
    barrier();
    std::vector<uint8_t> src(64);
    fill_pattern(src.data(), 64, 14);
    ptl_handle_eq_t ieq = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    if (rank() == 1) {
        ieq = make_eq(ni);
        md = bind_md(ni, src.data(), 64, ieq);
        put_expect(ni, md, ieq, kPtA, 1, 1, PTL_NI_PERM_VIOLATION);
        put_expect(ni, md, ieq, kPtA, 1, 2, PTL_NI_PERM_VIOLATION);
        put_expect(ni, md, ieq, kPtA, 2, 3, PTL_NI_OP_VIOLATION);
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(sr_plus(before, 0, 2, 1), read_sr(ni));
        expect_eq_empty(teq);
        EXPECT_EQ(-1, check_fill(b.data(), b.size(), 0xEE));
        EXPECT_PTL(PtlMEUnlink(bad_uid)) << "the refusing use-once ME must still be linked";
    }
    barrier();
    if (rank() == 1) put_expect(ni, md, ieq, kPtA, 1, 4, PTL_NI_OK);
    barrier();
    if (rank() == 0) {
        ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(tag(2), ev.user_ptr) << describe(ev);
        EXPECT_EQ(-1, check_pattern(b.data() + 64, 32, 14));
        expect_eq_empty(teq);
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
