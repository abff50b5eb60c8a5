/*
 * Helpers of the GASNet tests (C and C++). A failed check prints where and why, then ends the
 * whole job with gasnet_exit(1), so a failure on one node never leaves the others waiting.
 * Include after gasnet.h.
 */
#ifndef GASNET_TEST_UTIL_H
#define GASNET_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "node %u: %s:%d: CHECK failed: %s\n", (unsigned)gasnet_mynode(), __FILE__, __LINE__,       \
                    #cond);                                                                                            \
            fflush(stderr);                                                                                            \
            gasnet_exit(1);                                                                                            \
        }                                                                                                              \
    } while (0)

#define CHECK_EQ(a, b)                                                                                                 \
    do {                                                                                                               \
        long long _va = (long long)(a), _vb = (long long)(b);                                                          \
        if (_va != _vb) {                                                                                              \
            fprintf(stderr, "node %u: %s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n", (unsigned)gasnet_mynode(),   \
                    __FILE__, __LINE__, #a, #b, _va, _vb);                                                             \
            fflush(stderr);                                                                                            \
            gasnet_exit(1);                                                                                            \
        }                                                                                                              \
    } while (0)

#define GASNET_SAFE(call)                                                                                              \
    do {                                                                                                               \
        int _rc = (call);                                                                                              \
        if (_rc != GASNET_OK) {                                                                                        \
            fprintf(stderr, "node %u: %s:%d: %s returned %s (%s)\n", (unsigned)gasnet_mynode(), __FILE__, __LINE__,    \
                    #call, gasnet_ErrorName(_rc), gasnet_ErrorDesc(_rc));                                              \
            fflush(stderr);                                                                                            \
            gasnet_exit(1);                                                                                            \
        }                                                                                                              \
    } while (0)

static inline void test_barrier(void) {
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    GASNET_SAFE(gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS));
}

/* Prints once (node 0) which part of a test runs. */
#define TEST_SECTION(name)                                                                                             \
    do {                                                                                                               \
        if (gasnet_mynode() == 0) {                                                                                    \
            printf("--- %s\n", name);                                                                                  \
            fflush(stdout);                                                                                            \
        }                                                                                                              \
    } while (0)

#endif
