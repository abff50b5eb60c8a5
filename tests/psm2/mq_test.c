/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mq_test.c — PSM2 conformance between two processes (psm2.mq, psm2.mq.tcp): connections and
 * matched queues. Rank 0 ("A") mostly receives, rank 1 ("B") mostly sends. docs/PSM2.md's
 * conformance cases:
 *   8, 9, 11   connect to the peer, idempotence, share_memory and lookups of a peer
 *   10         an epid whose endpoint is closed fails (2 s), timeout 0 waits until it reopens
 *   16, 17     64-bit matching (the guide's MPI selectors among decoys), 96-bit and 64<->96 interop
 *   19, 20     first posted receive gets the first message; 1000 messages 0 B–4 MiB in order
 *   21, 22     unexpected messages and their stats; sizes around both thresholds up to 16 MiB
 *   23, 24     truncation with guard bytes (eager and rendezvous); statuses of receives and sends
 *   25, 26     SENDSYNC; rendezvous needs the receiver; crossed blocking sends to posted receives
 *   27–32      test, ipeek (and dequeue), v1/v2 on one request, iprobe, improbe/imrecv, cancel;
 *              zero-byte messages without buffers
 *   33, 34     poll idle and on arrival; thresholds decide eager or rendezvous, stats add up
 *   37         the context of the implicit epaddr of a sender that never connected
 *   13         both close; a forced close with a rendezvous send nobody takes
 * Steps are separated by barriers; a process in a barrier makes no PSM2 progress, which the
 * rendezvous and test checks rely on.
 */
#include "psm2_test.h"

#define A 0
#define B 1

static psm2_ep_t g_ep;
static psm2_mq_t g_mq;
static psm2_epid_t g_epid;
static psm2_epid_t g_peer_epid;
static psm2_epaddr_t g_peer; /* B: connected at once; A: from the first message, then connected */
static psm2_epaddr_t g_self;
static int g_shm;        /* the peer is reached through shared memory (psm2_ep_epid_share_memory) */
static uint32_t g_thr;   /* the rendezvous threshold that applies to the peer */
static uint32_t g_other; /* the other one */

static uint64_t low64(const psm2_mq_tag_t *t) { return (uint64_t)t->tag1 << 32 | t->tag0; }

/* A blocking receive of a message B sends: returns its status. */
static psm2_mq_status2_t recv2(psm2_epaddr_t src, psm2_mq_tag_t tag, psm2_mq_tag_t sel, void *buf, uint32_t len) {
    psm2_mq_req_t req = NULL;
    psm2_mq_status2_t st;
    memset(&st, 0, sizeof st);
    CHECK_OK(psm2_mq_irecv2(g_mq, src, &tag, &sel, 0, buf, len, NULL, &req));
    CHECK_OK(psm2_mq_wait2(&req, &st));
    CHECK(req == PSM2_MQ_REQINVALID);
    return st;
}

static psm2_mq_status_t recv1(uint64_t tag, uint64_t sel, void *buf, uint32_t len) {
    psm2_mq_req_t req = NULL;
    psm2_mq_status_t st;
    memset(&st, 0, sizeof st);
    CHECK_OK(psm2_mq_irecv(g_mq, tag, sel, 0, buf, len, NULL, &req));
    CHECK_OK(psm2_mq_wait(&req, &st));
    CHECK(req == PSM2_MQ_REQINVALID);
    return st;
}

static void send1(uint64_t tag, const void *buf, uint32_t len) {
    CHECK_OK(psm2_mq_send(g_mq, g_peer, 0, tag, buf, len));
}

/* ---- set-up: cases 10, 8, 9, 11 ------------------------------------------------------------------ */

static void setup(void) {
    t_init();
    g_ep = t_open(NULL, &g_epid, NULL);
    psm2_epid_t *all = t_exchange(g_epid);
    g_peer_epid = all[t_rank == A ? B : A];
    CHECK(g_peer_epid != g_epid && g_peer_epid != 0);
    const psm2_epid_t a_epid = all[A];
    free(all);

    /* Case 10: A closes its endpoint; B's connect with a 2 s timeout fails; then B connects with
     * timeout 0 while A opens it again (same context of the same process: the same epid). */
    if (t_rank == A) CHECK_OK(psm2_ep_close(g_ep, PSM2_EP_CLOSE_FORCE, 0));
    t_barrier();
    if (t_rank == B) {
        psm2_error_t err = PSM2_OK;
        psm2_epaddr_t addr = (psm2_epaddr_t)(uintptr_t)0x99;
        const psm2_error_t rc = psm2_ep_connect(g_ep, 1, &a_epid, NULL, &err, &addr, 2000000000LL);
        CHECKF(rc != PSM2_OK && err != PSM2_OK, "connect to a closed endpoint: %d, entry %d", rc, err);
        CHECK(addr == (psm2_epaddr_t)(uintptr_t)0x99);
    }
    t_barrier();
    if (t_rank == A) {
        psm2_epid_t again = 0;
        g_ep = t_open(NULL, &again, NULL);
        CHECKF(again == g_epid, "the reopened endpoint has another epid (0x%" PRIx64 ", was 0x%" PRIx64 ")", again,
               g_epid);
    } else {
        g_peer = t_connect(g_ep, g_peer_epid); /* timeout 0: until A is back */
    }
    CHECK_OK(psm2_mq_init(g_ep, PSM2_MQ_ORDERMASK_ALL, NULL, 0, &g_mq));
    g_self = t_connect(g_ep, g_epid);
    t_barrier();

    /* Case 11: shared memory unless the job runs over TCP; the thresholds follow. */
    CHECK_OK(psm2_ep_epid_share_memory(g_ep, g_peer_epid, &g_shm));
    CHECKF(g_shm == (t_tcp_only() ? 0 : 1), "share_memory says %d (PORTICO_TRANSPORT=%s)", g_shm,
           getenv("PORTICO_TRANSPORT") ? getenv("PORTICO_TRANSPORT") : "");
    g_thr = g_shm ? 16000 : 64000;
    g_other = g_shm ? 64000 : 16000;
    psm2_epconn_t conn;
    if (t_rank == A) {
        /* A has heard nothing from B yet. */
        CHECK_ERR(psm2_ep_epid_lookup2(g_ep, g_peer_epid, &conn), PSM2_EPID_UNKNOWN);
    } else {
        /* Cases 8, 9: again, and in an array with duplicates and itself. */
        CHECK(t_connect(g_ep, g_peer_epid) == g_peer);
        psm2_epid_t epids[3] = {g_peer_epid, g_epid, g_peer_epid};
        psm2_error_t errs[3] = {PSM2_INTERNAL_ERR, PSM2_INTERNAL_ERR, PSM2_INTERNAL_ERR};
        psm2_epaddr_t addrs[3] = {NULL, NULL, NULL};
        CHECK_OK(psm2_ep_connect(g_ep, 3, epids, NULL, errs, addrs, 30000000000LL));
        CHECK(errs[0] == PSM2_OK && errs[1] == PSM2_OK && errs[2] == PSM2_OK);
        CHECK(addrs[0] == g_peer && addrs[2] == g_peer && addrs[1] == g_self);
        memset(&conn, 0, sizeof conn);
        CHECK_OK(psm2_ep_epid_lookup2(g_ep, g_peer_epid, &conn));
        CHECK(conn.addr == g_peer && conn.ep == g_ep && conn.mq == g_mq);
        memset(&conn, 0, sizeof conn);
        CHECK_OK(psm2_ep_epid_lookup(g_peer_epid, &conn));
        CHECK(conn.addr == g_peer && conn.ep == g_ep && conn.mq == g_mq);
    }
    t_barrier();
}

/* ---- cases 33, 21, 24, 37: poll, an unexpected message from a sender A never connected to -------- */

static void first_message(void) {
    static int a_ctx, b_ctx, peer_ctx;
    uint8_t buf[200];
    if (t_rank == A) {
        t_quiesce(g_ep);
        t_barrier();
        CHECK_ERR(psm2_poll(g_ep), PSM2_OK_NO_PROGRESS); /* B sends nothing until the next barrier */
        psm2_mq_stats_t s0, s1, s2;
        psm2_mq_get_stats(g_mq, &s0);
        t_barrier();
        while (psm2_poll(g_ep) != PSM2_OK) { /* the arrival is progress */
        }
        psm2_mq_get_stats(g_mq, &s1);
        psm2_mq_status_t pst;
        CHECK_OK(psm2_mq_iprobe(g_mq, 0x1111, ~0ULL, &pst));
        CHECK(pst.msg_length == 100 && pst.msg_tag == 0x1111);
        psm2_mq_req_t req = NULL;
        psm2_mq_tag_t tag = t_tag(0x1111, 0, 0), sel = t_tag(~0u, ~0u, ~0u);
        psm2_mq_status2_t st;
        memset(&st, 0, sizeof st);
        CHECK_OK(psm2_mq_irecv2(g_mq, PSM2_MQ_ANY_ADDR, &tag, &sel, 0, buf, sizeof buf, &a_ctx, &req));
        CHECK_OK(psm2_mq_wait2(&req, &st));
        CHECK(req == PSM2_MQ_REQINVALID);
        CHECK(st.msg_peer != NULL && st.msg_length == 100 && st.nbytes == 100 && st.error_code == PSM2_OK);
        CHECK(st.msg_tag.tag0 == 0x1111 && st.msg_tag.tag1 == 0 && st.msg_tag.tag2 == 0 && st.context == &a_ctx);
        CHECK_DATA(buf, 100, 1);
        psm2_mq_get_stats(g_mq, &s2);
        CHECK(s2.rx_user_num == s1.rx_user_num + 1 && s2.rx_user_bytes == s1.rx_user_bytes + 100);
        /* Counted as unexpected when a receive takes it (docs/PSM2.md). */
        CHECKF(s2.rx_sys_num == s0.rx_sys_num + 1 && s2.rx_sys_bytes == s0.rx_sys_bytes + 100,
               "an unexpected message was not counted as such (rx_sys_num %" PRIu64 " -> %" PRIu64 ")", s0.rx_sys_num,
               s2.rx_sys_num);
        /* The implicit epaddr: B's epid, a context of its own, the one connect returns later. */
        psm2_epid_t who = 0;
        CHECK_OK(psm2_epaddr_to_epid(st.msg_peer, &who));
        CHECK(who == g_peer_epid);
        CHECK(psm2_epaddr_getctxt(st.msg_peer) == NULL);
        psm2_epaddr_setctxt(st.msg_peer, &peer_ctx);
        psm2_epconn_t conn;
        CHECK_OK(psm2_ep_epid_lookup2(g_ep, g_peer_epid, &conn));
        CHECK(conn.addr == st.msg_peer);
        g_peer = t_connect(g_ep, g_peer_epid);
        CHECKF(g_peer == st.msg_peer, "connect returned another epaddr than the message's msg_peer");
        CHECK(psm2_epaddr_getctxt(g_peer) == &peer_ctx);
    } else {
        t_barrier();
        t_barrier();
        t_fill(buf, 100, 1);
        psm2_mq_req_t req = NULL;
        psm2_mq_status_t st;
        memset(&st, 0xA5, sizeof st);
        CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x1111, buf, 100, &b_ctx, &req));
        CHECK_OK(psm2_mq_wait(&req, &st));
        CHECK(req == PSM2_MQ_REQINVALID && st.error_code == PSM2_OK && st.context == &b_ctx);
    }
    t_barrier();
}

