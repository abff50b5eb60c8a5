/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psm2_test.h — what the PSM2 conformance programs share: checks that name the failed condition
 * (and the PSM2 codes involved) and end the whole job, the job's rank and size from the launcher
 * (portico-run), endpoint set-up and the epid exchange, and data patterns.
 *
 * Every program calls t_begin first (a job service call before the first PtlInit: the program then
 * owns the job's end) and t_end last. The checks are tests/support/check.h's (CHECK, CHECKF) and
 * PSM2's own below; a failed one prints "<program>[rank r]: file:line: ..." and ends the job with
 * exit code 1 (portico_runtime_abort), so that no rank waits forever for one that failed.
 */
#ifndef PSM2_TEST_H
#define PSM2_TEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <portals4.h>
#include <portico_runtime.h>
#include <psm2.h>
#include <psm2_am.h>
#include <psm2_mq.h>

static const char *t_prog = "psm2";
static int t_rank = 0;
static int t_size = 1;
static int t_launched = 0; /* started by a launcher (portico_runtime_rank returned PTL_OK) */

#include "../support/check.h"

static inline void check_hook_who(char *buf, size_t size) { snprintf(buf, size, "%s[rank %d]", t_prog, t_rank); }
static inline void check_hook_end_job(void) {
    if (t_launched) portico_runtime_abort(1, "a PSM2 conformance check failed");
    exit(1);
}

/* expr must return want (both psm2_error_t). */
#define CHECK_ERR(expr, want)                                                                                          \
    do {                                                                                                               \
        const psm2_error_t t_got_ = (expr);                                                                            \
        const psm2_error_t t_want_ = (want);                                                                           \
        if (t_got_ != t_want_)                                                                                         \
            check_failed(__FILE__, __LINE__, "%s returned %d (%s), expected %d (%s)", #expr, (int)t_got_,              \
                         psm2_error_get_string(t_got_), (int)t_want_, psm2_error_get_string(t_want_));                 \
    } while (0)

#define CHECK_OK(expr) CHECK_ERR(expr, PSM2_OK)

/* The launcher's calls return PTL_OK, or PTL_IGNORED when the program runs alone. */
#define CHECK_RT(expr)                                                                                                 \
    do {                                                                                                               \
        const int t_rc_ = (expr);                                                                                      \
        if (t_rc_ != PTL_OK && t_rc_ != PTL_IGNORED) check_failed(__FILE__, __LINE__, "%s returned %d", #expr, t_rc_); \
    } while (0)

static inline void t_begin(const char *prog) {
    t_prog = prog;
    const int rc = portico_runtime_rank(&t_rank);
    CHECKF(rc == PTL_OK || rc == PTL_IGNORED, "portico_runtime_rank returned %d", rc);
    t_launched = rc == PTL_OK;
    CHECK_RT(portico_runtime_size(&t_size));
}

static inline void t_end(void) {
    CHECK_RT(portico_runtime_barrier());
    if (t_rank == 0) printf("%s: all checks passed (%d process%s)\n", t_prog, t_size, t_size == 1 ? "" : "es");
    fflush(stdout);
    portico_runtime_finalize();
}

static inline void t_barrier(void) { CHECK_RT(portico_runtime_barrier()); }

/* Environment of the test: PORTICO_TRANSPORT=tcp means no peer is reached through shared memory. */
static inline int t_tcp_only(void) {
    const char *t = getenv("PORTICO_TRANSPORT");
    return t && strcmp(t, "tcp") == 0;
}

/* Library set-up: psm2_init with the header's version, checking the answer. */
static inline void t_init(void) {
    int major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    CHECK_OK(psm2_init(&major, &minor));
    CHECK(major == PSM2_VERNO_MAJOR && minor >= PSM2_VERNO_MINOR);
}

/* An endpoint with the all-zero job key (psm2-demo's) unless uuid is given, and its MQ. */
static inline psm2_ep_t t_open(const uint8_t *uuid, psm2_epid_t *epid, psm2_mq_t *mq) {
    psm2_uuid_t key;
    memset(key, 0, sizeof key);
    if (uuid) memcpy(key, uuid, sizeof key);
    psm2_ep_t ep = NULL;
    *epid = 0;
    CHECK_OK(psm2_ep_open(key, NULL, &ep, epid));
    CHECK(ep != NULL && *epid != 0);
    if (mq) CHECK_OK(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_ALL, NULL, 0, mq));
    return ep;
}

/* Registers one AM handler on ep and returns its index (checked to be a valid one). */
static inline psm2_handler_t t_register_handler(psm2_ep_t ep, psm2_am_handler_fn_t fn) {
    psm2_am_handler_fn_t fns[1] = {fn};
    int idx[1] = {-1};
    CHECK_OK(psm2_am_register_handlers(ep, fns, 1, idx));
    CHECK(idx[0] >= 0 && idx[0] < 256);
    return (psm2_handler_t)idx[0];
}

/* Every rank's epid, in rank order (the caller frees it). */
static inline psm2_epid_t *t_exchange(psm2_epid_t mine) {
    psm2_epid_t *all = calloc((size_t)t_size, sizeof *all);
    CHECK(all != NULL);
    CHECK_RT(portico_runtime_allgather(&mine, sizeof mine, all));
    return all;
}

/* Connects one epid (timeout 0: wait as long as it takes) and checks the per-entry result. */
static inline psm2_epaddr_t t_connect(psm2_ep_t ep, psm2_epid_t epid) {
    psm2_error_t err = PSM2_INTERNAL_ERR;
    psm2_epaddr_t addr = NULL;
    CHECK_OK(psm2_ep_connect(ep, 1, &epid, NULL, &err, &addr, 0));
    CHECK_ERR(err, PSM2_OK);
    CHECK(addr != NULL);
    psm2_epid_t back = 0;
    CHECK_OK(psm2_epaddr_to_epid(addr, &back));
    CHECK(back == epid);
    return addr;
}

/* Byte i of message `seed`: differs between neighbouring messages and along a page. */
static inline uint8_t t_byte(uint32_t seed, size_t i) {
    return (uint8_t)((seed * 2654435761u) >> 24 ^ (uint32_t)(i * 131u) ^ (uint32_t)(i >> 9));
}

static inline void t_fill(void *buf, size_t len, uint32_t seed) {
    uint8_t *p = buf;
    for (size_t i = 0; i < len; ++i) p[i] = t_byte(seed, i);
}

/* Index of the first wrong byte, or len when all are right. */
static inline size_t t_verify(const void *buf, size_t len, uint32_t seed) {
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; ++i)
        if (p[i] != t_byte(seed, i)) return i;
    return len;
}

