/* SPDX-License-Identifier: BSD-3-Clause */
/* The UPC collectives (upc_collective.h; docs/UPC.md's cases 45-53) as generated code uses them:
 * shared arrays from upc_all_alloc, pointers-to-shared as upc_shared_ptr_t, every result checked
 * against a serial oracle that each thread computes on its own.
 *   45 broadcast from thread 0 and THREADS-1, 1 B, 4 KiB, 1 MiB
 *   46 scatter, gather, gather_all
 *   47 exchange (a transpose, not gather_all's pattern)
 *   48 permute with random permutations
 *   49 reduce: 11 types x ADD, MULT, MIN, MAX, FUNC (+ AND, OR, XOR, LOGAND, LOGOR on integers and
 *      LOGAND, LOGOR on floating types)
 *   50 UPC_NONCOMM_FUNC with 2x2 matrix products (associative, not commutative)
 *   51 reductions where only some threads own elements, and dst on a thread that owns none
 *   52 prefix_reduce with ADD and NONCOMM_FUNC against a serial scan
 *   53 every collective x IN/OUT {NO,MY,ALL}SYNC, with writes right before and right after
 *   and upc_all_sort. Any thread count. */
#include <stdint.h>
#include <string.h>
#include <upc_collective.h>

#include "upc_test.h"

static unsigned T, ME;

/* ---- helpers ------------------------------------------------------------------------------------ */

/* Thread t's block of an array from upc_all_alloc(THREADS, n): the same offset on every thread. */
static upc_shared_ptr_t on(upc_shared_ptr_t base, unsigned t) { return upc_pts_make(t, 0, upc_pts_vaddr(base)); }
static unsigned char *mine(upc_shared_ptr_t base) { return (unsigned char *)__cvtaddr(on(base, ME)); }

static uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static unsigned char pat(uint64_t seed, size_t i) { return (unsigned char)(mix(seed * 0x100000001B3ull + i) >> 56); }
static void fill(unsigned char *p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) p[i] = pat(seed, i);
}

static void check_bytes(const unsigned char *p, size_t n, uint64_t seed, const char *what, int line) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat(seed, i)) {
            fprintf(stderr, "thread %u: line %d: %s: byte %zu of %zu is %u, expected %u\n", ME, line, what, i, n, p[i],
                    pat(seed, i));
            fflush(stderr);
            upc_global_exit(1);
        }
}
#define CHECK_BYTES(p, n, seed, what) check_bytes((p), (n), (seed), (what), __LINE__)

/* Another thread's bytes, read as generated code reads them. */
static unsigned char *fetch(upc_shared_ptr_t p, size_t n) {
    static unsigned char *buf;
    static size_t cap;
    if (n > cap) {
        free(buf);
        buf = malloc(n);
        CHECK(buf != NULL);
        cap = n;
    }
    upc_memget(buf, p, n);
    return buf;
}

static int in_nosync(upc_flag_t f) { return (f & 3) == UPC_IN_NOSYNC; }
static int out_nosync(upc_flag_t f) { return (f & 12) == UPC_OUT_NOSYNC; }
static int out_allsync(upc_flag_t f) { return (f & 12) == UPC_OUT_ALLSYNC; }

/* IN_NOSYNC: the program itself makes the data ready first; OUT_NOSYNC: and waits afterwards. */
static void ready(upc_flag_t f) {
    if (in_nosync(f)) UPC_BARRIER();
}
static void settled(upc_flag_t f) {
    if (out_nosync(f)) UPC_BARRIER();
}

/* ---- 45-48: data movement ------------------------------------------------------------------------ */

static void broadcast_case(upc_shared_ptr_t src, upc_shared_ptr_t dst, size_t n, unsigned root, upc_flag_t f,
                           uint64_t seed) {
    memset(mine(dst), 0xEE, n + 1);
    if (ME == root) fill(mine(src), n, seed);
    ready(f);
    upc_all_broadcast(on(dst, 0), on(src, root), n, f);
    if (!out_nosync(f) && ME == root) memset(mine(src), 0x11, n); /* right after: the source is free */
    settled(f);
    CHECK_BYTES(mine(dst), n, seed, "broadcast");
    CHECK(mine(dst)[n] == 0xEE);
    if (out_allsync(f) && T > 1) CHECK_BYTES(fetch(on(dst, (ME + 1) % T), n), n, seed, "broadcast, next thread");
    UPC_BARRIER(); /* the next case rewrites what others check */
}

