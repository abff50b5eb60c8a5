/* SPDX-License-Identifier: BSD-3-Clause */
/* The UPC runtime's core as generated code uses it (docs/UPC.md's cases 1-16, 18, 20, 21, 40-44):
 * every typed access, block transfers, the bounce buffer, memcpy/memset in every locality,
 * unaligned transfers, the memory model (same-address order, strict puts and gets, a strict flag,
 * Dekker), barriers (split phase, named and anonymous, 10^4 in a row with uneven work), and the
 * pointer-to-shared functions. Any thread count. */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "upc_test.h"

/* Work that the compiler cannot remove: uneven time between barriers. */
static volatile unsigned sink;

static unsigned T, ME;

/* The first byte of thread t's block of an array allocated with upc_all_alloc(THREADS, nbytes). */
static upc_shared_ptr_t block_of(upc_shared_ptr_t base, unsigned t, size_t nbytes) {
    return upc_pts_add(base, (int64_t)t, nbytes, 1, T);
}

static void typed_accesses(upc_shared_ptr_t area) {
    TEST_SECTION("1: every type code, relaxed and strict, to every thread");
    for (unsigned k = 0; k < T; k++) {
        const unsigned t = (ME + k) % T;
        /* Each thread writes its own 64-byte row in thread t's block. */
        upc_shared_ptr_t row = upc_pts_add(block_of(area, t, 4096), (int64_t)(ME * 80), 1, 0, T);
        upc_shared_ptr_t p = row;
#define STEP(type) p = upc_pts_add(row, off, 1, 0, T), off += (int64_t)sizeof(type)
        int64_t off = 0;
        STEP(uint8_t);
        __putqi2(p, (uint8_t)(0xA0 + ME));
        STEP(uint16_t);
        __putshi2(p, (uint16_t)(0xBEE0 + ME));
        STEP(uint32_t);
        __putsi2(p, 0xC0FFEE00u + ME);
        STEP(uint64_t);
        __putsdi2(p, 0x0123456789ABCDEFull ^ ME);
        off = 16;
        STEP(unsigned __int128);
        __putti2(p, ((unsigned __int128)ME << 100) | 77u);
        STEP(float);
        __putssf2(p, 1.5f + (float)ME);
        STEP(double);
        __putdf2(p, -2.25 * (double)(ME + 1));
        off = 48;
        STEP(long double);
        __putxf2(p, 3.0L / (long double)(ME + 3));
        STEP(__float128);
        __putstf2(p, (__float128)7.0 / (__float128)(ME + 5));
        off = 0;
        STEP(uint8_t);
        CHECK_EQ(__getqi2(p), 0xA0 + ME);
        STEP(uint16_t);
        CHECK_EQ(__getshi2(p), 0xBEE0 + ME);
        STEP(uint32_t);
        CHECK_EQ(__getssi2(p), 0xC0FFEE00u + ME);
        STEP(uint64_t);
        CHECK(__getdi2(p) == (0x0123456789ABCDEFull ^ ME));
        off = 16;
        STEP(unsigned __int128);
        CHECK(__getti2(p) == (((unsigned __int128)ME << 100) | 77u));
        STEP(float);
        CHECK(__getsf2(p) == 1.5f + (float)ME);
        STEP(double);
        CHECK(__getsdf2(p) == -2.25 * (double)(ME + 1));
        off = 48;
        STEP(long double);
        CHECK(__getsxf2(p) == 3.0L / (long double)(ME + 3));
        STEP(__float128);
        CHECK(__gettf2(p) == (__float128)7.0 / (__float128)(ME + 5));
#undef STEP
    }
    UPC_BARRIER();
}

static void put_and_return(upc_shared_ptr_t p, int v) {
    int local = v; /* the stack slot dies on return: the put must not need it (case 3) */
    __putsi2(p, (uint32_t)local);
}

