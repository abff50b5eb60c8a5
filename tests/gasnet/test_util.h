/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the GASNet tests (C and C++): the checks of tests/support/check.h, whose failure
 * ends the whole job with gasnet_exit(1), and GASNET_SAFE for calls that return GASNet codes.
 * Include after gasnet.h.
 */
#ifndef GASNET_TEST_UTIL_H
#define GASNET_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "../support/check.h"

static inline void check_hook_who(char *buf, size_t size) { snprintf(buf, size, "node %u", (unsigned)gasnet_mynode()); }
static inline void check_hook_end_job(void) { gasnet_exit(1); }

#define GASNET_SAFE(call)                                                                                              \
    do {                                                                                                               \
        const int gasnet_safe_rc_ = (call);                                                                            \
        if (gasnet_safe_rc_ != GASNET_OK)                                                                              \
            check_failed(__FILE__, __LINE__, "%s returned %s (%s)", #call, gasnet_ErrorName(gasnet_safe_rc_),          \
                         gasnet_ErrorDesc(gasnet_safe_rc_));                                                           \
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
