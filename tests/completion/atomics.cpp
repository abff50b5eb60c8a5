// SPDX-License-Identifier: BSD-3-Clause
// Completion conformance: the values atomics compute (spec §3.15.4-3.15.8, Table 3-4;
// multi-element atomics up to the size limits).
//
// Every batch runs in both directions at once: ranks 0 and 1 are each other's target and
// initiator (run_cases). Values are chosen so that every result is exactly representable, and are
// compared by value with an independent reference model (apply_op). Signed/unsigned pairs are
// chosen so that a wrong signedness gives a different MIN/MAX/compare result, unsigned sums and
// products wrap, and logical ops see operands whose bitwise AND/XOR differ from the logical one.
#include "completion_helpers.hpp"

#include <initializer_list>

using namespace cpltest;

namespace {

class Atomics : public CompletionTest {};
constexpr ptl_pt_index_t kPt = 21;

// Target and initiator values of the arithmetic cases (4 items).
template <ptl_datatype_t D> struct Arith {
    using T = typename Dt<D>::type;
    std::vector<T> t, a;
    Arith() {
        if constexpr (Dt<D>::cls == Cls::Int) {
            if constexpr (std::is_signed_v<T>) {
                t = {T(7), T(2), T(-5), T(-4)};
                a = {T(3), T(9), T(3), T(-6)};
            } else {
                const T max = std::numeric_limits<T>::max();
                const T hi = static_cast<T>(T(1) << (sizeof(T) * 8 - 1)); // only the top bit
                t = {T(7), T(2), T(max - 1), hi};                         // 2 - 9 and (max-1) + 3 wrap; hi > 1 unsigned
                a = {T(3), T(9), T(3), T(1)};
            }
        } else if constexpr (Dt<D>::cls == Cls::Float) {
            t = {T(1.5), T(-2.25), T(8), T(0.5)};
            a = {T(2.5), T(4), T(-0.75), T(0.125)};
        } else {
            using R = typename T::value_type;
            t = {T(R(1.5), R(-2)), T(R(-0.25), R(1)), T(R(3), R(0)), T(R(-1), R(-1))};
            a = {T(R(0.5), R(3)), T(R(2), R(-4)), T(R(0), R(0.5)), T(R(-1), R(1))};
        }
    }
};

std::vector<AtomicCase> arithmetic_cases(Call call) {
    std::vector<AtomicCase> cases;
    for_each_dt([&]<ptl_datatype_t D>() {
        const Arith<D> v;
        for (ptl_op_t op : {PTL_SUM, PTL_MIN, PTL_MAX, PTL_PROD, PTL_DIFF})
            if (legal(op, D, call)) cases.push_back(make_case<D>(call, op, v.t, v.a));
    });
    return cases;
}

// §3.15.4, §3.15.5, Table 3-4: SUM, MIN, MAX, PROD and DIFF (target - initiator) on
// every legal datatype: 8 integer types, float, double, long double and the three complex types
// (SUM, PROD, DIFF only), four items per call.
TEST_F(Atomics, ArithmeticEveryType) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    const std::vector<AtomicCase> cases = arithmetic_cases(Call::Atomic);
    EXPECT_EQ(8u * 5 + 3 * 5 + 3 * 3, cases.size());
    run_cases(ni, cases, kPt);
}

// §3.15.6: the same through PtlFetchAtomic, which also returns the old values.
TEST_F(Atomics, ArithmeticEveryTypeFetch) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    run_cases(ni, arithmetic_cases(Call::FetchAtomic), kPt);
}

std::vector<AtomicCase> bitwise_logical_cases(Call call) {
    std::vector<AtomicCase> cases;
    for_each_dt([&]<ptl_datatype_t D>() {
        if constexpr (Dt<D>::cls == Cls::Int) {
            using T = typename Dt<D>::type;
            // 0x81 & 0x7E == 0 but both are true: LAND must give 1, LXOR 0.
            const std::vector<T> t = {pat<T>(0xF0), T(0), pat<T>(0x33), T(0), pat<T>(0x81)};
            const std::vector<T> a = {pat<T>(0xCC), pat<T>(0x5A), T(0), T(0), pat<T>(0x7E)};
            for (ptl_op_t op : {PTL_LOR, PTL_LAND, PTL_LXOR, PTL_BOR, PTL_BAND, PTL_BXOR})
                cases.push_back(make_case<D>(call, op, t, a));
        }
    });
    return cases;
}

