/* SPDX-License-Identifier: BSD-3-Clause */
/* A UPC program in C, as README's UPC section builds it (install.readme): it defines upc_main,
 * as a UPC compiler's output does, and reaches shared memory through the compiler interface.
 * Every thread writes its number into its right neighbour's element of a cyclic array, and after
 * a barrier checks what its left one wrote. */
#include <limits.h>
#include <stdio.h>
#include <upc.h>

int upc_main(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    (void)envp;
    const unsigned t = (unsigned)THREADS, me = (unsigned)MYTHREAD;
    const upc_shared_ptr_t a = upc_all_alloc(t, sizeof(int)); /* shared int a[THREADS] */
    __putsi2(upc_pts_add(a, (me + 1) % t, sizeof(int), 1, t), 1000 + me);
    __upc_barrier(INT_MIN);
    const unsigned got = __getsi2(upc_pts_add(a, me, sizeof(int), 1, t));
    if (got != 1000 + (me + t - 1) % t) {
        fprintf(stderr, "thread %u: found %u\n", me, got);
        upc_global_exit(2);
    }
    printf("thread %u of %u: upc ok\n", me, t);
    return 0;
}