static void scatter_case(upc_shared_ptr_t src, upc_shared_ptr_t dst, size_t n, unsigned root, upc_flag_t f,
                         uint64_t seed) {
    memset(mine(dst), 0xEE, n + 1);
    if (ME == root) fill(mine(src), n * T, seed);
    ready(f);
    upc_all_scatter(on(dst, 0), on(src, root), n, f);
    if (!out_nosync(f) && ME == root) memset(mine(src), 0x11, n * T);
    settled(f);
    unsigned char *expect = malloc(n * T);
    CHECK(expect != NULL);
    fill(expect, n * T, seed);
    CHECK(memcmp(mine(dst), expect + ME * n, n) == 0);
    CHECK(mine(dst)[n] == 0xEE);
    if (out_allsync(f) && T > 1) {
        const unsigned o = (ME + 1) % T;
        CHECK(memcmp(fetch(on(dst, o), n), expect + o * n, n) == 0);
    }
    free(expect);
    UPC_BARRIER();
}

static void gather_case(upc_shared_ptr_t src, upc_shared_ptr_t dst, size_t n, unsigned root, upc_flag_t f,
                        uint64_t seed) {
    if (ME == root) memset(mine(dst), 0xEE, n * T + 1);
    fill(mine(src), n, seed + ME);
    ready(f);
    upc_all_gather(on(dst, root), on(src, 0), n, f);
    if (!out_nosync(f)) memset(mine(src), 0x11, n);
    settled(f);
    if (ME == root) {
        for (unsigned t = 0; t < T; t++) CHECK_BYTES(mine(dst) + t * n, n, seed + t, "gather");
        CHECK(mine(dst)[n * T] == 0xEE);
    } else if (out_allsync(f)) {
        CHECK_BYTES(fetch(upc_pts_add(on(dst, root), (int64_t)(ME * n), 1, 0, T), n), n, seed + ME, "gather, remote");
    }
    UPC_BARRIER();
}

static void gather_all_case(upc_shared_ptr_t src, upc_shared_ptr_t dst, size_t n, upc_flag_t f, uint64_t seed) {
    memset(mine(dst), 0xEE, n * T + 1);
    fill(mine(src), n, seed + ME);
    ready(f);
    upc_all_gather_all(on(dst, 0), on(src, 0), n, f);
    if (!out_nosync(f)) memset(mine(src), 0x11, n);
    settled(f);
    for (unsigned t = 0; t < T; t++) CHECK_BYTES(mine(dst) + t * n, n, seed + t, "gather_all");
    CHECK(mine(dst)[n * T] == 0xEE);
    if (out_allsync(f) && T > 1) {
        const unsigned char *other = fetch(on(dst, (ME + 1) % T), n * T);
        for (unsigned t = 0; t < T; t++) CHECK_BYTES(other + t * n, n, seed + t, "gather_all, next thread");
    }
    UPC_BARRIER();
}

/* Thread t's block of src holds chunks (t, 0..T-1); afterwards thread t's block of dst holds
 * chunks (0..T-1, t): the transpose. */
static void exchange_case(upc_shared_ptr_t src, upc_shared_ptr_t dst, size_t n, upc_flag_t f, uint64_t seed) {
    memset(mine(dst), 0xEE, n * T + 1);
    for (unsigned j = 0; j < T; j++) fill(mine(src) + j * n, n, seed + ME * T + j);
    ready(f);
    upc_all_exchange(on(dst, 0), on(src, 0), n, f);
    if (!out_nosync(f)) memset(mine(src), 0x11, n * T);
    settled(f);
    for (unsigned i = 0; i < T; i++) CHECK_BYTES(mine(dst) + i * n, n, seed + i * T + ME, "exchange");
    CHECK(mine(dst)[n * T] == 0xEE);
    if (out_allsync(f) && T > 1) {
        const unsigned o = (ME + 1) % T;
        const unsigned char *other = fetch(on(dst, o), n * T);
        for (unsigned i = 0; i < T; i++) CHECK_BYTES(other + i * n, n, seed + i * T + o, "exchange, next thread");
    }
    UPC_BARRIER();
}

/* perm: a `shared int[THREADS]` (block size 1), written by thread 0; every thread's view of it is
 * the same random permutation (Fisher-Yates from the seed). */
static void make_perm(int *p, uint64_t seed) {
    for (unsigned i = 0; i < T; i++) p[i] = (int)i;
    for (unsigned i = T; i > 1; i--) {
        const unsigned k = (unsigned)(mix(seed + i) % i);
        const int tmp = p[i - 1];
        p[i - 1] = p[k];
        p[k] = tmp;
    }
}

static void permute_case(upc_shared_ptr_t src, upc_shared_ptr_t dst, upc_shared_ptr_t perm, size_t n, upc_flag_t f,
                         uint64_t seed) {
    int p[1024];
    make_perm(p, seed);
    /* Each thread writes its own entry: a write right before, with affinity to the writer. */
    *(int *)mine(perm) = p[ME];
    memset(mine(dst), 0xEE, n + 1);
    fill(mine(src), n, seed + ME);
    ready(f);
    upc_all_permute(on(dst, 0), on(src, 0), on(perm, 0), n, f);
    if (!out_nosync(f)) memset(mine(src), 0x11, n);
    settled(f);
    unsigned from = 0;
    while ((unsigned)p[from] != ME) from++;
    CHECK_BYTES(mine(dst), n, seed + from, "permute");
    CHECK(mine(dst)[n] == 0xEE);
    if (out_allsync(f) && T > 1) {
        const unsigned o = (ME + 1) % T;
        unsigned ofrom = 0;
        while ((unsigned)p[ofrom] != o) ofrom++;
        CHECK_BYTES(fetch(on(dst, o), n), n, seed + ofrom, "permute, next thread");
    }
    UPC_BARRIER();
}

