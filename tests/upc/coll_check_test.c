/* SPDX-License-Identifier: BSD-3-Clause */
/* Non-single-valued collective arguments (docs/UPC.md's case 54), run with UPC_COLL_CHECK=1.
 * argv[1]:
 *   ok        valid calls of several collectives: the checks pass, the job ends with 0
 *   nbytes    thread THREADS-1 passes another nbytes to upc_all_broadcast
 *   function  thread THREADS-1 calls upc_all_scatter while the others call upc_all_broadcast
 *   op        thread THREADS-1 reduces with UPC_MAX, the others with UPC_ADD
 *   perm      perm maps every thread to 0
 *   notify    a collective between upc_notify and upc_wait (UPC forbids it)
 * Every mode but ok must end the job with the library's message (ctest matches it); a run that
 * gets past the bad call says so and fails. Two threads or more. */
#include <string.h>
#include <upc_collective.h>

#include "upc_test.h"

int upc_main(int argc, char **argv, char **envp) {
    (void)envp;
    const char *mode = argc > 1 ? argv[1] : "ok";
    const unsigned T = (unsigned)THREADS, ME = (unsigned)MYTHREAD;
    const int odd = ME == T - 1;
    upc_shared_ptr_t src = upc_all_alloc(T, 64), dst = upc_all_alloc(T, 64 * T);
    upc_shared_ptr_t perm = upc_all_alloc(T, sizeof(int));
    CHECK(!upc_pts_is_null(src) && !upc_pts_is_null(dst) && !upc_pts_is_null(perm));
    int *mine = (int *)__cvtaddr(upc_pts_make(ME, 0, upc_pts_vaddr(src)));
    for (int i = 0; i < 16; i++) mine[i] = (int)ME;
    *(int *)__cvtaddr(upc_pts_make(ME, 0, upc_pts_vaddr(perm))) = (int)((ME + 1) % T);
    const upc_flag_t all = UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC;
    if (strcmp(mode, "ok") == 0) {
        upc_all_broadcast(dst, src, 16, all);
        upc_all_scatter(dst, src, 4, all);
        upc_all_gather_all(dst, src, 8, all);
        upc_all_permute(dst, src, perm, 16, all);
        upc_all_reduceI(dst, src, UPC_ADD, 16 * T, 16, NULL, all);
        CHECK_EQ(__getsi2(dst), 16 * (long long)T * (T - 1) / 2);
        upc_all_prefix_reduceI(dst, src, UPC_ADD, 16 * T, 16, NULL, all);
        TEST_SECTION("coll check ok");
        return 0;
    }
    if (strcmp(mode, "nbytes") == 0) {
        upc_all_broadcast(dst, src, odd ? 8 : 4, all);
    } else if (strcmp(mode, "function") == 0) {
        if (odd)
            upc_all_scatter(dst, src, 4, all);
        else
            upc_all_broadcast(dst, src, 4, all);
    } else if (strcmp(mode, "op") == 0) {
        upc_all_reduceI(dst, src, odd ? UPC_MAX : UPC_ADD, 16 * T, 16, NULL, all);
    } else if (strcmp(mode, "perm") == 0) {
        *(int *)__cvtaddr(upc_pts_make(ME, 0, upc_pts_vaddr(perm))) = 0;
        upc_all_permute(dst, src, perm, 16, all);
    } else if (strcmp(mode, "notify") == 0) {
        __upc_notify(INT_MIN);
        upc_all_broadcast(dst, src, 4, all);
        __upc_wait(INT_MIN);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    fprintf(stderr, "thread %u: the %s mismatch was not caught\n", ME, mode);
    upc_global_exit(1);
}
