/* SPDX-License-Identifier: BSD-3-Clause */
/* Barrier stress (docs/UPC.md's cases 15 and 20): 10^4 barriers in a row on any number of threads,
 * whole and split phase, with uneven work between them so that fast threads enter barrier k+1
 * while their parent is still in wait k; every thread's count of completed barriers is checked
 * by its neighbour after every hundredth. */
#include "upc_test.h"

/* Work that the compiler cannot remove: uneven time between barriers. */
static volatile unsigned sink;

int upc_main(int argc, char **argv, char **envp) {
    (void)envp;
    const int rounds = argc > 1 ? atoi(argv[1]) : 10000;
    const unsigned T = (unsigned)THREADS, ME = (unsigned)MYTHREAD;
    const upc_shared_ptr_t count = upc_all_alloc(T, sizeof(uint32_t)); /* shared uint32_t count[THREADS] */
    const upc_shared_ptr_t mine = upc_pts_add(count, ME, sizeof(uint32_t), 1, T);
    const upc_shared_ptr_t right = upc_pts_add(count, (ME + 1) % T, sizeof(uint32_t), 1, T);
    unsigned seed = 12345u + ME;
    for (int i = 1; i <= rounds; i++) {
        seed = seed * 1103515245u + 12345u;
        const unsigned work = (seed >> 16) % 3000;
        for (unsigned k = 0; k < work; k++) sink += k;
        __putsi2(mine, (uint32_t)i);
        if (i % 3 == 0) {
            __upc_notify(i);
            sink += 1; /* local work between notify and wait */
            __upc_wait(i);
        } else {
            __upc_barrier(i % 5 == 0 ? INT_MIN : i);
        }
        if (i % 100 == 0) {
            CHECK_EQ(__getsi2(right), i);
            UPC_BARRIER(); /* nobody writes i + 1 before its left neighbour has checked i */
        }
    }
    if (ME == 0) printf("barrier stress: %d barriers on %u threads\n", rounds, T);
    return 0;
}
