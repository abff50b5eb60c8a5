/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi_ep_test.c — PSM2_MULTI_EP=1 between two processes (psm2.multi_ep, psm2.multi_ep.tcp). Each
 * process opens four endpoints with one job key and a fifth with another. docs/PSM2.md's
 * conformance cases:
 *   7    with PSM2_MULTI_EP several endpoints open, distinct epids, ep_query lists them
 *   39   four threads, each with its own endpoint and MQ, exchange eager and rendezvous messages
 *        with the peer's endpoint of the same index at the same time (isend/irecv/test/poll),
 *        the same tag everywhere: every message arrives whole, at the right endpoint, in order
 *   10   connecting to an endpoint of another job key: PSM2_EPID_INVALID_UUID_KEY for that entry
 * And a message between endpoints of different indices names its sending endpoint, and a source
 * filter tells the endpoints of one process apart.
 */
#include "psm2_test.h"

#include <pthread.h>

#define NEP 4
#define MSGS 150

static psm2_ep_t g_ep[NEP + 1];
static psm2_mq_t g_mq[NEP + 1];
static psm2_epid_t g_mine[NEP + 1];
static psm2_epid_t g_theirs[NEP + 1];

static const uint8_t kKey[16] = {0x50, 0x6f, 0x72, 0x74, 0x69, 0x63, 0x6f, 0x2d, 1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t kOtherKey[16] = {0xFF, 0xEE, 0xDD, 0xCC, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static uint32_t size_of(int ep, uint32_t i) {
    return i % 5 == 2 ? 70000u + (uint32_t)ep : 16 + (i * 13 + (uint32_t)ep) % 3000;
}
static uint32_t seed_of(int rank, int ep, uint32_t i) { return (uint32_t)rank * 100000u + (uint32_t)ep * 1000u + i; }

/* Thread e: MSGS messages each way with the peer's endpoint e, all posted at once, completed with
 * test and poll. Payload: (rank, ep, i) then a pattern. */
static void *traffic(void *arg) {
    const int e = (int)(intptr_t)arg;
    psm2_epaddr_t peer = t_connect(g_ep[e], g_theirs[e]);
    const int other = 1 - t_rank;
    psm2_mq_req_t sends[MSGS], recvs[MSGS];
    uint8_t *out[MSGS], *in[MSGS];
    for (uint32_t i = 0; i < MSGS; ++i) {
        in[i] = t_malloc(70000 + NEP);
        CHECK_OK(psm2_mq_irecv(g_mq[e], 0x3900, ~0ULL, 0, in[i], 70000 + NEP, NULL, &recvs[i]));
    }
    for (uint32_t i = 0; i < MSGS; ++i) {
        const uint32_t len = size_of(e, i);
        out[i] = t_malloc(len);
        const uint32_t hdr[3] = {(uint32_t)t_rank, (uint32_t)e, i};
        memcpy(out[i], hdr, sizeof hdr);
        t_fill(out[i] + sizeof hdr, len - sizeof hdr, seed_of(t_rank, e, i));
        CHECK_OK(psm2_mq_isend(g_mq[e], peer, 0, 0x3900, out[i], len, NULL, &sends[i]));
    }
    uint32_t sent = 0, received = 0;
    while (sent < MSGS || received < MSGS) {
        const psm2_error_t rc = psm2_poll(g_ep[e]);
        CHECK(rc == PSM2_OK || rc == PSM2_OK_NO_PROGRESS);
        while (sent < MSGS && psm2_mq_test(&sends[sent], NULL) == PSM2_OK) free(out[sent++]);
        psm2_mq_status2_t st;
        while (received < MSGS && psm2_mq_test2(&recvs[received], &st) == PSM2_OK) {
            const uint32_t i = received;
            uint32_t hdr[3];
            memcpy(hdr, in[i], sizeof hdr);
            CHECKF(hdr[0] == (uint32_t)other && hdr[1] == (uint32_t)e && hdr[2] == i,
                   "endpoint %d, receive %u: got (rank %u, endpoint %u, message %u)", e, i, hdr[0], hdr[1], hdr[2]);
            CHECK(st.error_code == PSM2_OK && st.nbytes == size_of(e, i) && st.msg_peer == peer);
            CHECK_DATA(in[i] + sizeof hdr, st.nbytes - sizeof hdr, seed_of(other, e, i));
            free(in[i]);
            ++received;
        }
    }
    return NULL;
}

int main(void) {
    t_begin("psm2_multi_ep_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    setenv("PSM2_MULTI_EP", "1", 1); /* read by psm2_init */
    t_init();
    CHECK(psm2_get_capability_mask(PSM2_MULTI_EP_CAP) == PSM2_MULTI_EP_CAP);
    for (int e = 0; e <= NEP; ++e) {
        g_ep[e] = t_open(e < NEP ? kKey : kOtherKey, &g_mine[e], &g_mq[e]);
        for (int f = 0; f < e; ++f) CHECK(g_mine[f] != g_mine[e] && g_ep[f] != g_ep[e] && g_mq[f] != g_mq[e]);
    }
    psm2_epinfo_t info[8];
    int n = 8;
    CHECK_OK(psm2_ep_query(&n, info));
    CHECK(n == NEP + 1);
    for (int e = 0; e <= NEP; ++e) {
        int found = 0;
        for (int i = 0; i < n; ++i)
            if (info[i].ep == g_ep[e] && info[i].epid == g_mine[e] &&
                memcmp(info[i].uuid, e < NEP ? kKey : kOtherKey, 16) == 0)
                ++found;
        CHECKF(found == 1, "ep_query lists endpoint %d %d times", e, found);
    }

    psm2_epid_t all[2 * (NEP + 1)];
    CHECK_RT(portico_runtime_allgather(g_mine, sizeof g_mine, all));
    memcpy(g_theirs, &all[(1 - t_rank) * (NEP + 1)], sizeof g_theirs);
    for (int e = 0; e <= NEP; ++e) CHECK(g_theirs[e] != g_mine[e]);

    /* Case 10: the other job key is refused, entry by entry. */
    psm2_epid_t epids[2] = {g_theirs[1], g_theirs[NEP]};
    psm2_error_t errs[2] = {PSM2_INTERNAL_ERR, PSM2_INTERNAL_ERR};
    psm2_epaddr_t addrs[2] = {NULL, (psm2_epaddr_t)(uintptr_t)0x55};
    const psm2_error_t rc = psm2_ep_connect(g_ep[0], 2, epids, NULL, errs, addrs, 0);
    CHECKF(rc != PSM2_OK && errs[0] == PSM2_OK && errs[1] == PSM2_EPID_INVALID_UUID_KEY,
           "connect to another job's endpoint: %d, entries %d %d", rc, errs[0], errs[1]);
    CHECK(addrs[0] != NULL && addrs[1] == (psm2_epaddr_t)(uintptr_t)0x55);
    /* ... and the fifth endpoints (the same other key) connect to each other. */
    (void)t_connect(g_ep[NEP], g_theirs[NEP]);
    t_barrier();

    /* Case 39: four threads, four endpoints. */
    pthread_t threads[NEP];
    for (int e = 0; e < NEP; ++e) CHECK(pthread_create(&threads[e], NULL, traffic, (void *)(intptr_t)e) == 0);
    for (int e = 0; e < NEP; ++e) CHECK(pthread_join(threads[e], NULL) == 0);
    t_barrier();

    /* Endpoint 0 to the peer's endpoint 3: it arrives there, from endpoint 0. */
    if (t_rank == 0) {
        psm2_epaddr_t to3 = t_connect(g_ep[0], g_theirs[3]);
        CHECK_OK(psm2_mq_send(g_mq[0], to3, 0, 0x3901, "cross", 6));
    } else {
        /* A source filter tells endpoints of one process apart: the receive from the peer's
         * endpoint 1 does not take endpoint 0's message. */
        psm2_epaddr_t from1 = t_connect(g_ep[3], g_theirs[1]);
        psm2_epaddr_t from0 = t_connect(g_ep[3], g_theirs[0]);
        char wrong[8] = "", buf[8] = "";
        psm2_mq_req_t req1 = NULL, req = NULL;
        psm2_mq_tag_t tag = t_tag(0x3901, 0, 0), sel = t_tag(~0u, ~0u, ~0u);
        CHECK_OK(psm2_mq_irecv2(g_mq[3], from1, &tag, &sel, 0, wrong, sizeof wrong, NULL, &req1));
        psm2_mq_status2_t st;
        while (psm2_mq_iprobe2(g_mq[3], PSM2_MQ_ANY_ADDR, &tag, &sel, &st) != PSM2_OK)
            CHECKF(psm2_mq_test2(&req1, NULL) == PSM2_MQ_INCOMPLETE, "the receive from endpoint 1 took endpoint 0's");
        CHECK(st.msg_peer == from0);
        CHECK_OK(psm2_mq_irecv2(g_mq[3], from0, &tag, &sel, 0, buf, sizeof buf, NULL, &req));
        CHECK_OK(psm2_mq_wait2(&req, &st));
        psm2_epid_t from = 0;
        CHECK_OK(psm2_epaddr_to_epid(st.msg_peer, &from));
        CHECK(from == g_theirs[0] && st.msg_peer == from0 && strcmp(buf, "cross") == 0);
        CHECK_ERR(psm2_mq_test2(&req1, NULL), PSM2_MQ_INCOMPLETE);
        CHECK_OK(psm2_mq_cancel(&req1));
        CHECK_OK(psm2_mq_wait2(&req1, NULL));
        for (int e = 0; e <= NEP; ++e) {
            psm2_mq_status_t none;
            if (e != 3) CHECK_ERR(psm2_mq_iprobe(g_mq[e], 0, 0, &none), PSM2_MQ_INCOMPLETE);
        }
    }
    t_barrier();
    for (int e = NEP; e >= 0; --e) CHECK_OK(psm2_ep_close(g_ep[e], PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