static void transfers(upc_shared_ptr_t big, size_t per_thread) {
    const unsigned right = (ME + 1) % T, left = (ME + T - 1) % T;
    upc_shared_ptr_t mine = block_of(big, ME, per_thread), theirs = block_of(big, right, per_thread);
    unsigned char *buf = malloc(per_thread), *check = malloc(per_thread);
    CHECK(buf && check);

    TEST_SECTION("2, 3: puts from a volatile and from a dead stack slot");
    {
        volatile int k = 1;
        __putsi2(upc_pts_add(theirs, 0, 1, 0, T), (uint32_t)k);
        k = 2;
        __putsi2(upc_pts_add(theirs, 4, 1, 0, T), (uint32_t)k);
        k = 3;
        __putsi2(upc_pts_add(theirs, 8, 1, 0, T), (uint32_t)k);
        put_and_return(upc_pts_add(theirs, 12, 1, 0, T), 4);
        UPC_BARRIER();
        for (int i = 0; i < 4; i++) CHECK_EQ(__getsi2(upc_pts_add(mine, 4 * i, 1, 0, T)), i + 1);
        UPC_BARRIER();
    }

    TEST_SECTION("4, 5: 1 KiB (bounced) and 1 KiB + 1 (waited) puts; 300 bounced puts in a row");
    for (size_t n = 1024; n <= 1025; n++) {
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 7 + n + ME);
        upc_memput(theirs, buf, n);
        memset(buf, 0, n); /* the source is free on return */
        UPC_BARRIER();
        upc_memget(check, mine, n);
        for (size_t i = 0; i < n; i++) CHECK_EQ(check[i], (unsigned char)(i * 7 + n + left));
        UPC_BARRIER();
    }
    for (int r = 0; r < 300; r++) {
        for (size_t i = 0; i < 1024; i++) buf[i] = (unsigned char)((size_t)r + i + ME);
        upc_memput(upc_pts_add(theirs, (int64_t)(r * 1024), 1, 0, T), buf, 1024);
    }
    UPC_BARRIER();
    upc_memget(check, mine, 300 * 1024);
    for (int r = 0; r < 300; r++)
        for (size_t i = 0; i < 1024; i++) CHECK_EQ(check[r * 1024 + (int)i], (unsigned char)((size_t)r + i + left));
    UPC_BARRIER();

    TEST_SECTION("6: upc_memcpy local/remote x local/remote, 0 B .. 1 MiB");
    const size_t sizes[] = {0, 1, 256 * 1024, 256 * 1024 + 3, 1024 * 1024};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s];
        const size_t half = per_thread / 2;
        /* source: the first half of a block; destination: the second half of another. */
        for (unsigned mode = 0; mode < 4; mode++) {
            const unsigned src_t = (mode & 1) ? right : ME, dst_t = (mode & 2) ? left : ME;
            for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 13 + s + mode + ME);
            upc_memput(block_of(big, ME, per_thread), buf, n); /* my own first half */
            UPC_BARRIER();
            /* I copy src_t's first half (which src_t wrote) to the second half of dst_t. */
            upc_shared_ptr_t src = block_of(big, src_t, per_thread);
            upc_shared_ptr_t dst = upc_pts_add(block_of(big, dst_t, per_thread), (int64_t)(half), 1, 0, T);
            upc_memcpy(dst, src, n); /* only this thread writes dst: its own, or its left's */
            UPC_BARRIER();
            /* Who wrote my second half: myself (mode & 2 == 0), or my right neighbour. */
            const unsigned writer = (mode & 2) ? right : ME;
            const unsigned origin = (mode & 1) ? (writer + 1) % T : writer;
            upc_memget(check, upc_pts_add(mine, (int64_t)half, 1, 0, T), n);
            for (size_t i = 0; i < n; i++) CHECK_EQ(check[i], (unsigned char)(i * 13 + s + mode + origin));
            UPC_BARRIER();
        }
    }

    TEST_SECTION("7, 8: upc_memset over 256 KiB with ragged ends; unaligned transfers");
    {
        const size_t n = 256 * 1024 + 37;
        const int64_t start = 5;
        upc_memset(theirs, 0x11, per_thread / 2);
        UPC_BARRIER();
        upc_memset(upc_pts_add(theirs, start, 1, 0, T), 0x5A, n);
        UPC_BARRIER();
        upc_memget(check, mine, n + 64);
        for (size_t i = 0; i < n + 64; i++)
            CHECK_EQ(check[i], (i < (size_t)start || i >= (size_t)start + n) ? 0x11 : 0x5A);
        UPC_BARRIER();
        for (int64_t o = 1; o < 8; o++) {
            for (size_t i = 0; i < 3000; i++) buf[i] = (unsigned char)(i + (size_t)o + ME);
            upc_memput(upc_pts_add(theirs, o * 4096 + o, 1, 0, T), buf + o, 3000 - (size_t)o);
            __putblk3(upc_pts_add(theirs, 64 * 1024 + 64 * o, 1, 0, T), buf + o, 17);
        }
        UPC_BARRIER();
        for (int64_t o = 1; o < 8; o++) {
            upc_memget(check + o, upc_pts_add(mine, o * 4096 + o, 1, 0, T), 3000 - (size_t)o);
            for (size_t i = (size_t)o; i < 3000; i++) CHECK_EQ(check[i], (unsigned char)(i + (size_t)o + left));
            __getblk3(check, upc_pts_add(mine, 64 * 1024 + 64 * o, 1, 0, T), 17);
            for (size_t i = 0; i < 17; i++) CHECK_EQ(check[i], (unsigned char)(i + 2 * (size_t)o + left));
        }
        UPC_BARRIER();
    }

    TEST_SECTION("9, 10, 11: a read after this thread's own write sees it; strict after relaxed");
    {
        const size_t lens[] = {1, 8, 9, 512, 1024, 5000};
        for (int round = 0; round < 20; round++) {
            for (unsigned l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                const size_t n = lens[l];
                upc_shared_ptr_t p = upc_pts_add(theirs, (int64_t)(l * 8192), 1, 0, T);
                memset(buf, round * 16 + (int)l, n);
                upc_memput(p, buf, n);
                upc_memget(check, p, n);
                for (size_t i = 0; i < n; i++) CHECK_EQ(check[i], (unsigned char)(round * 16 + (int)l));
            }
            memset(buf, 0x40 + round, 512);
            upc_memput(upc_pts_add(theirs, 100000, 1, 0, T), buf, 512);
            const uint32_t w = __getssi2(upc_pts_add(theirs, 100000 + 256, 1, 0, T));
            CHECK_EQ(w, 0x01010101u * (uint32_t)(0x40 + round));
            __putssi2(upc_pts_add(theirs, 120000, 1, 0, T), (uint32_t)round);
            CHECK_EQ(__getsi2(upc_pts_add(theirs, 120000, 1, 0, T)), round);
            CHECK_EQ(__getsi2(upc_pts_add(theirs, 100000, 1, 0, T)), 0x01010101u * (uint32_t)(0x40 + round));
        }
        UPC_BARRIER();
    }
    free(buf);
    free(check);
}

