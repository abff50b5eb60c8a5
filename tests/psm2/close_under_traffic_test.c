/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * close_under_traffic_test.c — an endpoint closed while a peer still sends to it (docs/PSM2.md,
 * "Closing"): psm2_ep_close disables the endpoint's portals before it frees its buffers, so a
 * message that arrives after the close is dropped and none is written into freed memory (GASNet's
 * psm conduit died of such writes at 4 processes before). Rank 1 sends a first batch of eager
 * messages that rank 0 leaves unexpected (they sit in its buffers), then, after a barrier, a
 * second batch as fast as it can while rank 0 closes its endpoint at once; rank 0 then fills
 * freshly allocated memory (where the freed buffers may be reused) with a pattern, waits until
 * rank 1 is done, and checks the pattern. Under AddressSanitizer (CI) a late write into the freed
 * buffers is reported as such. Rank 1 checks that every send completed, and closes gracefully
 * (every message answered, delivered or dropped) before the last barrier; a loss after the close
 * is reported to it, and must name the disabled portal, never a fault at the receiver (which is
 * what a write into its freed buffers turns into).
 * Usage: portico-run -n 2 psm2_close_under_traffic_test [messages]
 */
#include "psm2_test.h"

#define FILL_BYTES (32u << 20)

/* Rank 1's losses, as its error handler hears of them: a message that came after the close must
 * be refused by the disabled portal, never reach memory the receiver has let go of (which the
 * engine's guarded copy would report as a fault at the receiver). */
static int g_losses, g_faults;
static psm2_error_t on_error(psm2_ep_t ep, const psm2_error_t error, const char *text, psm2_error_token_t token) {
    (void)ep, (void)token;
    ++g_losses;
    if (text && strstr(text, "PTL_NI_SEGV")) ++g_faults;
    return error;
}

int main(int argc, char **argv) {
    t_begin("psm2_close_under_traffic_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    const uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 20000;
    const uint32_t len = 64;
    t_init();
    CHECK_OK(psm2_error_register_handler(NULL, t_rank == 1 ? on_error : PSM2_ERRHANDLER_NO_HANDLER));
    psm2_epid_t mine;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &mine, &mq);
    psm2_epid_t *all = t_exchange(mine);
    psm2_epaddr_t peer = t_connect(ep, all[1 - t_rank]);
    free(all);
    if (t_rank == 1) {
        uint8_t *buf = t_malloc((size_t)2 * n * len);
        psm2_mq_req_t *reqs = t_malloc((size_t)2 * n * sizeof(psm2_mq_req_t));
        for (uint32_t i = 0; i < 2 * n; ++i) {
            if (i == n) t_barrier(); /* the first batch is out; rank 0 closes from here on */
            t_fill(buf + (size_t)i * len, len, i);
            CHECK_OK(psm2_mq_isend(mq, peer, 0, 0x3100, buf + (size_t)i * len, len, NULL, &reqs[i]));
        }
        for (uint32_t i = 0; i < 2 * n; ++i) {
            psm2_mq_status_t st;
            const psm2_error_t rc = psm2_mq_wait(&reqs[i], &st);
            /* An eager send completes when its data is taken; a loss at the receiver is reported
             * separately (to the handler), never as a hang. */
            CHECKF(rc == PSM2_OK && st.nbytes == len, "send %u of %u: wait %d, %u bytes", i, 2 * n, (int)rc, st.nbytes);
        }
        /* A graceful close returns once every message has been answered, delivered or dropped. */
        CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
        CHECKF(g_faults == 0, "%d of %d lost messages reached freed memory at the receiver (PTL_NI_SEGV)", g_faults,
               g_losses);
        free(reqs);
        free(buf);
        t_barrier(); /* nothing of rank 1's is under way any more */
    } else {
        t_barrier();
        CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
        uint8_t *fill = t_malloc(FILL_BYTES);
        t_fill(fill, FILL_BYTES, 77);
        t_barrier(); /* whatever came late has come, and was dropped */
        CHECK_DATA(fill, FILL_BYTES, 77);
        free(fill);
    }
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
