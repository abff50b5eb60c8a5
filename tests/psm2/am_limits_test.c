/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * am_limits_test.c — the PSM2 active-message limits as opa-psm2 reports them, used at exactly
 * those limits between two processes (psm2.am_limits, psm2.am_limits.tcp). Rank 0 ("A") requests,
 * rank 1 ("B") replies.
 *
 * psm2_am_get_parameters and psm2_getopt(PSM2_COMPONENT_AM) must report what opa-psm2 reports with
 * its shared-memory device on (docs/PSM2.md, "Limits"): 256 handlers, 10 arguments
 * (PSMI_AM_MAX_ARGS), 8128 payload bytes each way (AMLONG_MTU). GASNet's psm-conduit aborts when
 * the payload limit exceeds 8192 and sends 9 and 10 arguments. Then a request with max_nargs
 * arguments and max_request_short bytes, answered by a reply with max_nargs and max_reply_short,
 * every argument and byte checked on arrival, in both directions and to itself; and one argument
 * or one byte more is PSM2_PARAM_ERR for a request and for a reply, with nothing sent (the
 * handler that refused a reply can still reply within the limits).
 */
#include "psm2_test.h"

#define A 0
#define B 1

/* opa-psm2: psm_am_internal.h PSMI_AM_NUM_HANDLERS, PSMI_AM_MAX_ARGS; ptl_am/am_config.h AMLONG_MTU. */
#define WANT_HANDLERS 256u
#define WANT_NARGS 10u
#define WANT_SHORT 8128u

static psm2_ep_t g_ep;
static struct psm2_am_parameters g_p;
static psm2_handler_t g_h_req, g_h_rep;
static psm2_amarg_t g_args[WANT_NARGS + 1];
static uint8_t *g_data, *g_reply_data; /* max + 1 bytes each */
static uint32_t g_requests, g_replies, g_completions;
static int g_completion_ctxt;

static uint64_t arg_value(uint32_t round, int j, int reply) {
    return ((uint64_t)round << 40) ^ ((uint64_t)(j + 1) * UINT64_C(0x0101010101010101)) ^ (reply ? ~(uint64_t)0 : 0);
}

static uint32_t round_of(const psm2_amarg_t *args, int reply) {
    return (uint32_t)((args[0].u64 ^ arg_value(0, 0, reply)) >> 40);
}

static void check_message(uint32_t round, int reply, const psm2_amarg_t *args, int nargs, const void *src,
                          uint32_t len) {
    const uint32_t want_len = reply ? g_p.max_reply_short : g_p.max_request_short;
    CHECKF(nargs == (int)g_p.max_nargs && len == want_len, "%s %u: %d arguments and %u bytes, want %u and %u",
           reply ? "reply" : "request", round, nargs, len, g_p.max_nargs, want_len);
    for (int j = 0; j < nargs; ++j)
        CHECKF(args[j].u64 == arg_value(round, j, reply), "%s %u: argument %d is %#llx", reply ? "reply" : "request",
               round, j, (unsigned long long)args[j].u64);
    CHECK_DATA(src, len, round * 2 + (uint32_t)reply);
}

/* B (and A for its own request): checks the request, refuses replies beyond the limits, replies
 * at them. */
static int h_req(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    const uint32_t round = round_of(args, 0);
    check_message(round, 0, args, nargs, src, len);
    psm2_amarg_t out[WANT_NARGS + 1];
    for (int j = 0; j <= (int)WANT_NARGS; ++j) out[j].u64 = arg_value(round, j, 1);
    t_fill(g_reply_data, g_p.max_reply_short + 1, round * 2 + 1);
    CHECK_ERR(psm2_am_reply_short(token, g_h_rep, out, (int)g_p.max_nargs + 1, g_reply_data, g_p.max_reply_short, 0,
                                  NULL, NULL),
              PSM2_PARAM_ERR);
    CHECK_ERR(psm2_am_reply_short(token, g_h_rep, out, (int)g_p.max_nargs, g_reply_data, g_p.max_reply_short + 1, 0,
                                  NULL, NULL),
              PSM2_PARAM_ERR);
    CHECK_OK(
        psm2_am_reply_short(token, g_h_rep, out, (int)g_p.max_nargs, g_reply_data, g_p.max_reply_short, 0, NULL, NULL));
    ++g_requests;
    return 0;
}

