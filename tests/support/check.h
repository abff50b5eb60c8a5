/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h — the checks of the clients' test programs (tests/gasnet, tests/upc, tests/psm2; C and
 * C++). A failed check prints "<who>: <file>:<line>: <what failed>" on stderr and ends the whole
 * job, so that a failure in one process never leaves the others waiting for it.
 *
 * How a job ends differs by client (gasnet_exit, upc_global_exit, portico_runtime_abort), and so
 * does the name of a process (node, thread, rank): each suite's header includes this one and
 * defines its two hooks, static inline functions (a suite that forgets one does not compile):
 *   check_hook_who(buf, size)  writes the failing process's name ("node 2", "thread 1", ...);
 *   check_hook_end_job()       ends the job with exit code 1 and never returns.
 *
 *   CHECK(cond)               fails unless cond holds
 *   CHECKF(cond, fmt, ...)    the same with a printf-style message
 *   CHECK_EQ(a, b)            fails unless a == b as integers, printing both values
 *   check_failed(file, line, fmt, ...)  the failure itself, for checks of a suite's own
 */
#ifndef PORTICO_TEST_CHECK_H
#define PORTICO_TEST_CHECK_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void check_hook_who(char *buf, size_t size);
static inline void check_hook_end_job(void) __attribute__((noreturn));

static inline void check_failed(const char *file, int line, const char *format, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static inline void check_failed(const char *file, int line, const char *format, ...) {
    char who[256], what[1024];
    check_hook_who(who, sizeof who);
    va_list ap;
    va_start(ap, format);
    vsnprintf(what, sizeof what, format, ap);
    va_end(ap);
    fflush(stdout); /* what the process printed before comes first */
    fprintf(stderr, "%s: %s:%d: %s\n", who, file, line, what);
    fflush(stderr);
    check_hook_end_job();
}

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) check_failed(__FILE__, __LINE__, "CHECK failed: %s", #cond);                                      \
    } while (0)

#define CHECKF(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) check_failed(__FILE__, __LINE__, __VA_ARGS__);                                                    \
    } while (0)

#define CHECK_EQ(a, b)                                                                                                 \
    do {                                                                                                               \
        const long long check_a_ = (long long)(a), check_b_ = (long long)(b);                                          \
        if (check_a_ != check_b_)                                                                                      \
            check_failed(__FILE__, __LINE__, "CHECK_EQ failed: %s == %s (%lld vs %lld)", #a, #b, check_a_, check_b_);  \
    } while (0)

#endif /* PORTICO_TEST_CHECK_H */
