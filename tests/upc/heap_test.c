/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared heap as generated code uses it (docs/UPC.md's cases 22-30): upc_all_alloc, concurrent
 * upc_global_alloc, upc_alloc, size 0 and NULL, cross-thread frees, random allocate/free cycles
 * whose coalescing gives the largest block back, every thread extending the heaps at once, a large
 * local extension, and (mode "exhaust", run with a small heap) running out of memory with the
 * global and local regions never overlapping. Modes "double-free" and "bad-free" end the job with
 * the allocator's fatal error (run by run_exit_test.sh).
 *
 * Shared memory is reached only through the compiler interface (__put…2/__get…2, __putblk3,
 * __getblk3, pointer arithmetic with upc_pts_add), as a UPC compiler's code would. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "upc_test.h"

static unsigned T, ME;

/* ---- helpers --------------------------------------------------------------------------------- */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* (shared [] char *)p + off: bytes further on the same thread. */
static upc_shared_ptr_t at(upc_shared_ptr_t p, uint64_t off) { return upc_pts_add(p, (int64_t)off, 1, 0, T); }
/* Element i of a `shared [1]` array of size-byte elements: thread i % THREADS. A upc_global_alloc
 * of (nblocks, size) is such an array; thread t's share starts at element t. */
static upc_shared_ptr_t elem(upc_shared_ptr_t p, uint64_t i, size_t size) {
    return upc_pts_add(p, (int64_t)i, size, 1, T);
}
static int is_null(upc_shared_ptr_t p) { return upc_pts_is_null(p); }

/* A board of words per thread, on that thread: pointers and ranges travel through it. */
#define BOARD_WORDS 1024
static upc_shared_ptr_t board;
static upc_shared_ptr_t bword(unsigned t, unsigned i) { return at(elem(board, t, BOARD_WORDS * 8), (uint64_t)i * 8); }

/* A byte pattern that differs by seed and by position (so a block shifted onto another fails). */
static unsigned char pattern(uint64_t seed, uint64_t j) {
    return (unsigned char)((seed * 0x9E3779B97F4A7C15ull >> 56) + j * 131 + (j >> 9) * 7);
}
#define CHUNK 65536
static unsigned char chunk[CHUNK], back[CHUNK];

static void fill(upc_shared_ptr_t p, uint64_t n, uint64_t seed) {
    for (uint64_t done = 0; done < n;) {
        const uint64_t len = n - done < CHUNK ? n - done : CHUNK;
        for (uint64_t j = 0; j < len; j++) chunk[j] = pattern(seed, done + j);
        __putblk3(at(p, done), chunk, len);
        done += len;
    }
}

static void verify(upc_shared_ptr_t p, uint64_t n, uint64_t seed, int line) {
    for (uint64_t done = 0; done < n;) {
        const uint64_t len = n - done < CHUNK ? n - done : CHUNK;
        __getblk3(back, at(p, done), len);
        for (uint64_t j = 0; j < len; j++) {
            if (back[j] != pattern(seed, done + j)) {
                fprintf(stderr,
                        "thread %u: heap_test.c:%d: block (thread %u, offset %llu) byte %llu of %llu overwritten\n", ME,
                        line, (unsigned)upc_threadof(p), (unsigned long long)upc_addrfield(p),
                        (unsigned long long)(done + j), (unsigned long long)n);
                fflush(stderr);
                upc_global_exit(1);
            }
        }
        done += len;
    }
}
#define VERIFY(p, n, seed) verify((p), (n), (seed), __LINE__)

/* Big blocks: the first and last 4 KiB and one word per MiB, enough to catch overlap and cheap. */
static void fill_sparse(upc_shared_ptr_t p, uint64_t n, uint64_t seed) {
    fill(p, 4096, seed);
    fill(at(p, n - 4096), 4096, seed + 1);
    for (uint64_t o = 1u << 20; o + 8 <= n - 4096; o += 1u << 20) __putdi2(at(p, o), seed ^ o);
}
static void verify_sparse(upc_shared_ptr_t p, uint64_t n, uint64_t seed) {
    VERIFY(p, 4096, seed);
    VERIFY(at(p, n - 4096), 4096, seed + 1);
    for (uint64_t o = 1u << 20; o + 8 <= n - 4096; o += 1u << 20) CHECK(__getdi2(at(p, o)) == (seed ^ o));
}

/* [a, a + an) and [b, b + bn) do not meet. */
static int disjoint(uint64_t a, uint64_t an, uint64_t b, uint64_t bn) { return a + an <= b || b + bn <= a; }

#define HEADER 16 /* the allocator's block header: a block starts 16 bytes before its pointer */

/* ---- case 27 -------------------------------------------------------------------------------- */
#define SLOTS 32
struct slot {
    upc_shared_ptr_t p;
    uint64_t n; /* bytes written and checked */
    uint64_t seed;
    unsigned where; /* the thread whose part was written */
    size_t nbytes;  /* global: the element size */
};

static void slot_verify_free(struct slot *s) {
    upc_shared_ptr_t data = s->nbytes ? elem(s->p, s->where, s->nbytes) : s->p;
    VERIFY(data, s->n, s->seed);
    upc_free(s->p);
    s->p.bits = 0;
}

static void coalescing(unsigned cycles) {
    TEST_SECTION("27: random allocate/free cycles; coalescing gives the largest block back");
    /* The first 4 MiB block of each heap is its first superblock; after every small block has
     * come and gone it must be whole again, so the same request gets the same block. */
    const size_t big = (4u << 20) - HEADER;
    const upc_shared_ptr_t probe = upc_alloc(big);
    CHECK(!is_null(probe));
    CHECK_EQ(upc_threadof(probe), ME);
    upc_free(probe);
    upc_shared_ptr_t gprobe = {0};
    if (ME == 0) {
        gprobe = upc_global_alloc(T, big);
        CHECK(!is_null(gprobe));
        upc_free(gprobe);
    }
    UPC_BARRIER();

    /* Small blocks until one lands in the probe's superblock, so that it is surely split (the
     * alignment gaps the heaps also own would otherwise serve the whole test). */
    enum { MAXSPLIT = 2048 };
    static upc_shared_ptr_t split[MAXSPLIT];
    unsigned nsplit = 0;
    for (unsigned g = 0; g < 2; g++) {
        if (g == 1 && ME != 0) break;
        const uint64_t lo = upc_addrfield(g ? gprobe : probe) - HEADER;
        for (;;) {
            CHECK(nsplit < MAXSPLIT);
            const upc_shared_ptr_t p = g ? upc_global_alloc(T, 4096 - HEADER) : upc_alloc(4096 - HEADER);
            CHECK(!is_null(p));
            split[nsplit++] = p;
            if (upc_addrfield(p) >= lo && upc_addrfield(p) < lo + (4u << 20)) break;
        }
    }
    UPC_BARRIER();

    struct slot slots[SLOTS];
    memset(slots, 0, sizeof slots);
    uint64_t serial = (uint64_t)ME << 40;
    for (unsigned i = 0; i < cycles; i++) {
        struct slot *s = &slots[rnd() % SLOTS];
        if (!is_null(s->p)) {
            slot_verify_free(s);
            continue;
        }
        s->seed = ++serial;
        if (rnd() % 16 == 0) {
            /* Global: thread ME's share of a shared [nbytes] char[nblocks * nbytes]; one thread's
             * share is written, a different one each time. */
            const size_t nblocks = 1 + (size_t)(rnd() % (2 * T)), nbytes = 1 + (size_t)(rnd() % 1024);
            s->p = upc_global_alloc(nblocks, nbytes);
            CHECK(!is_null(s->p));
            CHECK_EQ(upc_threadof(s->p), 0);
            CHECK_EQ(upc_phaseof(s->p), 0);
            s->nbytes = nbytes;
            s->where = (unsigned)(rnd() % T);
            s->n = (uint64_t)((nblocks + T - 1) / T) * nbytes;
            fill(elem(s->p, s->where, nbytes), s->n, s->seed);
        } else {
            /* Local: sizes spread over 1 B .. 8 KiB, small ones most often. */
            const uint64_t n = 1 + rnd() % (1u << (rnd() % 14));
            s->p = upc_alloc(n);
            CHECK(!is_null(s->p));
            CHECK_EQ(upc_threadof(s->p), ME);
            CHECK_EQ(upc_addrfield(s->p) % 16, 0);
            s->nbytes = 0;
            s->n = n;
            fill(s->p, n, s->seed);
        }
    }
    for (unsigned k = 0; k < SLOTS; k++)
        if (!is_null(slots[k].p)) slot_verify_free(&slots[k]);
    /* The splitters go in a shuffled order, so that merges happen in every order. */
    for (unsigned i = nsplit; i > 1; i--) {
        const unsigned j = (unsigned)(rnd() % i);
        const upc_shared_ptr_t x = split[i - 1];
        split[i - 1] = split[j];
        split[j] = x;
    }
    for (unsigned i = 0; i < nsplit; i++) upc_free(split[i]);

    const upc_shared_ptr_t again = upc_alloc(big);
    CHECK(again.bits == probe.bits);
    upc_free(again);
    UPC_BARRIER();
    if (ME == 0) {
        const upc_shared_ptr_t gagain = upc_global_alloc(T, big);
        CHECK(gagain.bits == gprobe.bits);
        upc_free(gagain);
    }
    UPC_BARRIER();
}

/* ---- cases 22, 24, 25 ------------------------------------------------------------------------ */
static void all_alloc(void) {
    TEST_SECTION("22: upc_all_alloc gives every thread the same pointer; each writes its block");
    const size_t nbytes = 1000;
    const upc_shared_ptr_t p = upc_all_alloc(T, nbytes);
    CHECK(!is_null(p));
    CHECK_EQ(upc_threadof(p), 0);
    CHECK_EQ(upc_phaseof(p), 0);
    __putdi2(bword(0, ME), p.bits);
    const upc_shared_ptr_t mine = elem(p, ME, nbytes);
    CHECK_EQ(upc_threadof(mine), ME);
    fill(mine, nbytes, 7000 + ME);
    UPC_BARRIER();
    if (ME == 0)
        for (unsigned t = 0; t < T; t++) CHECK(__getdi2(bword(0, t)) == p.bits);
    for (unsigned k = 0; k < T; k++) VERIFY(elem(p, (ME + k) % T, nbytes), nbytes, 7000 + (ME + k) % T);
    UPC_BARRIER();
    upc_all_free(p);

    /* An uneven number of blocks: shared [100] char[(2 THREADS + 1) * 100], element by element. */
    const size_t nblocks = 2 * T + 1, b = 100;
    const upc_shared_ptr_t q = upc_all_alloc(nblocks, b);
    CHECK(!is_null(q));
    if (ME == T - 1)
        for (size_t i = 0; i < nblocks * b; i++) __putqi2(upc_pts_add(q, (int64_t)i, 1, b, T), (uint8_t)(i * 3 + 1));
    UPC_BARRIER();
    if (ME == 0)
        for (size_t i = 0; i < nblocks * b; i++) {
            const upc_shared_ptr_t e = upc_pts_add(q, (int64_t)i, 1, b, T);
            CHECK_EQ(upc_threadof(e), (i / b) % T);
            CHECK_EQ(__getqi2(e), (uint8_t)(i * 3 + 1));
        }
    UPC_BARRIER();
    upc_all_free(q);
}

static void small_cases(void) {
    TEST_SECTION("24, 25: upc_alloc has the caller's affinity; size 0, NULL and impossible sizes");
    for (unsigned i = 0; i < 20; i++) {
        const size_t n = (size_t)1 << i;
        const upc_shared_ptr_t p = upc_alloc(n);
        CHECK(!is_null(p));
        CHECK_EQ(upc_threadof(p), ME);
        CHECK_EQ(upc_phaseof(p), 0);
        CHECK_EQ(upc_addrfield(p) % 16, 0);
        fill(p, n, n);
        VERIFY(p, n, n);
        upc_free(p);
    }
    CHECK(is_null(upc_alloc(0)));
    CHECK(is_null(upc_global_alloc(0, 16)));
    CHECK(is_null(upc_global_alloc(16, 0)));
    CHECK(is_null(upc_all_alloc(0, 8)));
    CHECK(is_null(upc_all_alloc(8, 0)));
    upc_shared_ptr_t null = {0};
    upc_free(null);
    upc_all_free(null);
    CHECK(is_null(upc_alloc((size_t)-1)));
    CHECK(is_null(upc_alloc((size_t)1 << 40)));
    CHECK(is_null(upc_global_alloc((size_t)-1, (size_t)-1)));
    CHECK(is_null(upc_global_alloc((size_t)T, (size_t)1 << 40)));
    UPC_BARRIER();
}

/* ---- case 26 -------------------------------------------------------------------------------- */
static void cross_free(void) {
    TEST_SECTION("26: a thread frees another's local and global blocks; the memory is reused");
    const unsigned right = (ME + 1) % T, left = (ME + T - 1) % T;
    const upc_shared_ptr_t l = upc_alloc(1000);
    const upc_shared_ptr_t g = upc_global_alloc(T, 1000);
    CHECK(!is_null(l) && !is_null(g));
    fill(l, 1000, 100 + ME);
    fill(elem(g, right, 1000), 1000, 200 + ME);
    __putdi2(bword(ME, 0), l.bits);
    __putdi2(bword(ME, 1), g.bits);
    UPC_BARRIER();
    /* My left neighbour's blocks: its local block is on its thread, its global one everywhere. */
    const upc_shared_ptr_t ll = {__getdi2(bword(left, 0))}, lg = {__getdi2(bword(left, 1))};
    CHECK_EQ(upc_threadof(ll), left);
    VERIFY(ll, 1000, 100 + left);
    VERIFY(elem(lg, ME, 1000), 1000, 200 + left);
    upc_free(ll);
    upc_free(lg);
    UPC_BARRIER();
    /* My local heap is as it was before l: the buddy allocator gives the same block again. */
    const upc_shared_ptr_t l2 = upc_alloc(1000);
    CHECK(l2.bits == l.bits);
    const upc_shared_ptr_t g2 = upc_global_alloc(T, 1000);
    CHECK(!is_null(g2));
    fill(elem(g2, ME, 1000), 1000, 300 + ME);
    VERIFY(elem(g2, ME, 1000), 1000, 300 + ME);
    upc_free(l2);
    upc_free(g2);
    UPC_BARRIER();
}

/* ---- cases 23, 29 ----------------------------------------------------------------------------- */
static void concurrent_extension(void) {
    TEST_SECTION("23, 29: every thread extends the global heap and its local heap at once");
    /* 3 MiB + header needs a whole 4 MiB superblock: every call extends a heap, and the global
     * and local extensions race on the water-mark word (the CSWAP retry path). */
    const uint64_t n = 3u << 20;
    enum { K = 2 };
    upc_shared_ptr_t g[K], l[K];
    UPC_BARRIER();
    for (unsigned k = 0; k < K; k++) {
        g[k] = upc_global_alloc(T, n);
        l[k] = upc_alloc(n);
        CHECK(!is_null(g[k]) && !is_null(l[k]));
        CHECK_EQ(upc_threadof(l[k]), ME);
        __putdi2(bword(ME, k), g[k].bits);
        __putdi2(bword(ME, K + k), l[k].bits);
        fill_sparse(l[k], n, 1000 + ME * K + k);
        /* a signature at both ends of every thread's share */
        for (unsigned t = 0; t < T; t++) {
            __putdi2(elem(g[k], t, n), 5000 + ME * K + k);
            __putdi2(at(elem(g[k], t, n), n - 8), 6000 + ME * K + k);
        }
    }
    UPC_BARRIER();
    uint64_t gaddr[K * 1024];
    for (unsigned t = 0; t < T; t++)
        for (unsigned k = 0; k < K; k++) {
            const upc_shared_ptr_t p = {__getdi2(bword(t, k))};
            gaddr[t * K + k] = upc_addrfield(p);
            CHECK(__getdi2(elem(p, ME, n)) == 5000 + t * K + k);
            CHECK(__getdi2(at(elem(p, ME, n), n - 8)) == 6000 + t * K + k);
        }
    for (unsigned i = 0; i < T * K; i++) {
        for (unsigned j = i + 1; j < T * K; j++)
            CHECK(disjoint(gaddr[i] - HEADER, n + HEADER, gaddr[j] - HEADER, n + HEADER));
        for (unsigned k = 0; k < K; k++)
            CHECK(disjoint(gaddr[i] - HEADER, n + HEADER, upc_addrfield(l[k]) - HEADER, n + HEADER));
    }
    for (unsigned k = 0; k < K; k++) verify_sparse(l[k], n, 1000 + ME * K + k);
    UPC_BARRIER();
    /* Globals freed by another thread than their allocator. */
    const unsigned right = (ME + 1) % T;
    for (unsigned k = 0; k < K; k++) {
        upc_free((upc_shared_ptr_t){__getdi2(bword(right, k))});
        upc_free(l[k]);
    }
    UPC_BARRIER();
}

/* ---- case 30 ---------------------------------------------------------------------------------- */
static void large_local(void) {
    TEST_SECTION("30: a large upc_alloc extends the local heap; the global heap stays clear of it");
    const uint64_t n = 20u << 20;
    const upc_shared_ptr_t big = upc_alloc(n);
    CHECK(!is_null(big));
    CHECK_EQ(upc_threadof(big), ME);
    fill_sparse(big, n, 4242 + ME);
    __putdi2(bword(ME, 0), big.bits);
    UPC_BARRIER();
    upc_shared_ptr_t g = {0};
    if (ME == 0) {
        g = upc_global_alloc(T, 1u << 20);
        CHECK(!is_null(g));
        __putdi2(bword(0, 1), g.bits);
    }
    UPC_BARRIER();
    g.bits = __getdi2(bword(0, 1));
    CHECK(disjoint(upc_addrfield(g) - HEADER, (1u << 20) + HEADER, upc_addrfield(big) - HEADER, n + HEADER));
    fill_sparse(elem(g, ME, 1u << 20), 1u << 20, 77 + ME);
    verify_sparse(big, n, 4242 + ME);
    verify_sparse(elem(g, ME, 1u << 20), 1u << 20, 77 + ME);
    UPC_BARRIER();
    upc_free(big);
    if (ME == 0) upc_free(g);
    UPC_BARRIER();
}

/* ---- case 28 (mode exhaust, UPC_SHARED_HEAP_SIZE=16M) ----------------------------------------- */
#define MAXB 256
static void exhaust_round(upc_shared_ptr_t *locals, unsigned *nlocal, upc_shared_ptr_t *globals, unsigned *nglobal,
                          uint64_t size) {
    /* Thread 0 alternates global and local requests; every thread takes its local heap until it
     * can grow no more. */
    int local_done = 0, global_done = ME != 0;
    *nlocal = *nglobal = 0;
    while (!local_done || !global_done) {
        if (!local_done) {
            const upc_shared_ptr_t p = upc_alloc(size);
            if (is_null(p))
                local_done = 1;
            else {
                CHECK(*nlocal < MAXB);
                CHECK_EQ(upc_threadof(p), ME);
                locals[(*nlocal)++] = p;
            }
        }
        if (!global_done) {
            const upc_shared_ptr_t p = upc_global_alloc(T, size);
            if (is_null(p))
                global_done = 1;
            else {
                CHECK(*nglobal < MAXB);
                globals[(*nglobal)++] = p;
            }
        }
    }
}

static void exhaust(void) {
    TEST_SECTION("28: out of shared memory: NULL, and the global and local regions never meet");
    const uint64_t size = (256u << 10) - HEADER; /* exactly a 256 KiB block */
    static upc_shared_ptr_t locals[MAXB], globals[MAXB];
    unsigned nlocal, nglobal;
    const upc_shared_ptr_t lock = upc_all_lock_alloc();
    CHECK(!is_null(lock));
    UPC_BARRIER();
    exhaust_round(locals, &nlocal, globals, &nglobal, size);
    UPC_BARRIER();
    /* Nothing larger fits either, once every thread is done. */
    CHECK(is_null(upc_alloc(1u << 20)));
    CHECK(is_null(upc_global_alloc(T, 1u << 20)));
    for (unsigned i = 0; i < nlocal; i++) fill_sparse(locals[i], size, ((uint64_t)ME << 32) + i);
    for (unsigned i = 0; i < nglobal; i++)
        for (unsigned t = 0; t < T; t++) __putdi2(elem(globals[i], t, size), 0xABC00000u + i);
    __putdi2(bword(ME, 0), nlocal);
    __putdi2(bword(ME, 1), nglobal);
    for (unsigned i = 0; i < nlocal; i++) __putdi2(bword(ME, 2 + i), locals[i].bits);
    for (unsigned i = 0; i < nglobal; i++) __putdi2(bword(ME, 2 + MAXB + i), globals[i].bits);
    UPC_BARRIER();

    /* With the heap full, locks still work: their queue links are preallocated (docs/UPC.md,
     * *Locks*). */
    for (unsigned i = 0; i < 20; i++) {
        upc_lock(lock);
        __putdi2(bword(0, 2 * MAXB + 10), __getdi2(bword(0, 2 * MAXB + 10)) + 1);
        upc_unlock(lock);
    }

    /* My segment: every global block ends below every local block of mine, and the two heaps
     * between them hold most of it. */
    const unsigned ng = (unsigned)__getdi2(bword(0, 1));
    uint64_t global_end = 0, local_start = UINT64_MAX;
    for (unsigned i = 0; i < ng; i++) {
        const upc_shared_ptr_t p = {__getdi2(bword(0, 2 + MAXB + i))};
        const uint64_t end = upc_addrfield(p) + size;
        if (end > global_end) global_end = end;
        CHECK(__getdi2(elem(p, ME, size)) == 0xABC00000u + i);
    }
    for (unsigned i = 0; i < nlocal; i++) {
        const uint64_t start = upc_addrfield(locals[i]) - HEADER;
        if (start < local_start) local_start = start;
        verify_sparse(locals[i], size, ((uint64_t)ME << 32) + i);
    }
    CHECK(global_end <= local_start);
    if (ME == 0) printf("exhaust: %u global and %u local blocks of 256 KiB on thread 0\n", ng, nlocal);
    CHECK((uint64_t)(ng + nlocal) * (size + HEADER) >= (12u << 20));
    UPC_BARRIER();
    if (ME == 0) CHECK_EQ(__getdi2(bword(0, 2 * MAXB + 10)), 20 * T);

    /* Free crosswise: my right neighbour's local blocks; the last thread frees the global ones. */
    const unsigned right = (ME + 1) % T;
    const unsigned nr = (unsigned)__getdi2(bword(right, 0));
    for (unsigned i = 0; i < nr; i++) upc_free((upc_shared_ptr_t){__getdi2(bword(right, 2 + i))});
    if (ME == T - 1)
        for (unsigned i = 0; i < ng; i++) upc_free((upc_shared_ptr_t){__getdi2(bword(0, 2 + MAXB + i))});
    UPC_BARRIER();

    /* Everything came back: the same number of blocks again (the water marks never move back, so
     * the regions are what they were). */
    unsigned nlocal2, nglobal2;
    exhaust_round(locals, &nlocal2, globals, &nglobal2, size);
    CHECK_EQ(nlocal2, nlocal);
    CHECK_EQ(nglobal2, nglobal);
    for (unsigned i = 0; i < nlocal2; i++) upc_free(locals[i]);
    for (unsigned i = 0; i < nglobal2; i++) upc_free(globals[i]);
    UPC_BARRIER();
    upc_all_lock_free(lock);
}

/* ---- fatal errors --------------------------------------------------------------------------- */
static void fatal_mode(const char *mode) {
    upc_test_record_pid();
    UPC_BARRIER();
    if (ME == T - 1) {
        const upc_shared_ptr_t a = upc_alloc(64), b = upc_alloc(64); /* b keeps a from coalescing */
        CHECK(!is_null(a) && !is_null(b));
        if (strcmp(mode, "double-free") == 0) {
            upc_free(a);
            upc_free(a);
        } else if (strcmp(mode, "bad-free") == 0) {
            upc_free(at(a, 32));
        } else {
            upc_test_fail("unknown mode");
        }
        upc_test_fail("upc_free returned from an invalid free");
    }
    UPC_BARRIER();
    upc_test_fail("a barrier completed without the thread that made the invalid free");
}

int upc_main(int argc, char **argv, char **envp) {
    (void)envp;
    T = (unsigned)THREADS;
    ME = (unsigned)MYTHREAD;
    rng ^= (uint64_t)(ME + 1) * 0x2545F4914F6CDD1Dull;
    const char *mode = argc > 1 ? argv[1] : "basic";
    if (strcmp(mode, "basic") != 0 && strcmp(mode, "exhaust") != 0) {
        fatal_mode(mode);
        return 1;
    }
    board = upc_all_alloc(T, BOARD_WORDS * 8);
    CHECK(!is_null(board));
    if (strcmp(mode, "exhaust") == 0) {
        exhaust();
    } else {
        /* 10^5 cycles in all, shared among the threads (each cycle is a few trips through the
         * engine; 8 threads on 2 cores stay within seconds). */
        coalescing(100000u / T);
        all_alloc();
        small_cases();
        cross_free();
        concurrent_extension();
        large_local();
    }
    UPC_BARRIER();
    upc_all_free(board);
    if (ME == 0) printf("heap %s: all passed on %u threads\n", mode, T);
    return 0;
}
