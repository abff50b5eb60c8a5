/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * am_test.c — PSM2 active messages between two processes (psm2.am, psm2.am.tcp). Rank 0 ("A")
 * requests, rank 1 ("B") runs the handlers and replies. docs/PSM2.md's conformance case 36: the
 * parameters' minimums (and the limits beyond them refused); request -> reply with every argument
 * count 0..10 and payloads 0..8128 bytes, checked byte for byte both ways; completion callbacks;
 * psm2_am_get_source; reply rules (once, never from a reply handler or for NOREPLY); 10000 NOREPLY
 * requests handled in order; ASYNC payloads; requests to itself; a full handler table
 * (PSM2_EP_NO_RESOURCES). Also case 37's point for AM: B sends requests back to A through the
 * epaddr get_source gave it, without connecting. A flood of requests while the target is away from
 * PSM2 (none lost, order kept).
 */
#include "psm2_test.h"

#define A 0
#define B 1

static psm2_ep_t g_ep;
static psm2_mq_t g_mq;
static psm2_epid_t g_epids[2];
static psm2_epaddr_t g_peer; /* A: B, connected */
static psm2_epaddr_t g_self;
static psm2_epaddr_t g_src; /* B: A, as get_source names it */

enum { H_REQ, H_REP, H_SEQ, H_ASYNC, H_PING, H_FLOOD, H_COUNT };
static int g_idx[H_COUNT];

static const uint32_t kLens[] = {0, 1, 255, 256, 4096, 8127, 8128};
#define NLENS (sizeof kLens / sizeof kLens[0])
#define NARGS_MAX 10
#define NCOMBOS ((NARGS_MAX + 1) * NLENS)
static uint64_t arg_value(uint32_t seq, int j) { return (uint64_t)seq * 0x9E3779B97F4A7C15ULL ^ (uint64_t)j << 56; }

/* State the handlers update (A's and B's; each process uses its own). */
static struct {
    uint32_t requests;  /* B: H_REQ calls so far */
    uint32_t replies;   /* A: H_REP calls so far */
    uint32_t completed; /* A: completion callbacks */
    uint32_t seq_next;  /* B: the next H_SEQ number */
    uint32_t async_seen;
    uint32_t pings;
    uint32_t hctx_ok;
} g;

static void completion(void *ctxt) {
    ++g.completed;
    CHECK(ctxt == &g);
}

/* B: the request of combination `seq` (nargs seq % 11, length kLens[seq / 11]); reply in kind. */
static int h_req(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len, void *hctx) {
    const uint32_t seq = g.requests++;
    CHECK(hctx == &g);
    CHECKF(nargs == (int)(seq % (NARGS_MAX + 1)) && len == kLens[seq / (NARGS_MAX + 1)],
           "request %u: %d args, %u bytes", seq, nargs, len);
    for (int j = 0; j < nargs; ++j) CHECKF(args[j].u64 == arg_value(seq, j), "request %u: argument %d", seq, j);
    CHECK_DATA(src, len, seq);
    psm2_epaddr_t from = NULL;
    CHECK_OK(psm2_am_get_source(token, &from));
    psm2_epid_t epid = 0;
    CHECK_OK(psm2_epaddr_to_epid(from, &epid));
    CHECK(epid == g_epids[A]);
    CHECK(g_src == NULL || g_src == from);
    g_src = from;
    CHECK_ERR(psm2_am_get_source(token, NULL), PSM2_PARAM_ERR);
    /* The reply: arguments + 1, payload seeded seq + 1000. */
    psm2_amarg_t out[NARGS_MAX];
    for (int j = 0; j < nargs; ++j) out[j].u64 = args[j].u64 + 1;
    uint8_t *data = t_malloc(len);
    t_fill(data, len, seq + 1000);
    CHECK_OK(
        psm2_am_reply_short(token, (psm2_handler_t)g_idx[H_REP], out, nargs, data, len, PSM2_AM_FLAG_NONE, NULL, NULL));
    free(data); /* copied: not ASYNC */
    CHECK_ERR(psm2_am_reply_short(token, (psm2_handler_t)g_idx[H_REP], out, nargs, NULL, 0, 0, NULL, NULL),
              PSM2_AM_INVALID_REPLY);
    return 0;
}

