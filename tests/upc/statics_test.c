/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared statics as a UPC compiler lays them out: one thread's part of
 *     shared int64_t cyc[4 * THREADS] = ...;      (cyclic)
 *     shared [3] int32_t blk[3 * THREADS];        (blocked)
 * in the section upc_shared, copied into every thread's segment at start-up, reached through
 * pointers-to-shared from portico_upc_static_ptr. */
#include "upc_test.h"

UPC_SHARED_STATIC int64_t cyc_part[4] = {11, 22, 33, 44};
UPC_SHARED_STATIC int32_t blk_part[3];

int upc_main(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    (void)envp;
    const unsigned T = (unsigned)THREADS, ME = (unsigned)MYTHREAD;
    const upc_shared_ptr_t cyc = portico_upc_static_ptr(cyc_part);
    const upc_shared_ptr_t blk = portico_upc_static_ptr(blk_part);
    /* Every thread's part starts from the image: element i lives on thread i % T, course i / T. */
    for (unsigned i = 0; i < 4 * T; i++) CHECK_EQ(__getdi2(upc_pts_add(cyc, i, 8, 1, T)), 11 * (i / T + 1));
    UPC_BARRIER();
    /* Each thread writes the elements it owns, then everyone reads all of them. */
    for (unsigned i = ME; i < 4 * T; i += T) {
        const upc_shared_ptr_t p = upc_pts_add(cyc, i, 8, 1, T);
        CHECK_EQ(upc_threadof(p), ME);
        int64_t *local = __cvtaddr(p);
        CHECK(local != NULL);
        *local = 1000 + i; /* a local pointer to data with affinity to this thread */
    }
    for (unsigned i = 0; i < 3 * T; i++)
        if (i / 3 == (ME + 1) % T) __putsi2(upc_pts_add(blk, i, 4, 3, T), 7 * i);
    UPC_BARRIER();
    for (unsigned i = 0; i < 4 * T; i++) CHECK_EQ(__getdi2(upc_pts_add(cyc, i, 8, 1, T)), 1000 + i);
    for (unsigned i = 0; i < 3 * T; i++) CHECK_EQ(__getsi2(upc_pts_add(blk, i, 4, 3, T)), 7 * i);
    /* The program's own copy of the image is not the shared data. */
    CHECK_EQ(cyc_part[0], 11);
    UPC_BARRIER();
    if (ME == 0) printf("statics: ok on %u threads\n", T);
    return 0;
}
