/* SPDX-License-Identifier: BSD-3-Clause */
/* UPC locks as generated code uses them (docs/UPC.md's cases 31-38): distinct and collective locks,
 * upc_lock_attempt, N threads x 1000 locked increments, the critical section's writes reaching
 * the next holder, FIFO hand-off in queueing order, unlock with and without waiters, more locks
 * held at once than there are preallocated queue links, a lock freed while held, 10^4 cycles of
 * alloc/lock/unlock/free, and heap calls made inside a critical section. Modes "lock-null",
 * "lock-bad", "lock-freed", "lock-twice" and "unlock-not-held" end the job with the lock's
 * fatal error (run by run_exit_test.sh).
 *
 * Shared memory is reached only through the compiler interface, as a UPC compiler's code would. */
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "upc_test.h"

static unsigned T, ME;

static upc_shared_ptr_t at(upc_shared_ptr_t p, uint64_t off) { return upc_pts_add(p, (int64_t)off, 1, 0, T); }
static upc_shared_ptr_t elem(upc_shared_ptr_t p, uint64_t i, size_t size) {
    return upc_pts_add(p, (int64_t)i, size, 1, T);
}
static int is_null(upc_shared_ptr_t p) { return upc_pts_is_null(p); }

#define BOARD_WORDS 512
static upc_shared_ptr_t board;
static upc_shared_ptr_t bword(unsigned t, unsigned i) { return at(elem(board, t, BOARD_WORDS * 8), (uint64_t)i * 8); }

/* ---- case 31 ---------------------------------------------------------------------------------- */
static upc_shared_ptr_t allocation(upc_shared_ptr_t *own) {
    TEST_SECTION("31: upc_global_lock_alloc gives distinct locks, upc_all_lock_alloc one lock on thread 0");
    *own = upc_global_lock_alloc();
    CHECK(!is_null(*own));
    CHECK_EQ(upc_threadof(*own), ME);
    __putdi2(bword(ME, 0), own->bits);
    const upc_shared_ptr_t all = upc_all_lock_alloc();
    CHECK(!is_null(all));
    CHECK_EQ(upc_threadof(all), 0);
    __putdi2(bword(ME, 1), all.bits);
    UPC_BARRIER();
    for (unsigned t = 0; t < T; t++) {
        CHECK(__getdi2(bword(t, 1)) == all.bits);
        for (unsigned u = t + 1; u < T; u++) CHECK(__getdi2(bword(t, 0)) != __getdi2(bword(u, 0)));
    }
    UPC_BARRIER();
    return all;
}

/* ---- cases 33, 35 ----------------------------------------------------------------------------- */
static void attempt(upc_shared_ptr_t all, upc_shared_ptr_t own) {
    TEST_SECTION("33, 35: upc_lock_attempt is 0 while the lock is held, 1 when it is free");
    if (ME == 0) upc_lock(all);
    UPC_BARRIER();
    CHECK_EQ(upc_lock_attempt(all), 0); /* thread 0 too: it holds the lock (documented choice) */
    UPC_BARRIER();
    if (ME == 0) upc_unlock(all);
    UPC_BARRIER();
    for (unsigned t = 0; t < T; t++) {
        if (ME == t) {
            CHECK_EQ(upc_lock_attempt(all), 1);
            upc_unlock(all); /* no waiter: the CSWAP path */
        }
        UPC_BARRIER();
    }
    /* Uncontended: each thread on its own lock, then each on its right neighbour's. */
    const upc_shared_ptr_t theirs = {__getdi2(bword((ME + 1) % T, 0))};
    for (unsigned round = 0; round < 2; round++) {
        const upc_shared_ptr_t l = round ? theirs : own;
        for (unsigned i = 0; i < 100; i++) {
            if (i % 3 == 0) {
                CHECK_EQ(upc_lock_attempt(l), 1);
            } else {
                upc_lock(l);
            }
            upc_unlock(l);
        }
        UPC_BARRIER();
    }
}

