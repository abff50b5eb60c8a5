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

/* `shared [block] T *` arithmetic on upc_shared_ptr_t, as a UPC compiler emits it inline. */
#define PTS_ADD(p, n, type, block) upc_pts_add((p), (n), sizeof(type), (block), (unsigned)THREADS)
#define UPC_BARRIER() __upc_barrier(INT_MIN)

#endif