static void data_movement(void) {
    const size_t big = (size_t)1 << 20;
    upc_shared_ptr_t src = upc_all_alloc(T, big + 1), dst = upc_all_alloc(T, big + 1);
    CHECK(!upc_pts_is_null(src) && !upc_pts_is_null(dst));
    TEST_SECTION("45: broadcast from thread 0 and THREADS-1, 1 B, 4 KiB, 1 MiB");
    const size_t sizes[] = {1, 4096, big};
    uint64_t seed = 1000;
    for (int r = 0; r < 2; r++)
        for (int s = 0; s < 3; s++)
            broadcast_case(src, dst, sizes[s], r ? T - 1 : 0, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, seed++);
    UPC_BARRIER();
    upc_all_free(src);
    upc_all_free(dst);

    TEST_SECTION("46-48: scatter, gather, gather_all, exchange, permute");
    const size_t ns[] = {1, 7, 1500};
    const size_t most = 1500 * T + 1;
    src = upc_all_alloc(T, most);
    dst = upc_all_alloc(T, most);
    upc_shared_ptr_t perm = upc_all_alloc(T, sizeof(int));
    for (int k = 0; k < 3; k++) {
        const size_t n = ns[k];
        for (int r = 0; r < 2; r++) {
            const unsigned root = r ? T - 1 : 0;
            scatter_case(src, dst, n, root, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, seed++);
            gather_case(src, dst, n, root, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, seed++);
        }
        gather_all_case(src, dst, n, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, seed++);
        exchange_case(src, dst, n, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, seed++);
        for (int rep = 0; rep < 3; rep++) permute_case(src, dst, perm, n, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, seed++);
    }
    UPC_BARRIER();
    upc_all_free(src);
    upc_all_free(dst);
    upc_all_free(perm);
}

/* ---- 49-52: reductions ---------------------------------------------------------------------------- */

/* 2x2 matrices over Z/2^B packed into 4B bits: an associative, non-commutative product. */
static uint64_t matmul(uint64_t x, uint64_t y, unsigned B) {
    const uint64_t m = (1ull << B) - 1;
    const uint64_t a = x & m, b = (x >> B) & m, c = (x >> 2 * B) & m, d = (x >> 3 * B) & m;
    const uint64_t e = y & m, f = (y >> B) & m, g = (y >> 2 * B) & m, h = (y >> 3 * B) & m;
    return ((a * e + b * g) & m) | (((a * f + b * h) & m) << B) | (((c * e + d * g) & m) << 2 * B) |
           (((c * f + d * h) & m) << 3 * B);
}
/* A matrix invertible mod 2 (odd determinant), so that long products stay informative. */
static uint64_t random_matrix(uint64_t seed, unsigned B) {
    const uint64_t m = (1ull << B) - 1;
    for (uint64_t k = 0;; k++) {
        const uint64_t x = mix(seed + k * 7919);
        const uint64_t a = x & m, b = (x >> B) & m, c = (x >> 2 * B) & m, d = (x >> 3 * B) & m;
        if (((a * d + b * c) & 1) == 1) return x & ((B == 16) ? ~0ull : ((1ull << 4 * B) - 1));
    }
}

/* Value kinds. */
/* K_ALTERNATE: zero at even indexes, so that under a cyclic layout whole threads hold only zeros
 * and others none, and the threads' partial results differ. */
enum { K_ANY, K_FLOATY, K_ONEBIT, K_ONEHOLE, K_NONZERO, K_SPARSE, K_ALTERNATE, K_ZERO, K_MATRIX };

/* Operations tested per type: op, value kind. */
struct Case {
    upc_op_t op;
    int kind;
};
static const struct Case int_cases[] = {
    {UPC_ADD, K_ANY},          {UPC_MULT, K_ANY},       {UPC_MIN, K_ANY},
    {UPC_MAX, K_ANY},          {UPC_AND, K_ONEHOLE},    {UPC_OR, K_ONEBIT},
    {UPC_XOR, K_ANY},          {UPC_LOGAND, K_NONZERO}, {UPC_LOGAND, K_SPARSE},
    {UPC_LOGAND, K_ALTERNATE}, {UPC_LOGOR, K_ZERO},     {UPC_LOGOR, K_SPARSE},
    {UPC_LOGOR, K_ALTERNATE},  {UPC_FUNC, K_ANY},       {UPC_NONCOMM_FUNC, K_MATRIX}};
