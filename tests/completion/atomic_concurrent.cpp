// SPDX-License-Identifier: BSD-3-Clause
// Completion conformance: atomicity under concurrency (spec §3.15.4, §3.15.8).
// Runs on 8 ranks under ctest; every rank, the target included, issues atomics at once, and every
// rank is both initiator and target in the all-to-all tests. Results are exact totals; waits are
// on counting events (no sleeps, no timing).
#include <algorithm>

#include "completion_helpers.hpp"

using namespace cpltest;

namespace {

class Concurrent : public CompletionTest {};
constexpr ptl_pt_index_t kPt = 23;
constexpr ptl_match_bits_t kAny = ~0ull;

// Rank 0's target: `words` zeroed 8-byte words behind one ME whose CT counts every operation.
struct Counters {
    Buf buf;
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    Counters(const Ni &ni, size_t words) : buf(words * 8) {
        ct = make_ct(ni);
        make_pt(ni, PTL_EQ_NONE, 0, kPt);
        append_me(ni, kPt,
                  me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, 0, kAny, ct),
                  PTL_PRIORITY_LIST, tag(1), PTL_EQ_NONE);
    }
};

// Every rank (rank 0 included) issues 1000 PtlAtomic SUM of 1 on one int64 at rank 0,
// all outstanding at once; the total is exact.
TEST_F(Concurrent, SumsFromEveryRankOnOneWord) {
    constexpr int kPerRank = 1000;
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Counters> target;
    if (rank() == 0) target.emplace(ni, 1);
    barrier();
    Buf one(8);
    *one.as<int64_t>() = 1;
    ptl_handle_ct_t ct = make_ct(ni);
    ptl_handle_md_t md = bind_md(ni, one.data(), 8, PTL_EQ_NONE, ct, PTL_MD_EVENT_CT_ACK);
    for (int i = 0; i < kPerRank; ++i)
        ASSERT_PTL(PtlAtomic(md, 0, 8, PTL_CT_ACK_REQ, ni.id_of(0), kPt, 0, 0, nullptr, 0, PTL_SUM, PTL_INT64_T));
    EXPECT_EQ((Ct{kPerRank, 0}), ct_wait(ct, kPerRank));
    if (rank() == 0) {
        const ptl_size_t total = ptl_size_t(kPerRank) * ptl_size_t(nranks());
        EXPECT_EQ((Ct{total, 0}), ct_wait(target->ct, total));
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(static_cast<int64_t>(total), *target->buf.as<int64_t>());
    }
}

// Fetch-add: every rank issues 1000 PtlFetchAtomic SUM of 1 on one uint64 at rank
// 0. The old values returned to all ranks together are exactly {0 .. N-1} (each ticket once); each
// rank's own tickets increase in issue order (one initiator, one offset: ordered, §2.6).
TEST_F(Concurrent, FetchAddTicketsAreUnique) {
    constexpr int kPerRank = 1000;
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Counters> target;
    if (rank() == 0) target.emplace(ni, 1);
    barrier();
    Buf one(8), tickets(kPerRank * 8, 0xEE);
    *one.as<uint64_t>() = 1;
    ptl_handle_ct_t gct = make_ct(ni);
    ptl_handle_md_t put_md = bind_md(ni, one.data(), 8, PTL_EQ_NONE);
    ptl_handle_md_t get_md = bind_md(ni, tickets.data(), tickets.size(), PTL_EQ_NONE, gct, PTL_MD_EVENT_CT_REPLY);
    for (int i = 0; i < kPerRank; ++i)
        ASSERT_PTL(PtlFetchAtomic(get_md, ptl_size_t(i) * 8, put_md, 0, 8, ni.id_of(0), kPt, 0, 0, nullptr, 0, PTL_SUM,
                                  PTL_UINT64_T));
    EXPECT_EQ((Ct{kPerRank, 0}), ct_wait(gct, kPerRank));
    const uint64_t *mine = tickets.as<uint64_t>();
    for (int i = 1; i < kPerRank; ++i) ASSERT_LT(mine[i - 1], mine[i]) << "ticket " << i << " of rank " << rank();
    const std::vector<std::string> all =
        job().allgather(std::string(reinterpret_cast<const char *>(tickets.data()), tickets.size()));
    std::vector<uint64_t> every;
    for (const std::string &s : all) {
        ASSERT_EQ(tickets.size(), s.size());
        for (int i = 0; i < kPerRank; ++i) {
            uint64_t v;
            std::memcpy(&v, s.data() + i * 8, 8);
            every.push_back(v);
        }
    }
    std::sort(every.begin(), every.end());
    for (size_t i = 0; i < every.size(); ++i)
        ASSERT_EQ(i, every[i]) << "the returned old values are not exactly {0 .. " << every.size() - 1 << "}";
    if (rank() == 0) {
        const ptl_size_t total = ptl_size_t(kPerRank) * ptl_size_t(nranks());
        EXPECT_EQ((Ct{total, 0}), ct_wait(target->ct, total));
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(total, *target->buf.as<uint64_t>());
    }
}