/* ---- case 16: 64-bit matching ------------------------------------------------------------------ */

static void match64(void) {
    const uint64_t X = 0x0123456789ABCDEFULL;
    const uint64_t tags[] = {X ^ 1,
                             X ^ (1ULL << 63),
                             X,
                             0x3334000100000007ULL, /* another communicator */
                             0x3333000200000008ULL,
                             0x3333000500000007ULL,
                             0x3333000380000009ULL, /* the tag's top bit: no wildcard takes it */
                             0x3333000300000042ULL,
                             ~0ULL};
    if (t_rank == B) {
        for (uint32_t i = 0; i < sizeof tags / sizeof tags[0]; ++i) send1(tags[i], &i, sizeof i);
    } else {
        /* Each receive takes the oldest message it matches; the expected index is given. */
        const struct {
            uint64_t tag, sel;
            uint32_t want;
        } recvs[] = {
            {X, ~0ULL, 2},
            {X ^ 1, ~0ULL, 0},
            {X ^ (1ULL << 63), ~0ULL, 1},
            {0x3333000000000007ULL, 0xffff0000ffffffffULL, 5}, /* MPI: ANY_SOURCE, tag 7 */
            {0x3333000300000000ULL, 0xffffffff80000000ULL, 7}, /* rank 3, ANY_TAG */
            {0x3333000000000000ULL, 0xffff000080000000ULL, 4}, /* ANY_SOURCE, ANY_TAG */
            {0x3333000380000009ULL, ~0ULL, 6},
            {0, 0, 3}, /* selector 0 matches everything */
            {0x5555, 0, 8},
        };
        for (size_t i = 0; i < sizeof recvs / sizeof recvs[0]; ++i) {
            uint32_t got = 99;
            const psm2_mq_status_t st = recv1(recvs[i].tag, recvs[i].sel, &got, sizeof got);
            CHECKF(got == recvs[i].want && st.msg_tag == tags[recvs[i].want],
                   "receive %zu (tag 0x%" PRIx64 ", selector 0x%" PRIx64 ") got message %u (tag 0x%" PRIx64
                   "), expected %u",
                   i, recvs[i].tag, recvs[i].sel, got, st.msg_tag, recvs[i].want);
            CHECK(st.msg_length == sizeof got && st.nbytes == sizeof got && st.error_code == PSM2_OK);
        }
        psm2_mq_status_t st;
        CHECK_ERR(psm2_mq_iprobe(g_mq, 0, 0, &st), PSM2_MQ_INCOMPLETE);
    }
    t_barrier();
}

