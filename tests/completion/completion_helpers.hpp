// SPDX-License-Identifier: BSD-3-Clause
// Helpers of the completion conformance tests (atomics, triggered operations, bundles), on top of
// the conformance helpers (tests/conformance/ptl_helpers.hpp, used as they are).
//
// - CompletionTest: the PtlTest fixture, and desired limits that ask for everything
//   (generous_limits, for open_ni).
// - Datatypes: the C++ type of every ptl_datatype_t (complex types as std::complex<T>, which has
//   the layout of C's T _Complex), its class (integer / floating / complex), names, and an
//   independent reference model of every operation (apply_op).
// - Table 3-4 as the tests understand it (legal()).
// - AtomicCase / run_cases(): a batch of atomic calls between two ranks, in both directions at
//   once, with every initiator and target event checked and the resulting target values and
//   fetched values compared item by item (by value: long double has padding bytes).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "ptl_helpers.hpp"

namespace cpltest {

using namespace ptltest;

// ---- fixture ----------------------------------------------------------------------------------
class CompletionTest : public PtlTest {};

// Desired limits that ask for as much as the implementation has of everything.
ptl_ni_limits_t generous_limits();

// ---- memory ------------------------------------------------------------------------------------
// A zero-filled (or `fill`-filled), 64-byte aligned buffer: atomics must be aligned to their
// datatype at the target, and long double complex is 32 bytes.
class Buf {
public:
    Buf() = default;
    explicit Buf(size_t n, uint8_t fill = 0);
    std::byte *data() { return p_.get(); }
    const std::byte *data() const { return p_.get(); }
    size_t size() const { return n_; }
    template <class T> T *as(size_t byte_offset = 0) { return reinterpret_cast<T *>(p_.get() + byte_offset); }
    std::byte *at(size_t byte_offset) { return p_.get() + byte_offset; }

private:
    struct Free {
        void operator()(std::byte *p) const { std::free(p); }
    };
    std::unique_ptr<std::byte[], Free> p_;
    size_t n_ = 0;
};

inline size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// ---- datatypes ---------------------------------------------------------------------------------
enum class Cls { Int, Float, Complex };

template <ptl_datatype_t D> struct Dt;
#define CPLTEST_DT(D, T, C)                                                                                            \
    template <> struct Dt<D> {                                                                                         \
        using type = T;                                                                                                \
        static constexpr Cls cls = C;                                                                                  \
    }
CPLTEST_DT(PTL_INT8_T, int8_t, Cls::Int);
CPLTEST_DT(PTL_UINT8_T, uint8_t, Cls::Int);
CPLTEST_DT(PTL_INT16_T, int16_t, Cls::Int);
CPLTEST_DT(PTL_UINT16_T, uint16_t, Cls::Int);
CPLTEST_DT(PTL_INT32_T, int32_t, Cls::Int);
CPLTEST_DT(PTL_UINT32_T, uint32_t, Cls::Int);
CPLTEST_DT(PTL_INT64_T, int64_t, Cls::Int);
CPLTEST_DT(PTL_UINT64_T, uint64_t, Cls::Int);
CPLTEST_DT(PTL_FLOAT, float, Cls::Float);
CPLTEST_DT(PTL_FLOAT_COMPLEX, std::complex<float>, Cls::Complex);
CPLTEST_DT(PTL_DOUBLE, double, Cls::Float);
CPLTEST_DT(PTL_DOUBLE_COMPLEX, std::complex<double>, Cls::Complex);
CPLTEST_DT(PTL_LONG_DOUBLE, long double, Cls::Float);
CPLTEST_DT(PTL_LONG_DOUBLE_COMPLEX, std::complex<long double>, Cls::Complex);
#undef CPLTEST_DT

// Calls f.template operator()<D>() for every datatype D, in enum order.
template <class F> void for_each_dt(F &&f) {
    f.template operator()<PTL_INT8_T>();
    f.template operator()<PTL_UINT8_T>();
    f.template operator()<PTL_INT16_T>();
    f.template operator()<PTL_UINT16_T>();
    f.template operator()<PTL_INT32_T>();
    f.template operator()<PTL_UINT32_T>();
    f.template operator()<PTL_INT64_T>();
    f.template operator()<PTL_UINT64_T>();
    f.template operator()<PTL_FLOAT>();
    f.template operator()<PTL_FLOAT_COMPLEX>();
    f.template operator()<PTL_DOUBLE>();
    f.template operator()<PTL_DOUBLE_COMPLEX>();
    f.template operator()<PTL_LONG_DOUBLE>();
    f.template operator()<PTL_LONG_DOUBLE_COMPLEX>();
}

size_t dt_size(ptl_datatype_t d); // sizeof the C type; 0 for an invalid datatype
Cls dt_cls(ptl_datatype_t d);
const char *dt_name(int d);
const char *op_name(int op);

// ---- Table 3-4 ---------------------------------------------------------------------------------
enum class Call { Atomic, FetchAtomic, Swap };
const char *call_name(Call c);
// Is (op, datatype, call) a legal combination (Table 3-4)?
bool legal(ptl_op_t op, ptl_datatype_t d, Call call);
bool takes_operand(ptl_op_t op); // CSWAP family and MSWAP: one item, with an operand

// ---- values ------------------------------------------------------------------------------------
// An integer with every byte equal to b (modular conversion for signed types).
template <class T> T pat(uint8_t b) { return static_cast<T>(static_cast<uint64_t>(b) * 0x0101010101010101ull); }

template <class T> std::string show(const T &v) {
    std::ostringstream os;
    if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_signed_v<T>)
            os << static_cast<int64_t>(v);
        else
            os << static_cast<uint64_t>(v) << " (0x" << std::hex << static_cast<uint64_t>(v) << ")";
    } else if constexpr (std::is_floating_point_v<T>) {
        os.precision(std::numeric_limits<T>::max_digits10);
        os << v;
    } else {
        os << "(" << show(v.real()) << ", " << show(v.imag()) << ")";
    }
    return os.str();
}

