/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/memory's UPC program, a C program calling the compiler interface as GCC UPC's generated
 * code does (it defines upc_main): upc_all_alloc'd arrays, an 8-byte upc_memput into every other
 * thread's share (an all-to-all), a halo exchange of 16 KiB upc_memputs with the two neighbours
 * in a ring of threads (HALO_ROUNDS rounds), a upc_all_broadcast, every thread taking a lock
 * owned by thread 0, every value checked; a barrier, then the checkpoint (memory_checkpoint.h). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <upc.h>
#include <upc_collective.h>

#include "memory_checkpoint.h"

#define HALO_BYTES 16384
#define HALO_ROUNDS 16

static unsigned T, ME;

/* (shared [] char *)p + off: bytes further on the same thread. */
static upc_shared_ptr_t at(upc_shared_ptr_t p, uint64_t off) { return upc_pts_add(p, (int64_t)off, 1, 0, T); }
/* Thread t's share of a upc_all_alloc(THREADS, size) array. */
static upc_shared_ptr_t share(upc_shared_ptr_t p, unsigned t, size_t size) {
    return upc_pts_add(p, (int64_t)t, size, 1, T);
}

static void fail(const char *what) {
    fprintf(stderr, "memory_upc[%u]: %s\n", ME, what);
    upc_global_exit(1);
}

int upc_main(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    (void)envp;
    T = (unsigned)THREADS;
    ME = (unsigned)MYTHREAD;
    const size_t slots_bytes = (size_t)T * sizeof(uint64_t);
    const upc_shared_ptr_t slots = upc_all_alloc(T, slots_bytes);
    const upc_shared_ptr_t halo = upc_all_alloc(T, 2 * HALO_BYTES);
    const upc_shared_ptr_t word = upc_all_alloc(T, sizeof(uint64_t));
    const upc_shared_ptr_t source = upc_all_alloc(1, sizeof(uint64_t)); /* on thread 0 */
    const upc_shared_ptr_t lock = upc_all_lock_alloc();
    static unsigned char out[HALO_BYTES], in[2 * HALO_BYTES];
    memset(out, (int)(ME & 0xff), sizeof out);
    __upc_barrier(INT_MIN);

    const uint64_t mine = ME + 1u;
    for (unsigned i = 1; i < T; ++i) upc_memput(at(share(slots, (ME + i) % T, slots_bytes), ME * 8u), &mine, 8);
    const unsigned next = (ME + 1) % T, prev = (ME + T - 1) % T;
    for (int r = 0; r < HALO_ROUNDS; ++r) {
        upc_memput(share(halo, next, 2 * HALO_BYTES), out, HALO_BYTES);
        upc_memput(at(share(halo, prev, 2 * HALO_BYTES), HALO_BYTES), out, HALO_BYTES);
        __upc_barrier(INT_MIN);
    }
    if (ME == 0) {
        const uint64_t v = 0x5eed;
        upc_memput(source, &v, 8);
    }
    upc_all_broadcast(word, source, 8, UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC);
    upc_lock(lock);
    upc_unlock(lock);
    __upc_barrier(INT_MIN);

    uint64_t got[1];
    for (unsigned p = 0; p < T; ++p) {
        if (p == ME) continue;
        upc_memget(got, at(share(slots, ME, slots_bytes), p * 8u), 8);
        if (got[0] != p + 1u) fail("a value of the all-to-all");
    }
    upc_memget(in, share(halo, ME, 2 * HALO_BYTES), sizeof in);
    if (T > 1 && (in[0] != (unsigned char)prev || in[HALO_BYTES] != (unsigned char)next)) fail("the halo values");
    upc_memget(got, share(word, ME, 8), 8);
    if (got[0] != 0x5eed) fail("the broadcast value");

    __upc_barrier(INT_MIN);
    memory_checkpoint();
    __upc_barrier(INT_MIN);
    return 0;
}