static int h_rep(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    (void)token;
    const uint32_t round = round_of(args, 1);
    check_message(round, 1, args, nargs, src, len);
    ++g_replies;
    return 0;
}

static void completion(void *ctxt) {
    CHECK(ctxt == &g_completion_ctxt);
    ++g_completions;
}

static void poll_until(const uint32_t *counter, uint32_t value) {
    while (*(volatile const uint32_t *)counter < value) {
        const psm2_error_t rc = psm2_poll(g_ep);
        CHECK(rc == PSM2_OK || rc == PSM2_OK_NO_PROGRESS);
    }
}

/* What the library reports, both ways of asking. */
static void parameters(void) {
    size_t out = 0;
    memset(&g_p, 0xA5, sizeof g_p);
    CHECK_OK(psm2_am_get_parameters(g_ep, &g_p, sizeof g_p, &out));
    CHECK(out == sizeof g_p);
    CHECKF(g_p.max_handlers == WANT_HANDLERS && g_p.max_nargs == WANT_NARGS && g_p.max_request_short == WANT_SHORT &&
               g_p.max_reply_short == WANT_SHORT,
           "psm2_am_get_parameters: %u handlers, %u arguments, %u/%u bytes; opa-psm2 reports %u, %u, %u/%u",
           g_p.max_handlers, g_p.max_nargs, g_p.max_request_short, g_p.max_reply_short, WANT_HANDLERS, WANT_NARGS,
           WANT_SHORT, WANT_SHORT);
    /* A caller's larger struct: the tail is zeroed, as opa-psm2 does. */
    uint32_t bigger[6];
    memset(bigger, 0xA5, sizeof bigger);
    CHECK_OK(psm2_am_get_parameters(g_ep, (struct psm2_am_parameters *)(void *)bigger, sizeof bigger, &out));
    CHECK(out == sizeof g_p && bigger[1] == WANT_NARGS && bigger[4] == 0 && bigger[5] == 0);

    const int opts[3] = {PSM2_AM_OPT_FRAG_SZ, PSM2_AM_OPT_NARGS, PSM2_AM_OPT_HANDLERS};
    const uint32_t want[3] = {WANT_SHORT, WANT_NARGS, WANT_HANDLERS};
    for (int i = 0; i < 3; ++i) {
        uint32_t v = 0;
        uint64_t len = sizeof v;
        CHECK_OK(psm2_getopt(PSM2_COMPONENT_AM, g_ep, opts[i], &v, &len));
        CHECKF(v == want[i] && len == sizeof v, "psm2_getopt(AM, %d) = %u, want %u", opts[i], v, want[i]);
    }
    /* The limit GASNet's psm-conduit asserts (gasnet_core.c: max_request_short <= 8192). */
    CHECK(g_p.max_request_short <= 8192 && g_p.max_request_short <= g_p.max_reply_short && g_p.max_nargs * 2 >= 16);
}

/* A request at the limits to `to` (round `round`), then one beyond each limit, refused. */
static void request_at_limits(psm2_epaddr_t to, uint32_t round) {
    for (int j = 0; j <= (int)WANT_NARGS; ++j) g_args[j].u64 = arg_value(round, j, 0);
    t_fill(g_data, g_p.max_request_short + 1, round * 2);
    const uint32_t done = g_completions;
    CHECK_OK(psm2_am_request_short(to, g_h_req, g_args, (int)g_p.max_nargs, g_data, g_p.max_request_short,
                                   PSM2_AM_FLAG_NONE, completion, &g_completion_ctxt));
    CHECK_ERR(psm2_am_request_short(to, g_h_req, g_args, (int)g_p.max_nargs + 1, g_data, g_p.max_request_short,
                                    PSM2_AM_FLAG_NONE, completion, &g_completion_ctxt),
              PSM2_PARAM_ERR);
    CHECK_ERR(psm2_am_request_short(to, g_h_req, g_args, (int)g_p.max_nargs, g_data, g_p.max_request_short + 1,
                                    PSM2_AM_FLAG_NONE, completion, &g_completion_ctxt),
              PSM2_PARAM_ERR);
    poll_until(&g_completions, done + 1);
}