static const struct Case float_cases[] = {
    {UPC_ADD, K_ANY},        {UPC_MULT, K_FLOATY},     {UPC_MIN, K_ANY},          {UPC_MAX, K_ANY},
    {UPC_LOGAND, K_NONZERO}, {UPC_LOGAND, K_SPARSE},   {UPC_LOGAND, K_ALTERNATE}, {UPC_LOGOR, K_ZERO},
    {UPC_LOGOR, K_SPARSE},   {UPC_LOGOR, K_ALTERNATE}, {UPC_FUNC, K_ANY},         {UPC_NONCOMM_FUNC, K_MATRIX}};

/* The arrays: `shared [blk] T a[nelems]` starting `start` elements into an allocation, and the
 * result's thread. */
struct Shape {
    size_t nelems, blk, start;
    unsigned dst_thread;
};

/* Per type: its letters, C type, whether integer, matrix entry bits, bits of the type. */
#define INT_TYPES(X)                                                                                                   \
    X(C, signed char, 2, 8)                                                                                            \
    X(UC, unsigned char, 2, 8)                                                                                         \
    X(S, short, 4, 16)                                                                                                 \
    X(US, unsigned short, 4, 16)                                                                                       \
    X(I, int, 8, 32)                                                                                                   \
    X(UI, unsigned int, 8, 32)                                                                                         \
    X(L, long, 16, 64)                                                                                                 \
    X(UL, unsigned long, 16, 64)
#define FLOAT_TYPES(X)                                                                                                 \
    X(F, float, 5, 0)                                                                                                  \
    X(D, double, 8, 0)                                                                                                 \
    X(LD, long double, 12, 0)

/* Integer + and * wrap (the library computes them in 64-bit unsigned arithmetic). */
#define INT_OPS(code, type, B, BITS)                                                                                   \
    static type add_##code(type a, type b) { return (type)((uint64_t)a + (uint64_t)b); }                               \
    static type mul_##code(type a, type b) { return (type)((uint64_t)a * (uint64_t)b); }                               \
    static type mat_##code(type a, type b) { return (type)matmul((uint64_t)a, (uint64_t)b, B); }                       \
    static type value_##code(int kind, uint64_t seed, size_t i) {                                                      \
        const uint64_t x = mix(seed * 1000003u + i);                                                                   \
        switch (kind) {                                                                                                \
        case K_ONEHOLE: return (type) ~(1ull << (x % (BITS)));                                                         \
        case K_ONEBIT: return (type)(1ull << (x % (BITS)));                                                            \
        case K_NONZERO: return (type)(x % 100 + 1);                                                                    \
        case K_SPARSE: return (type)(x % 8 == 0 ? 0 : x % 100 + 1);                                                    \
        case K_ALTERNATE: return (type)(i % 2 == 0 ? 0 : x % 100 + 1);                                                 \
        case K_ZERO: return (type)0;                                                                                   \
        case K_MATRIX: return (type)random_matrix(x, B);                                                               \
        default: return (type)x;                                                                                       \
        }                                                                                                              \
    }
/* Floating values are small integers, halves or powers of two, so that every order of evaluation
 * gives the same exact result; matrices are packed into integers the type holds exactly. */
#define FLOAT_OPS(code, type, B, BITS)                                                                                 \
    static type add_##code(type a, type b) { return a + b; }                                                           \
    static type mul_##code(type a, type b) { return a * b; }                                                           \
    static type mat_##code(type a, type b) { return (type)matmul((uint64_t)a, (uint64_t)b, B); }                       \
    static type value_##code(int kind, uint64_t seed, size_t i) {                                                      \
        const uint64_t x = mix(seed * 1000003u + i);                                                                   \
        switch (kind) {                                                                                                \
        case K_FLOATY: {                                                                                               \
            static const type v[] = {1, -1, 2, -2, (type)0.5, (type)-0.5};                                             \
            return v[x % 6];                                                                                           \
        }                                                                                                              \
        case K_NONZERO: return (type)(x % 100 + 1) / 2;                                                                \
        case K_SPARSE: return x % 8 == 0 ? (type)0 : (type)(x % 100 + 1) / 2;                                          \
        case K_ALTERNATE: return i % 2 == 0 ? (type)0 : (type)(x % 100 + 1) / 2;                                       \
        case K_ZERO: return (type)0;                                                                                   \
        case K_MATRIX: return (type)random_matrix(x, B);                                                               \
        default: return (type)((int)(x % 201) - 100) / 2;                                                              \
        }                                                                                                              \
    }
INT_TYPES(INT_OPS)
FLOAT_TYPES(FLOAT_OPS)

