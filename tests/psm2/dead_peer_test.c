/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dead_peer_test.c — a peer that dies gives errors, never a hang: two
 * processes started without a launcher (a parent and the child it forks, as PSM2 clients start
 * theirs), the child killed with SIGKILL once connected. Then, at the parent:
 *   - a rendezvous send to it ends (psm2_mq_wait returns) with an error status;
 *   - an eager send completes (its data was taken) and the loss is reported, not waited for;
 *   - an active-message request with a completion callback has its callback run;
 *   - a receive posted for it is still cancellable, and the endpoint closes gracefully, although
 *     the peer died holding only the headers of 20 MiB of eager messages sent to it while it made
 *     no PSM2 call (their data waited in this side's retain ring for a fetch that never comes).
 * Usage: psm2_dead_peer_test (no launcher; ctest runs it on shared memory and over TCP).
 */
#include "psm2_test.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_done_called;
static void am_done(void *ctxt) { *(int *)ctxt = 1; }
static int h_never(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    (void)token, (void)args, (void)nargs, (void)src, (void)len;
    return 0;
}

int main(void) {
    t_prog = "psm2_dead_peer_test";
    int to_child[2], to_parent[2];
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    const pid_t child = fork();
    CHECK(child >= 0);
    t_init();
    psm2_epid_t mine;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &mine, &mq);
    const psm2_handler_t handler = t_register_handler(ep, h_never);
    if (child == 0) { /* publish the epid, wait to be told, die while the parent's sends are due */
        CHECK(write(to_parent[1], &mine, sizeof mine) == (ssize_t)sizeof mine);
        char go = 0;
        CHECK(read(to_child[0], &go, 1) == 1);
        raise(SIGKILL);
    }
    psm2_epid_t other = 0;
    CHECK(read(to_parent[0], &other, sizeof other) == (ssize_t)sizeof other);
    psm2_epaddr_t peer = t_connect(ep, other);
    /* More eager data than the child's slabs hold (7.5 MiB), and less than they and this side's
     * retain ring (16 MiB) hold together, while it waits in read(): the rest lands as headers, the
     * data stays here. Connecting again reads the child's identity, an answer that
     * comes after every ack of those messages on the same link. */
    int shm = 0;
    CHECK_OK(psm2_ep_epid_share_memory(ep, other, &shm));
    uint32_t eager = 0;
    CHECK_OK(psm2_mq_getopt(mq, shm ? PSM2_MQ_RNDV_SHM_SZ : PSM2_MQ_RNDV_HFI_SZ, &eager));
    const uint32_t n = (20u << 20) / eager;
    uint8_t *flood = t_malloc(eager);
    for (uint32_t i = 0; i < n; ++i) {
        psm2_mq_req_t fr = NULL;
        t_fill(flood, eager, i);
        CHECK_OK(psm2_mq_isend(mq, peer, 0, 0x10, flood, eager, NULL, &fr));
        CHECK_OK(psm2_mq_wait(&fr, NULL)); /* eager: complete at once, the ring has room */
    }
    free(flood);
    CHECK(t_connect(ep, other) == peer);
    const psm2_error_t prc = psm2_poll(ep); /* takes the acks */
    CHECK(prc == PSM2_OK || prc == PSM2_OK_NO_PROGRESS);
    CHECK(write(to_child[1], "x", 1) == 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* A rendezvous send: the receiver will never get it. */
    const uint32_t big = 4u << 20;
    uint8_t *buf = t_malloc(big);
    t_fill(buf, big, 1);
    psm2_mq_req_t req = NULL;
    psm2_mq_status_t st;
    const psm2_error_t rc = psm2_mq_isend(mq, peer, 0, 0x11, buf, big, NULL, &req);
    if (rc == PSM2_OK) {
        const psm2_error_t wrc = psm2_mq_wait(&req, &st);
        CHECKF(wrc != PSM2_OK || st.error_code != PSM2_OK, "a rendezvous send to a dead peer succeeded");
    } else {
        CHECKF(rc == PSM2_EPID_UNREACHABLE || rc == PSM2_EPID_NETWORK_ERROR, "isend returned %d", (int)rc);
    }
    /* An eager send completes at once; its loss is reported when the ack says so. */
    const psm2_error_t erc = psm2_mq_send(mq, peer, 0, 0x12, buf, 100);
    CHECKF(erc == PSM2_OK || erc == PSM2_EPID_UNREACHABLE || erc == PSM2_EPID_NETWORK_ERROR, "send returned %d",
           (int)erc);
    /* An active message with a completion callback: the callback runs. */
    psm2_amarg_t arg;
    arg.u64 = 1;
    const psm2_error_t arc = psm2_am_request_short(peer, handler, &arg, 1, NULL, 0, 0, am_done, &g_done_called);
    if (arc == PSM2_OK) {
        while (!g_done_called) {
            const psm2_error_t rc2 = psm2_poll(ep);
            CHECK(rc2 == PSM2_OK || rc2 == PSM2_OK_NO_PROGRESS);
        }
    }
    /* A receive from it never matches; it is cancelled. */
    CHECK_OK(psm2_mq_irecv(mq, 0x13, ~0ULL, 0, buf, 100, NULL, &req));
    CHECK_OK(psm2_mq_cancel(&req));
    CHECK_OK(psm2_mq_wait(&req, &st));
    free(buf);
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    printf("psm2_dead_peer_test: every operation on the dead peer ended\n");
    return 0;
}
