/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devices_test.c — PSM2_DEVICES (docs/PSM2.md, *Environment*): "self", "shm" (peers reached through
 * shared memory) and "hfi" (Portico's network transport) are the paths an endpoint may use. Two
 * ranks, run under several settings (tests/psm2/CMakeLists.txt):
 *   psm2_devices_test reach SHM    the peer is reachable; psm2_ep_epid_share_memory says SHM (0/1);
 *                                  a message each way and an active message arrive intact
 *   psm2_devices_test unreachable  connect fails for the peer with PSM2_EPID_UNREACHABLE, and
 *                                  sends to it (through an implicit epaddr from the other
 *                                  side's epid) return PSM2_EPID_UNREACHABLE
 * An endpoint always reaches itself when "self" is listed.
 */
#include "psm2_test.h"

static uint32_t g_am_seen;
static int h_note(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    (void)token;
    CHECK(nargs == 1 && args[0].u64 == 0x5151 && len == 7 && memcmp(src, "devices", 7) == 0);
    ++g_am_seen;
    return 0;
}

int main(int argc, char **argv) {
    t_begin("psm2_devices_test");
    CHECKF(t_size == 2, "runs as 2 processes, not %d", t_size);
    CHECKF(argc >= 2, "usage: psm2_devices_test reach SHM | unreachable");
    const int reach = strcmp(argv[1], "reach") == 0;
    t_init();
    psm2_epid_t mine;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &mine, &mq);
    const psm2_handler_t handler = t_register_handler(ep, h_note);
    psm2_epid_t *all = t_exchange(mine);
    const psm2_epid_t other = all[1 - t_rank];
    free(all);
    /* Itself, through "self" (every setting below lists it). */
    psm2_epaddr_t self = NULL;
    psm2_error_t self_err = PSM2_OK;
    CHECK_OK(psm2_ep_connect(ep, 1, &mine, NULL, &self_err, &self, 0));
    CHECK(self_err == PSM2_OK);
    psm2_epaddr_t peer = NULL;
    psm2_error_t err = PSM2_OK;
    if (reach) {
        CHECK_OK(psm2_ep_connect(ep, 1, &other, NULL, &err, &peer, 0));
        CHECK(err == PSM2_OK);
        int shm = -1;
        CHECK_OK(psm2_ep_epid_share_memory(ep, other, &shm));
        CHECKF(shm == atoi(argv[2]), "psm2_ep_epid_share_memory says %d, expected %s", shm, argv[2]);
        uint8_t buf[100];
        psm2_mq_req_t req = NULL;
        CHECK_OK(psm2_mq_irecv(mq, 0x77, ~0ULL, 0, buf, sizeof buf, NULL, &req));
        uint8_t out[100];
        t_fill(out, sizeof out, 70 + (uint32_t)t_rank);
        CHECK_OK(psm2_mq_send(mq, peer, 0, 0x77, out, sizeof out));
        psm2_mq_status_t st;
        CHECK_OK(psm2_mq_wait(&req, &st));
        CHECK(st.nbytes == sizeof buf);
        CHECK_DATA(buf, sizeof buf, 70 + (uint32_t)(1 - t_rank));
        psm2_amarg_t arg;
        arg.u64 = 0x5151;
        CHECK_OK(psm2_am_request_short(peer, handler, &arg, 1, "devices", 7, PSM2_AM_FLAG_NOREPLY, NULL, NULL));
        while (g_am_seen < 1) {
            const psm2_error_t rc = psm2_poll(ep);
            CHECK(rc == PSM2_OK || rc == PSM2_OK_NO_PROGRESS);
        }
    } else {
        CHECK_ERR(psm2_ep_connect(ep, 1, &other, NULL, &err, &peer, 0), PSM2_EPID_UNREACHABLE);
        CHECKF(err == PSM2_EPID_UNREACHABLE, "connect's entry error is %d (%s)", (int)err, psm2_error_get_string(err));
        /* An epaddr without connect (lookup makes the implicit one): sending to it is refused too. */
        psm2_epconn_t conn;
        if (psm2_ep_epid_lookup2(ep, other, &conn) == PSM2_OK && conn.addr) {
            CHECK_ERR(psm2_mq_send(mq, conn.addr, 0, 0x77, "x", 1), PSM2_EPID_UNREACHABLE);
            psm2_amarg_t arg;
            arg.u64 = 0;
            CHECK_ERR(psm2_am_request_short(conn.addr, handler, &arg, 1, NULL, 0, PSM2_AM_FLAG_NOREPLY, NULL, NULL),
                      PSM2_EPID_UNREACHABLE);
        }
    }
    t_barrier();
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    t_end();
    return 0;
}