/* ---- case 17: 96-bit tags, and 64-bit calls against 96-bit ones ----------------------------------- */

static void match96(void) {
    if (t_rank == B) {
        psm2_mq_tag_t t;
        uint32_t i = 0;
        t = t_tag(1, 2, 3);
        CHECK_OK(psm2_mq_send2(g_mq, g_peer, 0, &t, &i, sizeof i));
        i = 1;
        t = t_tag(1, 2, 4);
        CHECK_OK(psm2_mq_send2(g_mq, g_peer, 0, &t, &i, sizeof i));
        i = 2;
        send1(0x0000000200000001ULL, &i, sizeof i); /* 64-bit: tag2 is 0 */
        i = 3;
        t = t_tag(7, 8, 9);
        psm2_mq_req_t req = NULL;
        CHECK_OK(psm2_mq_isend2(g_mq, g_peer, 0, &t, &i, sizeof i, NULL, &req));
        CHECK_OK(psm2_mq_wait2(&req, NULL));
    } else {
        const psm2_mq_tag_t full = t_tag(~0u, ~0u, ~0u);
        psm2_mq_tag_t t = t_tag(1, 2, 5);
        uint32_t never = 99, got = 99;
        psm2_mq_req_t pending = NULL;
        psm2_mq_tag_t sel = full;
        CHECK_OK(psm2_mq_irecv2(g_mq, PSM2_MQ_ANY_ADDR, &t, &sel, 0, &never, sizeof never, NULL, &pending));
        /* tag2 alone tells (1,2,3) from (1,2,4). */
        psm2_mq_status2_t st = recv2(PSM2_MQ_ANY_ADDR, t_tag(1, 2, 4), full, &got, sizeof got);
        CHECK(got == 1 && st.msg_tag.tag2 == 4 && st.msg_peer == g_peer);
        /* A 64-bit send is tag2 = 0 to a 96-bit receive. */
        st = recv2(g_peer, t_tag(1, 2, 0), full, &got, sizeof got);
        CHECK(got == 2 && st.msg_tag.tag0 == 1 && st.msg_tag.tag1 == 2 && st.msg_tag.tag2 == 0);
        /* tag2 masked out: the oldest (1,2,*) left. */
        st = recv2(PSM2_MQ_ANY_ADDR, t_tag(1, 2, 0xDEAD), t_tag(~0u, ~0u, 0), &got, sizeof got);
        CHECK(got == 0 && st.msg_tag.tag2 == 3);
        /* A 64-bit receive takes a 96-bit message whatever its tag2; test2 on it shows tag2. */
        psm2_mq_req_t req = NULL;
        psm2_mq_status2_t st2;
        CHECK_OK(psm2_mq_irecv(g_mq, 0x0000000800000007ULL, ~0ULL, 0, &got, sizeof got, NULL, &req));
        while (psm2_mq_test2(&req, &st2) != PSM2_OK) psm2_poll(g_ep);
        CHECK(got == 3 && st2.msg_tag.tag0 == 7 && st2.msg_tag.tag1 == 8 && st2.msg_tag.tag2 == 9);
        CHECK(low64(&st2.msg_tag) == 0x0000000800000007ULL);
        /* The (1,2,5) receive never matched: cancel it (case 32), then complete it. */
        CHECK_ERR(psm2_mq_test2(&pending, &st2), PSM2_MQ_INCOMPLETE);
        CHECK_OK(psm2_mq_cancel(&pending));
        CHECK(pending != NULL);
        CHECK_OK(psm2_mq_wait2(&pending, NULL));
        CHECK(pending == PSM2_MQ_REQINVALID && never == 99);
    }
    t_barrier();
}

/* ---- case 19: two identical posted receives, eager and rendezvous ------------------------------- */

static void posted_order(void) {
    const uint32_t big = 3 * g_thr + 17;
    uint8_t *b1 = t_malloc(big), *b2 = t_malloc(big);
    char s1[16] = "", s2[16] = "";
    if (t_rank == A) {
        psm2_mq_req_t r[4];
        CHECK_OK(psm2_mq_irecv(g_mq, 0x19, ~0ULL, 0, s1, sizeof s1, NULL, &r[0]));
        CHECK_OK(psm2_mq_irecv(g_mq, 0x19, ~0ULL, 0, s2, sizeof s2, NULL, &r[1]));
        CHECK_OK(psm2_mq_irecv(g_mq, 0x1919, ~0ULL, 0, b1, big, NULL, &r[2]));
        CHECK_OK(psm2_mq_irecv(g_mq, 0x1919, ~0ULL, 0, b2, big, NULL, &r[3]));
        t_barrier();
        for (int i = 0; i < 4; ++i) CHECK_OK(psm2_mq_wait(&r[i], NULL));
        CHECKF(strcmp(s1, "first") == 0 && strcmp(s2, "second") == 0, "posted receives got \"%s\", \"%s\"", s1, s2);
        CHECK_DATA(b1, big, 191);
        CHECK_DATA(b2, big, 192);
    } else {
        t_barrier();
        strcpy(s1, "first");
        strcpy(s2, "second");
        send1(0x19, s1, sizeof s1);
        send1(0x19, s2, sizeof s2);
        t_fill(b1, big, 191);
        t_fill(b2, big, 192);
        psm2_mq_req_t r[2];
        CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x1919, b1, big, NULL, &r[0]));
        CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x1919, b2, big, NULL, &r[1]));
        CHECK_OK(psm2_mq_wait(&r[0], NULL));
        CHECK_OK(psm2_mq_wait(&r[1], NULL));
    }
    free(b1);
    free(b2);
    t_barrier();
}

/* ---- case 20: 1000 messages of one tag, 0 B to 9 MiB, in order --------------------------------- */

#define STREAM_N 1000
#define STREAM_BIG ((9u << 20) + 3) /* over the network, three pieces */