// §3.15.4: LOR, LAND, LXOR (results 0 or 1) and BOR, BAND, BXOR on every integer type.
TEST_F(Atomics, BitwiseAndLogicalEveryIntegerType) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    const std::vector<AtomicCase> cases = bitwise_logical_cases(Call::Atomic);
    EXPECT_EQ(8u * 6, cases.size());
    run_cases(ni, cases, kPt);
}

// The same through PtlFetchAtomic.
TEST_F(Atomics, BitwiseAndLogicalEveryIntegerTypeFetch) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    run_cases(ni, bitwise_logical_cases(Call::FetchAtomic), kPt);
}

// §3.15.7: PtlSwap with PTL_SWAP on every datatype, several items per call (SWAP is not
// limited to one item): the target takes the initiator's values, the old ones come back.
TEST_F(Atomics, SwapEveryTypeReturnsOldValue) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<AtomicCase> cases;
    for_each_dt([&]<ptl_datatype_t D>() {
        const Arith<D> v;
        cases.push_back(make_case<D>(Call::Swap, PTL_SWAP, v.t, v.a));
    });
    EXPECT_EQ(14u, cases.size());
    run_cases(ni, cases, kPt);
}

// §3.15.4: every CSWAP variant swaps when "operand OP target" holds, for every integer
// and floating type (complex: CSWAP and CSWAP_NE only), with the operand below, equal to and above
// the target (complex: equal, or differing in one part), so each variant is seen with both
// outcomes; the old value comes back every time.
TEST_F(Atomics, ConditionalSwapsEveryVariant) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<AtomicCase> cases;
    size_t swaps = 0;
    for_each_dt([&]<ptl_datatype_t D>() {
        using T = typename Dt<D>::type;
        T t{}, init{};
        std::vector<T> operands;
        if constexpr (Dt<D>::cls == Cls::Int) {
            init = T(42);
            if constexpr (std::is_signed_v<T>) {
                t = T(-4);
                operands = {T(-6), T(-4), T(5)};
            } else { // the target has its top bit set: a signed compare would get it wrong
                const T max = std::numeric_limits<T>::max();
                t = T(max - 5);
                operands = {T(7), T(max - 5), max};
            }
        } else if constexpr (Dt<D>::cls == Cls::Float) {
            init = T(42);
            t = T(-2.5);
            operands = {T(-3.5), T(-2.5), T(1.25)};
        } else {
            using R = typename T::value_type;
            init = T(R(42), R(-7));
            t = T(R(1.5), R(-2));
            operands = {T(R(1.5), R(-2)), T(R(1.5), R(2)), T(R(-1.5), R(-2))};
        }
        for (ptl_op_t op : {PTL_CSWAP, PTL_CSWAP_NE, PTL_CSWAP_LE, PTL_CSWAP_LT, PTL_CSWAP_GE, PTL_CSWAP_GT}) {
            if (!legal(op, D, Call::Swap)) continue;
            for (const T &c : operands) {
                cases.push_back(make_case<D>(Call::Swap, op, {t}, {init}, c));
                swaps += !equal_items<T>(cases.back().want_target.data(), cases.back().tinit.data(), 1);
            }
        }
    });
    EXPECT_EQ(8u * 6 * 3 + 3 * 6 * 3 + 3 * 2 * 3, cases.size());
    // Both outcomes occur for every variant: 1 of 3 swaps for CSWAP, LT, GT; 2 of 3 for NE, LE, GE
    // (complex: CSWAP 1 of 3, NE 2 of 3).
    EXPECT_EQ(11u * 9 + 3 * 3, swaps);
    run_cases(ni, cases, kPt);
}

// §3.15.4: MSWAP replaces the target bits selected by the operand (mask) with the
// initiator's, on every integer type; an empty mask changes nothing, a full mask swaps all.
TEST_F(Atomics, MaskedSwapEveryIntegerType) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<AtomicCase> cases;
    for_each_dt([&]<ptl_datatype_t D>() {
        if constexpr (Dt<D>::cls == Cls::Int) {
            using T = typename Dt<D>::type;
            for (const uint8_t mask : std::initializer_list<uint8_t>{0x3C, 0x00, 0xFF, 0x81})
                cases.push_back(make_case<D>(Call::Swap, PTL_MSWAP, {pat<T>(0xF0)}, {pat<T>(0xAA)}, pat<T>(mask)));
        }
    });
    // Spot-check the model itself: (0xF0 & ~0x3C) | (0xAA & 0x3C) = 0xC0 | 0x28 = 0xE8.
    EXPECT_EQ(0xE8, apply_op<uint8_t>(PTL_MSWAP, 0xF0, 0xAA, 0x3C));
    run_cases(ni, cases, kPt);
}

