// SPDX-License-Identifier: BSD-3-Clause
// Thousands of operations in flight between two processes in both directions at once, on every
// transport: a sender whose outgoing queue is full must keep serving what arrives (acks, get
// replies, the peer's puts), or both sides would wait for each other forever.
#include "ptl_helpers.hpp"

#include <numeric>

using namespace ptltest;

namespace {
constexpr ptl_pt_index_t kPt = 9;
constexpr size_t kOps = 4096;
// 64 MiB each way: far more than any socket or ring holds. Under a sanitizer every byte of the
// fill and the check is instrumented, so 16 MiB (still several times a ring or socket buffer).
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr size_t kSize = 4 * 1024;
#else
constexpr size_t kSize = 16 * 1024;
#endif

uint8_t byte_of(int from, size_t op, size_t i) { return static_cast<uint8_t>(from * 101 + op * 7 + i * 13); }
} // namespace

class Flood : public PtlTest {};

TEST_F(Flood, ThousandsOfPutsAndGetsInFlightBothWays) {
    Ni ni = open_ni(kMatchingPhysical);
    const int peer = 1 - my_rank();
    // Target side: a region the peer writes (puts) and one it reads (gets).
    std::vector<uint8_t> inbox(kOps * kSize, 0), exposed(kOps * kSize);
    for (size_t op = 0; op < kOps; ++op)
        for (size_t i = 0; i < kSize; ++i) exposed[op * kSize + i] = byte_of(my_rank(), op, i);
    ptl_handle_eq_t teq = make_eq(ni, 16);
    ptl_handle_ct_t put_ct = make_ct(ni), get_ct = make_ct(ni);
    make_pt(ni, teq, 0, kPt);
    append_me(ni, kPt,
              me_desc(inbox.data(), inbox.size(), PTL_ME_OP_PUT | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_CT_COMM, 1,
                      0, put_ct),
              PTL_PRIORITY_LIST, nullptr, teq);
    append_me(ni, kPt,
              me_desc(exposed.data(), exposed.size(), PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_CT_COMM,
                      2, 0, get_ct),
              PTL_PRIORITY_LIST, nullptr, teq);
    barrier();

    // Initiator side: counters only, so no event queue can overflow.
    std::vector<uint8_t> out(kOps * kSize), back(kOps * kSize, 0);
    for (size_t op = 0; op < kOps; ++op)
        for (size_t i = 0; i < kSize; ++i) out[op * kSize + i] = byte_of(my_rank(), op, i) ^ 0xff;
    ptl_handle_ct_t out_ct = make_ct(ni), back_ct = make_ct(ni);
    ptl_handle_md_t out_md = bind_md(ni, out.data(), out.size(), PTL_EQ_NONE, out_ct, PTL_MD_EVENT_CT_ACK);
    ptl_handle_md_t back_md = bind_md(ni, back.data(), back.size(), PTL_EQ_NONE, back_ct, PTL_MD_EVENT_CT_REPLY);
    for (size_t op = 0; op < kOps; ++op) {
        ASSERT_PTL(PtlPut(out_md, op * kSize, kSize, PTL_CT_ACK_REQ, ni.id_of(peer), kPt, 1, op * kSize, nullptr, 0));
        ASSERT_PTL(PtlGet(back_md, op * kSize, kSize, ni.id_of(peer), kPt, 2, op * kSize, nullptr));
    }
    ptl_ct_event_t ev;
    ASSERT_PTL(PtlCTWait(out_ct, kOps, &ev));
    EXPECT_EQ((Ct{kOps, 0}), ct_of(ev)) << "acks";
    ASSERT_PTL(PtlCTWait(back_ct, kOps, &ev));
    EXPECT_EQ((Ct{kOps, 0}), ct_of(ev)) << "replies";
    ASSERT_PTL(PtlCTWait(put_ct, kOps, &ev));
    EXPECT_EQ((Ct{kOps, 0}), ct_of(ev)) << "puts received";
    ASSERT_PTL(PtlCTWait(get_ct, kOps, &ev));
    EXPECT_EQ((Ct{kOps, 0}), ct_of(ev)) << "gets served";
    for (size_t op = 0; op < kOps; ++op)
        for (size_t i = 0; i < kSize; ++i) {
            ASSERT_EQ(byte_of(peer, op, i) ^ 0xff, inbox[op * kSize + i]) << "put " << op << " byte " << i;
            ASSERT_EQ(byte_of(peer, op, i), back[op * kSize + i]) << "get " << op << " byte " << i;
        }
    barrier();
}

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