static void flags_and_dekker(upc_shared_ptr_t area) {
    if (T < 2) return;
    TEST_SECTION("12: data written relaxed, then a strict flag: the consumer sees the data");
    /* Thread 0 produces for thread T-1; the data lives on thread 1 (remote to both unless T == 2). */
    upc_shared_ptr_t data = block_of(area, 1 % T, 4096), flag = upc_pts_add(block_of(area, T - 1, 4096), 2048, 1, 0, T);
    for (uint32_t round = 1; round <= 200; round++) {
        if (ME == 0) {
            for (int i = 0; i < 64; i++) __putsi2(upc_pts_add(data, 4 * i, 1, 0, T), round * 1000 + (uint32_t)i);
            __putssi2(flag, round);
        } else if (ME == T - 1) {
            while (__getssi2(flag) != round) {
            }
            for (int i = 0; i < 64; i++)
                CHECK_EQ(__getsi2(upc_pts_add(data, 4 * i, 1, 0, T)), round * 1000 + (uint32_t)i);
        }
        UPC_BARRIER();
    }

    TEST_SECTION("13: Dekker's mutual exclusion with strict variables");
    /* Threads 0 and 1: want[i] on thread i, turn on thread 0, a counter on thread 1. */
    upc_shared_ptr_t want0 = upc_pts_add(block_of(area, 0, 4096), 3000, 1, 0, T);
    upc_shared_ptr_t want1 = upc_pts_add(block_of(area, 1, 4096), 3000, 1, 0, T);
    upc_shared_ptr_t turn = upc_pts_add(block_of(area, 0, 4096), 3008, 1, 0, T);
    upc_shared_ptr_t counter = upc_pts_add(block_of(area, 1, 4096), 3016, 1, 0, T);
    if (ME == 0) {
        __putssi2(want0, 0);
        __putssi2(turn, 0);
        __putssi2(counter, 0);
    }
    if (ME == 1) __putssi2(want1, 0);
    UPC_BARRIER();
    const int rounds = 300;
    if (ME < 2) {
        upc_shared_ptr_t mine = ME ? want1 : want0, other = ME ? want0 : want1;
        for (int i = 0; i < rounds; i++) {
            __putssi2(mine, 1);
            while (__getssi2(other)) {
                if (__getssi2(turn) != ME) {
                    __putssi2(mine, 0);
                    while (__getssi2(turn) != ME) {
                    }
                    __putssi2(mine, 1);
                }
            }
            /* critical section: a read-modify-write that loses updates if two overlap */
            const uint32_t c = __getssi2(counter);
            __putssi2(counter, c + 1);
            __putssi2(turn, 1 - ME);
            __putssi2(mine, 0);
        }
    }
    UPC_BARRIER();
    if (ME == 0) CHECK_EQ(__getssi2(counter), 2 * rounds);
    UPC_BARRIER();
}