// §3.15.6, §3.15.7, §2.6: a chain of fetching operations on one word, each waiting for
// the previous reply, returns every intermediate value; the same chain issued back to back (one
// initiator, same offset, below max_waw_ordered_size, so applied in order) returns the same
// values. Both ranks run both chains on each other at the same time.
TEST_F(Atomics, FetchChainReturnsEveryOldValue) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    if (rank() > 1) { // not involved, but in every barrier
        barrier();
        barrier();
        return;
    }
    struct Step {
        Call call;
        ptl_op_t op;
        int64_t init, operand, old;
    };
    // Start value 100.
    const Step steps[] = {
        {Call::FetchAtomic, PTL_SUM, 5, 0, 100},
        {Call::FetchAtomic, PTL_SUM, 5, 0, 105},
        {Call::FetchAtomic, PTL_PROD, 2, 0, 110},
        {Call::Swap, PTL_SWAP, 7, 0, 220},
        {Call::Swap, PTL_CSWAP, 9, 8, 7},
        {Call::Swap, PTL_CSWAP, 9, 7, 7},
        {Call::FetchAtomic, PTL_MIN, 3, 0, 9},
        {Call::Swap, PTL_MSWAP, 0xAB, 0xF0, 3},
        {Call::FetchAtomic, PTL_DIFF, 0x23, 0, 0xA3},
        {Call::FetchAtomic, PTL_MAX, -1, 0, 0x80},
        {Call::Swap, PTL_CSWAP_GT, 1000, 0x81, 0x80},
        {Call::Swap, PTL_CSWAP_LT, -3, 0x7F, 1000},
    };
    constexpr int64_t kFinal = -3;
    constexpr size_t kSteps = std::size(steps);
    // Target: word 0 for the waited chain, word 1 for the back-to-back one.
    Buf tbuf(16);
    tbuf.as<int64_t>()[0] = tbuf.as<int64_t>()[1] = 100;
    ptl_handle_eq_t teq = make_eq(ni);
    make_pt(ni, teq, 0, kPt);
    append_me(ni, kPt, me_desc(tbuf.data(), 16, PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE, 5),
              PTL_PRIORITY_LIST, tag(5), teq);
    Buf src(kSteps * 8), ops(kSteps * 8), got(2 * kSteps * 8, 0xEE);
    for (size_t i = 0; i < kSteps; ++i) {
        src.as<int64_t>()[i] = steps[i].init;
        ops.as<int64_t>()[i] = steps[i].operand;
    }
    ptl_handle_eq_t eq = make_eq(ni);
    ptl_handle_md_t put_md = bind_md(ni, src.data(), src.size(), eq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
    ptl_handle_md_t get_md = bind_md(ni, got.data(), got.size(), eq);
    barrier();
    auto issue = [&](size_t i, ptl_size_t word, ptl_size_t slot) {
        const Step &s = steps[i];
        if (s.call == Call::FetchAtomic)
            return PtlFetchAtomic(get_md, slot * 8, put_md, i * 8, 8, ni.id_of(peer()), kPt, 5, word * 8, tag(slot + 1),
                                  0, s.op, PTL_INT64_T);
        return PtlSwap(get_md, slot * 8, put_md, i * 8, 8, ni.id_of(peer()), kPt, 5, word * 8, tag(slot + 1), 0,
                       ops.at(i * 8), s.op, PTL_INT64_T);
    };
    for (size_t i = 0; i < kSteps; ++i) {
        ASSERT_PTL(issue(i, 0, i));
        check_init_event(wait_event(eq), {.type = PTL_EVENT_REPLY, .user_ptr = tag(i + 1), .mlength = 8});
        EXPECT_EQ(steps[i].old, got.as<int64_t>()[i])
            << "waited chain, step " << i << " (" << op_name(steps[i].op) << ")";
    }
    for (size_t i = 0; i < kSteps; ++i) ASSERT_PTL(issue(i, 1, kSteps + i));
    for (size_t i = 0; i < kSteps; ++i) EXPECT_EQ(Kind{PTL_EVENT_REPLY}, Kind{wait_event(eq).type});
    for (size_t i = 0; i < kSteps; ++i)
        EXPECT_EQ(steps[i].old, got.as<int64_t>()[kSteps + i])
            << "back-to-back chain, step " << i << " (" << op_name(steps[i].op) << ")";
    barrier(); // the peer's chains on our words are complete (it has all its replies)
    ASSERT_PTL(PtlAtomicSync());
    EXPECT_EQ(kFinal, tbuf.as<int64_t>()[0]);
    EXPECT_EQ(kFinal, tbuf.as<int64_t>()[1]);
}