static uint32_t stream_size(uint32_t i) {
    if (i % 100 == 50) return STREAM_BIG;
    const uint32_t sizes[] = {0,           1,       8,           100,   4096,  g_thr - 1, g_thr,   g_thr + 1,
                              g_other - 1, g_other, g_other + 1, 20000, 90000, 250000,    1 << 20, (3 << 20) + 7};
    return sizes[(i * 7) % (sizeof sizes / sizeof sizes[0])];
}

static void stream(void) {
    /* Message i is pattern[i % 4093 ...]: neighbours differ, the sends share one read-only source. */
    const size_t span = STREAM_BIG + 4096;
    uint8_t *pattern = t_malloc(span);
    t_fill(pattern, span, 20);
    if (t_rank == B) {
        enum { W = 24 };
        psm2_mq_req_t reqs[W];
        for (uint32_t i = 0; i < STREAM_N; ++i) {
            if (i >= W) CHECK_OK(psm2_mq_wait(&reqs[i % W], NULL));
            CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x2020, pattern + i % 4093, stream_size(i), NULL, &reqs[i % W]));
        }
        for (uint32_t i = 0; i < W; ++i) CHECK_OK(psm2_mq_wait(&reqs[i], NULL));
    } else {
        enum { W = 12 };
        psm2_mq_req_t reqs[W];
        uint8_t *bufs[W];
        uint32_t posted = 0;
        for (uint32_t i = 0; i < STREAM_N; ++i) {
            while (posted < STREAM_N && posted < i + W) {
                bufs[posted % W] = t_malloc(STREAM_BIG);
                CHECK_OK(psm2_mq_irecv(g_mq, 0x2020, ~0ULL, 0, bufs[posted % W], STREAM_BIG, NULL, &reqs[posted % W]));
                ++posted;
            }
            psm2_mq_status_t st;
            CHECK_OK(psm2_mq_wait(&reqs[i % W], &st));
            const uint32_t want = stream_size(i);
            CHECKF(st.msg_length == want && st.nbytes == want && st.error_code == PSM2_OK,
                   "message %u: %u bytes (%u delivered, error %d), expected %u", i, st.msg_length, st.nbytes,
                   st.error_code, want);
            CHECKF(memcmp(bufs[i % W], pattern + i % 4093, want) == 0, "message %u (%u bytes): wrong data", i, want);
            free(bufs[i % W]);
        }
    }
    free(pattern);
    t_barrier();
}

/* ---- cases 22, 34, 21: sizes around the thresholds, expected and unexpected --------------------- */

static void sizes(void) {
    const uint32_t list[] = {0,           1,           g_thr - 1, g_thr,    g_thr + 1,
                             g_other - 1, g_other + 1, 1u << 20,  4u << 20, 16u << 20};
    const size_t n = sizeof list / sizeof list[0];
    uint8_t *buf = t_malloc(16u << 20);
    for (int unexpected = 0; unexpected <= 1; ++unexpected) {
        for (size_t i = 0; i < n; ++i) {
            const uint32_t len = list[i];
            if (unexpected && len > (4u << 20)) continue; /* 16 MiB once */
            const uint32_t seed = (uint32_t)(1000 + i + 100 * (size_t)unexpected);
            const uint64_t tag = 0x2200 + i;
            if (t_rank == A) {
                memset(buf, 0, len);
                psm2_mq_req_t req = NULL;
                psm2_mq_stats_t s0, s1;
                psm2_mq_get_stats(g_mq, &s0);
                if (!unexpected) {
                    CHECK_OK(psm2_mq_irecv(g_mq, tag, ~0ULL, 0, buf, len, NULL, &req));
                    t_barrier();
                } else {
                    t_barrier();
                    psm2_mq_status_t pst;
                    while (psm2_mq_iprobe(g_mq, tag, ~0ULL, &pst) != PSM2_OK) {
                    }
                    CHECK(pst.msg_length == len && pst.msg_tag == tag);
                    CHECK_OK(psm2_mq_irecv(g_mq, tag, ~0ULL, 0, buf, len, NULL, &req));
                }
                psm2_mq_status_t st;
                CHECK_OK(psm2_mq_wait(&req, &st));
                CHECKF(st.msg_length == len && st.nbytes == len && st.error_code == PSM2_OK && st.msg_tag == tag,
                       "%s %u bytes: msg_length %u nbytes %u error %d", unexpected ? "unexpected" : "expected", len,
                       st.msg_length, st.nbytes, st.error_code);
                CHECK_DATA(buf, len, seed);
                psm2_mq_get_stats(g_mq, &s1);
                CHECK(s1.rx_user_num == s0.rx_user_num + 1 && s1.rx_user_bytes == s0.rx_user_bytes + len);
                if (unexpected && len <= g_thr) /* eager: it waited in a system buffer */
                    CHECKF(s1.rx_sys_num == s0.rx_sys_num + 1 && s1.rx_sysbuf_num == s0.rx_sysbuf_num + 1,
                           "unexpected eager %u bytes: rx_sys_num +%" PRIu64 ", rx_sysbuf_num +%" PRIu64, len,
                           s1.rx_sys_num - s0.rx_sys_num, s1.rx_sysbuf_num - s0.rx_sysbuf_num);
            } else {
                t_fill(buf, len, seed);
                psm2_mq_stats_t s0, s1;
                psm2_mq_get_stats(g_mq, &s0);
                t_barrier();
                psm2_mq_req_t req = NULL;
                CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, tag, buf, len, NULL, &req));
                CHECK_OK(psm2_mq_wait(&req, NULL));
                psm2_mq_get_stats(g_mq, &s1);
                const int rndv = len > g_thr;
                CHECKF(s1.tx_rndv_num - s0.tx_rndv_num == (uint64_t)rndv &&
                           s1.tx_eager_num - s0.tx_eager_num == (uint64_t)!rndv && s1.tx_num == s0.tx_num + 1,
                       "%u bytes (threshold %u): rendezvous +%" PRIu64 ", eager +%" PRIu64, len, g_thr,
                       s1.tx_rndv_num - s0.tx_rndv_num, s1.tx_eager_num - s0.tx_eager_num);
                CHECK(s1.tx_shm_num - s0.tx_shm_num == (uint64_t)g_shm);
            }
            t_barrier();
        }
    }

    /* Case 34: thresholds set at run time on both sides change the protocol. */
    const uint32_t thresholds[] = {1000, 300000};
    for (size_t k = 0; k < 2; ++k) {
        CHECK_OK(psm2_mq_setopt(g_mq, PSM2_MQ_RNDV_HFI_SZ, &thresholds[k]));
        CHECK_OK(psm2_mq_setopt(g_mq, PSM2_MQ_RNDV_SHM_SZ, &thresholds[k]));
        const uint32_t lens[] = {1000, 1001, 200000, 300000};
        for (size_t i = 0; i < 4; ++i) {
            const uint32_t len = lens[i];
            const uint64_t tag = 0x3400 + i;
            if (t_rank == A) {
                const psm2_mq_status_t st = recv1(tag, ~0ULL, buf, len);
                CHECK(st.nbytes == len);
                CHECK_DATA(buf, len, (uint32_t)(3400 + i));
            } else {
                t_fill(buf, len, (uint32_t)(3400 + i));
                psm2_mq_stats_t s0, s1;
                psm2_mq_get_stats(g_mq, &s0);
                psm2_mq_req_t req = NULL;
                CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, tag, buf, len, NULL, &req));
                CHECK_OK(psm2_mq_wait(&req, NULL));
                psm2_mq_get_stats(g_mq, &s1);
                const int rndv = len > thresholds[k];
                CHECKF(s1.tx_rndv_num - s0.tx_rndv_num == (uint64_t)rndv,
                       "%u bytes, threshold %u: rendezvous +%" PRIu64, len, thresholds[k],
                       s1.tx_rndv_num - s0.tx_rndv_num);
            }
        }
        t_barrier();
    }

    /* A raised threshold makes 1 MB messages eager: unexpected ones, one at a time (A acknowledges
     * each), must all find room at A however its buffers have filled. */
    const uint32_t raised = 1500000, mb = 1000000;
    CHECK_OK(psm2_mq_setopt(g_mq, PSM2_MQ_RNDV_HFI_SZ, &raised));
    CHECK_OK(psm2_mq_setopt(g_mq, PSM2_MQ_RNDV_SHM_SZ, &raised));
    for (uint32_t i = 0; i < 40; ++i) {
        uint32_t ack = i;
        if (t_rank == A) {
            psm2_mq_status_t pst;
            while (psm2_mq_iprobe(g_mq, 0x3450, ~0ULL, &pst) != PSM2_OK) {
            }
            const psm2_mq_status_t st = recv1(0x3450, ~0ULL, buf, mb);
            CHECKF(st.nbytes == mb, "1 MB eager message %u: %u bytes", i, st.nbytes);
            CHECK_DATA(buf, mb, 3450 + i);
            send1(0x3451, &ack, sizeof ack);
        } else {
            t_fill(buf, mb, 3450 + i);
            psm2_mq_stats_t s0, s1;
            psm2_mq_get_stats(g_mq, &s0);
            send1(0x3450, buf, mb);
            psm2_mq_get_stats(g_mq, &s1);
            CHECK(s1.tx_eager_num == s0.tx_eager_num + 1);
            ack = ~0u;
            recv1(0x3451, ~0ULL, &ack, sizeof ack);
            CHECK(ack == i);
        }
    }
    CHECK_OK(psm2_mq_setopt(g_mq, PSM2_MQ_RNDV_HFI_SZ, &(uint32_t){64000}));
    CHECK_OK(psm2_mq_setopt(g_mq, PSM2_MQ_RNDV_SHM_SZ, &(uint32_t){16000}));
    free(buf);
    t_barrier();
}