int main(void) {
    t_begin("psm2_am_limits_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    t_init();
    psm2_epid_t mine;
    g_ep = t_open(NULL, &mine, NULL);
    psm2_epid_t *epids = t_exchange(mine);
    parameters();
    g_data = t_malloc(WANT_SHORT + 1);
    g_reply_data = t_malloc(WANT_SHORT + 1);
    g_h_req = t_register_handler(g_ep, h_req);
    g_h_rep = t_register_handler(g_ep, h_rep);
    psm2_epaddr_t peer = t_connect(g_ep, epids[t_rank == A ? B : A]);
    psm2_epaddr_t self = t_connect(g_ep, epids[t_rank]);
    t_barrier(); /* handlers registered everywhere */

    /* The path to each, as opa-psm2's info query names it: the peer is on this machine, reached
     * through shared memory (AMSH), or over TCP with PORTICO_TRANSPORT=tcp (the network: IPS). */
    psm2_mq_t mq = NULL;
    CHECK_OK(psm2_mq_init(g_ep, PSM2_MQ_ORDERMASK_ALL, NULL, 0, &mq));
    psm2_info_query_arg_t qa[3];
    memset(qa, 0, sizeof qa);
    qa[0].mq = mq;
    qa[1].epaddr = peer;
    uint32_t config = 0;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_CONFIG, &config, 2, qa));
    const uint32_t network = PSM2_INFO_QUERY_CONFIG_IPS | PSM2_INFO_QUERY_CONFIG_PIO | PSM2_INFO_QUERY_CONFIG_DMA;
    CHECKF(config == (t_tcp_only() ? network : (uint32_t)PSM2_INFO_QUERY_CONFIG_AMSH), "the peer's path is %#x",
           config);
    qa[2].mstq = PSM2_INFO_QUERY_THRESH_IPS_RNDV;
    uint32_t rndv = 0;
    if (t_tcp_only()) {
        CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_THRESH, &rndv, 3, qa));
        CHECK(rndv == 64000);
    } else {
        CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_THRESH, &rndv, 3, qa), PSM2_INTERNAL_ERR);
    }
    qa[1].epaddr = self;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_CONFIG, &config, 2, qa));
    CHECK(config == PSM2_INFO_QUERY_CONFIG_SELF);

    /* A to B, then B to A, then each to itself: two rounds each. */
    for (uint32_t round = 1; round <= 2; ++round) {
        if (t_rank == A) {
            request_at_limits(peer, round);
            poll_until(&g_replies, round);
        } else {
            poll_until(&g_requests, round);
        }
    }
    t_barrier();
    for (uint32_t round = 3; round <= 4; ++round) {
        if (t_rank == B) {
            request_at_limits(peer, round);
            poll_until(&g_replies, round - 2);
        } else {
            poll_until(&g_requests, round - 2);
        }
    }
    t_barrier();
    const uint32_t before_self = g_requests;
    request_at_limits(self, 5);
    poll_until(&g_replies, 3);
    CHECK(g_requests == before_self + 1);
    t_barrier();
    /* Nothing beyond the limits ever arrived: each side ran exactly the handlers above. */
    t_quiesce(g_ep);
    CHECKF(g_requests == 3u && g_replies == 3u, "%u requests and %u replies handled", g_requests, g_replies);
    t_barrier();
    free(g_data);
    free(g_reply_data);
    free(epids);
    CHECK_OK(psm2_ep_close(g_ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
