/* SPDX-License-Identifier: BSD-3-Clause */
/* mq_loop ROUNDS: one PSM2 endpoint connected to itself posts a receive (psm2_mq_irecv), sends
 * itself 8 bytes with that tag (psm2_mq_isend) and waits for both requests (psm2_mq_wait),
 * ROUNDS times: the software of both sides of one PSM2 eager message, the shape of an MPI
 * ping-pong's hop through Open MPI's psm2 MTL, with no cache line crossing cores. Run alone (no
 * launcher), under callgrind by hop_instructions.sh. Prints the rounds done. */
#include <psm2.h>
#include <psm2_mq.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        psm2_error_t err_ = (call);                                                                                    \
        if (err_ != PSM2_OK) {                                                                                         \
            fprintf(stderr, "mq_loop: %s returned %d\n", #call, (int)err_);                                            \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv) {
    const long rounds = argc > 1 ? atol(argv[1]) : 10000;
    int major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    psm2_uuid_t key;
    psm2_ep_t ep;
    psm2_epid_t epid;
    psm2_epaddr_t self;
    psm2_error_t conn_err;
    psm2_mq_t mq;
    char out[8] = "mq_loop", in[8];
    long i;
    memset(key, 7, sizeof key);
    CHECK(psm2_init(&major, &minor));
    CHECK(psm2_ep_open(key, NULL, &ep, &epid));
    CHECK(psm2_ep_connect(ep, 1, &epid, NULL, &conn_err, &self, 0));
    CHECK(conn_err);
    CHECK(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_ALL, NULL, 0, &mq));
    for (i = 0; i < rounds; ++i) {
        psm2_mq_req_t recv_req, send_req;
        psm2_mq_status_t st;
        CHECK(psm2_mq_irecv(mq, (uint64_t)i, ~0ULL, 0, in, sizeof in, NULL, &recv_req));
        CHECK(psm2_mq_isend(mq, self, 0, (uint64_t)i, out, sizeof out, NULL, &send_req));
        CHECK(psm2_mq_wait(&send_req, NULL));
        CHECK(psm2_mq_wait(&recv_req, &st));
        if (st.nbytes != sizeof out || st.msg_tag != (uint64_t)i || memcmp(in, out, sizeof out) != 0) {
            fprintf(stderr, "mq_loop: round %ld: received %u bytes with tag %llu\n", i, st.nbytes,
                    (unsigned long long)st.msg_tag);
            return 1;
        }
    }
    CHECK(psm2_mq_finalize(mq));
    CHECK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK(psm2_finalize());
    printf("mq_loop: %ld rounds\n", rounds);
    return 0;
}
