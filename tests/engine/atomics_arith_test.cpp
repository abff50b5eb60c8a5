// SPDX-License-Identifier: BSD-3-Clause
// The engine's atomic arithmetic on its own (engine/atomics.cpp): integer SUM, PROD and DIFF wrap
// modulo 2^N for every width and signedness, as a NIC's do, instead of overflowing (which UBSan
// reported for PTL_SUM on PTL_INT32_T through the UPC collectives).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/atomics.hpp"

namespace {

template <class T> T apply_one(ptl_op_t op, ptl_datatype_t type, T target, T operand) {
    std::byte t[sizeof(T)], a[sizeof(T)];
    std::memcpy(t, &target, sizeof t);
    std::memcpy(a, &operand, sizeof a);
    portico::engine::atomics::apply(op, type, t, a, nullptr, sizeof t);
    T r;
    std::memcpy(&r, t, sizeof r);
    return r;
}

TEST(AtomicArithmetic, IntegerSumProdAndDiffWrapModuloTwoToTheN) {
    EXPECT_EQ(apply_one<int32_t>(PTL_SUM, PTL_INT32_T, std::numeric_limits<int32_t>::max(), 1),
              std::numeric_limits<int32_t>::min());
    EXPECT_EQ(apply_one<int32_t>(PTL_SUM, PTL_INT32_T, -1847468141, -491483009), 1956016146);
    EXPECT_EQ(apply_one<int64_t>(PTL_DIFF, PTL_INT64_T, std::numeric_limits<int64_t>::min(), 1),
              std::numeric_limits<int64_t>::max());
    EXPECT_EQ(apply_one<int64_t>(PTL_PROD, PTL_INT64_T, int64_t{1} << 62, 4), 0);
    EXPECT_EQ(apply_one<uint16_t>(PTL_PROD, PTL_UINT16_T, 65535, 65535), 1);
    EXPECT_EQ(apply_one<int8_t>(PTL_SUM, PTL_INT8_T, 127, 1), -128);
    EXPECT_EQ(apply_one<uint64_t>(PTL_SUM, PTL_UINT64_T, ~uint64_t{0}, 2), 1u);
    EXPECT_DOUBLE_EQ(apply_one<double>(PTL_SUM, PTL_DOUBLE, 1.5, 2.25), 3.75);
}

} // namespace
