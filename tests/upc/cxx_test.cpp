// SPDX-License-Identifier: BSD-3-Clause
// Conformance of the C++ front end (portico/upc.hpp) on every thread of a job: pointer-to-shared
// arithmetic against an independent model of the block-cyclic layout, shared_array element access
// from every thread with each block size and access width, strict and relaxed accesses, forall
// with each affinity kind and nested, split-phase and named barriers, locks through the standard
// lock types, the allocation helpers, bulk transfers, and every collective wrapper against a
// serial oracle. Each section ends at a barrier; a failed check ends the job (upc_test.h).
#include <portico/upc.hpp>

#include "upc_test.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <thread>
#include <vector>

namespace upc = portico::upc;

namespace {

int T = 1, ME = 0;

// ---- compile-time properties -----------------------------------------------------------------------
static_assert(std::random_access_iterator<upc::global_ptr<int>>);
static_assert(std::random_access_iterator<upc::global_ptr<const double, 3>>);
static_assert(std::indirectly_writable<upc::global_ptr<int, 4>, int>);
static_assert(!std::indirectly_writable<upc::global_ptr<const int, 4>, int>);
static_assert(std::sortable<upc::global_ptr<int, 2>>);
static_assert(std::ranges::random_access_range<upc::shared_array<long, 5>>);
static_assert(std::is_trivially_copyable_v<upc::global_ptr<int, 7>> && sizeof(upc::global_ptr<int, 7>) == 8);
static_assert(std::is_trivially_copyable_v<upc::lock_ptr>);
static_assert(std::is_convertible_v<upc::global_ptr<int, 3>, upc::global_ptr<const int, 3>>);
static_assert(!std::is_convertible_v<upc::global_ptr<const int, 3>, upc::global_ptr<int, 3>>);
static_assert(std::is_convertible_v<upc::global_ptr<int, 3>, upc::global_ptr<int, 3, upc::strict>>);
static_assert(!std::is_convertible_v<upc::global_ptr<int, 3, upc::strict>, upc::global_ptr<int, 3>>);
static_assert(std::is_constructible_v<upc::global_ptr<int, 3>, upc::global_ptr<int, 3, upc::strict>>);
static_assert(!std::is_convertible_v<upc::global_ptr<int, 3>, upc::global_ptr<int, 1>>);
static_assert(std::is_constructible_v<upc::global_ptr<int, 1>, upc::global_ptr<int, 3>>);
static_assert(std::is_same_v<upc::detail::c_type<long long>, long> &&
              std::is_same_v<upc::detail::c_type<char>, signed char>);

// Runs f.template operator()<B>() with B == THREADS, for the thread counts the tests use.
template <class F> bool with_threads_block(F &&f) {
    switch (T) {
    case 1: f.template operator()<1>(); return true;
    case 2: f.template operator()<2>(); return true;
    case 3: f.template operator()<3>(); return true;
    case 4: f.template operator()<4>(); return true;
    case 8: f.template operator()<8>(); return true;
    default: return false;
    }
}

void spin_pause() { std::this_thread::yield(); } // a busy wait shares the core with the thread it waits for

// ---- 1. pointer arithmetic ---------------------------------------------------------------------------

struct Twelve { // an element size that is not a power of two
    int v[3];
};

// The layout of `shared [B] E a[n]` from a base on thread 0, phase 0: an independent model.
struct Where {
    int thread;
    std::size_t phase;
    uint64_t vaddr;
};
template <class E, std::size_t B> Where model(uint64_t base, std::size_t k) {
    if constexpr (B == 0) {
        return {0, 0, base + k * sizeof(E)};
    } else {
        const std::size_t t = static_cast<std::size_t>(T);
        return {static_cast<int>(k / B % t), k % B, base + (k / (B * t) * B + k % B) * sizeof(E)};
    }
}

template <class E, std::size_t B> void arithmetic() {
    const std::size_t n = B == 0 ? 41 : 5 * B * static_cast<std::size_t>(T) + B / 2 + 3;
    upc::global_ptr<E, B> base = upc::all_alloc<E, B>(n);
    CHECK(!base.is_null());
    CHECK_EQ(upc::threadof(base), 0);
    CHECK_EQ(upc::phaseof(base), 0);
    const uint64_t v0 = upc_pts_vaddr(base.raw());
    CHECK_EQ(upc::addrfield(base), v0);

    std::vector<upc::global_ptr<E, B>> at(n + 1);
    for (std::size_t k = 0; k <= n; k++) {
        const auto p = base + static_cast<std::ptrdiff_t>(k);
        at[k] = p;
        const Where w = model<E, B>(v0, k);
        CHECK_EQ(p.thread(), w.thread);
        CHECK_EQ(p.phase(), w.phase);
        CHECK_EQ(upc_pts_vaddr(p.raw()), w.vaddr);
        CHECK_EQ(upc_threadof(p.raw()), w.thread);
        CHECK_EQ(upc_phaseof(p.raw()), w.phase);
        CHECK(p.raw().bits ==
              upc_pts_add(base.raw(), static_cast<int64_t>(k), sizeof(E), B, static_cast<unsigned>(T)).bits);
        CHECK_EQ(p - base, k);
        CHECK((&base[static_cast<std::ptrdiff_t>(k)]) == p);
        CHECK(upc::resetphase(p).phase() == 0 && upc::resetphase(p).thread() == w.thread);
    }
    // Walking with ++ and -- visits the same pointers.
    auto p = base;
    for (std::size_t k = 0; k <= n; k++, ++p) CHECK(p == at[k]);
    for (std::size_t k = n + 1; k-- > 0;) CHECK(--p == at[k]);
    p = at[n];
    for (std::size_t k = n; k > 0; k--) CHECK(p-- == at[k]);
    CHECK(p == base);
    // Every step, forwards and backwards (negative n crosses threads and courses backwards), and
    // every difference, between every pair of a sample of positions.
    for (std::size_t j = 0; j <= n; j += (j % 3) + 1)
        for (std::size_t k = 0; k <= n; k++) {
            const auto d = static_cast<std::ptrdiff_t>(k) - static_cast<std::ptrdiff_t>(j);
            CHECK(at[j] + d == at[k]);
            CHECK(at[k] - d == at[j]);
            CHECK(d + at[j] == at[k]);
            auto q = at[j];
            q += d;
            CHECK(q == at[k]);
            q -= d;
            CHECK(q == at[j]);
            CHECK_EQ(at[k] - at[j], d);
            CHECK((at[j] < at[k]) == (j < k));
            CHECK((at[j] <=> at[k]) == (j <=> k));
            CHECK((&at[j][d]) == at[k]);
        }
    // Casts: another block size keeps thread and address with phase 0 (UPC §6.4.3).
    for (std::size_t k = 0; k <= n; k++) {
        upc::global_ptr<E, 1> c1(at[k]);
        upc::global_ptr<E, upc::indefinite> c0(at[k]);
        CHECK_EQ(c1.thread(), at[k].thread());
        CHECK_EQ(upc_pts_vaddr(c1.raw()), upc_pts_vaddr(at[k].raw()));
        CHECK_EQ(c1.phase() + c0.phase(), 0);
        upc::global_ptr<const E, B, upc::strict> cs = at[k]; // implicit: adds const and strict
        CHECK(cs.raw().bits == at[k].raw().bits);
        if (at[k].thread() == ME) CHECK(at[k].local() != nullptr);
    }
    using ptr = upc::global_ptr<E, B>;
    CHECK(ptr() == nullptr);
    CHECK(!ptr());
    upc::barrier();
    upc::all_free(base);
}

void pointer_arithmetic() {
    TEST_SECTION("pointer arithmetic: blocked, cyclic, indefinite, B == THREADS; steps, differences, casts");
    arithmetic<int, 1>();
    arithmetic<int, 3>();
    arithmetic<Twelve, 5>();
    arithmetic<double, upc::indefinite>();
    arithmetic<Twelve, upc::indefinite>();
    with_threads_block([]<std::size_t B>() { arithmetic<long, B>(); });
    // A thread's own allocation: indefinite, with affinity to it.
    auto mine = upc::local_alloc<Twelve>(9);
    CHECK_EQ(upc::threadof(mine), ME);
    CHECK((mine + 8).thread() == ME && (mine + 8) - mine == 8);
    CHECK(reinterpret_cast<char *>((mine + 3).local()) - reinterpret_cast<char *>(mine.local()) == 3 * 12);
    upc::free(mine);
    upc::barrier();
}

// ---- 2. shared_array element access --------------------------------------------------------------

struct Packed { // no padding, not on an 8-byte boundary: the block entry points
    int a;
    short b;
    char c[2];
    bool operator==(const Packed &) const = default;
};
struct Padded { // padding inside: only the value bytes compare
    char c;
    double d;
    bool operator==(const Padded &o) const { return c == o.c && d == o.d; }
};
__extension__ typedef unsigned __int128 u128;

template <class E> E make(std::size_t i, int salt) {
    const auto v = static_cast<long>(i) * 7 + salt;
    if constexpr (std::is_same_v<E, Packed>)
        return Packed{static_cast<int>(v), static_cast<short>(v % 300), {'p', static_cast<char>(v % 100)}};
    else if constexpr (std::is_same_v<E, Padded>)
        return Padded{static_cast<char>(v % 90), static_cast<double>(v) / 4};
    else if constexpr (std::is_same_v<E, bool>)
        return (v % 3) == 1;
    else if constexpr (std::is_same_v<E, u128>)
        return (static_cast<u128>(v) << 70) | static_cast<u128>(v);
    else
        return static_cast<E>(v % 100 + (std::is_signed_v<E> ? -50 : 0));
}

// A failed element check names the layout, the element and both values' bytes, then ends the job.
template <class E, std::size_t B> void element_check(const E &got, const E &want, std::size_t i, int line) {
    if (got == want) return;
    auto hex = [](const E &v) {
        std::string out;
        char byte[4];
        for (std::size_t k = 0; k < sizeof(E); k++) {
            std::snprintf(byte, sizeof byte, "%02x", reinterpret_cast<const unsigned char *>(&v)[k]);
            out += byte;
        }
        return out;
    };
    std::size_t owner = 0;
    if constexpr (B != 0) owner = i / B % static_cast<std::size_t>(T);
    std::fprintf(stderr,
                 "thread %d: cxx_test.cpp:%d: element %zu (on thread %zu) of a shared [%zu] array of %zu-byte elements "
                 "holds %s, expected %s\n",
                 ME, line, i, owner, B, sizeof(E), hex(got).c_str(), hex(want).c_str());
    CHECK(false);
}

template <class E, std::size_t B> void array_access() {
    const std::size_t t = static_cast<std::size_t>(T), me = static_cast<std::size_t>(ME);
    const std::size_t n = B == 0 ? 37 : 4 * B * t + B / 2 + 1; // a short last block
    upc::shared_array<E, B> a(n);
    CHECK_EQ(a.size(), n);
    for (std::size_t i = 0; i < n; i++) element_check<E, B>(a[i].get(), E{}, i, __LINE__); // value-initialised
    upc::barrier();

    // Thread (7i + 3) % T writes element i: mostly another thread's.
    for (std::size_t i = 0; i < n; i++)
        if ((7 * i + 3) % t == me) a[i] = make<E>(i, 1);
    upc::barrier();
    for (std::size_t i = 0; i < n; i++) element_check<E, B>(a[i].get(), make<E>(i, 1), i, __LINE__);
    upc::barrier(); // before the owners overwrite them below

    // The elements with affinity to this thread are its local part, in order.
    std::size_t total = 0;
    for (int th = 0; th < T; th++) {
        total += a.local_size(th);
        CHECK_EQ(a.local_size(th), (upc::affinity_size<E, B>(n, th)));
    }
    CHECK_EQ(total, n);
    const std::span<E> mine = a.local_part();
    CHECK_EQ(mine.size(), a.local_size());
    std::size_t seen = 0;
    for (std::size_t i = 0; i < n; i++) {
        const auto p = &a[i];
        if (p.thread() != ME) continue;
        const std::size_t local = B == 0 ? i : i / (B * t) * B + i % B;
        CHECK(local < mine.size());
        CHECK(p.local() == &mine[local]);
        element_check<E, B>(mine[local], make<E>(i, 1), i, __LINE__);
        mine[local] = make<E>(i, 2); // written locally, read through the runtime below
        ++seen;
    }
    CHECK_EQ(seen, mine.size());
    upc::barrier();
    for (std::size_t i = n; i-- > 0;) element_check<E, B>(a[i].get(), make<E>(i, 2), i, __LINE__);
    upc::barrier();

    // Value copies between elements of another layout, and through the iterators.
    upc::shared_array<E, 2> b(n);
    upc::forall(
        std::size_t{0}, n, [&](std::size_t i) { return &b[i]; }, [&](std::size_t i) { b[i] = a[n - 1 - i]; });
    upc::barrier();
    std::size_t k = 0;
    for (E v : b) {
        element_check<E, 2>(v, make<E>(n - 1 - k, 2), k, __LINE__);
        ++k;
    }
    CHECK_EQ(k, n);
    CHECK_EQ(b.end() - b.begin(), n);
    upc::barrier();
}

template <class E> void array_access_all_blocks() {
    array_access<E, 1>();
    array_access<E, 3>();
    array_access<E, upc::indefinite>();
    with_threads_block([]<std::size_t B>() { array_access<E, B>(); });
}

void shared_arrays() {
    TEST_SECTION("shared_array: every thread reads and writes, block sizes 1, 3, indefinite, THREADS");
    array_access_all_blocks<int>();
    array_access_all_blocks<double>();
    array_access_all_blocks<Packed>();
    array_access<char, 3>();
    array_access<bool, 1>();
    array_access<std::uint16_t, 3>();
    array_access<std::int64_t, 1>();
    array_access<float, 3>();
    array_access<long double, 3>();
    array_access<u128, 2>();
    array_access<__float128, 3>();
    array_access<Padded, 3>();

    TEST_SECTION("shared_ref: compound assignments, copies, const elements, ranges algorithms");
    upc::shared_array<long, 2> a(static_cast<std::size_t>(T) * 4);
    if (ME == 0) {
        a[1] = 10;
        a[1] += 5;
        a[1] -= 3;
        a[1] *= 4;
        a[1] /= 3;
        a[1] %= 7;
        CHECK_EQ(a[1], 16 % 7);
        a[2] = 0xf0;
        a[2] |= 0x0f;
        a[2] &= 0x3c;
        a[2] ^= 0x01;
        a[2] <<= 2;
        a[2] >>= 1;
        CHECK_EQ(a[2], ((((0xf0 | 0x0f) & 0x3c) ^ 0x01) << 2) >> 1);
        CHECK_EQ(a[3]++, 0);
        CHECK_EQ(++a[3], 2);
        CHECK_EQ(a[3]--, 2);
        CHECK_EQ(--a[3], 0);
        a[0] = a[1]; // a value copy, not a rebinding
        a[1] = 99;
        CHECK_EQ(a[0], 16 % 7);
        auto r = a[0]; // a copy of the proxy: the same element
        r = 42;
        CHECK_EQ(a[0], 42);
        upc::global_ptr<const long, 2> c = a.begin();
        CHECK_EQ(*c, 42);
        CHECK_EQ(c[1], 99);
    }
    upc::barrier();
    if (ME == T - 1) {
        std::ranges::fill(a, 7L);
        CHECK_EQ(std::ranges::count(a, 7L), a.size());
        for (std::size_t i = 0; i < a.size(); i++) a[i] = static_cast<long>((i * 5) % 11);
        std::ranges::sort(a); // std algorithms over shared memory, element by element
        CHECK(std::ranges::is_sorted(a));
    }
    upc::barrier();
    for (std::size_t i = 1; i < a.size(); i++) CHECK(a[i - 1] <= a[i]);
    upc::barrier();
}

// ---- 3. strict and relaxed -------------------------------------------------------------------------

void strict_relaxed() {
    TEST_SECTION("strict and relaxed: data written relaxed, then a strict flag, around a ring");
    constexpr std::size_t K = 64;
    const std::size_t t = static_cast<std::size_t>(T), me = static_cast<std::size_t>(ME);
    const std::size_t right = (me + 1) % t, left = (me + t - 1) % t;
    upc::shared_array<long, K> data(K * t);                  // block i on thread i
    upc::shared_array<long, 1, upc::strict> flag(t), ack(t); // strict by type
    for (long round = 1; round <= 40; round++) {
        while (ack[me] != round - 1) spin_pause(); // my right neighbour has read my last round
        for (std::size_t k = 0; k < K; k++) data[right * K + k] = round * 1000 + static_cast<long>(k);
        flag[right] = round;
        while (flag[me] != round) spin_pause();
        for (std::size_t k = 0; k < K; k++) CHECK_EQ(data[me * K + k], round * 1000 + static_cast<long>(k));
        ack[left] = round;
    }
    upc::barrier();

    TEST_SECTION("strict and relaxed: explicit strict_put/strict_get on relaxed data, strict shared_var");
    upc::shared_array<int> cells(t * 2);
    upc::shared_var<int, upc::strict> turn(0);
    for (int round = 1; round <= 20; round++) {
        const int writer = round % T;
        if (ME == writer) {
            for (std::size_t i = 0; i < t; i++) cells[t + i].relaxed_put(round * 10 + static_cast<int>(i));
            cells[0].strict_put(round);
            turn = round;
        } else {
            while (turn != round) spin_pause();
            CHECK_EQ(cells[0].strict_get(), round);
            for (std::size_t i = 0; i < t; i++) CHECK_EQ(cells[t + i].relaxed_get(), round * 10 + static_cast<int>(i));
        }
        upc::barrier();
    }
    // Same-address order of relaxed accesses: a put then a get of one element sees the put.
    upc::shared_array<int, 4> same(t * 4);
    for (int i = 0; i < 200; i++) {
        const std::size_t at = right * 4 + static_cast<std::size_t>(i) % 4;
        same[at] = i * 3 + ME;
        CHECK_EQ(same[at], i * 3 + ME);
    }
    upc::barrier();
    same[right * 4] = -1;
    upc::fence();
    upc::barrier();
    CHECK_EQ(same[me * 4], -1);
    upc::barrier();
}

// ---- 4. forall ----------------------------------------------------------------------------------

constexpr int M = 40;

struct Tally { // who ran which iteration: row t written only by thread t
    upc::shared_array<int, M> rows{static_cast<std::size_t>(M * T)};
    void clear() {
        std::ranges::fill(rows.local_part(), 0);
        upc::barrier();
    }
    void mark(long i) { rows.local_part()[static_cast<std::size_t>(i)]++; }
    // Every thread checks that iteration i ran expected(i, t) times on thread t.
    template <class F> void expect(F expected) {
        upc::barrier();
        for (int i = 0; i < M; i++)
            for (int th = 0; th < T; th++) {
                const int got = rows[static_cast<std::size_t>(th * M + i)];
                if (got != expected(i, th)) {
                    std::fprintf(stderr, "thread %d: iteration %d ran %d times on thread %d, expected %d\n", ME, i, got,
                                 th, expected(i, th));
                    CHECK(false);
                }
            }
        upc::barrier();
        clear();
    }
};

int mod(long a) { return static_cast<int>(((a % T) + T) % T); }

void foralls() {
    TEST_SECTION("forall: integer, pointer, constant and continue affinity, steps, pointer loops");
    Tally tally;
    tally.clear();
    upc::shared_array<int, 3> a(M);

    upc::forall(
        0, M, [](int i) { return i; }, [&](int i) { tally.mark(i); });
    tally.expect([](int i, int th) { return mod(i) == th ? 1 : 0; });

    upc::forall(
        -M, 0, [](int i) { return i; }, [&](int i) { tally.mark(i + M); }); // mod, not %
    tally.expect([](int i, int th) { return mod(i - M) == th ? 1 : 0; });

    upc::forall(
        std::size_t{0}, a.size(), [&](std::size_t i) { return &a[i]; },
        [&](std::size_t i) {
            CHECK_EQ((&a[i]).thread(), ME);
            tally.mark(static_cast<long>(i));
        });
    tally.expect([&](int i, int th) { return (&a[static_cast<std::size_t>(i)]).thread() == th ? 1 : 0; });

    upc::forall(
        0L, long{M}, [&](long i) { return (&a[static_cast<std::size_t>(M - 1 - i)]).raw(); },
        [&](long i) { tally.mark(i); });
    tally.expect([&](int i, int th) { return (&a[static_cast<std::size_t>(M - 1 - i)]).thread() == th ? 1 : 0; });

    upc::forall(0, M, upc::loop_index, [&](int i) { tally.mark(i); });
    tally.expect([](int i, int th) { return mod(i) == th ? 1 : 0; });

    upc::forall(0, M, upc::owner_of(a), [&](int i) { tally.mark(i); });
    tally.expect([&](int i, int th) { return (&a[i]).thread() == th ? 1 : 0; });

    upc::forall(0, M, upc::owner_of(a.begin() + 5), [&](int i) { tally.mark(i); }); // &a[i + 5]
    tally.expect([&](int i, int th) { return (&a[i + 5]).thread() == th ? 1 : 0; });

    upc::forall(0, M, T - 1, [&](int i) { tally.mark(i); }); // a constant integer
    tally.expect([](int, int th) { return th == T - 1 ? 1 : 0; });

    upc::forall(0, M, &a[4], [&](int i) { tally.mark(i); }); // a constant pointer
    tally.expect([&](int, int th) { return (&a[4]).thread() == th ? 1 : 0; });

    upc::forall(0, M, upc::continue_affinity, [&](int i) { tally.mark(i); });
    tally.expect([](int, int) { return 1; });

    upc::forall(0, M, [&](int i) { tally.mark(i); }); // no affinity: continue
    tally.expect([](int, int) { return 1; });

    upc::forall(
        1, M, 3, [](int i) { return i * 5; }, [&](int i) { tally.mark(i); });
    tally.expect([](int i, int th) { return i % 3 == 1 && mod(i * 5) == th ? 1 : 0; });

    upc::forall(
        M - 1, -1, -2, [](int i) { return i; }, [&](int i) { tally.mark(i); });
    tally.expect([](int i, int th) { return i % 2 == 1 && mod(i) == th ? 1 : 0; });

    // Loops a C for would get wrong: an unsigned variable counting down past 0, a step past INT_MAX.
    upc::forall(
        std::size_t{M - 1}, std::size_t{0}, -3, [](std::size_t i) { return i; },
        [&](std::size_t i) { tally.mark(static_cast<long>(i)); });
    tally.expect([](int i, int th) { return i % 3 == (M - 1) % 3 && i > 0 && mod(i) == th ? 1 : 0; });
    upc::forall(
        INT_MAX - M + 1, INT_MAX, 7, [](int i) { return i; }, [&](int i) { tally.mark(i - (INT_MAX - M + 1)); });
    tally.expect([](int i, int th) { return i % 7 == 0 && mod(i + (INT_MAX - M + 1)) == th ? 1 : 0; });
    upc::forall(std::uint8_t{250}, std::uint8_t{255}, std::size_t{2}, upc::continue_affinity,
                [&](std::uint8_t i) { tally.mark(i - 250); });
    tally.expect([](int i, int) { return i == 0 || i == 2 || i == 4 ? 1 : 0; });

    upc::forall(
        a.begin(), a.end(), [](upc::global_ptr<int, 3> p) { return p; },
        [&](upc::global_ptr<int, 3> p) { tally.mark(p - a.begin()); });
    tally.expect([&](int i, int th) { return (&a[static_cast<std::size_t>(i)]).thread() == th ? 1 : 0; });

    upc::forall(
        a.begin() + 1, a.end(), 2, [](upc::global_ptr<int, 3> p) { return p; },
        [&](upc::global_ptr<int, 3> p) { tally.mark(p - a.begin()); });
    tally.expect([&](int i, int th) { return i % 2 == 1 && (&a[static_cast<std::size_t>(i)]).thread() == th ? 1 : 0; });

    TEST_SECTION("forall: nested (only the outermost affinity controls), depth restored");
    constexpr int M1 = 8, M2 = 5; // the pairs (i, j) as iteration i * M2 + j
    static_assert(M1 * M2 <= M);
    CHECK_EQ(__upc_forall_depth, 0);
    upc::forall(
        0, M1, [](int i) { return i; },
        [&](int i) {
            CHECK_EQ(__upc_forall_depth, 1);
            upc::forall(
                0, M2, [](int j) { return j + 1; },
                [&](int j) {
                    CHECK_EQ(__upc_forall_depth, 1);
                    tally.mark(i * M2 + j);
                });
        });
    CHECK_EQ(__upc_forall_depth, 0);
    tally.expect([](int p, int th) { return p < M1 * M2 && mod(p / M2) == th ? 1 : 0; });

    // Under a continue forall the inner one controls.
    upc::forall(0, M1, upc::continue_affinity, [&](int i) {
        CHECK_EQ(__upc_forall_depth, 0);
        upc::forall(
            0, M2, [](int j) { return j; }, [&](int j) { tally.mark(i * M2 + j); });
    });
    tally.expect([](int p, int th) { return p < M1 * M2 && mod(p % M2) == th ? 1 : 0; });

    // Three levels through a function: the middle and inner ones run everything.
    auto inner = [&](int i, int j) {
        upc::forall(
            0, 2, [](int k) { return k; }, [&](int k) { tally.mark((i * 4 + j) * 2 + k); });
    };
    upc::forall(
        0, 5, [](int i) { return i * 3; },
        [&](int i) {
            upc::forall(
                0, 4, [&](int j) { return &a[static_cast<std::size_t>(j)]; }, [&](int j) { inner(i, j); });
        });
    tally.expect([](int p, int th) { return p < 40 && mod(p / 8 * 3) == th ? 1 : 0; });

    // An exception out of the body leaves the depth as it was.
    bool caught = false;
    try {
        upc::forall(
            0, M, [](int i) { return i; }, [&](int) { throw 1; });
    } catch (int) {
        caught = true;
    }
    CHECK_EQ(__upc_forall_depth, 0);
    CHECK(caught || ME >= M);
    upc::barrier();
}

// ---- 5. barriers --------------------------------------------------------------------------------

void barriers() {
    TEST_SECTION("barriers: split phase, named and anonymous, INT_MIN and INT_MAX as names");
    const std::size_t t = static_cast<std::size_t>(T), me = static_cast<std::size_t>(ME);
    upc::shared_array<int> slot(2 * t); // by round parity, so a fast neighbour never overwrites early
    for (int round = 1; round <= 120; round++) {
        const std::size_t parity = static_cast<std::size_t>(round % 2) * t;
        slot[parity + (me + 1) % t] = round;
        long local_work = 0;
        switch (round % 6) {
        case 0:
            upc::notify(round);
            for (int i = 0; i < 1000; i++) local_work += i; // work between notify and wait
            upc::wait(round);
            break;
        case 1:
            upc::notify();
            upc::wait(round); // anonymous notify, named wait: matches
            break;
        case 2:
            upc::notify(round);
            upc::wait();
            break;
        case 3: upc::barrier(round); break;
        case 4: ME % 2 ? upc::barrier(round) : upc::barrier(); break; // named and anonymous mixed
        default: upc::barrier(round / 6 % 2 ? INT_MIN : INT_MAX); break;
        }
        CHECK(local_work == 0 || local_work == 499500);
        CHECK_EQ(slot[parity + me], round);
    }
    upc::barrier();
}

// ---- 6. locks -----------------------------------------------------------------------------------

void locks() {
    TEST_SECTION("locks: THREADS x 1000 increments under std::lock_guard");
    upc::mutex m = upc::all_lock_alloc();
    upc::shared_var<long> counter;
    for (int i = 0; i < 1000; i++) {
        std::lock_guard guard(m);
        counter = counter + 1;
    }
    upc::barrier();
    CHECK_EQ(counter, 1000L * T);
    upc::barrier();

    TEST_SECTION("locks: try_lock, std::unique_lock, std::scoped_lock over two locks");
    if (ME == 0) m.lock();
    upc::barrier();
    if (ME != 0) {
        CHECK(!m.try_lock());
        std::unique_lock maybe(m, std::try_to_lock);
        CHECK(!maybe.owns_lock());
    }
    upc::barrier();
    if (ME == 0) m.unlock();
    upc::barrier();
    if (ME == T - 1) {
        std::unique_lock got(m, std::try_to_lock);
        CHECK(got.owns_lock());
    }
    upc::barrier();
    upc::mutex m2 = upc::mutex::all_alloc();
    CHECK(m2.get() != m.get());
    counter = 0;
    upc::barrier();
    for (int i = 0; i < 50; i++) {
        if (ME % 2) {
            std::scoped_lock both(m, m2);
            counter = counter + 1;
        } else {
            std::scoped_lock both(m2, m); // the other order: scoped_lock avoids the deadlock
            counter = counter + 1;
        }
    }
    upc::barrier();
    CHECK_EQ(counter, 50L * T);
    upc::barrier();

    TEST_SECTION("locks: upc_global_lock_alloc, handles passed through shared memory");
    {
        upc::mutex own = upc::global_lock_alloc();
        upc::shared_array<upc::lock_ptr> handles(static_cast<std::size_t>(T));
        upc::shared_array<long> counts(static_cast<std::size_t>(T));
        handles[static_cast<std::size_t>(ME)] = own.get();
        upc::barrier();
        for (int round = 0; round < 20; round++)
            for (std::size_t th = 0; th < static_cast<std::size_t>(T); th++) {
                const upc::lock_ptr l = handles[th];
                CHECK(l);
                std::lock_guard guard(l);
                counts[th] += 1;
            }
        upc::barrier();
        CHECK_EQ(counts[static_cast<std::size_t>(ME)], 20L * T);
        upc::barrier(); // nobody uses `own` any more when it is freed
    }
    upc::barrier();
}

// ---- 7. allocation and transfers ------------------------------------------------------------------

// A `shared [] int[n]` with affinity to `owner`, made collectively (the owner allocates).
upc::global_ptr<int, upc::indefinite> on_thread(int owner, std::size_t n) {
    upc::shared_var<upc::global_ptr<int, upc::indefinite>> where;
    if (ME == owner) where = upc::local_alloc<int>(n);
    upc::barrier();
    return where;
}

void allocation() {
    TEST_SECTION("allocation: all_alloc, global_alloc, local_alloc, free, size 0");
    const std::size_t t = static_cast<std::size_t>(T), me = static_cast<std::size_t>(ME);
    {
        auto p = upc::all_alloc<int, 3>(10 * t);
        upc::shared_array<std::uint64_t> bits(t);
        bits[me] = p.raw().bits;
        upc::barrier();
        for (std::size_t th = 0; th < t; th++) CHECK(bits[th] == p.raw().bits); // one pointer everywhere
        CHECK(p.thread() == 0 && p.phase() == 0);
        upc::forall(
            std::size_t{0}, 10 * t, [&](std::size_t i) { return &p[static_cast<std::ptrdiff_t>(i)]; },
            [&](std::size_t i) { p[static_cast<std::ptrdiff_t>(i)] = static_cast<int>(i); });
        upc::barrier();
        for (std::size_t i = 0; i < 10 * t; i++) CHECK_EQ(p[static_cast<std::ptrdiff_t>(i)], i);
        upc::all_free(p);
    }
    {
        // Thread 0 alone allocates; the pointer travels through a shared variable.
        upc::shared_var<upc::global_ptr<double, 2>> where;
        if (ME == 0) where = upc::global_alloc<double, 2>(7 * t);
        upc::barrier();
        const upc::global_ptr<double, 2> g = where;
        CHECK(!g.is_null());
        upc::forall(
            0L, static_cast<long>(7 * t), [&](long i) { return &g[i]; },
            [&](long i) { g[i] = 0.5 * static_cast<double>(i); });
        upc::barrier();
        for (long i = 0; i < static_cast<long>(7 * t); i++) CHECK(g[i] == 0.5 * static_cast<double>(i));
        upc::barrier();
        if (ME == 0) upc::free(g);
    }
    {
        // Every thread at once: disjoint regions.
        auto mine = upc::global_alloc<int, 1>(4 * t);
        for (std::size_t i = 0; i < 4 * t; i++) mine[static_cast<std::ptrdiff_t>(i)] = ME;
        upc::barrier();
        for (std::size_t i = 0; i < 4 * t; i++) CHECK_EQ(mine[static_cast<std::ptrdiff_t>(i)], ME);
        upc::barrier();
        upc::free(mine);
    }
    {
        // upc_alloc: affinity to the caller; another thread frees it.
        upc::shared_array<upc::global_ptr<int, upc::indefinite>> blocks(t);
        auto mine = upc::local_alloc<int>(16);
        CHECK_EQ(mine.thread(), ME);
        int *local = mine.local();
        CHECK(local != nullptr);
        for (int i = 0; i < 16; i++) local[i] = ME * 100 + i;
        blocks[me] = mine;
        upc::barrier();
        const upc::global_ptr<int, upc::indefinite> theirs = blocks[(me + 1) % t];
        for (int i = 0; i < 16; i++) CHECK_EQ(theirs[i], ((ME + 1) % T) * 100 + i);
        upc::barrier();
        upc::free(theirs);
    }
    CHECK(upc::local_alloc<int>(0).is_null());
    CHECK((upc::global_alloc<int, 4>(0).is_null()));
    CHECK((upc::all_alloc<int, 4>(0).is_null()));
    upc::free(upc::global_ptr<int>());
    upc::shared_array<int> empty;
    CHECK(empty.empty() && empty.begin().is_null() && empty.local_part().empty());
    upc::barrier();

    TEST_SECTION("transfers: memget, memput, memcpy, memset between threads");
    const int right = (ME + 1) % T;
    std::vector<upc::global_ptr<int, upc::indefinite>> all(t);
    for (int owner = 0; owner < T; owner++) all[static_cast<std::size_t>(owner)] = on_thread(owner, 300);
    std::vector<int> out(100), in(100);
    for (int i = 0; i < 100; i++) out[static_cast<std::size_t>(i)] = ME * 1000 + i;
    const auto dst = all[static_cast<std::size_t>(right)];
    upc::memput(dst, out.data(), 100);
    upc::memget(in.data(), dst, 100);
    CHECK(in == out);
    upc::memcpy(dst + 100, dst, 100);           // shared to shared, same thread
    upc::memcpy(all[me] + 200, dst + 100, 100); // to this thread
    upc::memget(in.data(), all[me] + 200, 100);
    CHECK(in == out);
    upc::barrier();
    upc::memset(dst + 100, 0x5a, 50);
    upc::memget(in.data(), dst + 100, 100);
    for (int i = 0; i < 50; i++) CHECK(in[static_cast<std::size_t>(i)] == 0x5a5a5a5a);
    for (int i = 50; i < 100; i++) CHECK_EQ(in[static_cast<std::size_t>(i)], ME * 1000 + i);
    upc::barrier();
    // The owner of each buffer sees what its left neighbour wrote.
    const upc::global_ptr<int, upc::indefinite> own = all[me];
    for (int i = 0; i < 100; i++) CHECK_EQ(own.local()[i], ((ME + T - 1) % T) * 1000 + i);
    upc::barrier();
    upc::free(own);
    // Arrays and shared scalars as arguments, as UPC arrays decay to pointers.
    upc::shared_array<int, 8> blocks(8 * t);
    upc::shared_var<int> scalar;
    upc::memput(&blocks[static_cast<std::size_t>(right) * 8], out.data(), 8);
    if (ME == 0) upc::memput(scalar, out.data() + 5, 1);
    upc::barrier();
    upc::memget(in.data(), blocks, 8); // thread 0's block, which the last thread wrote
    for (int i = 0; i < 8; i++) CHECK_EQ(in[static_cast<std::size_t>(i)], (T - 1) * 1000 + i);
    upc::memget(in.data(), scalar, 1);
    CHECK_EQ(in[0], 5);
    upc::barrier();
    if (ME == 0) {
        upc::memset(blocks, 0, 8);
        upc::memcpy(scalar, blocks, 1);
    }
    upc::barrier();
    CHECK_EQ(scalar, 0);
    CHECK_EQ(blocks[7], 0);
    upc::barrier();
}

// ---- 8. collectives -----------------------------------------------------------------------------

constexpr std::size_t K = 5; // elements per block

int value(int thread, std::size_t k, int salt = 0) { return thread * 100 + static_cast<int>(k) + salt * 10000; }

void data_movement() {
    const std::size_t t = static_cast<std::size_t>(T), me = static_cast<std::size_t>(ME);
    TEST_SECTION("collectives: broadcast (root 0 and THREADS-1; sync modes), scatter, gather");
    upc::shared_array<int, K> blocks(K * t), out(K * t);
    for (std::size_t k = 0; k < K; k++) blocks.local_part()[k] = value(ME, k);
    for (int root : {0, T - 1}) {
        const upc::sync_mode modes[] = {upc::all_sync, upc::in_mysync | upc::out_mysync,
                                        upc::in_nosync | upc::out_nosync};
        for (const upc::sync_mode mode : modes) {
            // NOSYNC: the program provides the synchronisation the call leaves out.
            if (mode == (upc::in_nosync | upc::out_nosync)) upc::barrier();
            upc::broadcast(out, &blocks[static_cast<std::size_t>(root) * K], K, mode);
            if (mode != upc::all_sync) upc::barrier();
            for (std::size_t th = 0; th < t; th++)
                for (std::size_t k = 0; k < K; k++) CHECK_EQ(out[th * K + k], value(root, k));
            upc::barrier();
        }
    }
    // scatter from a `shared [] int[K*THREADS]` on the last thread.
    auto whole = on_thread(T - 1, K * t);
    if (ME == T - 1)
        for (std::size_t i = 0; i < K * t; i++) whole.local()[i] = value(static_cast<int>(i / K), i % K, 1);
    upc::scatter(out, whole, K);
    for (std::size_t k = 0; k < K; k++) CHECK_EQ(out.local_part()[k], value(ME, k, 1));
    upc::barrier();
    // gather into it.
    upc::gather(whole, blocks, K);
    if (ME == T - 1)
        for (std::size_t i = 0; i < K * t; i++) CHECK_EQ(whole.local()[i], value(static_cast<int>(i / K), i % K));
    upc::barrier();
    if (ME == T - 1) upc::free(whole);

    TEST_SECTION("collectives: gather_all, exchange, permute");
    // `shared [K*THREADS] int[K*THREADS*THREADS]`: a `shared [K]` array of THREADS courses has the
    // same bytes on each thread (block j of thread i's part is element (j*THREADS + i)*K).
    upc::shared_array<int, K> all(K * t * t), src(K * t * t), dst(K * t * t);
    upc::gather_all(all, blocks, K);
    for (std::size_t i = 0; i < t; i++)
        for (std::size_t k = 0; k < K; k++) CHECK_EQ(all.local_part()[i * K + k], value(static_cast<int>(i), k));
    upc::barrier();
    for (std::size_t j = 0; j < t; j++)
        for (std::size_t k = 0; k < K; k++) src.local_part()[j * K + k] = value(ME, k, static_cast<int>(j) + 1);
    upc::exchange(dst, src, K);
    for (std::size_t i = 0; i < t; i++) // block i of mine came from thread i's block for me
        for (std::size_t k = 0; k < K; k++)
            CHECK_EQ(dst.local_part()[i * K + k], value(static_cast<int>(i), k, ME + 1));
    upc::barrier();
    // permute: a permutation every thread computes alike.
    std::vector<int> perm(t);
    std::iota(perm.begin(), perm.end(), 0);
    for (std::size_t i = t; i > 1; i--) std::swap(perm[i - 1], perm[(i * 7 + 3) % i]);
    upc::shared_array<int> shared_perm(t);
    shared_perm[me] = perm[me];
    upc::permute(out, blocks, shared_perm, K);
    for (std::size_t i = 0; i < t; i++)
        if (perm[i] == ME)
            for (std::size_t k = 0; k < K; k++) CHECK_EQ(out.local_part()[k], value(static_cast<int>(i), k));
    upc::barrier();
}

// reduce and prefix_reduce of src[i] = gen(i) against a serial fold with `oracle`.
template <class E, std::size_t B, class Op, class Gen, class Oracle>
void reduce_case(const char *what, Op op, Gen gen, Oracle oracle, std::size_t n) {
    upc::shared_array<E, B> src(n), prefix(n);
    upc::forall(
        std::size_t{0}, n, [&](std::size_t i) { return &src[i]; }, [&](std::size_t i) { src[i] = gen(i); });
    upc::shared_array<E> result(static_cast<std::size_t>(T)); // the result on the last thread, not thread 0
    upc::reduce(&result[static_cast<std::size_t>(T - 1)], src, op, n);
    E expected = gen(0);
    for (std::size_t i = 1; i < n; i++) expected = static_cast<E>(oracle(expected, gen(i)));
    const E got = result[static_cast<std::size_t>(T - 1)];
    if (!(got == expected)) {
        std::fprintf(stderr, "thread %d: reduce %s: %.17Lg, expected %.17Lg\n", ME, what, static_cast<long double>(got),
                     static_cast<long double>(expected));
        CHECK(false);
    }
    upc::prefix_reduce(prefix, src, op, n);
    E running = gen(0);
    for (std::size_t i = 0; i < n; i++) {
        if (i) running = static_cast<E>(oracle(running, gen(i)));
        const E at = prefix[i];
        if (!(at == running)) {
            std::fprintf(stderr, "thread %d: prefix_reduce %s at %zu: %.17Lg, expected %.17Lg\n", ME, what, i,
                         static_cast<long double>(at), static_cast<long double>(running));
            CHECK(false);
        }
    }
    upc::barrier();
}

// Values for the reductions: varied for add, min and max; small for mult (no overflow); bits.
template <class E>
auto varied =
    [](std::size_t i) { return static_cast<E>(static_cast<int>(i * 37 % 19) - (std::is_signed_v<E> ? 9 : 0)); };
template <class E>
auto small =
    [](std::size_t i) { return static_cast<E>(i % 7 == 3 ? 2 : (i % 5 == 1 && std::is_signed_v<E> ? -1 : 1)); };
template <class E>
auto bits = [](std::size_t i) { return static_cast<E>(0xf000u | (1u << (i % 12)) | (i % 3 ? 0x100u : 0u)); };
template <class E> auto truth = [](std::size_t i) { return static_cast<E>(i % 11 == 10 ? 0 : 1); };
template <class E>
auto quarters = [](std::size_t i) { return static_cast<E>(static_cast<double>(i * 37 % 19) / 4 - 2); };

void computation() {
    const std::size_t t = static_cast<std::size_t>(T);
    const std::size_t n = 3 * t * 3 + 2; // not a whole number of courses
    TEST_SECTION("collectives: reduce and prefix_reduce, every type suffix and operation");
    const auto max = [](auto a, auto b) { return std::max(a, b); };
    const auto min = [](auto a, auto b) { return std::min(a, b); };
    reduce_case<int, 3>("I add", upc::op::add, varied<int>, std::plus<>(), n);
    reduce_case<int, 1>("I max", upc::op::max, varied<int>, max, n);
    reduce_case<int, upc::indefinite>("I min (indefinite)", upc::op::min, varied<int>, min, n);
    reduce_case<int, 3>("I mult", upc::op::mult, small<int>, std::multiplies<>(), n);
    reduce_case<unsigned, 3>("UI and", upc::op::bit_and, bits<unsigned>, std::bit_and<>(), n);
    reduce_case<unsigned, 3>("UI or", upc::op::bit_or, bits<unsigned>, std::bit_or<>(), n);
    reduce_case<unsigned, 3>("UI xor", upc::op::bit_xor, bits<unsigned>, std::bit_xor<>(), n);
    reduce_case<signed char, 2>("C max", upc::op::max, varied<signed char>, max, n);
    reduce_case<signed char, 2>("C add", upc::op::add, varied<signed char>, std::plus<>(), n);
    reduce_case<unsigned char, 1>("UC min", upc::op::min, varied<unsigned char>, min, n);
    reduce_case<unsigned char, 1>("UC xor", upc::op::bit_xor, varied<unsigned char>, std::bit_xor<>(), n);
    reduce_case<short, 3>("S min", upc::op::min, varied<short>, min, n);
    reduce_case<unsigned short, 3>("US add", upc::op::add, varied<unsigned short>, std::plus<>(), n);
    reduce_case<unsigned short, 3>("US and", upc::op::bit_and, bits<unsigned short>, std::bit_and<>(), n);
    reduce_case<long, 1>("L mult", upc::op::mult, small<long>, std::multiplies<>(), n);
    reduce_case<long, 3>("L max", upc::op::max, varied<long>, max, n);
    reduce_case<long long, 3>("L add (long long)", upc::op::add, varied<long long>, std::plus<>(), n);
    reduce_case<unsigned long, 3>("UL mult", upc::op::mult, small<unsigned long>, std::multiplies<>(), n);
    reduce_case<unsigned long, 3>("UL or", upc::op::bit_or, bits<unsigned long>, std::bit_or<>(), n);
    reduce_case<float, 3>("F max", upc::op::max, quarters<float>, max, n);
    reduce_case<float, 3>("F add", upc::op::add, quarters<float>, std::plus<>(), n);
    reduce_case<double, 3>("D add", upc::op::add, quarters<double>, std::plus<>(), n);
    reduce_case<double, 1>("D mult", upc::op::mult, small<double>, std::multiplies<>(), n);
    reduce_case<double, upc::indefinite>("D min (indefinite)", upc::op::min, quarters<double>, min, n);
    reduce_case<long double, 2>("LD min", upc::op::min, quarters<long double>, min, n);
    reduce_case<long double, 2>("LD add", upc::op::add, quarters<long double>, std::plus<>(), n);
    reduce_case<int, 3>(
        "I logand", upc::op::logical_and, truth<int>, [](int a, int b) { return (a && b) ? 1 : 0; }, n);
    reduce_case<int, 3>(
        "I logor", upc::op::logical_or, truth<int>, [](int a, int b) { return (a || b) ? 1 : 0; }, n);

    TEST_SECTION("collectives: UPC_FUNC with a capturing lambda, UPC_NONCOMM_FUNC in index order");
    const long offset = 1000 + ME * 0; // single-valued, but only a capture can reach it
    const auto plus_offset = [offset](long a, long b) { return a + b + offset; };
    reduce_case<long, 3>("L func", upc::func(plus_offset), varied<long>, plus_offset, n);
    const auto first = [](auto a, auto) { return a; };
    const auto last = [](auto, auto b) { return b; };
    reduce_case<int, 3>("I noncomm first", upc::noncomm_func(first), varied<int>, first, n);
    reduce_case<double, 1>("D noncomm last", upc::noncomm_func(last), quarters<double>, last, n);
    reduce_case<short, upc::indefinite>("S noncomm last (indefinite)", upc::noncomm_func(last), varied<short>, last, n);
    reduce_case<int, 2>("I func (function pointer)", upc::func(+[](int a, int b) { return a > b ? a : b; }),
                        varied<int>, max, n);
    // shared_var as the destination.
    upc::shared_array<double> src(t);
    src[static_cast<std::size_t>(ME)] = ME + 0.5;
    upc::shared_var<double> sum;
    upc::reduce(sum, src, upc::op::add, t);
    CHECK(sum == T * T / 2.0);
    upc::barrier();

    TEST_SECTION("collectives: sort, ascending, descending, structs by key (stable)");
    const std::size_t m = 7 * t + 3;
    upc::shared_array<int, 3> keys(m);
    auto key = [](std::size_t i) { return static_cast<int>((i * 7919 + 13) % 101) - 50; };
    upc::forall(
        std::size_t{0}, m, [&](std::size_t i) { return &keys[i]; }, [&](std::size_t i) { keys[i] = key(i); });
    std::vector<int> oracle(m);
    for (std::size_t i = 0; i < m; i++) oracle[i] = key(i);
    std::ranges::sort(oracle);
    upc::sort(keys, m);
    for (std::size_t i = 0; i < m; i++) CHECK_EQ(keys[i], oracle[i]);
    upc::barrier();
    upc::sort(keys, m, std::greater<>());
    for (std::size_t i = 0; i < m; i++) CHECK_EQ(keys[i], oracle[m - 1 - i]);
    upc::barrier();
    struct Item {
        int key;
        int index;
    };
    upc::shared_array<Item, 2> items(m);
    upc::forall(
        std::size_t{0}, m, [&](std::size_t i) { return &items[i]; },
        [&](std::size_t i) {
            items[i] = Item{key(i) % 5, static_cast<int>(i)};
        });
    upc::sort(items, m, [](const Item &a, const Item &b) { return a.key < b.key; });
    for (std::size_t i = 1; i < m; i++) {
        const Item a = items[i - 1], b = items[i];
        CHECK(a.key < b.key || (a.key == b.key && a.index < b.index));
    }
    upc::barrier();
}

} // namespace

// Arguments name the sections to run (all by default), to narrow down a failure.
int main(int argc, char **argv) {
    upc::runtime job(argc, argv);
    T = upc::threads();
    ME = upc::mythread();
    CHECK(T == THREADS && ME == MYTHREAD);
    const std::pair<const char *, void (*)()> sections[] = {
        {"pointers", pointer_arithmetic}, {"arrays", shared_arrays},
        {"strict", strict_relaxed},       {"forall", foralls},
        {"barriers", barriers},           {"locks", locks},
        {"allocation", allocation},       {"movement", data_movement},
        {"computation", computation},
    };
    for (const auto &[name, run] : sections) {
        bool wanted = argc < 2;
        for (int i = 1; i < argc; i++) wanted = wanted || std::strcmp(argv[i], name) == 0;
        if (wanted) run();
    }
    TEST_SECTION("all C++ front-end checks passed");
    return 0;
}