#define SERIAL_OP(code, type)                                                                                          \
    static type serial_##code(upc_op_t op, type a, type b) {                                                           \
        switch (op) {                                                                                                  \
        case UPC_ADD: return add_##code(a, b);                                                                         \
        case UPC_MULT: return mul_##code(a, b);                                                                        \
        case UPC_MIN: return b < a ? b : a;                                                                            \
        case UPC_MAX: return b > a ? b : a;                                                                            \
        case UPC_LOGAND: return (type)(a != 0 && b != 0);                                                              \
        case UPC_LOGOR: return (type)(a != 0 || b != 0);                                                               \
        case UPC_FUNC: return add_##code(a, b);                                                                        \
        case UPC_NONCOMM_FUNC: return mat_##code(a, b);                                                                \
        default: return bitwise_##code(op, a, b);                                                                      \
        }                                                                                                              \
    }
#define BITWISE_INT(code, type, B, BITS)                                                                               \
    static type bitwise_##code(upc_op_t op, type a, type b) {                                                          \
        return op == UPC_AND ? (type)(a & b) : op == UPC_OR ? (type)(a | b) : (type)(a ^ b);                           \
    }
#define BITWISE_FLOAT(code, type, B, BITS)                                                                             \
    static type bitwise_##code(upc_op_t op, type a, type b) {                                                          \
        (void)op;                                                                                                      \
        (void)b;                                                                                                       \
        return a;                                                                                                      \
    }
INT_TYPES(BITWISE_INT)
FLOAT_TYPES(BITWISE_FLOAT)
#define SERIAL_OP_X(code, type, B, BITS) SERIAL_OP(code, type)
INT_TYPES(SERIAL_OP_X)
FLOAT_TYPES(SERIAL_OP_X)

static uint64_t g_seed = 1;