#define CHECK_DATA(buf, len, seed)                                                                                     \
    do {                                                                                                               \
        const size_t t_len_ = (size_t)(len);                                                                           \
        const size_t t_at_ = t_verify((buf), t_len_, (seed));                                                          \
        if (t_at_ != t_len_)                                                                                           \
            check_failed(__FILE__, __LINE__, "data of %zu bytes (seed %u) wrong at byte %zu", t_len_,                  \
                         (unsigned)(seed), t_at_);                                                                     \
    } while (0)

static inline void *t_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    CHECK(p != NULL);
    return p;
}

static inline psm2_mq_tag_t t_tag(uint32_t t0, uint32_t t1, uint32_t t2) {
    psm2_mq_tag_t t;
    memset(&t, 0, sizeof t);
    t.tag0 = t0;
    t.tag1 = t1;
    t.tag2 = t2;
    return t;
}

/* Polls until psm2_poll reports nothing to do (bounded: events do not come from nowhere). */
static inline void t_quiesce(psm2_ep_t ep) {
    for (int i = 0; i < 1000000; ++i)
        if (psm2_poll(ep) == PSM2_OK_NO_PROGRESS) return;
    check_failed(__FILE__, __LINE__, "psm2_poll never reported PSM2_OK_NO_PROGRESS");
}

#endif /* PSM2_TEST_H */
