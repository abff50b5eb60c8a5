/* SPDX-License-Identifier: BSD-3-Clause */
/* The README's PSM2 example (install.readme builds it against an installed Portico): each process
 * sends its rank to the next one around a ring, through Portico's libpsm2. */
#include <portico_runtime.h>
#include <psm2.h>
#include <psm2_mq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        psm2_error_t e_ = (call);                                                                                      \
        if (e_ != PSM2_OK) {                                                                                           \
            fprintf(stderr, "%s: %s\n", #call, psm2_error_get_string(e_));                                             \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(void) {
    int rank, size, major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    portico_runtime_rank(&rank);
    portico_runtime_size(&size);
    CHECK(psm2_init(&major, &minor));
    psm2_uuid_t key;
    memset(key, 42, sizeof key); /* every process of the job uses the same key */
    psm2_ep_t ep;
    psm2_epid_t mine;
    CHECK(psm2_ep_open(key, NULL, &ep, &mine));
    psm2_epid_t *epids = calloc((size_t)size, sizeof *epids);
    psm2_epaddr_t *peers = calloc((size_t)size, sizeof(psm2_epaddr_t));
    psm2_error_t *errors = calloc((size_t)size, sizeof *errors);
    portico_runtime_allgather(&mine, sizeof mine, epids);
    CHECK(psm2_ep_connect(ep, size, epids, NULL, errors, peers, 0));
    psm2_mq_t mq;
    CHECK(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_ALL, NULL, 0, &mq));
    int got = -1, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    psm2_mq_req_t req;
    CHECK(psm2_mq_irecv(mq, 7, ~0ull, 0, &got, sizeof got, NULL, &req));
    CHECK(psm2_mq_send(mq, peers[next], 0, 7, &rank, sizeof rank));
    CHECK(psm2_mq_wait(&req, NULL));
    if (got == prev) printf("psm2 ok: rank %d heard from %d\n", rank, got);
    portico_runtime_barrier(); /* nobody closes while a neighbour still sends */
    CHECK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK(psm2_finalize());
    return got == prev ? 0 : 1;
}