/* The reduction tests of one type over one shape: src and dst are allocations big enough for it. */
#define REDUCE_TESTS(code, type, B, BITS)                                                                              \
    static upc_shared_ptr_t elem_##code(upc_shared_ptr_t base, const struct Shape *s, size_t i) {                      \
        return upc_pts_add(base, (int64_t)(s->start + i), sizeof(type), s->blk, T);                                    \
    }                                                                                                                  \
    /* This thread's elements get their values (a write right before the call). */                                     \
    static void fill_##code(upc_shared_ptr_t base, const struct Shape *s, int kind, uint64_t seed) {                   \
        for (size_t i = 0; i < s->nelems; i++) {                                                                       \
            const upc_shared_ptr_t p = elem_##code(base, s, i);                                                        \
            if (upc_threadof(p) == ME) *(type *)__cvtaddr(p) = value_##code(kind, seed, i);                            \
        }                                                                                                              \
    }                                                                                                                  \
    static type (*func_##code(upc_op_t op))(type, type) {                                                              \
        return op == UPC_FUNC ? add_##code : op == UPC_NONCOMM_FUNC ? mat_##code : NULL;                               \
    }                                                                                                                  \
    static void reduce_##code(upc_shared_ptr_t src, upc_shared_ptr_t dst, const struct Shape *s, upc_op_t op,          \
                              int kind) {                                                                              \
        const uint64_t seed = g_seed++;                                                                                \
        fill_##code(src, s, kind, seed);                                                                               \
        const upc_shared_ptr_t d = on(dst, s->dst_thread);                                                             \
        upc_all_reduce##code(d, elem_##code(src, s, 0), op, s->nelems, s->blk, func_##code(op),                        \
                             UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC);                                                        \
        type expect = value_##code(kind, seed, 0);                                                                     \
        for (size_t i = 1; i < s->nelems; i++) expect = serial_##code(op, expect, value_##code(kind, seed, i));        \
        type got;                                                                                                      \
        upc_memget(&got, d, sizeof got);                                                                               \
        if (got != expect) {                                                                                           \
            fprintf(stderr,                                                                                            \
                    "thread %u: upc_all_reduce" #code " op %d kind %d nelems %zu blk %zu start %zu: got %Lg, "         \
                    "expected %Lg\n",                                                                                  \
                    ME, op, kind, s->nelems, s->blk, s->start, (long double)got, (long double)expect);                 \
            fflush(stderr);                                                                                            \
            upc_global_exit(1);                                                                                        \
        }                                                                                                              \
    }                                                                                                                  \
    static void prefix_##code(upc_shared_ptr_t src, upc_shared_ptr_t dst, const struct Shape *s,                       \
                              const struct Shape *d, upc_op_t op, int kind) {                                          \
        const uint64_t seed = g_seed++;                                                                                \
        fill_##code(src, s, kind, seed);                                                                               \
        upc_all_prefix_reduce##code(elem_##code(dst, d, 0), elem_##code(src, s, 0), op, s->nelems, s->blk,             \
                                    func_##code(op), UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC);                                \
        type acc = 0;                                                                                                  \
        for (size_t i = 0; i < s->nelems; i++) {                                                                       \
            const type v = value_##code(kind, seed, i);                                                                \
            acc = i == 0 ? v : serial_##code(op, acc, v);                                                              \
            const upc_shared_ptr_t p = elem_##code(dst, d, i);                                                         \
            if (upc_threadof(p) != ME) continue;                                                                       \
            const type got = *(type *)__cvtaddr(p);                                                                    \
            if (got != acc) {                                                                                          \
                fprintf(stderr,                                                                                        \
                        "thread %u: upc_all_prefix_reduce" #code " op %d nelems %zu blk %zu: element %zu is %Lg, "     \
                        "expected %Lg\n",                                                                              \
                        ME, op, s->nelems, s->blk, i, (long double)got, (long double)acc);                             \
                fflush(stderr);                                                                                        \
                upc_global_exit(1);                                                                                    \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    static void type_tests_##code(upc_shared_ptr_t src, upc_shared_ptr_t dst, upc_shared_ptr_t out,                    \
                                  const struct Shape *s, const struct Case *cases, size_t ncases) {                    \
        for (size_t k = 0; k < ncases; k++) reduce_##code(src, dst, s, cases[k].op, cases[k].kind);                    \
        prefix_##code(src, out, s, s, UPC_ADD, K_ANY);                                                                 \
        prefix_##code(src, out, s, s, UPC_NONCOMM_FUNC, K_MATRIX);                                                     \
    }
#define REDUCE_TESTS_X(code, type, B, BITS) REDUCE_TESTS(code, type, B, BITS)
INT_TYPES(REDUCE_TESTS_X)
FLOAT_TYPES(REDUCE_TESTS_X)

/* Elements an allocation needs for a shape (16-byte elements, blk 0 on one thread). */
static upc_shared_ptr_t alloc_for(const struct Shape *s) {
    if (s->blk == 0) return upc_all_alloc(T, (s->start + s->nelems) * 16);
    const size_t blocks = (s->start + s->nelems + s->blk - 1) / s->blk + T;
    return upc_all_alloc(blocks, s->blk * 16);
}

static void reductions(void) {
    TEST_SECTION("49-52: reduce and prefix_reduce, 11 types, every operator, several shapes");
    const struct Shape shapes[] = {
        {T * 7 + 3, 1, 0, 0},        /* cyclic, every thread, several courses */
        {97, 5, 12, T - 1},          /* blocked, from block 2 (thread 2 % T) at phase 2, uneven last course */
        {3, 1, 0, T - 1},            /* three threads own elements; dst's thread may own none */
        {4, 8, 3, T / 2},            /* inside one block: one thread owns all */
        {50, 0, 0, T > 1 ? 1 : 0},   /* indefinite block size */
        {T * 3, 3, 0, T > 1 ? 1 : 0} /* one block per thread */
    };
    upc_shared_ptr_t dst = upc_all_alloc(T, 16);
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const struct Shape *s = &shapes[k];
        upc_shared_ptr_t src = alloc_for(s), out = alloc_for(s);
        /* blk 0: the array sits on the thread of the allocation's pointer, moved to thread T-1. */
        if (s->blk == 0) src = on(src, T - 1), out = on(out, T - 1);
#define RUN_INT(code, type, B, BITS)                                                                                   \
    type_tests_##code(src, dst, out, s, int_cases, sizeof int_cases / sizeof int_cases[0]);
#define RUN_FLOAT(code, type, B, BITS)                                                                                 \
    type_tests_##code(src, dst, out, s, float_cases, sizeof float_cases / sizeof float_cases[0]);
        INT_TYPES(RUN_INT)
        FLOAT_TYPES(RUN_FLOAT)
        UPC_BARRIER();
        upc_all_free(on(src, 0));
        upc_all_free(on(out, 0));
    }

    TEST_SECTION("52: prefix_reduce into a differently aligned dst");
    {
        const struct Shape s = {40, 3, 0, 0}, d = {40, 3, 2, 0};
        upc_shared_ptr_t src = alloc_for(&s), out = alloc_for(&d);
        prefix_I(src, out, &s, &d, UPC_ADD, K_ANY);
        prefix_I(src, out, &s, &d, UPC_NONCOMM_FUNC, K_MATRIX);
        UPC_BARRIER();
        upc_all_free(src);
        upc_all_free(out);
    }

    TEST_SECTION("50, 52: NONCOMM_FUNC over more courses than the scratch holds at once");
    {
        const struct Shape s = {T * 3000 + 5, 1, 0, 0};
        upc_shared_ptr_t src = alloc_for(&s), out = alloc_for(&s);
        reduce_LD(src, dst, &s, UPC_NONCOMM_FUNC, K_MATRIX);
        prefix_LD(src, out, &s, &s, UPC_NONCOMM_FUNC, K_MATRIX);
        reduce_I(src, dst, &s, UPC_NONCOMM_FUNC, K_MATRIX);
        UPC_BARRIER();
        upc_all_free(src);
        upc_all_free(out);
    }
    upc_all_free(dst);
}

/* ---- upc_all_sort ----------------------------------------------------------------------------------- */

struct Rec {
    int key, index;
};
static int by_key(upc_shared_ptr_t a, upc_shared_ptr_t b) {
    struct Rec x, y;
    upc_memget(&x, a, sizeof x);
    upc_memget(&y, b, sizeof y);
    return (x.key > y.key) - (x.key < y.key);
}
static int by_key_then_index(const void *a, const void *b) {
    const struct Rec *x = a, *y = b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    return (x->index > y->index) - (x->index < y->index);
}

/* Sorts `shared [blk] struct Rec A[n]` (keys with many repeats); the result must be the stable order,
 * which is the order by (key, original index). */
static void sort_case(size_t n, size_t blk, upc_flag_t f, uint64_t seed) {
    upc_shared_ptr_t a = blk ? upc_all_alloc((n + blk - 1) / blk + T, blk * sizeof(struct Rec))
                             : upc_all_alloc(T, n * sizeof(struct Rec) + 1);
    if (!blk) a = on(a, T - 1);
    struct Rec *expect = malloc(n * sizeof *expect);
    CHECK(expect != NULL);
    for (size_t i = 0; i < n; i++) {
        expect[i].key = (int)(mix(seed + i) % (n / 3 + 1)) - (int)(n / 6);
        expect[i].index = (int)i;
        const upc_shared_ptr_t p = upc_pts_add(a, (int64_t)i, sizeof(struct Rec), blk, T);
        if (upc_threadof(p) == ME) memcpy(__cvtaddr(p), &expect[i], sizeof expect[i]);
    }
    ready(f);
    upc_all_sort(a, sizeof(struct Rec), n, blk, by_key, f);
    settled(f);
    qsort(expect, n, sizeof *expect, by_key_then_index);
    for (size_t i = 0; i < n; i++) {
        const upc_shared_ptr_t p = upc_pts_add(a, (int64_t)i, sizeof(struct Rec), blk, T);
        if (upc_threadof(p) != ME && !out_allsync(f)) continue;
        struct Rec got;
        upc_memget(&got, p, sizeof got);
        if (got.key != expect[i].key || got.index != expect[i].index) {
            fprintf(stderr, "thread %u: upc_all_sort n %zu blk %zu: element %zu is (%d, %d), expected (%d, %d)\n", ME,
                    n, blk, i, got.key, got.index, expect[i].key, expect[i].index);
            fflush(stderr);
            upc_global_exit(1);
        }
    }
    free(expect);
    UPC_BARRIER();
    upc_all_free(on(a, 0));
}

static void sorting(void) {
    TEST_SECTION("upc_all_sort: cyclic, blocked, indefinite, one element");
    sort_case(T * 50 + 7, 1, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, 501);
    sort_case(333, 10, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, 502);
    sort_case(200, 0, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, 503);
    sort_case(1, 4, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC, 504);
}

/* ---- 53: synchronisation modes ---------------------------------------------------------------------- */

/* Reduce and prefix_reduce of ints over each thread's block of `area` (blocks of `per` ints). */
static void sync_reduce(upc_shared_ptr_t area, upc_shared_ptr_t dst, size_t per, upc_flag_t f, uint64_t seed,
                        int prefix) {
    const size_t n = per * T - 3;
    const upc_shared_ptr_t src = on(area, 0);
    for (size_t i = 0; i < per; i++) ((int *)mine(area))[i] = (int)(mix(seed + ME * per + i) % 1000);
    const unsigned root = (unsigned)(seed % T);
    if (prefix) memset(mine(dst), 0xEE, per * sizeof(int));
    ready(f);
    if (prefix)
        upc_all_prefix_reduceI(on(dst, 0), src, UPC_ADD, n, per, NULL, f);
    else
        upc_all_reduceI(on(dst, root), src, UPC_ADD, n, per, NULL, f);
    if (!out_nosync(f)) memset(mine(area), 0x55, per * sizeof(int)); /* right after: own source is free */
    settled(f);
    int acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += (int)(mix(seed + i) % 1000);
        if (prefix && i / per == ME) CHECK_EQ(((int *)mine(dst))[i % per], acc);
    }
    if (!prefix && (ME == root || out_allsync(f))) CHECK_EQ(__getsi2(on(dst, root)), acc);
    if (prefix && out_allsync(f) && T > 1) {
        const unsigned o = (ME + 1) % T;
        if ((o + 1) * per <= n) {
            int sum = 0;
            for (size_t i = 0; i < (o + 1) * per; i++) sum += (int)(mix(seed + i) % 1000);
            CHECK_EQ((int)__getsi2(upc_pts_add(on(dst, o), (int64_t)(per - 1), sizeof(int), 0, T)), sum);
        }
    }
    UPC_BARRIER(); /* dst's thread rewrites its block next */
}