static void barriers(upc_shared_ptr_t area) {
    TEST_SECTION("14, 16: writes before a fence and barrier, or before notify, are seen after wait");
    upc_shared_ptr_t cell = upc_pts_add(block_of(area, (ME + 1) % T, 4096), 3500, 1, 0, T);
    upc_shared_ptr_t mine = upc_pts_add(block_of(area, ME, 4096), 3500, 1, 0, T);
    for (uint32_t i = 0; i < 200; i++) {
        __putsi2(cell, i);
        if (i % 2) {
            __upc_fence();
            __upc_barrier(INT_MIN);
        } else {
            __upc_notify((int)i);
            /* work between notify and wait: reads of this thread's own data */
            (void)__getsi2(upc_pts_add(block_of(area, ME, 4096), 3600, 1, 0, T));
            __upc_wait((int)i);
        }
        CHECK_EQ(__getsi2(mine), i);
        __upc_barrier(INT_MIN);
    }

    TEST_SECTION("15, 20: 10^4 barriers, uneven work between them");
    for (int i = 0; i < 10000; i++) {
        /* thread (i % T) works longer, so that fast threads reach the next barrier early */
        if ((unsigned)i % T == ME)
            for (int k = 0; k < 2000; k++) sink += (unsigned)k;
        __upc_barrier(i);
    }

    TEST_SECTION("18, 21: named mixed with anonymous; extreme ids");
    for (int i = 0; i < 100; i++) {
        const int named = (unsigned)i % T == ME;
        __upc_barrier(named ? 4242 : INT_MIN);
        __upc_notify(INT_MAX);
        __upc_wait(INT_MAX);
        __upc_barrier(INT_MIN + 1);
        portico_upc_notify(INT64_MIN + 5, 0);
        portico_upc_wait(INT64_MIN + 5, 0);
        portico_upc_notify((int64_t)INT_MIN, 0); /* a named INT_MIN through the 64-bit entry */
        portico_upc_wait(0, 1);
    }
}

