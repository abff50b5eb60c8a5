// SPDX-License-Identifier: BSD-3-Clause
#include "engine/atomics.hpp"

#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace portico::engine::atomics {

namespace {

template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};

enum class Kind { Integer, Real, Complex };

Kind kind_of(ptl_datatype_t t) {
    switch (t) {
    case PTL_FLOAT:
    case PTL_DOUBLE:
    case PTL_LONG_DOUBLE: return Kind::Real;
    case PTL_FLOAT_COMPLEX:
    case PTL_DOUBLE_COMPLEX:
    case PTL_LONG_DOUBLE_COMPLEX: return Kind::Complex;
    default: return Kind::Integer;
    }
}

template <class T> T load(const std::byte *p) {
    T v;
    std::memcpy(&v, p, sizeof v); // buffers need not be aligned to the type
    return v;
}

// Integer SUM, PROD and DIFF wrap modulo 2^N, as the hardware's do: computed in 64-bit unsigned
// arithmetic (signed overflow, and int promotion of small unsigned types, would be undefined).
template <class T, class F> T wrapping(T x, T y, F f) {
    if constexpr (std::is_integral_v<T>)
        return static_cast<T>(f(static_cast<uint64_t>(x), static_cast<uint64_t>(y)));
    else
        return static_cast<T>(f(x, y));
}

template <class T>
void apply_typed(ptl_op_t op, std::byte *target, const std::byte *init, const std::byte *operand, size_t count) {
    constexpr bool integer = std::is_integral_v<T>;
    constexpr bool complex = is_complex<T>::value;
    for (size_t i = 0; i < count; ++i) {
        std::byte *tp = target + i * sizeof(T);
        const T t = load<T>(tp);
        const T a = load<T>(init + i * sizeof(T));
        T r = t;
        switch (op) {
        case PTL_SUM: r = wrapping(t, a, [](auto x, auto y) { return x + y; }); break;
        case PTL_PROD: r = wrapping(t, a, [](auto x, auto y) { return x * y; }); break;
        case PTL_DIFF: r = wrapping(t, a, [](auto x, auto y) { return x - y; }); break; // target minus initiator
        case PTL_SWAP: r = a; break;
        case PTL_CSWAP: r = load<T>(operand) == t ? a : t; break;
        case PTL_CSWAP_NE: r = load<T>(operand) != t ? a : t; break;
        default:
            if constexpr (!complex) {
                const T o = operand ? load<T>(operand) : T{};
                switch (op) {
                case PTL_MIN: r = a < t ? a : t; break;
                case PTL_MAX: r = a > t ? a : t; break;
                // The comparisons read "operand op target" (§3.15.4).
                case PTL_CSWAP_LE: r = o <= t ? a : t; break;
                case PTL_CSWAP_LT: r = o < t ? a : t; break;
                case PTL_CSWAP_GE: r = o >= t ? a : t; break;
                case PTL_CSWAP_GT: r = o > t ? a : t; break;
                default:
                    if constexpr (integer) {
                        switch (op) {
                        case PTL_LOR: r = static_cast<T>((t != 0) || (a != 0)); break;
                        case PTL_LAND: r = static_cast<T>((t != 0) && (a != 0)); break;
                        case PTL_LXOR: r = static_cast<T>((t != 0) != (a != 0)); break;
                        case PTL_BOR: r = static_cast<T>(t | a); break;
                        case PTL_BAND: r = static_cast<T>(t & a); break;
                        case PTL_BXOR: r = static_cast<T>(t ^ a); break;
                        case PTL_MSWAP: r = static_cast<T>((t & ~o) | (a & o)); break;
                        default: break;
                        }
                    }
                }
            }
        }
        std::memcpy(tp, &r, sizeof r);
    }
}

template <class T> void dispatch(ptl_op_t op, std::byte *t, const std::byte *a, const std::byte *o, size_t bytes) {
    apply_typed<T>(op, t, a, o, bytes / sizeof(T));
}

} // namespace

