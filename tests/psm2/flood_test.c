/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flood_test.c — a flood of unexpected messages while the receiver makes no PSM2 call
 * (docs/PSM2.md, *Settled questions* 3, and conformance case 21: unexpected messages are buffered
 * until a receive takes them, and none is lost). Rank 1 starts nonblocking sends of `MiB` mebibytes
 * in messages of `len` bytes (default: the largest eager size that applies to the peer) while rank
 * 0 waits in a launcher barrier; then rank 0 takes them all, in order, every other one with improbe
 * + imrecv, and checks every byte and length, and rank 1 checks that every send completed.
 *
 * What it passes through (src/psm2/mq.cpp, docs/PSM2.md, *Settled questions* 3): the receiver's
 * slabs (7.5 MiB), then messages whose header alone lands and whose data the receiver gets from the
 * sender's retain ring (16 MiB), then, the ring full of those, rendezvous sends that complete when
 * the receiver gets their data. Many small messages (131072 of 16 bytes) are more arrivals than
 * the receiver's event queue holds: arrivals must not need events.
 * Usage: portico-run -n 2 psm2_flood_test [MiB [len]]
 */
#include "psm2_test.h"

int main(int argc, char **argv) {
    t_begin("psm2_flood_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    const uint32_t mib = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 24;
    t_init();
    psm2_epid_t mine;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &mine, &mq);
    psm2_epid_t *all = t_exchange(mine);
    psm2_epaddr_t peer = t_connect(ep, all[1 - t_rank]);
    int shm = 0;
    CHECK_OK(psm2_ep_epid_share_memory(ep, all[1 - t_rank], &shm));
    free(all);
    uint32_t len = 0;
    CHECK_OK(psm2_mq_getopt(mq, shm ? PSM2_MQ_RNDV_SHM_SZ : PSM2_MQ_RNDV_HFI_SZ, &len));
    if (argc > 2) len = (uint32_t)strtoul(argv[2], NULL, 0);
    CHECKF(len > 0, "message length 0");
    const uint32_t n = (uint32_t)(((uint64_t)mib << 20) / len);
    if (t_rank == 1) {
        uint8_t *buf = t_malloc((size_t)n * len); /* a rendezvous send keeps its buffer */
        psm2_mq_req_t *reqs = t_malloc(n * sizeof(psm2_mq_req_t));
        for (uint32_t i = 0; i < n; ++i) {
            t_fill(buf + (size_t)i * len, len, i);
            CHECK_OK(psm2_mq_isend(mq, peer, 0, 0x2100 + (i & 1), buf + (size_t)i * len, len, NULL, &reqs[i]));
        }
        t_barrier();
        for (uint32_t i = 0; i < n; ++i) {
            psm2_mq_status_t st;
            CHECK_OK(psm2_mq_wait(&reqs[i], &st));
            CHECKF(st.error_code == PSM2_OK && st.nbytes == len, "send %u of %u: error %d, %u bytes", i, n,
                   (int)st.error_code, st.nbytes);
        }
        psm2_mq_stats_t stats;
        psm2_mq_get_stats(mq, &stats);
        if (mib > 24) /* more than the receiver's slabs and this side's retain ring hold */
            CHECKF(stats.tx_rndv_num > 0, "no send fell back to rendezvous (%" PRIu64 " eager)", stats.tx_eager_num);
        free(reqs);
        free(buf);
    } else {
        uint8_t *buf = t_malloc(len);
        t_barrier();
        for (uint32_t i = 0; i < n; ++i) {
            psm2_mq_req_t req = NULL;
            psm2_mq_status_t st;
            memset(buf, 0, len);
            if (i & 1) {
                CHECK_OK(psm2_mq_improbe(mq, 0x2100, ~1ULL, &req, &st)); /* all have arrived */
                CHECKF(st.msg_tag == 0x2101 && st.msg_length == len, "improbe %u: tag %#" PRIx64 ", %u bytes", i,
                       st.msg_tag, st.msg_length);
                CHECK_OK(psm2_mq_imrecv(mq, 0, buf, len, NULL, &req));
            } else {
                CHECK_OK(psm2_mq_irecv(mq, 0x2100, ~1ULL, 0, buf, len, NULL, &req));
            }
            CHECK_OK(psm2_mq_wait(&req, &st));
            CHECKF(st.nbytes == len && st.error_code == PSM2_OK && st.msg_tag == 0x2100u + (i & 1),
                   "message %u of %u: %u bytes, tag %#" PRIx64, i, n, st.nbytes, st.msg_tag);
            CHECK_DATA(buf, len, i);
        }
        psm2_mq_stats_t stats;
        psm2_mq_get_stats(mq, &stats);
        CHECKF(stats.rx_sys_num == n, "%" PRIu64 " of %u messages were unexpected", stats.rx_sys_num, n);
        if (mib > 8) /* more than the slabs hold: some data was fetched from the sender */
            CHECKF(stats.rx_sysbuf_num < n, "all %u messages came from slabs", n);
        free(buf);
    }
    t_barrier();
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