// All to all (bidirectional): every rank is a target and sends to every rank, itself
// included, kRounds each of SUM (int64), MAX (int64), BXOR (uint64) and SUM (double) on four
// words, all outstanding at once. Every rank's words end with the exact totals.
TEST_F(Concurrent, AllToAllMixedOperations) {
    constexpr int kRounds = 201; // odd: each rank's BXOR bit survives
    const int n = nranks(), me = rank();
    Ni ni = open_ni(kMatchingPhysical);
    Buf words(32);
    ptl_handle_ct_t tct = make_ct(ni);
    make_pt(ni, PTL_EQ_NONE, 0, kPt);
    append_me(ni, kPt,
              me_desc(words.data(), 32, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_LINK_DISABLE, 0, kAny, tct),
              PTL_PRIORITY_LIST, tag(1), PTL_EQ_NONE);
    // Sources: [0] SUM value, [1] BXOR bit, [2] double 0.5, [3 + i] MAX value of round i.
    Buf src(8 * (3 + kRounds));
    src.as<int64_t>()[0] = me + 1;
    src.as<uint64_t>()[1] = uint64_t{1} << me;
    src.as<double>()[2] = 0.5;
    for (int i = 0; i < kRounds; ++i) src.as<int64_t>()[3 + i] = int64_t{me} * 1000 + i;
    ptl_handle_ct_t ct = make_ct(ni);
    ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, ct, PTL_MD_EVENT_CT_ACK);
    barrier();
    for (int i = 0; i < kRounds; ++i) {
        for (int k = 0; k < n; ++k) {
            const int t = (me + k) % n; // start with a different target on every rank
            const ptl_process_t id = ni.id_of(t);
            ASSERT_PTL(PtlAtomic(md, 0, 8, PTL_CT_ACK_REQ, id, kPt, 0, 0, nullptr, 0, PTL_SUM, PTL_INT64_T));
            ASSERT_PTL(PtlAtomic(md, ptl_size_t(3 + i) * 8, 8, PTL_CT_ACK_REQ, id, kPt, 0, 8, nullptr, 0, PTL_MAX,
                                 PTL_INT64_T));
            ASSERT_PTL(PtlAtomic(md, 8, 8, PTL_CT_ACK_REQ, id, kPt, 0, 16, nullptr, 0, PTL_BXOR, PTL_UINT64_T));
            ASSERT_PTL(PtlAtomic(md, 16, 8, PTL_CT_ACK_REQ, id, kPt, 0, 24, nullptr, 0, PTL_SUM, PTL_DOUBLE));
        }
    }
    const ptl_size_t per_rank = ptl_size_t(4) * kRounds * ptl_size_t(n);
    EXPECT_EQ((Ct{per_rank, 0}), ct_wait(ct, per_rank)) << "acks of everything this rank sent";
    EXPECT_EQ((Ct{per_rank, 0}), ct_wait(tct, per_rank)) << "everything every rank sent here";
    ASSERT_PTL(PtlAtomicSync());
    EXPECT_EQ(int64_t{kRounds} * n * (n + 1) / 2, words.as<int64_t>()[0]);
    EXPECT_EQ(int64_t{n - 1} * 1000 + kRounds - 1, words.as<int64_t>()[1]);
    EXPECT_EQ((uint64_t{1} << n) - 1, words.as<uint64_t>()[2]);
    EXPECT_EQ(0.5 * kRounds * n, words.as<double>()[3]);
}

// With compare-and-swap: every rank increments one word at rank 0 kIncrements times with
// a read / CSWAP(expected -> expected + 1) retry loop. A CSWAP succeeds exactly when it returns the
// expected value, so the word ends at exactly n * kIncrements and the successful old values are
// exactly {0 .. n*kIncrements - 1}.
TEST_F(Concurrent, CompareAndSwapIncrements) {
    constexpr int kIncrements = 30;
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Counters> target;
    if (rank() == 0) target.emplace(ni, 1);
    barrier();
    Buf io(16), got(8);
    ptl_handle_eq_t eq = make_eq(ni);
    ptl_handle_md_t put_md = bind_md(ni, io.data(), 16, eq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
    ptl_handle_md_t get_md = bind_md(ni, got.data(), 8, eq);
    int64_t *const desired = io.as<int64_t>(); // [0]: the value to store; [1]: the operand
    std::vector<int64_t> won;
    int64_t expected = 0;
    int attempts = 0;
    while (static_cast<int>(won.size()) < kIncrements) {
        io.as<int64_t>()[1] = expected;
        *desired = expected + 1;
        ASSERT_PTL(
            PtlSwap(get_md, 0, put_md, 0, 8, ni.id_of(0), kPt, 0, 0, nullptr, 0, io.at(8), PTL_CSWAP, PTL_INT64_T));
        check_init_event(wait_event(eq), {.type = PTL_EVENT_REPLY, .mlength = 8});
        const int64_t old = *got.as<int64_t>();
        ++attempts;
        if (old == expected)
            won.push_back(old);
        else
            ASSERT_GT(old, expected) << "the word only grows";
        expected = old == expected ? old + 1 : old;
    }
    ASSERT_GE(attempts, kIncrements);
    const std::vector<std::string> all =
        job().allgather(std::string(reinterpret_cast<const char *>(won.data()), won.size() * 8));
    std::vector<int64_t> every;
    for (const std::string &s : all)
        for (size_t i = 0; i + 8 <= s.size(); i += 8) {
            int64_t v;
            std::memcpy(&v, s.data() + i, 8);
            every.push_back(v);
        }
    std::sort(every.begin(), every.end());
    ASSERT_EQ(size_t(kIncrements) * size_t(nranks()), every.size());
    for (size_t i = 0; i < every.size(); ++i)
        ASSERT_EQ(int64_t(i), every[i]) << "two CSWAPs succeeded on the same value, or one was lost";
    barrier();
    if (rank() == 0) {
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(int64_t{kIncrements} * nranks(), *target->buf.as<int64_t>());
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