/* ---- case 23: truncation ----------------------------------------------------------------------- */

static void truncation(void) {
    /* (sent, room): eager 80 -> 50, rendezvous, each expected and unexpected; the last is fetched
     * in several pieces over the network and cut inside one. */
    const uint32_t cases[][2] = {{80, 50}, {2 * g_thr + 80, g_thr + 50}, {1 << 20, 0}, {9 << 20, (9 << 19) + 5}};
    const size_t ncases = sizeof cases / sizeof cases[0];
    uint8_t *buf = t_malloc((9 << 20) + 64);
    for (int unexpected = 0; unexpected <= 1; ++unexpected) {
        for (size_t i = 0; i < ncases; ++i) {
            const uint32_t sent = cases[i][0], room = cases[i][1];
            const uint32_t seed = (uint32_t)(2300 + i);
            const uint64_t tag = 0x2300 + i;
            if (t_rank == A) {
                memset(buf, 0xEE, (size_t)room + 64);
                psm2_mq_req_t req = NULL;
                if (!unexpected) CHECK_OK(psm2_mq_irecv(g_mq, tag, ~0ULL, 0, buf, room, NULL, &req));
                t_barrier();
                if (unexpected) {
                    psm2_mq_status_t pst;
                    while (psm2_mq_iprobe(g_mq, tag, ~0ULL, &pst) != PSM2_OK) {
                    }
                    CHECK_OK(psm2_mq_irecv(g_mq, tag, ~0ULL, 0, buf, room, NULL, &req));
                }
                psm2_mq_status_t st;
                CHECK_OK(psm2_mq_wait(&req, &st));
                CHECKF(st.error_code == PSM2_MQ_TRUNCATION && st.msg_length == sent && st.nbytes == room,
                       "%u bytes into %u: error %d, msg_length %u, nbytes %u", sent, room, st.error_code, st.msg_length,
                       st.nbytes);
                CHECK_DATA(buf, room, seed);
                for (uint32_t g = 0; g < 64; ++g)
                    CHECKF(buf[room + g] == 0xEE, "%u bytes into %u: guard byte %u overwritten", sent, room, g);
            } else {
                t_fill(buf, sent, seed);
                t_barrier();
                psm2_mq_req_t req = NULL;
                psm2_mq_status_t st;
                CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, tag, buf, sent, NULL, &req));
                CHECK_OK(psm2_mq_wait(&req, &st));
                CHECK(st.error_code == PSM2_OK); /* the sender's message went whole */
            }
            t_barrier();
        }
    }
    free(buf);
}

/* ---- cases 25, 26: SENDSYNC, rendezvous needs the receiver, crossed blocking sends -------------- */

