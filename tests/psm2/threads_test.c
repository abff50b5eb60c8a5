/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * threads_test.c — one PSM2 endpoint per process driven by several threads at once, as GASNet's
 * psm-conduit (PAR: the application's threads and its progress thread) and MPI_THREAD_MULTIPLE
 * clients drive it (psm2.threads, psm2.threads.tcp; 2 processes). opa-psm2 takes its endpoint lock
 * in every call, so any thread may call any function; handlers run in whichever thread polls.
 *
 * In each process kWorkers threads start together and each:
 *  - connects to the peer and to itself (every thread at the same moment), and gets the same
 *    epaddr as the others;
 *  - sends kAms requests to the peer, each with 4 arguments naming (rank, thread, index) and a
 *    payload of a length that varies up to the AM limit, filled from those; the peer's handler
 *    checks every argument and byte and replies with derived ones, which the origin's reply
 *    handler checks; every request has a completion callback, counted per thread;
 *  - plays kPings rounds of ping-pong with the same thread of the peer (psm2_mq_wait on each);
 *  - exchanges kMsgs tagged MQ messages with the same thread number of the peer (eager and
 *    rendezvous sizes, posted receives and unexpected ones), every byte checked;
 * while one more thread calls psm2_poll until the workers are done. Each handler and callback
 * counts into its sender's thread slot: every count must come out exact.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "psm2_test.h"

#define kWorkers 4
#define kAms 150
#define kMsgs 40
#define kPings 100
#define kAmMax 8128u

static psm2_ep_t g_ep;
static psm2_mq_t g_mq;
static psm2_epid_t g_peer_epid, g_self_epid;
static psm2_handler_t g_h_req, g_h_rep;
static pthread_barrier_t g_start;
static atomic_int g_workers_done;
static psm2_epaddr_t g_peer_addr[kWorkers];

/* Per sending thread: requests the peer handled from it (counted at the peer), replies and
 * completions back at the origin. */
static atomic_uint g_requests_from[kWorkers];
static atomic_uint g_replies_to[kWorkers];
static atomic_uint g_completions_of[kWorkers];

static uint32_t am_len(uint32_t t, uint32_t i) { return (i * 977u + t * 131u) % (kAmMax + 1); }
static uint32_t am_seed(uint32_t rank, uint32_t t, uint32_t i, int reply) {
    return (rank << 24) ^ (t << 16) ^ i ^ (reply ? 0x00800000u : 0);
}
static uint64_t am_check(uint32_t rank, uint32_t t, uint32_t i) {
    return ((uint64_t)rank << 48 | (uint64_t)t << 32 | i) * UINT64_C(0x9E3779B97F4A7C15);
}
static uint32_t msg_len(uint32_t t, uint32_t i) {
    static const uint32_t kSizes[] = {0, 1, 64, 4096, 16383, 70000, 300000};
    return kSizes[(i + t) % (sizeof kSizes / sizeof kSizes[0])];
}

/* At the target: args name the sender's rank, thread and index; the payload follows from them. */
static int h_req(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    CHECKF(nargs == 4, "request with %d arguments", nargs);
    const uint32_t rank = args[0].u32w0, t = args[0].u32w1, i = args[1].u32w0;
    CHECKF(rank == (uint32_t)(1 - t_rank) && t < kWorkers && i < kAms, "request from rank %u thread %u index %u", rank,
           t, i);
    CHECKF(args[1].u32w1 == am_len(t, i) && len == am_len(t, i), "request %u/%u: %u bytes, want %u", t, i, len,
           am_len(t, i));
    CHECKF(args[2].u64 == am_check(rank, t, i) && args[3].u64 == ~am_check(rank, t, i), "request %u/%u: bad arguments",
           t, i);
    CHECK_DATA(src, len, am_seed(rank, t, i, 0));
    atomic_fetch_add(&g_requests_from[t], 1);
    /* The reply: the same names, the check words swapped, a payload of the other length. */
    psm2_amarg_t out[4];
    out[0] = args[0];
    out[1].u32w0 = i;
    out[1].u32w1 = am_len(t, kAms - 1 - i);
    out[2].u64 = args[3].u64;
    out[3].u64 = args[2].u64;
    uint8_t payload[kAmMax];
    t_fill(payload, out[1].u32w1, am_seed(rank, t, i, 1));
    CHECK_OK(psm2_am_reply_short(token, g_h_rep, out, 4, payload, out[1].u32w1, 0, NULL, NULL));
    return 0;
}

static int h_rep(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    (void)token;
    CHECKF(nargs == 4, "reply with %d arguments", nargs);
    const uint32_t rank = args[0].u32w0, t = args[0].u32w1, i = args[1].u32w0;
    CHECKF(rank == (uint32_t)t_rank && t < kWorkers && i < kAms, "reply for rank %u thread %u index %u", rank, t, i);
    CHECKF(len == am_len(t, kAms - 1 - i) && args[1].u32w1 == len, "reply %u/%u: %u bytes", t, i, len);
    CHECKF(args[2].u64 == ~am_check(rank, t, i) && args[3].u64 == am_check(rank, t, i), "reply %u/%u: bad arguments", t,
           i);
    CHECK_DATA(src, len, am_seed(rank, t, i, 1));
    atomic_fetch_add(&g_replies_to[t], 1);
    return 0;
}

static void completed(void *ctxt) { atomic_fetch_add(&g_completions_of[(uintptr_t)ctxt], 1); }

static void poll_once(void) {
    const psm2_error_t rc = psm2_poll(g_ep);
    CHECKF(rc == PSM2_OK || rc == PSM2_OK_NO_PROGRESS, "psm2_poll returned %d", (int)rc);
}

static psm2_mq_tag_t msg_tag(uint32_t from_rank, uint32_t t, uint32_t i) {
    return t_tag(0x7EAD0000u | t, i, from_rank);
}

static void *worker(void *arg) {
    const uint32_t t = (uint32_t)(uintptr_t)arg;
    pthread_barrier_wait(&g_start);

    /* Connect, every thread at once. */
    psm2_epid_t epids[2] = {g_peer_epid, g_self_epid};
    psm2_error_t errs[2] = {PSM2_INTERNAL_ERR, PSM2_INTERNAL_ERR};
    psm2_epaddr_t addrs[2] = {NULL, NULL};
    CHECK_OK(psm2_ep_connect(g_ep, 2, epids, NULL, errs, addrs, 0));
    CHECK_ERR(errs[0], PSM2_OK);
    CHECK_ERR(errs[1], PSM2_OK);
    psm2_epid_t back = 0;
    CHECK_OK(psm2_epaddr_to_epid(addrs[0], &back));
    CHECK(back == g_peer_epid);
    CHECK_OK(psm2_epaddr_to_epid(addrs[1], &back));
    CHECK(back == g_self_epid);
    g_peer_addr[t] = addrs[0];
    psm2_epaddr_t peer = addrs[0];

    /* Ping-pong, every thread with the same thread of the peer: rank 0 sends a ping and waits for
     * its pong, rank 1 waits for the ping and answers. A thread blocked in psm2_mq_wait must let
     * the others in (another thread's ping or pong may be what the peer waits for). */
    for (uint32_t i = 0; i < kPings; ++i) {
        uint64_t out = ((uint64_t)t << 32 | i) ^ (t_rank ? UINT64_C(0xFEED000000000000) : 0), in = 0;
        const uint64_t want = ((uint64_t)t << 32 | i) ^ (t_rank ? 0 : UINT64_C(0xFEED000000000000));
        psm2_mq_tag_t stag = msg_tag((uint32_t)t_rank, t, 0x10000u + i);
        psm2_mq_tag_t rtag = msg_tag((uint32_t)(1 - t_rank), t, 0x10000u + i);
        psm2_mq_tag_t all = t_tag(~0u, ~0u, ~0u);
        psm2_mq_req_t rr = NULL, sr = NULL;
        psm2_mq_status2_t st;
        CHECK_OK(psm2_mq_irecv2(g_mq, peer, &rtag, &all, 0, &in, sizeof in, NULL, &rr));
        if (t_rank == 1) {
            CHECK_OK(psm2_mq_wait2(&rr, &st));
            CHECK(st.nbytes == sizeof in && in == want);
        }
        CHECK_OK(psm2_mq_isend2(g_mq, peer, 0, &stag, &out, sizeof out, NULL, &sr));
        CHECK_OK(psm2_mq_wait2(&sr, &st));
        CHECK_ERR(st.error_code, PSM2_OK);
        if (t_rank == 0) {
            CHECK_OK(psm2_mq_wait2(&rr, &st));
            CHECK(st.nbytes == sizeof in && in == want);
        }
    }

    /* MQ: receives posted for half the messages before they come, the rest after they may have. */
    uint8_t **rbuf = calloc(kMsgs, sizeof *rbuf), **sbuf = calloc(kMsgs, sizeof *sbuf);
    psm2_mq_req_t *rreq = calloc(kMsgs, sizeof(psm2_mq_req_t)), *sreq = calloc(kMsgs, sizeof(psm2_mq_req_t));
    CHECK(rbuf && sbuf && rreq && sreq);
    psm2_mq_tag_t sel = t_tag(~0u, ~0u, ~0u);
    for (uint32_t i = 0; i < kMsgs / 2; ++i) {
        rbuf[i] = t_malloc(msg_len(t, i));
        psm2_mq_tag_t tag = msg_tag((uint32_t)(1 - t_rank), t, i);
        CHECK_OK(psm2_mq_irecv2(g_mq, peer, &tag, &sel, 0, rbuf[i], msg_len(t, i), NULL, &rreq[i]));
    }
    for (uint32_t i = 0; i < kMsgs; ++i) {
        sbuf[i] = t_malloc(msg_len(t, i));
        t_fill(sbuf[i], msg_len(t, i), (uint32_t)t_rank << 20 ^ t << 12 ^ i);
        psm2_mq_tag_t tag = msg_tag((uint32_t)t_rank, t, i);
        CHECK_OK(psm2_mq_isend2(g_mq, peer, 0, &tag, sbuf[i], msg_len(t, i), NULL, &sreq[i]));
    }

    /* Active messages, with the MQ traffic under way. */
    uint8_t *payload = t_malloc(kAmMax);
    for (uint32_t i = 0; i < kAms; ++i) {
        psm2_amarg_t args[4];
        args[0].u32w0 = (uint32_t)t_rank;
        args[0].u32w1 = t;
        args[1].u32w0 = i;
        args[1].u32w1 = am_len(t, i);
        args[2].u64 = am_check((uint32_t)t_rank, t, i);
        args[3].u64 = ~args[2].u64;
        t_fill(payload, am_len(t, i), am_seed((uint32_t)t_rank, t, i, 0));
        CHECK_OK(
            psm2_am_request_short(peer, g_h_req, args, 4, payload, am_len(t, i), 0, completed, (void *)(uintptr_t)t));
        if (i % 16 == 15) poll_once();
    }
    free(payload);

    for (uint32_t i = kMsgs / 2; i < kMsgs; ++i) {
        rbuf[i] = t_malloc(msg_len(t, i));
        psm2_mq_tag_t tag = msg_tag((uint32_t)(1 - t_rank), t, i);
        CHECK_OK(psm2_mq_irecv2(g_mq, peer, &tag, &sel, 0, rbuf[i], msg_len(t, i), NULL, &rreq[i]));
    }
    for (uint32_t i = 0; i < kMsgs; ++i) {
        psm2_mq_status2_t st;
        CHECK_OK(psm2_mq_wait2(&rreq[i], &st));
        CHECK_ERR(st.error_code, PSM2_OK);
        CHECKF(st.msg_length == msg_len(t, i) && st.nbytes == msg_len(t, i), "message %u/%u: %u of %u bytes", t, i,
               st.nbytes, st.msg_length);
        CHECK(st.msg_peer == peer);
        CHECK(st.msg_tag.tag0 == (0x7EAD0000u | t) && st.msg_tag.tag1 == i &&
              st.msg_tag.tag2 == (uint32_t)(1 - t_rank));
        CHECK_DATA(rbuf[i], msg_len(t, i), (uint32_t)(1 - t_rank) << 20 ^ t << 12 ^ i);
        CHECK_OK(psm2_mq_wait2(&sreq[i], &st));
        CHECK_ERR(st.error_code, PSM2_OK);
        free(rbuf[i]);
        free(sbuf[i]);
    }
    free(rbuf);
    free(sbuf);
    free(rreq);
    free(sreq);

    while (atomic_load(&g_replies_to[t]) < kAms || atomic_load(&g_completions_of[t]) < kAms) poll_once();
    atomic_fetch_add(&g_workers_done, 1);
    return NULL;
}

static void *poller(void *arg) {
    (void)arg;
    pthread_barrier_wait(&g_start);
    while (atomic_load(&g_workers_done) < kWorkers) poll_once();
    return NULL;
}

int main(void) {
    t_begin("psm2_threads_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    t_init();
    g_ep = t_open((const uint8_t *)"psm2-threads-key", &g_self_epid, &g_mq);
    psm2_epid_t *epids = t_exchange(g_self_epid);
    g_peer_epid = epids[1 - t_rank];
    free(epids);
    g_h_req = t_register_handler(g_ep, h_req);
    g_h_rep = t_register_handler(g_ep, h_rep);
    t_barrier(); /* handlers registered everywhere */

    CHECK(pthread_barrier_init(&g_start, NULL, kWorkers + 1) == 0);
    pthread_t threads[kWorkers + 1];
    for (uintptr_t t = 0; t < kWorkers; ++t) CHECK(pthread_create(&threads[t], NULL, worker, (void *)t) == 0);
    CHECK(pthread_create(&threads[kWorkers], NULL, poller, NULL) == 0);
    for (int t = 0; t <= kWorkers; ++t) CHECK(pthread_join(threads[t], NULL) == 0);
    pthread_barrier_destroy(&g_start);

    for (int t = 0; t < kWorkers; ++t) {
        CHECK(g_peer_addr[t] == g_peer_addr[0]); /* one record per peer, whichever thread connected */
        CHECKF(atomic_load(&g_replies_to[t]) == kAms && atomic_load(&g_completions_of[t]) == kAms,
               "thread %d: %u replies and %u completions of %d", t, atomic_load(&g_replies_to[t]),
               atomic_load(&g_completions_of[t]), kAms);
    }
    /* The peer's requests arrive until it has all its replies: after the barrier, every one. */
    t_barrier();
    t_quiesce(g_ep);
    for (int t = 0; t < kWorkers; ++t)
        CHECKF(atomic_load(&g_requests_from[t]) == kAms, "from the peer's thread %d: %u requests of %d", t,
               atomic_load(&g_requests_from[t]), kAms);
    t_barrier();
    CHECK_OK(psm2_ep_close(g_ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