/* A: the reply to combination `seq`. */
static int h_rep(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    const uint32_t seq = g.replies++;
    CHECKF(nargs == (int)(seq % (NARGS_MAX + 1)) && len == kLens[seq / (NARGS_MAX + 1)], "reply %u: %d args, %u bytes",
           seq, nargs, len);
    for (int j = 0; j < nargs; ++j) CHECKF(args[j].u64 == arg_value(seq, j) + 1, "reply %u: argument %d", seq, j);
    CHECK_DATA(src, len, seq + 1000);
    psm2_epaddr_t from = NULL;
    CHECK_OK(psm2_am_get_source(token, &from));
    CHECK(from == g_peer);
    /* Reply handlers do not reply. */
    CHECK_ERR(psm2_am_reply_short(token, (psm2_handler_t)g_idx[H_REP], NULL, 0, NULL, 0, 0, NULL, NULL),
              PSM2_AM_INVALID_REPLY);
    return 0;
}

/* B: NOREPLY requests numbered in args[0]; they must come in order. */
static int h_seq(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len, void *hctx) {
    (void)src;
    CHECK(hctx == NULL && nargs == 2 && len == 0);
    CHECKF(args[0].u32w0 == g.seq_next && args[1].u64 == ~(uint64_t)g.seq_next, "request %u came when %u was next",
           args[0].u32w0, g.seq_next);
    if (g.seq_next == 0)
        CHECK_ERR(psm2_am_reply_short(token, (psm2_handler_t)g_idx[H_REP], NULL, 0, NULL, 0, 0, NULL, NULL),
                  PSM2_AM_INVALID_REPLY);
    ++g.seq_next;
    return 0;
}

/* B: ASYNC payloads (seeded with args[0]). */
static int h_async(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len, void *hctx) {
    (void)token;
    (void)hctx;
    CHECK(nargs == 1 && len == 8000);
    CHECK_DATA(src, len, 7000 + args[0].u32w0);
    ++g.async_seen;
    return 0;
}

/* Requests to itself (A) and B's requests back to A. */
static int h_ping(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    CHECK(nargs == 1 && len == 5 && memcmp(src, "ping", 5) == 0);
    psm2_epaddr_t from = NULL;
    CHECK_OK(psm2_am_get_source(token, &from));
    psm2_epid_t epid = 0;
    CHECK_OK(psm2_epaddr_to_epid(from, &epid));
    CHECK(epid == g_epids[args[0].u32w0]);
    ++g.pings;
    return 0;
}

/* B: the flood's requests, numbered in args[0], payload seeded with it. */
static uint32_t g_flood_next;
#define FLOOD_LEN 1000
static int h_flood(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    (void)token;
    CHECK(nargs == 2 && len == FLOOD_LEN);
    CHECKF(args[0].u32w0 == g_flood_next && args[1].u64 == ~(uint64_t)g_flood_next,
           "flood request %u came when %u was next", args[0].u32w0, g_flood_next);
    CHECK_DATA(src, len, 9000 + g_flood_next);
    ++g_flood_next;
    return 0;
}

static void poll_until(const uint32_t *counter, uint32_t value) {
    while (*(volatile const uint32_t *)counter < value) {
        const psm2_error_t rc = psm2_poll(g_ep);
        CHECK(rc == PSM2_OK || rc == PSM2_OK_NO_PROGRESS);
    }
}

static void registration(void) {
    struct psm2_am_parameters p;
    size_t out = 0;
    memset(&p, 0, sizeof p);
    CHECK_OK(psm2_am_get_parameters(g_ep, &p, sizeof p, &out));
    CHECK(out == sizeof p);
    CHECK(p.max_handlers >= 64 && p.max_nargs >= 2 && p.max_request_short >= 256 && p.max_reply_short >= 256);
    CHECK(p.max_handlers == 256 && p.max_nargs == NARGS_MAX && p.max_request_short == 8128 &&
          p.max_reply_short == 8128);
    /* An older caller's smaller struct gets what fits. */
    uint32_t two[3] = {0, 0, 0xABCD};
    CHECK_OK(psm2_am_get_parameters(g_ep, (struct psm2_am_parameters *)(void *)two, 8, &out));
    CHECK(out == 8 && two[0] == 256 && two[1] == NARGS_MAX && two[2] == 0xABCD);
    CHECK_ERR(psm2_am_get_parameters(g_ep, &p, sizeof p, NULL), PSM2_PARAM_ERR);

    /* The _2 form with contexts, then the plain form: indices are returned, the same on both. */
    psm2_am_handler_2_fn_t fn2[3] = {h_req, h_seq, h_async};
    void *hctx[3] = {&g, NULL, NULL};
    int idx2[3] = {-1, -1, -1};
    CHECK_OK(psm2_am_register_handlers_2(g_ep, fn2, 3, hctx, idx2));
    psm2_am_handler_fn_t fn1[3] = {h_rep, h_ping, h_flood};
    int idx1[3] = {-1, -1, -1};
    CHECK_OK(psm2_am_register_handlers(g_ep, fn1, 3, idx1));
    g_idx[H_REQ] = idx2[0];
    g_idx[H_SEQ] = idx2[1];
    g_idx[H_ASYNC] = idx2[2];
    g_idx[H_REP] = idx1[0];
    g_idx[H_PING] = idx1[1];
    g_idx[H_FLOOD] = idx1[2];
    for (int i = 0; i < H_COUNT; ++i) {
        CHECK(g_idx[i] >= 0 && g_idx[i] < 256);
        for (int j = 0; j < i; ++j) CHECK(g_idx[i] != g_idx[j]);
    }
    int both[2 * H_COUNT];
    CHECK_RT(portico_runtime_allgather(g_idx, sizeof g_idx, both));
    CHECK(memcmp(both, both + H_COUNT, sizeof g_idx) == 0);
}