static void synchronous(void) {
    char small[10] = "sync";
    const uint32_t big = 4u << 20;
    uint8_t *out = t_malloc(big), *in = t_malloc(big);
    t_fill(out, big, (uint32_t)(26 + t_rank));
    if (t_rank == B) {
        /* Neither message can complete before A posts its receives, which it does after the barrier:
         * a synchronous one, and a rendezvous one. B polls and tests meanwhile. */
        psm2_mq_req_t sync = NULL, large = NULL;
        CHECK_OK(psm2_mq_isend(g_mq, g_peer, PSM2_MQ_FLAG_SENDSYNC, 0x2500, small, sizeof small, NULL, &sync));
        CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x2600, out, big, NULL, &large));
        for (int i = 0; i < 2000; ++i) {
            psm2_poll(g_ep);
            CHECK_ERR(psm2_mq_test(&sync, NULL), PSM2_MQ_INCOMPLETE);
            CHECK_ERR(psm2_mq_test(&large, NULL), PSM2_MQ_INCOMPLETE);
        }
        t_barrier();
        CHECK_OK(psm2_mq_wait(&sync, NULL));
        CHECK_OK(psm2_mq_wait(&large, NULL));
        /* A blocking synchronous send returns once A has matched it. */
        CHECK_OK(psm2_mq_send(g_mq, g_peer, PSM2_MQ_FLAG_SENDSYNC, 0x2501, small, sizeof small));
    } else {
        t_barrier();
        psm2_mq_status_t pst;
        while (psm2_mq_iprobe(g_mq, 0x2500, ~0ULL, &pst) != PSM2_OK) {
        }
        CHECK(pst.msg_length == sizeof small);
        char got[10] = "";
        psm2_mq_status_t st = recv1(0x2500, ~0ULL, got, sizeof got);
        CHECK(st.nbytes == sizeof small && strcmp(got, "sync") == 0);
        st = recv1(0x2600, ~0ULL, in, big);
        CHECK(st.nbytes == big);
        CHECK_DATA(in, big, 26 + B);
        st = recv1(0x2501, ~0ULL, got, sizeof got);
        CHECK(st.nbytes == sizeof small);
    }
    t_barrier();

    /* Crossed blocking rendezvous sends, each side's receive posted first: no deadlock. */
    psm2_mq_req_t req = NULL;
    memset(in, 0, big);
    CHECK_OK(psm2_mq_irecv(g_mq, 0x2602, ~0ULL, 0, in, big, NULL, &req));
    t_barrier();
    CHECK_OK(psm2_mq_send(g_mq, g_peer, 0, 0x2602, out, big));
    psm2_mq_status_t st;
    CHECK_OK(psm2_mq_wait(&req, &st));
    CHECK(st.nbytes == big);
    CHECK_DATA(in, big, (uint32_t)(26 + (1 - t_rank)));
    free(out);
    free(in);
    t_barrier();
}

/* ---- case 27: test never progresses; REQINVALID ------------------------------------------------- */

static void test_semantics(void) {
    char buf[32] = "";
    if (t_rank == A) {
        psm2_mq_req_t req = NULL;
        CHECK_OK(psm2_mq_irecv(g_mq, 0x2700, ~0ULL, 0, buf, sizeof buf, NULL, &req));
        t_barrier(); /* B sends */
        t_barrier(); /* B's send is complete */
        for (int i = 0; i < 10000; ++i) CHECK_ERR(psm2_mq_test(&req, NULL), PSM2_MQ_INCOMPLETE);
        psm2_mq_status2_t st;
        CHECK_OK(psm2_mq_wait2(&req, &st));
        CHECK(req == PSM2_MQ_REQINVALID && strcmp(buf, "test") == 0 && st.msg_peer == g_peer);
        /* Completed requests: test and wait return at once, in either form. */
        CHECK_OK(psm2_mq_test(&req, NULL));
        CHECK_OK(psm2_mq_wait(&req, NULL));
        CHECK_OK(psm2_mq_test2(&req, NULL));
        CHECK_OK(psm2_mq_wait2(&req, NULL));
        CHECK(req == PSM2_MQ_REQINVALID);
        /* Zero bytes need no buffer. */
        const psm2_mq_status_t st0 = recv1(0x2701, ~0ULL, NULL, 0);
        CHECK(st0.msg_length == 0 && st0.nbytes == 0 && st0.error_code == PSM2_OK && st0.msg_tag == 0x2701);
        psm2_mq_req_t probed = NULL;
        psm2_mq_status_t pst;
        while (psm2_mq_improbe(g_mq, 0x2702, ~0ULL, &probed, &pst) != PSM2_OK) {
        }
        CHECK(pst.msg_length == 0);
        CHECK_OK(psm2_mq_imrecv(g_mq, 0, NULL, 0, NULL, &probed));
        CHECK_OK(psm2_mq_wait(&probed, &pst));
        CHECK(pst.nbytes == 0 && pst.error_code == PSM2_OK);
    } else {
        t_barrier();
        strcpy(buf, "test");
        send1(0x2700, buf, sizeof buf);
        t_barrier();
        send1(0x2701, NULL, 0);
        send1(0x2702, NULL, 0);
    }
    t_barrier();
}

/* ---- case 28: ipeek ---------------------------------------------------------------------------- */

static int copy_user(struct psm2_mq_req_user *req, void *array, int index) {
    uint64_t *tags = array;
    tags[index] = (uint64_t)req->tag.tag1 << 32 | req->tag.tag0;
    return 1;
}

static void ipeek(void) {
    enum { N = 100 };
    static int ctx[N];
    static uint32_t data[N];
    const uint32_t perm = 37; /* B sends tag i*37 % N as its i-th message */
    if (t_rank == A) {
        psm2_mq_req_t reqs[N];
        for (uint32_t i = 0; i < N; ++i)
            CHECK_OK(psm2_mq_irecv(g_mq, 0x2800 + i, ~0ULL, 0, &data[i], sizeof data[i], &ctx[i], &reqs[i]));
        t_barrier();
        /* The guide's loop: peek until empty, test what was peeked; completions in arrival order. */
        uint32_t done = 0;
        while (done < N) {
            psm2_mq_req_t req = NULL;
            psm2_mq_status_t st;
            const psm2_error_t rc = psm2_mq_ipeek(g_mq, &req, &st);
            if (rc == PSM2_MQ_INCOMPLETE) continue;
            CHECK_ERR(rc, PSM2_OK);
            const uint32_t want = done * perm % N;
            CHECKF(st.msg_tag == 0x2800 + want, "completion %u is tag 0x%" PRIx64 ", expected 0x%x", done, st.msg_tag,
                   0x2800 + want);
            psm2_mq_req_t again = NULL;
            CHECK_OK(psm2_mq_ipeek(g_mq, &again, NULL));
            CHECK(again == req && req == reqs[want]); /* the head stays until it is tested */
            psm2_mq_status_t tst;
            CHECK_OK(psm2_mq_test(&req, &tst));
            CHECK(req == PSM2_MQ_REQINVALID && tst.context == &ctx[want] && data[want] == want);
            ++done;
        }
        t_barrier();

        /* ipeek_dequeue + req_free, and ipeek_dequeue_multi. */
        psm2_mq_req_t r1 = NULL, r2[4];
        CHECK_OK(psm2_mq_irecv(g_mq, 0x2900, ~0ULL, 0, &data[0], sizeof data[0], NULL, &r1));
        for (uint32_t i = 0; i < 4; ++i)
            CHECK_OK(psm2_mq_irecv(g_mq, 0x2901 + i, ~0ULL, 0, &data[1 + i], sizeof data[1 + i], NULL, &r2[i]));
        t_barrier();
        psm2_mq_req_t deq = NULL;
        while (psm2_mq_ipeek_dequeue(g_mq, &deq) != PSM2_OK) {
        }
        CHECK(deq == r1);
        CHECK_OK(psm2_mq_req_free(g_mq, deq));
        CHECK_OK(psm2_mq_req_free(g_mq, NULL));
        uint64_t tags[4] = {0, 0, 0, 0};
        int total = 0;
        while (total < 4) {
            int count = 4 - total;
            CHECK_OK(psm2_mq_ipeek_dequeue_multi(g_mq, tags + total, copy_user, &count));
            CHECK(count >= 0 && count <= 4 - total);
            total += count;
        }
        for (uint32_t i = 0; i < 4; ++i) CHECK(tags[i] == 0x2901 + i && data[1 + i] == 1 + i);
    } else {
        t_barrier();
        psm2_mq_req_t reqs[N];
        for (uint32_t i = 0; i < N; ++i) {
            const uint32_t t = i * perm % N;
            data[t] = t;
            CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x2800 + t, &data[t], sizeof data[t], &ctx[t], &reqs[i]));
        }
        /* Sends complete through ipeek too, each exactly once. */
        int seen[N] = {0};
        for (uint32_t done = 0; done < N;) {
            psm2_mq_req_t req = NULL;
            psm2_mq_status_t st;
            if (psm2_mq_ipeek(g_mq, &req, &st) != PSM2_OK) continue;
            const int idx = (int)((int *)st.context - ctx);
            CHECK(idx >= 0 && idx < N && !seen[idx]);
            seen[idx] = 1;
            CHECK_OK(psm2_mq_test(&req, NULL));
            ++done;
        }
        t_barrier();
        t_barrier();
        for (uint32_t i = 0; i < 5; ++i) {
            data[i] = i;
            send1(0x2900 + i, &data[i], sizeof data[i]);
        }
    }
    t_barrier();
}