// The reference model: the new target value of one item for `op` with target value t, initiator
// value a and operand c (§3.15.4; DIFF is target - initiator; CSWAP* swap when "c OP t" holds;
// MSWAP is (t & ~c) | (a & c)). Only legal combinations are instantiated.
template <class T> T apply_op(ptl_op_t op, const T &t, const T &a, const T &c) {
    switch (op) {
    case PTL_SUM: return static_cast<T>(t + a);
    case PTL_PROD: return static_cast<T>(t * a);
    case PTL_DIFF: return static_cast<T>(t - a);
    case PTL_SWAP: return a;
    case PTL_CSWAP: return c == t ? a : t;
    case PTL_CSWAP_NE: return c != t ? a : t;
    default: break;
    }
    if constexpr (!std::is_class_v<T>) { // integers and real floating types
        switch (op) {
        case PTL_MIN: return a < t ? a : t;
        case PTL_MAX: return a > t ? a : t;
        case PTL_CSWAP_LE: return c <= t ? a : t;
        case PTL_CSWAP_LT: return c < t ? a : t;
        case PTL_CSWAP_GE: return c >= t ? a : t;
        case PTL_CSWAP_GT: return c > t ? a : t;
        default: break;
        }
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
        case PTL_LOR: return static_cast<T>((t != 0) || (a != 0));
        case PTL_LAND: return static_cast<T>((t != 0) && (a != 0));
        case PTL_LXOR: return static_cast<T>((t != 0) != (a != 0));
        case PTL_BOR: return static_cast<T>(t | a);
        case PTL_BAND: return static_cast<T>(t & a);
        case PTL_BXOR: return static_cast<T>(t ^ a);
        case PTL_MSWAP: return static_cast<T>((t & ~c) | (a & c));
        default: break;
        }
    }
    ADD_FAILURE() << "apply_op: no model for " << op_name(op);
    return t;
}

// ---- batches of atomic calls ---------------------------------------------------------------------
struct AtomicCase {
    std::string name;
    Call call = Call::Atomic;
    ptl_op_t op = PTL_SUM;
    ptl_datatype_t dt = PTL_INT8_T;
    size_t item = 0, n = 0;                         // item size and number of items
    std::vector<std::byte> tinit, init, operand;    // operand: one item, PtlSwap only
    std::vector<std::byte> want_target, want_fetch; // want_fetch: fetch and swap calls only
    bool (*equal)(const void *, const void *, size_t n) = nullptr;
    std::string (*show_items)(const void *, size_t n) = nullptr;
    size_t (*first_difference)(const void *, const void *, size_t n) = nullptr;
    size_t bytes() const { return item * n; }
};