size_t item_size(ptl_datatype_t type) {
    switch (type) {
    case PTL_INT8_T:
    case PTL_UINT8_T: return 1;
    case PTL_INT16_T:
    case PTL_UINT16_T: return 2;
    case PTL_INT32_T:
    case PTL_UINT32_T: return 4;
    case PTL_INT64_T:
    case PTL_UINT64_T: return 8;
    case PTL_FLOAT: return sizeof(float);
    case PTL_FLOAT_COMPLEX: return sizeof(std::complex<float>);
    case PTL_DOUBLE: return sizeof(double);
    case PTL_DOUBLE_COMPLEX: return sizeof(std::complex<double>);
    case PTL_LONG_DOUBLE: return sizeof(long double);
    case PTL_LONG_DOUBLE_COMPLEX: return sizeof(std::complex<long double>);
    default: return 0;
    }
}

bool takes_operand(ptl_op_t op) { return op >= PTL_CSWAP && op <= PTL_MSWAP; }

bool legal(ptl_op_t op, ptl_datatype_t type, Call call) {
    if (item_size(type) == 0) return false;
    const Kind k = kind_of(type);
    const bool swap_op = op >= PTL_SWAP && op <= PTL_MSWAP;
    if (swap_op != (call == Call::Swap)) return false; // swaps only through PtlSwap, and nothing else there
    switch (op) {
    case PTL_MIN:
    case PTL_MAX: return k != Kind::Complex;
    case PTL_SUM:
    case PTL_PROD:
    case PTL_DIFF: return true;
    case PTL_LOR:
    case PTL_LAND:
    case PTL_LXOR:
    case PTL_BOR:
    case PTL_BAND:
    case PTL_BXOR: return k == Kind::Integer;
    case PTL_SWAP:
    case PTL_CSWAP:
    case PTL_CSWAP_NE: return true;
    case PTL_CSWAP_LE:
    case PTL_CSWAP_LT:
    case PTL_CSWAP_GE:
    case PTL_CSWAP_GT: return k != Kind::Complex;
    case PTL_MSWAP: return k == Kind::Integer;
    default: return false;
    }
}

void apply(ptl_op_t op, ptl_datatype_t type, std::byte *t, const std::byte *a, const std::byte *o, size_t bytes) {
    switch (type) {
    case PTL_INT8_T: dispatch<int8_t>(op, t, a, o, bytes); break;
    case PTL_UINT8_T: dispatch<uint8_t>(op, t, a, o, bytes); break;
    case PTL_INT16_T: dispatch<int16_t>(op, t, a, o, bytes); break;
    case PTL_UINT16_T: dispatch<uint16_t>(op, t, a, o, bytes); break;
    case PTL_INT32_T: dispatch<int32_t>(op, t, a, o, bytes); break;
    case PTL_UINT32_T: dispatch<uint32_t>(op, t, a, o, bytes); break;
    case PTL_INT64_T: dispatch<int64_t>(op, t, a, o, bytes); break;
    case PTL_UINT64_T: dispatch<uint64_t>(op, t, a, o, bytes); break;
    case PTL_FLOAT: dispatch<float>(op, t, a, o, bytes); break;
    case PTL_FLOAT_COMPLEX: dispatch<std::complex<float>>(op, t, a, o, bytes); break;
    case PTL_DOUBLE: dispatch<double>(op, t, a, o, bytes); break;
    case PTL_DOUBLE_COMPLEX: dispatch<std::complex<double>>(op, t, a, o, bytes); break;
    case PTL_LONG_DOUBLE: dispatch<long double>(op, t, a, o, bytes); break;
    case PTL_LONG_DOUBLE_COMPLEX: dispatch<std::complex<long double>>(op, t, a, o, bytes); break;
    default: break;
    }
}

} // namespace portico::engine::atomics