static void pointer_functions(void) {
    TEST_SECTION("41, 42, 43: threadof, phaseof, resetphase, addrfield, affinitysize, arithmetic");
    CHECK_EQ(upc_threadof(upc_pts_make(0, 0, 0)), 0);
    CHECK_EQ(upc_phaseof(upc_pts_make(0, 0, 0)), 0);
    /* shared [3] int a[...] starting at vaddr 4096 on thread 0 */
    const upc_shared_ptr_t a = upc_pts_make(0, 0, 4096);
    for (int64_t i = 0; i < 200; i++) {
        const upc_shared_ptr_t p = upc_pts_add(a, i, sizeof(int), 3, T);
        CHECK_EQ(upc_threadof(p), (i / 3) % T);
        CHECK_EQ(upc_phaseof(p), i % 3);
        CHECK_EQ(upc_addrfield(p), 4096 + ((i / 3) / T) * 3 * (int64_t)sizeof(int) + (i % 3) * (int64_t)sizeof(int));
        CHECK_EQ(upc_pts_diff(p, a, sizeof(int), 3, T), i);
        /* stepping back from p reaches every earlier element */
        for (int64_t j = 0; j <= i; j += 17) {
            const upc_shared_ptr_t q = upc_pts_add(p, -j, sizeof(int), 3, T);
            const upc_shared_ptr_t r = upc_pts_add(a, i - j, sizeof(int), 3, T);
            CHECK(q.bits == r.bits);
        }
        const upc_shared_ptr_t z = upc_resetphase(p);
        CHECK_EQ(upc_phaseof(z), 0);
        CHECK_EQ(upc_threadof(z), upc_threadof(p));
        CHECK_EQ(upc_addrfield(z), upc_addrfield(p));
        /* cyclic (block 1) and indefinite (block 0) */
        const upc_shared_ptr_t c = upc_pts_add(a, i, 8, 1, T);
        CHECK_EQ(upc_threadof(c), i % T);
        CHECK_EQ(upc_phaseof(c), 0);
        CHECK_EQ(upc_addrfield(c), 4096 + (i / T) * 8);
        const upc_shared_ptr_t d = upc_pts_add(a, i, 8, 0, T);
        CHECK_EQ(upc_threadof(d), 0);
        CHECK_EQ(upc_addrfield(d), 4096 + i * 8);
    }
    /* upc_affinitysize against the reference formula of UPC 1.3 §7.2.3.5 */
    const size_t totals[] = {0, 1, 3, 10, 100, 1000, 4097};
    const size_t blocks[] = {0, 1, 2, 4, 7, 100, 5000};
    for (unsigned a1 = 0; a1 < 7; a1++)
        for (unsigned b = 0; b < 7; b++) {
            size_t sum = 0;
            for (unsigned t = 0; t < T; t++) {
                const size_t total = totals[a1], nb = blocks[b];
                size_t want;
                if (nb == 0 || total == 0 || nb >= total) {
                    want = t == 0 ? total : 0;
                } else {
                    const size_t nblocks = total / nb, cutoff = nblocks % T;
                    if (t < cutoff)
                        want = (nblocks + T - 1) / T * nb;
                    else if (t > cutoff)
                        want = nblocks / T * nb;
                    else
                        want = nblocks / T * nb + total - nblocks * nb;
                }
                CHECK_EQ(upc_affinitysize(total, nb, t), want);
                sum += upc_affinitysize(total, nb, t);
            }
            CHECK_EQ(sum, totals[a1]);
        }
    /* __cvtaddr: this thread's own data is always reachable with a local pointer */
    CHECK(__cvtaddr(upc_pts_make(ME, 0, 8192)) != NULL);
}

int upc_main(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    (void)envp;
    T = (unsigned)THREADS;
    ME = (unsigned)MYTHREAD;
    CHECK(T >= 1 && ME < T);
    upc_shared_ptr_t area = upc_all_alloc(T, 4096);
    CHECK(!upc_pts_is_null(area));
    CHECK_EQ(upc_threadof(area), 0);
    const size_t per_thread = 2 * 1024 * 1024 + 64 * 1024;
    upc_shared_ptr_t big = upc_all_alloc(T, per_thread);
    CHECK(!upc_pts_is_null(big));

    typed_accesses(area);
    transfers(big, per_thread);
    flags_and_dekker(area);
    barriers(area);
    pointer_functions();
    UPC_BARRIER();
    if (ME == 0) printf("core: all passed on %u threads\n", T);
    return 0; /* case 40: a normal return ends the job cleanly */
}