/* ---- case 29: one request, v1 and v2 calls mixed ------------------------------------------------- */

static void mixed(void) {
    uint32_t v = 0;
    if (t_rank == A) {
        /* 96-bit receive, peeked with ipeek (64-bit status), completed with test2. */
        psm2_mq_tag_t tag = t_tag(5, 6, 7), sel = t_tag(~0u, ~0u, ~0u);
        psm2_mq_req_t req = NULL, peeked = NULL;
        CHECK_OK(psm2_mq_irecv2(g_mq, g_peer, &tag, &sel, 0, &v, sizeof v, &v, &req));
        psm2_mq_status_t st1;
        while (psm2_mq_ipeek(g_mq, &peeked, &st1) != PSM2_OK) {
        }
        CHECK(peeked == req && st1.msg_tag == 0x0000000600000005ULL && st1.msg_length == sizeof v && st1.context == &v);
        psm2_mq_status2_t st2;
        CHECK_OK(psm2_mq_test2(&req, &st2));
        CHECK(st2.msg_tag.tag2 == 7 && st2.msg_peer == g_peer && st2.nbytes == sizeof v && v == 29);
        /* 64-bit receive, peeked with ipeek2, completed with test. */
        CHECK_OK(psm2_mq_irecv(g_mq, 0x2990, ~0ULL, 0, &v, sizeof v, NULL, &req));
        psm2_mq_status2_t pst2;
        while (psm2_mq_ipeek2(g_mq, &peeked, &pst2) != PSM2_OK) {
        }
        CHECK(peeked == req && pst2.msg_peer == g_peer && pst2.msg_tag.tag0 == 0x2990 && pst2.msg_tag.tag2 == 0);
        CHECK_OK(psm2_mq_test(&req, &st1));
        CHECK(st1.msg_tag == 0x2990 && st1.nbytes == sizeof v && v == 30);
    } else {
        psm2_mq_tag_t tag = t_tag(5, 6, 7);
        v = 29;
        CHECK_OK(psm2_mq_send2(g_mq, g_peer, 0, &tag, &v, sizeof v));
        v = 30;
        send1(0x2990, &v, sizeof v);
    }
    t_barrier();
}

/* ---- cases 30, 31: probes --------------------------------------------------------------------- */