template <class T> bool equal_items(const void *a, const void *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        T x, y;
        std::memcpy(static_cast<void *>(&x), static_cast<const std::byte *>(a) + i * sizeof(T), sizeof(T));
        std::memcpy(static_cast<void *>(&y), static_cast<const std::byte *>(b) + i * sizeof(T), sizeof(T));
        if (!(x == y)) return false;
    }
    return true;
}

// At most the first 8 items (long arrays: see first_difference()).
template <class T> std::string show_items(const void *p, size_t n) {
    std::string s = "{";
    for (size_t i = 0; i < n; ++i) {
        if (i == 8) {
            s += ", ... (" + std::to_string(n) + " items)";
            break;
        }
        T x;
        std::memcpy(static_cast<void *>(&x), static_cast<const std::byte *>(p) + i * sizeof(T), sizeof(T));
        s += (i ? ", " : "") + show(x);
    }
    return s + "}";
}

// Index of the first item that differs, or n.
template <class T> size_t first_difference(const void *a, const void *b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!equal_items<T>(static_cast<const std::byte *>(a) + i * sizeof(T),
                            static_cast<const std::byte *>(b) + i * sizeof(T), 1))
            return i;
    return n;
}

template <class T> std::vector<std::byte> to_bytes(const std::vector<T> &v) {
    std::vector<std::byte> b(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(b.data(), static_cast<const void *>(v.data()), b.size());
    return b;
}

// One call of `call` with `op` on items whose target values are t and initiator values a (and
// operand c for PtlSwap's CSWAP family and MSWAP); the expected results come from apply_op.
template <ptl_datatype_t D>
AtomicCase make_case(Call call, ptl_op_t op, const std::vector<typename Dt<D>::type> &t,
                     const std::vector<typename Dt<D>::type> &a,
                     const typename Dt<D>::type &c = typename Dt<D>::type{}) {
    using T = typename Dt<D>::type;
    AtomicCase k;
    k.call = call;
    k.op = op;
    k.dt = D;
    k.item = sizeof(T);
    k.n = t.size();
    k.name = std::string(call_name(call)) + " " + op_name(op) + " " + dt_name(D);
    std::vector<T> want;
    for (size_t i = 0; i < t.size(); ++i) want.push_back(apply_op<T>(op, t[i], a.at(i), c));
    k.tinit = to_bytes(t);
    k.init = to_bytes(a);
    if (call == Call::Swap && takes_operand(op)) {
        k.operand = to_bytes(std::vector<T>{c});
        k.name += " operand " + show(c);
    }
    k.want_target = to_bytes(want);
    if (call != Call::Atomic) k.want_fetch = k.tinit;
    k.equal = &equal_items<T>;
    k.show_items = &show_items<T>;
    k.first_difference = &first_difference<T>;
    return k;
}

// Runs `cases` between ranks 0 and 1 in both directions at once: each of the two ranks is the
// target of every case (an ME over a buffer laid out with every case's initial target values)
// and issues every case to its peer. Checks every SEND/ACK/REPLY (kind, MD, mlength, offset,
// list), every target ATOMIC/FETCH_ATOMIC event (all fields incl. atomic_operation/atomic_type),
// the target values after PtlAtomicSync and the fetched values. Ranks >= 2 take no part.
void run_cases(const Ni &ni, const std::vector<AtomicCase> &cases, ptl_pt_index_t pt);

// Issues one case (already laid out) with the given MDs and offsets; returns the call's rc.
int issue_case(const AtomicCase &k, const Ni &ni, int target, ptl_pt_index_t pt, ptl_match_bits_t bits,
               ptl_handle_md_t put_md, ptl_size_t put_off, ptl_handle_md_t get_md, ptl_size_t get_off, ptl_size_t roff,
               void *user, ptl_hdr_data_t hdr, const void *operand, ptl_ack_req_t ack = PTL_ACK_REQ);

} // namespace cpltest