/* Every argument count and payload size, one request at a time, each replied to. */
static void request_reply(void) {
    if (t_rank == A) {
        uint8_t *data = t_malloc(8128);
        for (uint32_t seq = 0; seq < NCOMBOS; ++seq) {
            const int nargs = (int)(seq % (NARGS_MAX + 1));
            const uint32_t len = kLens[seq / (NARGS_MAX + 1)];
            psm2_amarg_t args[NARGS_MAX];
            for (int j = 0; j < nargs; ++j) args[j].u64 = arg_value(seq, j);
            t_fill(data, len, seq);
            CHECK_OK(psm2_am_request_short(g_peer, (psm2_handler_t)g_idx[H_REQ], args, nargs, data, len,
                                           PSM2_AM_FLAG_NONE, completion, &g));
            /* Arguments and payload are free again: scribbling on them changes nothing. */
            memset(args, 0xFF, sizeof args);
            memset(data, 0xFF, len);
            poll_until(&g.completed, seq + 1);
            poll_until(&g.replies, seq + 1);
        }
        free(data);
        /* Beyond the limits. */
        psm2_amarg_t args[NARGS_MAX + 1];
        memset(args, 0, sizeof args);
        uint8_t *big = t_malloc(8129);
        CHECK(psm2_am_request_short(g_peer, (psm2_handler_t)g_idx[H_REQ], args, NARGS_MAX + 1, NULL, 0, 0, NULL,
                                    NULL) != PSM2_OK);
        CHECK(psm2_am_request_short(g_peer, (psm2_handler_t)g_idx[H_REQ], args, 1, big, 8129, 0, NULL, NULL) !=
              PSM2_OK);
        free(big);
    } else {
        poll_until(&g.requests, NCOMBOS);
    }
    t_barrier();
    CHECK(t_rank == A ? g.replies == NCOMBOS : g.requests == NCOMBOS);
}

/* 10000 NOREPLY requests, up to 256 in flight, handled in the order sent. */
static void ordered(void) {
    enum { N = 10000, WINDOW = 256 };
    if (t_rank == A) {
        const uint32_t base = g.completed;
        for (uint32_t i = 0; i < N; ++i) {
            poll_until(&g.completed, base + (i >= WINDOW ? i - WINDOW : 0));
            psm2_amarg_t args[2];
            args[0].u64 = 0;
            args[0].u32w0 = i;
            args[1].u64 = ~(uint64_t)i;
            CHECK_OK(psm2_am_request_short(g_peer, (psm2_handler_t)g_idx[H_SEQ], args, 2, NULL, 0, PSM2_AM_FLAG_NOREPLY,
                                           completion, &g));
        }
        poll_until(&g.completed, base + N);
    } else {
        poll_until(&g.seq_next, N);
    }
    t_barrier();
}

/* 6000 requests of 1000 bytes while B waits in a launcher barrier, away from PSM2: more than its
 * 2 MiB of slabs and its 4096-event control queue hold. None is lost, all run in order once B
 * polls, and every completion callback at A runs (from B's "done" messages). */