static void probes(void) {
    const uint32_t big = 5 * g_thr;
    uint8_t *buf = t_malloc(big);
    if (t_rank == A) {
        /* Nothing there: INCOMPLETE, the status untouched. */
        psm2_mq_status_t st, untouched;
        memset(&st, 0xA5, sizeof st);
        memcpy(&untouched, &st, sizeof st);
        CHECK_ERR(psm2_mq_iprobe(g_mq, 0x3000, ~0ULL, &st), PSM2_MQ_INCOMPLETE);
        /* Every byte, padding included: the call must not have written to it at all. */
        CHECK(memcmp(&st, &untouched, sizeof st) == 0); // NOLINT(bugprone-suspicious-memory-comparison)
        psm2_mq_req_t req = NULL;
        CHECK_ERR(psm2_mq_improbe(g_mq, 0x3000, ~0ULL, &req, &st), PSM2_MQ_INCOMPLETE);
        t_barrier();
        /* B sent 0x3000 (333 B), 0x3001 (80 B), 0x3001 (90 B), (1,2,3) rendezvous, (1,2,3) 8 B. */
        while (psm2_mq_iprobe(g_mq, 0x3000, ~0ULL, &st) != PSM2_OK) {
        }
        CHECK(st.msg_length == 333 && st.msg_tag == 0x3000);
        CHECK_OK(psm2_mq_iprobe(g_mq, 0x3000, ~0ULL, &st)); /* still there */
        /* iprobe2 honours the source: not from A itself. */
        psm2_mq_tag_t tag = t_tag(0x3000, 0, 0), sel = t_tag(~0u, ~0u, ~0u);
        psm2_mq_status2_t st2;
        CHECK_ERR(psm2_mq_iprobe2(g_mq, g_self, &tag, &sel, &st2), PSM2_MQ_INCOMPLETE);
        CHECK_OK(psm2_mq_iprobe2(g_mq, g_peer, &tag, &sel, &st2));
        CHECK(st2.msg_peer == g_peer && st2.msg_length == 333 && st2.msg_tag.tag0 == 0x3000);
        st = recv1(0x3000, ~0ULL, buf, 333);
        CHECK(st.nbytes == 333);
        CHECK_DATA(buf, 333, 30);

        /* improbe takes the older 0x3001; irecv then gets the younger; imrecv truncates. */
        psm2_mq_req_t probed = NULL;
        while (psm2_mq_improbe(g_mq, 0x3001, ~0ULL, &probed, &st) != PSM2_OK) {
        }
        CHECK(probed != NULL && st.msg_length == 80);
        st = recv1(0x3001, ~0ULL, buf, big);
        CHECKF(st.msg_length == 90, "irecv got the improbed message (%u bytes)", st.msg_length);
        CHECK_DATA(buf, 90, 32);
        memset(buf, 0xEE, 100);
        CHECK_OK(psm2_mq_imrecv(g_mq, 0, buf, 50, &buf, &probed));
        CHECK_OK(psm2_mq_wait(&probed, &st));
        CHECK(st.error_code == PSM2_MQ_TRUNCATION && st.msg_length == 80 && st.nbytes == 50 && st.context == &buf);
        CHECK_DATA(buf, 50, 31);
        CHECK(buf[50] == 0xEE && buf[99] == 0xEE);

        /* 96-bit, from a given source, a rendezvous message. */
        tag = t_tag(1, 2, 3);
        CHECK_ERR(psm2_mq_improbe2(g_mq, g_self, &tag, &sel, &probed, &st2), PSM2_MQ_INCOMPLETE);
        while (psm2_mq_improbe2(g_mq, g_peer, &tag, &sel, &probed, &st2) != PSM2_OK) {
        }
        CHECK(st2.msg_length == big && st2.msg_peer == g_peer && st2.msg_tag.tag2 == 3);
        /* The younger (1,2,3) is next for a receive. */
        uint8_t small[8];
        st2 = recv2(PSM2_MQ_ANY_ADDR, tag, sel, small, sizeof small);
        CHECK(st2.msg_length == 8);
        CHECK_DATA(small, 8, 34);
        memset(buf, 0, big);
        CHECK_OK(psm2_mq_imrecv(g_mq, 0, buf, big, NULL, &probed));
        CHECK_OK(psm2_mq_wait2(&probed, &st2));
        CHECK(st2.error_code == PSM2_OK && st2.nbytes == big && st2.msg_tag.tag2 == 3);
        CHECK_DATA(buf, big, 33);
        CHECK_ERR(psm2_mq_iprobe(g_mq, 0, 0, &st), PSM2_MQ_INCOMPLETE);
    } else {
        t_barrier();
        t_fill(buf, 333, 30);
        send1(0x3000, buf, 333);
        t_fill(buf, 80, 31);
        send1(0x3001, buf, 80);
        t_fill(buf, 90, 32);
        send1(0x3001, buf, 90);
        psm2_mq_tag_t tag = t_tag(1, 2, 3);
        t_fill(buf, big, 33);
        psm2_mq_req_t req = NULL;
        CHECK_OK(psm2_mq_isend2(g_mq, g_peer, 0, &tag, buf, big, NULL, &req));
        uint8_t small[8];
        t_fill(small, sizeof small, 34);
        CHECK_OK(psm2_mq_send2(g_mq, g_peer, 0, &tag, small, sizeof small));
        CHECK_OK(psm2_mq_wait(&req, NULL));
    }
    free(buf);
    t_barrier();
}

/* ---- case 32: cancel --------------------------------------------------------------------------- */

static void cancel(void) {
    uint32_t v = 0;
    if (t_rank == A) {
        /* Matched (peeked complete, not yet tested): INCOMPLETE, and the data is there. */
        psm2_mq_req_t req = NULL, peeked = NULL;
        CHECK_OK(psm2_mq_irecv(g_mq, 0x3200, ~0ULL, 0, &v, sizeof v, NULL, &req));
        t_barrier();
        while (psm2_mq_ipeek(g_mq, &peeked, NULL) != PSM2_OK) {
        }
        CHECK(peeked == req);
        CHECK_ERR(psm2_mq_cancel(&req), PSM2_MQ_INCOMPLETE);
        CHECK(req == peeked);
        psm2_mq_status_t st;
        CHECK_OK(psm2_mq_test(&req, &st));
        CHECK(v == 32 && st.nbytes == sizeof v);
        /* Not matched: OK, and test then returns it. */
        CHECK_OK(psm2_mq_irecv(g_mq, 0x3201, ~0ULL, 0, &v, sizeof v, NULL, &req));
        CHECK_OK(psm2_mq_cancel(&req));
        CHECK(req != NULL);
        while (psm2_mq_test(&req, NULL) != PSM2_OK) psm2_poll(g_ep);
        CHECK(req == PSM2_MQ_REQINVALID);
        /* A cancelled receive takes nothing: B's 0x3201 message is for the next one. */
        t_barrier();
        v = 0;
        const psm2_mq_status_t st2 = recv1(0x3201, ~0ULL, &v, sizeof v);
        CHECK(v == 3201 && st2.nbytes == sizeof v);
    } else {
        t_barrier();
        v = 32;
        send1(0x3200, &v, sizeof v);
        /* Sends cannot be cancelled. */
        psm2_mq_req_t req = NULL;
        uint32_t w = 3201;
        CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x3202, &w, sizeof w, NULL, &req));
        CHECK_ERR(psm2_mq_cancel(&req), PSM2_PARAM_ERR);
        CHECK_OK(psm2_mq_wait(&req, NULL));
        t_barrier();
        send1(0x3201, &w, sizeof w);
    }
    if (t_rank == A) {
        uint32_t w = 0;
        const psm2_mq_status_t st = recv1(0x3202, ~0ULL, &w, sizeof w);
        CHECK(w == 3201 && st.nbytes == sizeof w);
    }
    t_barrier();
}

/* ---- case 13: closing ------------------------------------------------------------------------- */

static void closing(void) {
    if (t_rank == B) {
        /* A rendezvous send that A never receives: a forced close does not wait for it. */
        const uint32_t big = 1u << 20;
        uint8_t *buf = t_malloc(big);
        t_fill(buf, big, 13);
        psm2_mq_req_t req = NULL;
        CHECK_OK(psm2_mq_isend(g_mq, g_peer, 0, 0x1300, buf, big, NULL, &req));
        CHECK_OK(psm2_mq_finalize(g_mq));
        CHECK_OK(psm2_ep_close(g_ep, PSM2_EP_CLOSE_FORCE, 0));
        free(buf);
    } else {
        CHECK_OK(psm2_mq_finalize(g_mq));
        CHECK_OK(psm2_ep_close(g_ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    }
    CHECK_OK(psm2_finalize());
}

int main(void) {
    t_begin("psm2_mq_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    setup();
    first_message();
    match64();
    match96();
    posted_order();
    stream();
    sizes();
    truncation();
    synchronous();
    test_semantics();
    ipeek();
    mixed();
    probes();
    cancel();
    closing();
    t_end();
    return 0;
}
