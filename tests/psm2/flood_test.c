/*
 * flood_test.c — many unexpected eager messages while the receiver makes no PSM2 progress
 * (notes/psm2.md §3.5 and §6 case 21: unexpected messages are buffered by the MQ until a receive
 * takes them). Rank 1 sends 24 MiB of eager messages of the largest eager size (the threshold
 * that applies to the peer) while rank 0 waits in a launcher barrier; then rank 0 receives them
 * all and checks every byte.
 *
 * Unexpected eager data lands in slabs on the overflow list (src/psm2/mq.cpp): eight linked at a
 * time, 48 MiB usable, replaced only during PSM2 calls. Beyond that, a flood while the receiver is
 * away from PSM2 loses messages (the sender is told on stderr); in-order retransmission under
 * Portals flow control is the open fix (docs/PSM2.md). Run by hand with a size:
 * portico-run -n 2 psm2_flood_test [MiB].
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
    const uint32_t n = (mib << 20) / len;
    uint8_t *buf = t_malloc(len);
    if (t_rank == 1) {
        for (uint32_t i = 0; i < n; ++i) {
            t_fill(buf, len, i);
            CHECK_OK(psm2_mq_send(mq, peer, 0, 0x2100, buf, len));
        }
        t_barrier();
    } else {
        t_barrier();
        for (uint32_t i = 0; i < n; ++i) {
            psm2_mq_req_t req = NULL;
            psm2_mq_status_t st;
            CHECK_OK(psm2_mq_irecv(mq, 0x2100, ~0ULL, 0, buf, len, NULL, &req));
            CHECK_OK(psm2_mq_wait(&req, &st));
            CHECKF(st.nbytes == len && st.error_code == PSM2_OK, "message %u of %u: %u bytes", i, n, st.nbytes);
            CHECK_DATA(buf, len, i);
        }
    }
    free(buf);
    t_barrier();
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