// Multi-element atomics up to the limits (§3.15.5-3.15.7): PtlAtomic of exactly max_atomic_size
// bytes and PtlFetchAtomic / PtlSwap(SWAP) of exactly max_fetch_atomic_size bytes, on several
// datatypes, every item checked (and every fetched item).
TEST_F(Atomics, MultiElementUpToTheLimits) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    const size_t amax = ni.limits.max_atomic_size, fmax = ni.limits.max_fetch_atomic_size;
    ASSERT_GE(amax, 32u);
    ASSERT_GE(fmax, 32u);
    ASSERT_LE(amax, size_t{64} << 20) << "the test allocates several buffers of this size";
    ASSERT_LE(fmax, size_t{64} << 20);
    std::vector<AtomicCase> cases;
    {
        const size_t n = amax / 4;
        std::vector<int32_t> t(n), a(n);
        for (size_t i = 0; i < n; ++i) {
            t[i] = static_cast<int32_t>(i);
            a[i] = static_cast<int32_t>(2 * i + 1);
        }
        cases.push_back(make_case<PTL_INT32_T>(Call::Atomic, PTL_SUM, t, a));
    }
    {
        using C = std::complex<long double>;
        const size_t n = amax / sizeof(C);
        std::vector<C> t(n), a(n);
        for (size_t i = 0; i < n; ++i) {
            t[i] = C(static_cast<long double>(i), -0.5L * static_cast<long double>(i));
            a[i] = C(0.25L, static_cast<long double>(n - i));
        }
        cases.push_back(make_case<PTL_LONG_DOUBLE_COMPLEX>(Call::Atomic, PTL_DIFF, t, a));
    }
    {
        const size_t n = fmax / 8;
        std::vector<double> t(n), a(n);
        for (size_t i = 0; i < n; ++i) {
            t[i] = 0.5 * static_cast<double>(i);
            a[i] = 0.5 * static_cast<double>(n - i);
        }
        cases.push_back(make_case<PTL_DOUBLE>(Call::FetchAtomic, PTL_MAX, t, a));
    }
    {
        const size_t n = fmax / 8;
        std::vector<uint64_t> t(n), a(n);
        for (size_t i = 0; i < n; ++i) {
            t[i] = i * 0x9E3779B97F4A7C15ull;
            a[i] = ~i;
        }
        cases.push_back(make_case<PTL_UINT64_T>(Call::FetchAtomic, PTL_BXOR, t, a));
    }
    {
        const size_t n = fmax / 2;
        std::vector<uint16_t> t(n), a(n);
        for (size_t i = 0; i < n; ++i) {
            t[i] = static_cast<uint16_t>(i);
            a[i] = static_cast<uint16_t>(0xFFFF - i);
        }
        cases.push_back(make_case<PTL_UINT16_T>(Call::Swap, PTL_SWAP, t, a));
    }
    run_cases(ni, cases, kPt);
}

// Table 3-4 on a non-matching NI (atomics through LEs): one call of every kind.
TEST_F(Atomics, NonMatchingInterface) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kNonMatchingPhysical);
    std::vector<AtomicCase> cases;
    const Arith<PTL_DOUBLE> d;
    const Arith<PTL_INT16_T> s;
    cases.push_back(make_case<PTL_DOUBLE>(Call::Atomic, PTL_PROD, d.t, d.a));
    cases.push_back(make_case<PTL_INT16_T>(Call::FetchAtomic, PTL_MIN, s.t, s.a));
    cases.push_back(make_case<PTL_UINT32_T>(Call::Swap, PTL_CSWAP_GE, {7}, {8}, 9));
    run_cases(ni, cases, kPt);
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