static void flood(void) {
    enum { N = 6000 };
    if (t_rank == A) {
        const uint32_t base = g.completed;
        uint8_t payload[FLOOD_LEN];
        for (uint32_t i = 0; i < N; ++i) {
            psm2_amarg_t args[2];
            args[0].u64 = 0;
            args[0].u32w0 = i;
            args[1].u64 = ~(uint64_t)i;
            t_fill(payload, sizeof payload, 9000 + i);
            CHECK_OK(psm2_am_request_short(g_peer, (psm2_handler_t)g_idx[H_FLOOD], args, 2, payload, sizeof payload,
                                           PSM2_AM_FLAG_NOREPLY, completion, &g));
        }
        t_barrier();
        poll_until(&g.completed, base + N);
    } else {
        t_barrier();
        poll_until(&g_flood_next, N);
    }
    t_barrier();
}

/* ASYNC: the payload is not copied; it is released by the completion callback. */
static uint8_t *g_async_bufs[16];
static void async_done(void *ctxt) {
    const size_t i = (size_t)(uintptr_t)ctxt;
    CHECK(i < 16 && g_async_bufs[i] != NULL);
    CHECK_DATA(g_async_bufs[i], 8000, 7000 + (uint32_t)i); /* untouched by the library */
    free(g_async_bufs[i]);
    g_async_bufs[i] = NULL;
    ++g.completed;
}

static void async_payloads(void) {
    if (t_rank == A) {
        const uint32_t base = g.completed;
        for (uint32_t i = 0; i < 16; ++i) {
            g_async_bufs[i] = t_malloc(8000);
            t_fill(g_async_bufs[i], 8000, 7000 + i);
            psm2_amarg_t arg;
            arg.u64 = 0;
            arg.u32w0 = i;
            CHECK_OK(psm2_am_request_short(g_peer, (psm2_handler_t)g_idx[H_ASYNC], &arg, 1, g_async_bufs[i], 8000,
                                           PSM2_AM_FLAG_ASYNC | PSM2_AM_FLAG_NOREPLY, async_done,
                                           (void *)(uintptr_t)i));
        }
        poll_until(&g.completed, base + 16);
    } else {
        poll_until(&g.async_seen, 16);
    }
    t_barrier();
}

/* A to itself; B back to A through get_source's epaddr. */
static void pings(void) {
    psm2_amarg_t arg;
    arg.u64 = 0;
    arg.u32w0 = (uint32_t)t_rank;
    char ping[5] = "ping";
    if (t_rank == A) {
        CHECK_OK(psm2_am_request_short(g_self, (psm2_handler_t)g_idx[H_PING], &arg, 1, ping, 5, 0, NULL, NULL));
        poll_until(&g.pings, 1);
        poll_until(&g.pings, 2); /* B's */
    } else {
        CHECK(g_src != NULL);
        CHECK_OK(psm2_am_request_short(g_src, (psm2_handler_t)g_idx[H_PING], &arg, 1, ping, 5, 0, completion, &g));
        poll_until(&g.completed, 1);
    }
    t_barrier();
}

/* The table holds 256 handlers. */
static void full_table(void) {
    psm2_am_handler_fn_t many[256];
    int idx[256];
    for (int i = 0; i < 256; ++i) many[i] = h_ping;
    CHECK_OK(psm2_am_register_handlers(g_ep, many, 256 - H_COUNT, idx));
    CHECK_ERR(psm2_am_register_handlers(g_ep, many, 1, idx), PSM2_EP_NO_RESOURCES);
    psm2_am_handler_2_fn_t one[1] = {h_seq};
    CHECK_ERR(psm2_am_register_handlers_2(g_ep, one, 1, NULL, idx), PSM2_EP_NO_RESOURCES);
    psm2_am_unregister_handlers(g_ep);
    CHECK_OK(psm2_am_register_handlers(g_ep, many, 256, idx));
    CHECK_ERR(psm2_am_register_handlers(g_ep, many, 1, idx), PSM2_EP_NO_RESOURCES);
    psm2_am_unregister_handlers(g_ep);
}

int main(void) {
    t_begin("psm2_am_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    t_init();
    psm2_epid_t mine;
    g_ep = t_open(NULL, &mine, &g_mq);
    psm2_epid_t *all = t_exchange(mine);
    memcpy(g_epids, all, sizeof g_epids);
    free(all);
    CHECK_ERR(psm2_am_get_source(NULL, &g_src), PSM2_PARAM_ERR);
    registration();
    if (t_rank == A) {
        g_peer = t_connect(g_ep, g_epids[B]);
        g_self = t_connect(g_ep, g_epids[A]);
    }
    t_barrier(); /* handlers registered everywhere before the first request */
    request_reply();
    ordered();
    flood();
    async_payloads();
    pings();
    full_table();
    t_barrier();
    CHECK_OK(psm2_ep_close(g_ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
