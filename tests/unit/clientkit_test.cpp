// SPDX-License-Identifier: BSD-3-Clause
// clientkit (src/clientkit) in one process: names, descriptors and errors need no peer; the owned
// handles, set-up and waits are exercised on a physical NI that puts to itself (no launcher).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "clientkit.hpp"

namespace ck = portico::clientkit;

namespace {

bool known(const char *name) { return name[0] != '('; }

// §3.5.1 forbids PtlInit once the library has been finalized: a reference taken before the first
// Library and never released keeps each test's PtlFini from finalizing it when the tests share a
// process.
struct ProcessReference {
    ProcessReference() {
        static const int rc = PtlInit();
        EXPECT_EQ(PTL_OK, rc);
    }
};

TEST(ClientkitNames, EveryConstantHasItsOwnName) {
    for (int i = 0; i < PTL_STATUS_LAST; ++i) EXPECT_TRUE(known(ck::rc_name(i))) << i;
    for (int i = 0; i <= PTL_EVENT_ERROR; ++i) EXPECT_TRUE(known(ck::event_name(i))) << i;
    for (int i = 0; i <= PTL_NI_NO_MATCH; ++i) EXPECT_TRUE(known(ck::fail_name(i))) << i;
    for (int i = 0; i < PTL_OP_LAST; ++i) EXPECT_TRUE(known(ck::op_name(i))) << i;
    for (int i = 0; i < PTL_DATATYPE_LAST; ++i) EXPECT_TRUE(known(ck::datatype_name(i))) << i;
    EXPECT_STREQ("PTL_PT_IN_USE", ck::rc_name(PTL_PT_IN_USE));
    EXPECT_STREQ("PTL_EVENT_AUTO_FREE", ck::event_name(PTL_EVENT_AUTO_FREE));
    EXPECT_STREQ("PTL_NI_SEGV", ck::fail_name(PTL_NI_SEGV));
    EXPECT_STREQ("PTL_CSWAP_NE", ck::op_name(PTL_CSWAP_NE));
    EXPECT_STREQ("PTL_LONG_DOUBLE_COMPLEX", ck::datatype_name(PTL_LONG_DOUBLE_COMPLEX));
    EXPECT_FALSE(known(ck::rc_name(PTL_STATUS_LAST)));
    EXPECT_FALSE(known(ck::rc_name(-1)));
    EXPECT_FALSE(known(ck::event_name(PTL_EVENT_ERROR + 1)));
}

TEST(ClientkitErrors, CheckNamesTheCallAndTheCode) {
    EXPECT_NO_THROW(ck::check(PTL_OK, "PtlPut"));
    try {
        ck::check(PTL_NO_SPACE, "PtlMEAppend");
        FAIL() << "check did not throw";
    } catch (const ck::Error &e) {
        EXPECT_EQ(PTL_NO_SPACE, e.rc());
        EXPECT_EQ(std::string("PtlMEAppend failed: PTL_NO_SPACE (10)"), e.what());
    }
    EXPECT_EQ("PtlCTWait failed: PTL_NO_INIT (9)", ck::failure(PTL_NO_INIT, "PtlCTWait"));
}

TEST(ClientkitErrors, CheckEventNamesTheKindAndTheFailure) {
    ptl_event_t ev{};
    ev.type = PTL_EVENT_ACK;
    ev.ni_fail_type = PTL_NI_OK;
    EXPECT_NO_THROW(ck::check_event(ev, "put"));
    ev.ni_fail_type = PTL_NI_DROPPED;
    try {
        ck::check_event(ev, "put");
        FAIL() << "check_event did not throw";
    } catch (const ck::Error &e) {
        EXPECT_EQ(std::string("put: PTL_EVENT_ACK reports PTL_NI_DROPPED"), e.what());
    }
}

TEST(ClientkitDescriptors, EntriesAcceptAnyInitiatorOnBothKindsOfNi) {
    char buf[16];
    const ptl_me_t me = ck::me_desc(buf, sizeof buf, PTL_ME_OP_PUT, 0x5, 0x30, PTL_CT_NONE);
    EXPECT_EQ(buf, me.start);
    EXPECT_EQ(sizeof buf, me.length);
    EXPECT_EQ(PTL_ME_OP_PUT, me.options);
    EXPECT_EQ(PTL_UID_ANY, me.uid);
    EXPECT_EQ(PTL_NID_ANY, me.match_id.phys.nid);
    EXPECT_EQ(PTL_PID_ANY, me.match_id.phys.pid);
    EXPECT_EQ(PTL_RANK_ANY, me.match_id.rank);
    EXPECT_EQ(0x5u, me.match_bits);
    EXPECT_EQ(0x30u, me.ignore_bits);
    EXPECT_EQ(0u, me.min_free);

    const ptl_le_t le = ck::le_desc(buf, 4, PTL_LE_OP_GET);
    EXPECT_EQ(PTL_UID_ANY, le.uid);
    EXPECT_EQ(PTL_CT_NONE, le.ct_handle);

    const ptl_md_t all = ck::whole_memory_md(PTL_MD_VOLATILE);
    EXPECT_EQ(nullptr, all.start);
    EXPECT_EQ(PTL_SIZE_MAX, all.length);
    EXPECT_EQ(PTL_MD_VOLATILE, all.options);
    EXPECT_EQ(PTL_EQ_NONE, all.eq_handle);
    EXPECT_EQ(PTL_CT_NONE, all.ct_handle);
}

TEST(ClientkitDescriptors, ProcessIds) {
    const ptl_process_t r = ck::rank_id(7);
    EXPECT_EQ(7u, r.rank);
    EXPECT_EQ(0u, r.phys.pid);
    EXPECT_TRUE(ck::same_process(r, ck::rank_id(7), true));
    EXPECT_FALSE(ck::same_process(r, ck::rank_id(8), true));
    EXPECT_TRUE(ck::same_process(ck::phys_id(1, 2), ck::phys_id(1, 2), false));
    EXPECT_FALSE(ck::same_process(ck::phys_id(1, 2), ck::phys_id(1, 3), false));
}

// A physical matching NI, and one portal table entry with a persistent ME over `target` (no LINK
// event) whose events go to eq and whose puts count on ct; an MD over `source` reports to the same
// EQ.
class ClientkitLoopback : public ::testing::Test {
protected:
    static constexpr size_t kBytes = 64;
    std::vector<unsigned char> source = std::vector<unsigned char>(kBytes, 0xA5);
    std::vector<unsigned char> target = std::vector<unsigned char>(kBytes);
    ProcessReference ref;
    ck::Library lib;
    ck::Ni ni{PTL_NI_MATCHING | PTL_NI_PHYSICAL};
    ck::Eq eq = ck::alloc_eq(ni.get(), 64);
    ck::Ct ct = ck::alloc_ct(ni.get());
    ck::Pt pt = ck::alloc_pt(ni.get(), eq.get());
    ck::Me me =
        ck::append_me(ni.get(), pt.index(),
                      ck::me_desc(target.data(), target.size(),
                                  PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_CT_COMM, 0, 0, ct.get()));
    ck::Md md = ck::bind_md(ni.get(), ck::md_desc(source.data(), source.size(), 0, eq.get()));

