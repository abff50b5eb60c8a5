/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * source_test.c — PSM2 conformance with two senders (psm2.source, psm2.source.tcp; 3 processes):
 * rank 0 receives from ranks 1 and 2. It connects to rank 1 only: rank 2 is known from its
 * messages (an implicit epaddr), which serves as a source filter and a destination before rank 0
 * ever connects to it. docs/PSM2.md's conformance cases:
 *   18   irecv2(src = rank 1) ignores rank 2's message; ANY_ADDR and irecv take both
 *   20   two senders interleaving 300 messages each (eager and rendezvous): each one's arrive in
 *        its order
 *   30   iprobe2/improbe2 honour the source
 *   6, 37  an implicit epaddr: receiving needs no connect, sending back to it works, and a later
 *        connect returns the same pointer
 */
#include "psm2_test.h"

#define R 0

static psm2_ep_t g_ep;
static psm2_mq_t g_mq;
static psm2_epid_t g_epids[3];
static psm2_epaddr_t g_to_r;  /* senders: rank 0 */
static psm2_epaddr_t g_from1; /* rank 0: rank 1, connected */
static psm2_epaddr_t g_from2; /* rank 0: rank 2, implicit */

static const psm2_mq_tag_t *full(void) {
    static psm2_mq_tag_t t;
    t = t_tag(~0u, ~0u, ~0u);
    return &t;
}

static void send_int(uint64_t tag, uint32_t v) { CHECK_OK(psm2_mq_send(g_mq, g_to_r, 0, tag, &v, sizeof v)); }

static uint32_t recv_int(psm2_epaddr_t src, uint64_t tag, psm2_epaddr_t *peer) {
    uint32_t v = 0;
    psm2_mq_tag_t t = t_tag((uint32_t)tag, (uint32_t)(tag >> 32), 0), sel = *full();
    psm2_mq_req_t req = NULL;
    psm2_mq_status2_t st;
    CHECK_OK(psm2_mq_irecv2(g_mq, src, &t, &sel, 0, &v, sizeof v, NULL, &req));
    CHECK_OK(psm2_mq_wait2(&req, &st));
    CHECK(st.nbytes == sizeof v && st.error_code == PSM2_OK);
    if (peer) *peer = st.msg_peer;
    return v;
}

static psm2_epid_t epid_of(psm2_epaddr_t a) {
    psm2_epid_t e = 0;
    CHECK_OK(psm2_epaddr_to_epid(a, &e));
    return e;
}

/* Case 18, 30, 6: source selection. */
static void sources(void) {
    const uint64_t T = 0x1800;
    psm2_mq_tag_t tag = t_tag((uint32_t)T, 0, 0), sel = *full();
    if (t_rank == R) {
        uint32_t v1 = 0;
        psm2_mq_req_t from1 = NULL;
        CHECK_OK(psm2_mq_irecv2(g_mq, g_from1, &tag, &sel, 0, &v1, sizeof v1, NULL, &from1));
        t_barrier(); /* rank 2 sends */
        t_barrier();
        /* Rank 2's message waits unexpected; the receive for rank 1 does not take it. */
        psm2_mq_status2_t st;
        while (psm2_mq_iprobe2(g_mq, PSM2_MQ_ANY_ADDR, &tag, &sel, &st) != PSM2_OK)
            CHECKF(psm2_mq_test2(&from1, NULL) == PSM2_MQ_INCOMPLETE, "irecv2(src = rank 1) took rank 2's message");
        CHECK_ERR(psm2_mq_test2(&from1, NULL), PSM2_MQ_INCOMPLETE);
        g_from2 = st.msg_peer;
        CHECK(g_from2 != NULL && g_from2 != g_from1 && epid_of(g_from2) == g_epids[2]);
        CHECK(st.msg_length == sizeof(uint32_t));
        CHECK_ERR(psm2_mq_iprobe2(g_mq, g_from1, &tag, &sel, &st), PSM2_MQ_INCOMPLETE);
        psm2_mq_req_t probed = NULL;
        CHECK_ERR(psm2_mq_improbe2(g_mq, g_from1, &tag, &sel, &probed, &st), PSM2_MQ_INCOMPLETE);
        CHECK_OK(psm2_mq_iprobe2(g_mq, g_from2, &tag, &sel, &st));
        CHECK(st.msg_peer == g_from2);
        t_barrier(); /* rank 1 sends */
        psm2_mq_status2_t st1;
        CHECK_OK(psm2_mq_wait2(&from1, &st1));
        CHECK(v1 == 1 && st1.msg_peer == g_from1);
        /* The implicit epaddr as a source filter. */
        psm2_epaddr_t who = NULL;
        CHECK(recv_int(g_from2, T, &who) == 2 && who == g_from2);

        /* ANY_ADDR, and the 64-bit irecv, take both senders. */
        psm2_mq_req_t any[2], plain[2];
        uint32_t va[2] = {0, 0}, vp[2] = {0, 0};
        psm2_mq_tag_t t2 = t_tag(0x1801, 0, 0);
        for (int i = 0; i < 2; ++i) {
            CHECK_OK(psm2_mq_irecv2(g_mq, PSM2_MQ_ANY_ADDR, &t2, &sel, 0, &va[i], sizeof va[i], NULL, &any[i]));
            CHECK_OK(psm2_mq_irecv(g_mq, 0x1802, ~0ULL, 0, &vp[i], sizeof vp[i], NULL, &plain[i]));
        }
        t_barrier(); /* both send */
        psm2_epaddr_t peers[2];
        for (int i = 0; i < 2; ++i) {
            psm2_mq_status2_t s;
            CHECK_OK(psm2_mq_wait2(&any[i], &s));
            peers[i] = s.msg_peer;
            CHECK_OK(psm2_mq_wait(&plain[i], NULL));
        }
        CHECK((va[0] == 1 && va[1] == 2) || (va[0] == 2 && va[1] == 1));
        CHECK((vp[0] == 1 && vp[1] == 2) || (vp[0] == 2 && vp[1] == 1));
        for (int i = 0; i < 2; ++i) CHECK(peers[i] == (va[i] == 1 ? g_from1 : g_from2));

        /* Sending to the implicit epaddr, before any connect to rank 2. */
        CHECK_OK(psm2_mq_send(g_mq, g_from2, 0, 0x1803, &(uint32_t){42}, sizeof(uint32_t)));
        CHECK(psm2_epaddr_getctxt(g_from2) == NULL);
        static int ctx2;
        psm2_epaddr_setctxt(g_from2, &ctx2);
        t_barrier();
    } else {
        t_barrier();
        if (t_rank == 2) send_int(T, 2);
        t_barrier();
        t_barrier();
        if (t_rank == 1) send_int(T, 1);
        t_barrier();
        send_int(0x1801, (uint32_t)t_rank);
        send_int(0x1802, (uint32_t)t_rank);
        if (t_rank == 2) {
            uint32_t v = 0;
            psm2_mq_status_t st;
            psm2_mq_req_t req = NULL;
            CHECK_OK(psm2_mq_irecv(g_mq, 0x1803, ~0ULL, 0, &v, sizeof v, NULL, &req));
            CHECK_OK(psm2_mq_wait(&req, &st));
            CHECK(v == 42 && st.nbytes == sizeof v);
        }
        t_barrier();
    }
    t_barrier();
}

