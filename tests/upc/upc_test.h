/*
 * Helpers of the UPC tests (C programs calling the compiler interface as generated code does, and
 * C++ front-end programs). A failed check prints where and why, then ends the whole job with
 * upc_global_exit(1), so a failure on one thread never leaves the others waiting.
 */
#ifndef UPC_TEST_H
#define UPC_TEST_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <upc.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "thread %d: %s:%d: CHECK failed: %s\n", MYTHREAD, __FILE__, __LINE__, #cond);              \
            fflush(stderr);                                                                                            \
            upc_global_exit(1);                                                                                        \
        }                                                                                                              \
    } while (0)

#define CHECK_EQ(a, b)                                                                                                 \
    do {                                                                                                               \
        long long _va = (long long)(a), _vb = (long long)(b);                                                          \
        if (_va != _vb) {                                                                                              \
            fprintf(stderr, "thread %d: %s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n", MYTHREAD, __FILE__,        \
                    __LINE__, #a, #b, _va, _vb);                                                                       \
            fflush(stderr);                                                                                            \
            upc_global_exit(1);                                                                                        \
        }                                                                                                              \
    } while (0)

/* Prints once (thread 0) which part of a test runs. */
#define TEST_SECTION(name)                                                                                             \
    do {                                                                                                               \
        if (MYTHREAD == 0) {                                                                                           \
            printf("--- %s\n", name);                                                                                  \
            fflush(stdout);                                                                                            \
        }                                                                                                              \
    } while (0)

/* Ends the job with code 1 after saying why. */
static inline void upc_test_fail(const char *why) {
    fprintf(stderr, "thread %d: %s\n", MYTHREAD, why);
    fflush(stderr);
    upc_global_exit(1);
}

/* For the tests run_exit_test.sh runs: records this process's pid in $UPC_TEST_DIR, so that the
 * script can check that no process of the job is left afterwards. */
static inline void upc_test_record_pid(void) {
    const char *dir = getenv("UPC_TEST_DIR");
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