/* ---- cases 32, 36 ----------------------------------------------------------------------------- */
#define REC_WORDS 64 /* 512 bytes: above the ordered size, written asynchronously */
static void increments(upc_shared_ptr_t lock, unsigned iters, unsigned slot) {
    /* A counter on the last thread and a record on a middle one, both read and written only
     * inside the critical section: every holder must see exactly what the previous one wrote. */
    const upc_shared_ptr_t count = bword(T - 1, 8 + slot);
    const upc_shared_ptr_t record = bword(T / 2, 64 + slot * REC_WORDS);
    uint64_t rec[REC_WORDS];
    if (ME == 0) {
        for (unsigned w = 0; w < REC_WORDS; w++) rec[w] = w;
        __putblk3(record, rec, sizeof rec);
        __putdi2(count, 0);
    }
    UPC_BARRIER();
    for (unsigned i = 0; i < iters; i++) {
        if (i % 50 == 7) {
            while (!upc_lock_attempt(lock)) sched_yield();
        } else {
            upc_lock(lock);
        }
        const uint64_t v = __getdi2(count);
        __getblk3(rec, record, sizeof rec);
        for (unsigned w = 0; w < REC_WORDS; w++) CHECK(rec[w] == v * REC_WORDS + w);
        for (unsigned w = 0; w < REC_WORDS; w++) rec[w] = (v + 1) * REC_WORDS + w;
        __putblk3(record, rec, sizeof rec);
        __putdi2(count, v + 1);
        upc_unlock(lock);
    }
    UPC_BARRIER();
    CHECK_EQ(__getdi2(count), (uint64_t)T * iters);
    UPC_BARRIER();
}

/* ---- cases 34, 35 ----------------------------------------------------------------------------- */
/* White box, as the instrumentation: a lock's first word is its MCS tail, the pointer-to-shared
 * of the last queued thread's link (NULL when the lock is free). */
static int tail_is(upc_shared_ptr_t lock, unsigned t) {
    const upc_shared_ptr_t tail = {__getdi2(lock)};
    return !is_null(tail) && upc_threadof(tail) == t;
}

static void fifo(upc_shared_ptr_t lock, unsigned rounds) {
    TEST_SECTION("34, 35: contended hand-off is FIFO: threads get the lock in the order they queued");
    const upc_shared_ptr_t next = bword(0, 4);
    for (unsigned r = 0; r < rounds; r++) {
        /* Round r: thread `first` takes the lock, then the others queue one after another in
         * thread order after it, each only once its predecessor is the queue's tail. The first
         * lets go only when the whole queue has formed, so every hand-off goes to a waiter. */
        const unsigned first = r % T, place = (ME + T - first) % T, last = (first + T - 1) % T;
        if (place > 0)
            while (!tail_is(lock, (ME + T - 1) % T)) sched_yield();
        upc_lock(lock);
        if (place == 0)
            while (!tail_is(lock, last)) sched_yield();
        const uint64_t pos = __getdi2(next);
        __putdi2(bword(0, 16 + (unsigned)pos), ME);
        __putdi2(next, pos + 1);
        upc_unlock(lock);
        UPC_BARRIER();
        if (ME == 0) {
            CHECK_EQ(__getdi2(next), T);
            for (unsigned i = 0; i < T; i++) CHECK_EQ(__getdi2(bword(0, 16 + i)), (first + i) % T);
            __putdi2(next, 0);
        }
        UPC_BARRIER();
    }
}

/* ---- more links than preallocated; a lock freed while held ---------------------------------- */
static void many_held(void) {
    TEST_SECTION("more locks held at once than preallocated queue links; a lock freed while held");
    enum { N = 80 };
    upc_shared_ptr_t l[N];
    const unsigned right = (ME + 1) % T;
    for (unsigned i = 0; i < N; i++) {
        l[i] = upc_global_lock_alloc();
        CHECK(!is_null(l[i]));
        upc_lock(l[i]);
        __putdi2(bword(ME, 100 + i), l[i].bits);
    }
    UPC_BARRIER();
    /* Everyone's locks are held: attempts from another thread fail. */
    for (unsigned i = 0; i < N; i++) CHECK_EQ(upc_lock_attempt((upc_shared_ptr_t){__getdi2(bword(right, 100 + i))}), 0);
    UPC_BARRIER();
    for (unsigned i = N; i-- > 0;) upc_unlock(l[i]);
    UPC_BARRIER();
    /* All free: now each thread takes its right neighbour's locks, all of them at once. */
    for (unsigned i = 0; i < N; i++) {
        const upc_shared_ptr_t x = {__getdi2(bword(right, 100 + i))};
        upc_lock(x);
    }
    for (unsigned i = 0; i < N; i++) upc_unlock((upc_shared_ptr_t){__getdi2(bword(right, 100 + i))});
    UPC_BARRIER();
    for (unsigned i = 0; i < N; i++) upc_lock_free(l[i]);

    /* Freed while this thread holds it (UPC 1.3 allows it); the memory then holds a new lock,
     * which this thread does not hold. */
    const upc_shared_ptr_t a = upc_global_lock_alloc();
    upc_lock(a);
    upc_lock_free(a);
    const upc_shared_ptr_t b = upc_global_lock_alloc();
    CHECK(b.bits == a.bits);
    CHECK_EQ(upc_lock_attempt(b), 1);
    upc_unlock(b);
    upc_lock(b);
    upc_unlock(b);
    upc_lock_free(b);
    upc_lock_free((upc_shared_ptr_t){0}); /* no action */
    UPC_BARRIER();
}