/* Case 20 with two senders: interleaved streams, each in order. */
#define PER_SENDER 300
#define BIG 100000u

static uint32_t msg_size(uint32_t seq) { return seq % 10 == 3 ? BIG : 8 + seq % 200; }

static void streams(void) {
    uint8_t *buf = t_malloc(BIG);
    if (t_rank == R) {
        uint32_t next[3] = {0, 0, 0};
        for (uint32_t n = 0; n < 2 * PER_SENDER; ++n) {
            psm2_mq_req_t req = NULL;
            psm2_mq_status2_t st;
            psm2_mq_tag_t tag = t_tag(0x2000, 0, 0), sel = *full();
            CHECK_OK(psm2_mq_irecv2(g_mq, PSM2_MQ_ANY_ADDR, &tag, &sel, 0, buf, BIG, NULL, &req));
            CHECK_OK(psm2_mq_wait2(&req, &st));
            CHECK(st.msg_peer == g_from1 || st.msg_peer == g_from2);
            const int from = st.msg_peer == g_from1 ? 1 : 2;
            uint32_t hdr[2];
            memcpy(hdr, buf, sizeof hdr);
            CHECKF(hdr[0] == (uint32_t)from && hdr[1] == next[from],
                   "message from rank %d carries (%u, %u), expected sequence number %u", from, hdr[0], hdr[1],
                   next[from]);
            CHECK(st.nbytes == msg_size(hdr[1]));
            CHECK_DATA(buf + 8, st.nbytes - 8, (uint32_t)from * 1000 + hdr[1]);
            ++next[from];
        }
        CHECK(next[1] == PER_SENDER && next[2] == PER_SENDER);
    } else {
        enum { W = 8 };
        psm2_mq_req_t reqs[W];
        uint8_t *bufs[W];
        for (uint32_t seq = 0; seq < PER_SENDER; ++seq) {
            const uint32_t slot = seq % W;
            if (seq >= W) {
                CHECK_OK(psm2_mq_wait(&reqs[slot], NULL));
                free(bufs[slot]);
            }
            const uint32_t len = msg_size(seq);
            bufs[slot] = t_malloc(len);
            const uint32_t hdr[2] = {(uint32_t)t_rank, seq};
            memcpy(bufs[slot], hdr, sizeof hdr);
            t_fill(bufs[slot] + 8, len - 8, (uint32_t)t_rank * 1000 + seq);
            psm2_mq_tag_t tag = t_tag(0x2000, 0, 0);
            CHECK_OK(psm2_mq_isend2(g_mq, g_to_r, 0, &tag, bufs[slot], len, NULL, &reqs[slot]));
        }
        for (uint32_t i = 0; i < W; ++i) {
            CHECK_OK(psm2_mq_wait(&reqs[i], NULL));
            free(bufs[i]);
        }
    }
    free(buf);
    t_barrier();
}

int main(void) {
    t_begin("psm2_source_test");
    CHECKF(t_size == 3, "runs as 3 processes, not %d", t_size);
    t_init();
    psm2_epid_t mine;
    g_ep = t_open(NULL, &mine, &g_mq);
    psm2_epid_t *all = t_exchange(mine);
    memcpy(g_epids, all, sizeof g_epids);
    free(all);
    if (t_rank == R) {
        g_from1 = t_connect(g_ep, g_epids[1]);
    } else {
        g_to_r = t_connect(g_ep, g_epids[R]);
    }
    t_barrier();
    sources();
    streams();
    if (t_rank == R) {
        /* A connect now returns the implicit epaddr, its context kept. */
        psm2_epaddr_t c = t_connect(g_ep, g_epids[2]);
        CHECKF(c == g_from2, "connect returned another epaddr than rank 2's messages carried");
        CHECK(psm2_epaddr_getctxt(c) != NULL);
    }
    t_barrier();
    CHECK_OK(psm2_ep_close(g_ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