static int int_less(upc_shared_ptr_t a, upc_shared_ptr_t b) {
    const int x = (int)__getsi2(a), y = (int)__getsi2(b);
    return (x > y) - (x < y);
}
static int int_cmp(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void sync_sort_case(upc_shared_ptr_t area, size_t per, upc_flag_t f, uint64_t seed) {
    const size_t n = per * T;
    int *expect = malloc(n * sizeof(int));
    CHECK(expect != NULL);
    for (size_t i = 0; i < n; i++) expect[i] = (int)(mix(seed + i) % 50);
    for (size_t i = 0; i < per; i++) ((int *)mine(area))[i] = expect[ME * per + i];
    ready(f);
    upc_all_sort(on(area, 0), sizeof(int), n, per, int_less, f);
    settled(f);
    qsort(expect, n, sizeof(int), int_cmp);
    for (size_t i = 0; i < per; i++) CHECK_EQ(((int *)mine(area))[i], expect[ME * per + i]);
    if (out_allsync(f) && T > 1) {
        const unsigned o = (ME + 1) % T;
        CHECK_EQ((int)__getsi2(on(area, o)), expect[o * per]);
    }
    free(expect);
    UPC_BARRIER(); /* the next case rewrites every block */
}

static void sync_modes(void) {
    TEST_SECTION("53: every collective x IN/OUT {NO,MY,ALL}SYNC, writes right before and after");
    const upc_flag_t ins[] = {UPC_IN_NOSYNC, UPC_IN_MYSYNC, UPC_IN_ALLSYNC};
    const upc_flag_t outs[] = {UPC_OUT_NOSYNC, UPC_OUT_MYSYNC, UPC_OUT_ALLSYNC};
    const size_t n = 1100; /* above the runtime's 1 KiB asynchronous put */
    const size_t per = 64; /* ints per thread for the reductions and sort */
    upc_shared_ptr_t src = upc_all_alloc(T, n * T + 1), dst = upc_all_alloc(T, n * T + 1);
    upc_shared_ptr_t perm = upc_all_alloc(T, sizeof(int));
    uint64_t seed = 7000;
    for (int i = 0; i < 3; i++)
        for (int o = 0; o < 3; o++) {
            const upc_flag_t f = ins[i] | outs[o];
            const unsigned root = (unsigned)(seed % T);
            broadcast_case(src, dst, n, root, f, seed++);
            scatter_case(src, dst, n, root, f, seed++);
            gather_case(src, dst, n, root, f, seed++);
            gather_all_case(src, dst, n, f, seed++);
            exchange_case(src, dst, n, f, seed++);
            permute_case(src, dst, perm, n, f, seed++);
            sync_reduce(src, dst, per, f, seed++, 0);
            sync_reduce(src, dst, per, f, seed++, 1);
            sync_sort_case(src, per, f, seed++);
        }
    upc_all_free(src);
    upc_all_free(dst);
    upc_all_free(perm);
}

/* Collectives back to back with no synchronisation at all: the runtime's own handshakes must keep
 * a fast thread from overwriting scratch that a slow one still reads. */
static void back_to_back(void) {
    TEST_SECTION("53: 200 NOSYNC reductions and broadcasts back to back");
    upc_shared_ptr_t src = upc_all_alloc(T, 64 * sizeof(long)), dst = upc_all_alloc(T, 64 * sizeof(long));
    upc_shared_ptr_t res = upc_all_alloc(T, 200 * sizeof(long)), res2 = upc_all_alloc(T, 200 * sizeof(long));
    for (size_t i = 0; i < 64; i++) ((long *)mine(src))[i] = (long)(ME * 64 + i);
    UPC_BARRIER();
    const upc_flag_t none = UPC_IN_NOSYNC | UPC_OUT_NOSYNC;
    for (int k = 0; k < 200; k++) {
        const unsigned root = (unsigned)k % T;
        /* Atomic path (ADD on long), then software path (commutative FUNC), then ordered. */
        upc_all_reduceL(upc_pts_add(on(res, root), k, sizeof(long), 0, T), on(src, 0), UPC_ADD, 64 * T - (size_t)k % 5,
                        64, NULL, none);
        upc_all_reduceL(upc_pts_add(on(res2, root), k, sizeof(long), 0, T), on(src, 0), UPC_FUNC,
                        64 * T - (size_t)k % 5, 64, add_L, none);
        if (k % 10 == 0) upc_all_broadcast(on(dst, 0), upc_pts_add(on(src, root), 8, 1, 0, T), 16, none);
    }
    UPC_BARRIER();
    for (int k = 0; k < 200; k++) {
        if ((unsigned)k % T != ME) continue;
        const long n = 64 * (long)T - k % 5;
        CHECK_EQ(((long *)mine(res))[k], n * (n - 1) / 2);
        CHECK_EQ(((long *)mine(res2))[k], n * (n - 1) / 2);
    }
    upc_all_free(src);
    upc_all_free(dst);
    upc_all_free(res);
    upc_all_free(res2);
}

int upc_main(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    T = (unsigned)THREADS;
    ME = (unsigned)MYTHREAD;
    upc_coll_init();
    data_movement();
    reductions();
    sorting();
    sync_modes();
    back_to_back();
    TEST_SECTION("done");
    return 0;
}