/* ---- case 37 ---------------------------------------------------------------------------------- */
static void cycles(unsigned n, unsigned collective) {
    TEST_SECTION("37: cycles of alloc, lock, unlock, free; the heap does not grow");
    upc_shared_ptr_t first = {0};
    for (unsigned i = 0; i < n; i++) {
        const upc_shared_ptr_t l = upc_global_lock_alloc();
        CHECK(!is_null(l));
        /* Each cycle leaves the local heap as it found it, so the same block every time. */
        if (i == 0)
            first = l;
        else
            CHECK(l.bits == first.bits);
        upc_lock(l);
        upc_unlock(l);
        upc_lock_free(l);
    }
    UPC_BARRIER();
    const upc_shared_ptr_t count = bword(0, 2);
    for (unsigned i = 0; i < collective; i++) {
        const upc_shared_ptr_t l = upc_all_lock_alloc();
        CHECK(!is_null(l));
        upc_lock(l);
        __putdi2(count, __getdi2(count) + 1);
        upc_unlock(l);
        upc_all_lock_free(l);
    }
    UPC_BARRIER();
    CHECK_EQ(__getdi2(count), (uint64_t)T * collective);
    UPC_BARRIER();
}

/* ---- case 38 ---------------------------------------------------------------------------------- */
static void heap_inside(upc_shared_ptr_t lock, unsigned n) {
    TEST_SECTION("38: heap calls inside a critical section: no recursion, no deadlock");
    for (unsigned i = 0; i < n; i++) {
        upc_lock(lock);
        const upc_shared_ptr_t p = upc_alloc(100 + i);
        const upc_shared_ptr_t g = upc_global_alloc(T, 64);
        CHECK(!is_null(p) && !is_null(g));
        __putdi2(p, i);
        __putdi2(elem(g, ME, 64), i + 1);
        const upc_shared_ptr_t l = upc_global_lock_alloc();
        upc_lock(l);
        CHECK(__getdi2(p) == i && __getdi2(elem(g, ME, 64)) == i + 1);
        upc_unlock(l);
        upc_lock_free(l);
        upc_free(p);
        upc_free(g);
        upc_unlock(lock);
    }
    UPC_BARRIER();
}

/* ---- fatal errors --------------------------------------------------------------------------- */
static void fatal_mode(const char *mode) {
    upc_test_record_pid();
    UPC_BARRIER();
    if (ME == T - 1) {
        const upc_shared_ptr_t l = upc_global_lock_alloc();
        CHECK(!is_null(l));
        if (strcmp(mode, "lock-null") == 0) {
            upc_lock((upc_shared_ptr_t){0});
        } else if (strcmp(mode, "lock-bad") == 0) {
            const upc_shared_ptr_t p = upc_alloc(64);
            __putdi2(p, 0);
            __putdi2(at(p, 8), 12345);
            upc_lock(p);
        } else if (strcmp(mode, "lock-freed") == 0) {
            upc_lock_free(l);
            upc_lock(l);
        } else if (strcmp(mode, "lock-twice") == 0) {
            upc_lock(l);
            upc_lock(l);
        } else if (strcmp(mode, "unlock-not-held") == 0) {
            upc_unlock(l);
        } else {
            upc_test_fail("unknown mode");
        }
        upc_test_fail("the invalid lock call returned");
    }
    UPC_BARRIER();
    upc_test_fail("a barrier completed without the thread that made the invalid lock call");
}

int upc_main(int argc, char **argv, char **envp) {
    (void)envp;
    T = (unsigned)THREADS;
    ME = (unsigned)MYTHREAD;
    if (argc > 1) {
        fatal_mode(argv[1]);
        return 1;
    }
    board = upc_all_alloc(T, BOARD_WORDS * 8);
    CHECK(!is_null(board));
    {
        static uint64_t zero[BOARD_WORDS];
        __putblk3(bword(ME, 0), zero, sizeof zero);
    }
    UPC_BARRIER();
    upc_shared_ptr_t own;
    const upc_shared_ptr_t all = allocation(&own);
    attempt(all, own);
    TEST_SECTION("32, 36: THREADS x 1000 locked increments; the critical section's writes reach the next holder");
    increments(all, 1000, 0);
    increments((upc_shared_ptr_t){__getdi2(bword(T - 1, 0))}, 200, 1); /* a lock on the last thread */
    fifo(all, 2 * T);
    many_held();
    /* 10^4 cycles in all, shared among the threads. */
    cycles(10000 / T, 20);
    heap_inside(all, 50);
    upc_all_lock_free(all);
    upc_lock_free(own);
    UPC_BARRIER();
    upc_all_free(board);
    if (ME == 0) printf("lock: all passed on %u threads\n", T);
    return 0;
}
