/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the UPC tests (C programs calling the compiler interface as generated code does, and
 * C++ front-end programs): the checks of tests/support/check.h, whose failure ends the whole job
 * with upc_global_exit(1).
 */
#ifndef UPC_TEST_H
#define UPC_TEST_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <upc.h>

#include "../support/check.h"

static inline void check_hook_who(char *buf, size_t size) { snprintf(buf, size, "thread %d", MYTHREAD); }
static inline void check_hook_end_job(void) { upc_global_exit(1); }

/* Prints once (thread 0) which part of a test runs. */
#define TEST_SECTION(name)                                                                                             \
    do {                                                                                                               \
        if (MYTHREAD == 0) {                                                                                           \
            printf("--- %s\n", name);                                                                                  \
            fflush(stdout);                                                                                            \
        }                                                                                                              \
    } while (0)

/* Ends the job with code 1 after saying why. */
#define upc_test_fail(why) check_failed(__FILE__, __LINE__, "%s", (why))

/* For the tests tests/support/run_exit_test.sh runs: records this process's pid in
 * $EXIT_TEST_DIR, so that the script can check that no process of the job is left afterwards. */
static inline void upc_test_record_pid(void) {
    const char *dir = getenv("EXIT_TEST_DIR");
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/pid.%d", dir, MYTHREAD);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f, "%ld\n", (long)getpid());
    fclose(f);
}

/* `shared [block] T *` arithmetic on upc_shared_ptr_t, as a UPC compiler emits it inline. */
#define PTS_ADD(p, n, type, block) upc_pts_add((p), (n), sizeof(type), (block), (unsigned)THREADS)
#define UPC_BARRIER() __upc_barrier(INT_MIN)

#endif