    void put(ptl_pt_index_t index, size_t len) {
        ck::check(PtlPut(md.get(), 0, len, PTL_ACK_REQ, ni.phys_id(), index, 0, 0, nullptr, 0), "PtlPut");
    }
};

TEST_F(ClientkitLoopback, PutToItselfThroughTheOwnedObjects) {
    EXPECT_TRUE(ni.matching());
    EXPECT_FALSE(ni.logical());
    EXPECT_EQ(PTL_NI_MATCHING | PTL_NI_PHYSICAL, ni.options());
    EXPECT_GT(ni.limits().max_pt_index, 0);
    ptl_process_t id;
    ASSERT_EQ(PTL_OK, PtlGetPhysId(ni.get(), &id));
    EXPECT_TRUE(ck::same_process(id, ni.phys_id(), false));

    put(pt.index(), kBytes);
    EXPECT_EQ(1u, ck::wait_ct(ct.get(), 1, "the loopback put").success);
    // The ME's events and the MD's share the EQ; their order between the two sides is free.
    bool seen_put = false, seen_send = false, seen_ack = false;
    for (int i = 0; i < 3; ++i) {
        const ptl_event_t ev = ck::wait_event(eq.get(), "the loopback put");
        ck::check_event(ev, "the loopback put");
        if (ev.type == PTL_EVENT_PUT) {
            seen_put = true;
            EXPECT_EQ(kBytes, ev.mlength);
        }
        seen_send |= ev.type == PTL_EVENT_SEND;
        seen_ack |= ev.type == PTL_EVENT_ACK;
    }
    EXPECT_TRUE(seen_put && seen_send && seen_ack);
    EXPECT_EQ(0, std::memcmp(source.data(), target.data(), kBytes));
}

TEST_F(ClientkitLoopback, ExpectEventRejectsAnotherKind) {
    ck::Md quiet = ck::bind_md(ni.get(), ck::md_desc(source.data(), 8, PTL_MD_EVENT_SEND_DISABLE));
    ASSERT_EQ(PTL_OK, PtlPut(quiet.get(), 0, 8, PTL_NO_ACK_REQ, ni.phys_id(), pt.index(), 0, 0, nullptr, 0));
    try {
        ck::expect_event(eq.get(), PTL_EVENT_REPLY, "a get");
        FAIL() << "expect_event accepted a PUT for a REPLY";
    } catch (const ck::Error &e) {
        const std::string what = e.what();
        EXPECT_NE(std::string::npos, what.find("a get: expected PTL_EVENT_REPLY, got event{PTL_EVENT_PUT")) << what;
    }
}

TEST_F(ClientkitLoopback, WaitCtReportsFailures) {
    // Acks of puts to an entry that does not exist come back dropped, and count as failures.
    ck::Ct acks = ck::alloc_ct(ni.get());
    ck::Md counted = ck::bind_md(ni.get(), ck::md_desc(source.data(), 8, PTL_MD_EVENT_CT_ACK, PTL_EQ_NONE, acks.get()));
    ck::Pt empty = ck::alloc_pt(ni.get(), PTL_EQ_NONE);
    ASSERT_EQ(PTL_OK, PtlPut(counted.get(), 0, 8, PTL_ACK_REQ, ni.phys_id(), empty.index(), 0, 0, nullptr, 0));
    try {
        ck::wait_ct(acks.get(), 1, "a dropped put");
        FAIL() << "wait_ct ignored a failure";
    } catch (const ck::Error &e) {
        EXPECT_EQ(PTL_FAIL, e.rc());
        EXPECT_NE(std::string::npos, std::string(e.what()).find("a dropped put: the counter reports 1 failed"))
            << e.what();
    }
}

TEST_F(ClientkitLoopback, SetUpFailuresNameTheCall) {
    try {
        ck::alloc_pt(ni.get(), PTL_EQ_NONE, pt.index());
        FAIL() << "a second PtlPTAlloc of the same index succeeded";
    } catch (const ck::Error &e) {
        EXPECT_EQ(PTL_PT_IN_USE, e.rc());
        EXPECT_EQ("PtlPTAlloc(" + std::to_string(pt.index()) + ") failed: PTL_PT_IN_USE (14)", std::string(e.what()));
    }
    EXPECT_THROW(ck::append_me(ni.get(), ni.limits().max_pt_index + 1, ck::me_desc(nullptr, 0, PTL_ME_OP_PUT)),
                 ck::Error);
}

TEST_F(ClientkitLoopback, OwnersReleaseOnceAndMove) {
    const ptl_handle_md_t h = md.get();
    ck::Md moved = std::move(md);
    EXPECT_FALSE(md);
    EXPECT_EQ(h, moved.get());
    moved.reset();
    EXPECT_FALSE(moved);
    EXPECT_EQ(PTL_ARG_INVALID, PtlMDRelease(h)); // released exactly once, by reset()

    const ptl_pt_index_t index = pt.index();
    ck::Pt other;
    other = std::move(pt);
    EXPECT_FALSE(pt);
    me.reset(); // the entry must be empty before it can be freed
    other.reset();
    ptl_pt_index_t again;
    ASSERT_EQ(PTL_OK, PtlPTAlloc(ni.get(), 0, PTL_EQ_NONE, index, &again)); // free again
    EXPECT_EQ(PTL_OK, PtlPTFree(ni.get(), again));

    const ptl_handle_eq_t e = eq.release();
    EXPECT_FALSE(eq);
    EXPECT_EQ(PTL_OK, PtlEQFree(e)); // release() gave it up without freeing it
}

TEST(ClientkitNi, MovesAndClosesOnce) {
    ProcessReference ref;
    ck::Library lib;
    ck::Ni a(PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL);
    const ptl_handle_ni_t h = a.get();
    ck::Ni b = std::move(a);
    EXPECT_EQ(h, b.get());
    EXPECT_EQ(PTL_INVALID_HANDLE, a.get()); // NOLINT(bugprone-use-after-move): the moved-from state is the point
    EXPECT_FALSE(b.matching());
    b.reset();
    ptl_process_t id;
    EXPECT_NE(PTL_OK, PtlGetPhysId(h, &id));
}

} // namespace
