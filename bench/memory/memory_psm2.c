/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/memory's PSM2 program: an endpoint and its matched queue, the epids exchanged through
 * portico_runtime_allgather, psm2_ep_connect to every rank, one 8-byte message to every other rank
 * and HALO_ROUNDS rounds of 16 KiB messages (eager) with the two neighbours in a ring of ranks,
 * every value checked; then the checkpoint (memory_checkpoint.h). */
#include <portals4.h>
#include <portico_runtime.h>
#include <psm2.h>
#include <psm2_mq.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory_checkpoint.h"

#define HALO_BYTES 16384
#define HALO_ROUNDS 128
#define TAG_HELLO 0x1000u
#define TAG_HALO 0x2000u

static int rank = 0, size = 1;

static void check(int ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "memory_psm2[%d]: %s failed\n", rank, what);
    portico_runtime_abort(1, what);
    exit(1);
}

static void wait_ok(psm2_mq_req_t *req, const char *what) {
    psm2_mq_status_t st;
    check(psm2_mq_wait(req, &st) == PSM2_OK && st.error_code == PSM2_OK, what);
}

int main(void) {
    check(portico_runtime_rank(&rank) == PTL_OK, "portico_runtime_rank");
    check(portico_runtime_size(&size) == PTL_OK, "portico_runtime_size");
    int major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    check(psm2_init(&major, &minor) == PSM2_OK, "psm2_init");
    psm2_uuid_t key;
    memset(key, 0, sizeof key);
    psm2_ep_t ep;
    psm2_epid_t epid;
    check(psm2_ep_open(key, NULL, &ep, &epid) == PSM2_OK, "psm2_ep_open");
    psm2_mq_t mq;
    check(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_ALL, NULL, 0, &mq) == PSM2_OK, "psm2_mq_init");
    psm2_epid_t *epids = calloc((size_t)size, sizeof *epids);
    psm2_epaddr_t *addrs = calloc((size_t)size, sizeof(psm2_epaddr_t));
    psm2_error_t *errs = calloc((size_t)size, sizeof *errs);
    uint64_t *got = calloc((size_t)size, sizeof *got);
    psm2_mq_req_t *reqs = calloc(2 * (size_t)size, sizeof(psm2_mq_req_t));
    unsigned char *out = malloc(HALO_BYTES), *in = malloc(2 * HALO_BYTES);
    check(epids && addrs && errs && got && reqs && out && in, "malloc");
    check(portico_runtime_allgather(&epid, sizeof epid, epids) == PTL_OK, "portico_runtime_allgather");
    check(psm2_ep_connect(ep, size, epids, NULL, errs, addrs, 0) == PSM2_OK, "psm2_ep_connect");
    for (int i = 0; i < size; ++i) check(errs[i] == PSM2_OK, "psm2_ep_connect (a peer)");

    /* One message to every other rank, tagged with the sender. */
    const uint64_t mine = (uint64_t)rank + 1;
    int n = 0;
    for (int i = 1; i < size; ++i) {
        const int from = (rank + size - i) % size, to = (rank + i) % size;
        check(psm2_mq_irecv(mq, TAG_HELLO | ((uint64_t)from << 32), ~0ull, 0, &got[from], sizeof got[from], NULL,
                            &reqs[n++]) == PSM2_OK,
              "psm2_mq_irecv");
        check(psm2_mq_isend(mq, addrs[to], 0, TAG_HELLO | ((uint64_t)rank << 32), &mine, sizeof mine, NULL,
                            &reqs[n++]) == PSM2_OK,
              "psm2_mq_isend");
    }
    for (int i = 0; i < n; ++i) wait_ok(&reqs[i], "a message of the all-to-all");
    for (int p = 0; p < size; ++p) check(p == rank || got[p] == (uint64_t)p + 1, "a value of the all-to-all");

    if (size > 1) {
        const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        memset(out, rank & 0xff, HALO_BYTES);
        for (int r = 0; r < HALO_ROUNDS; ++r) {
            psm2_mq_req_t q[4];
            check(psm2_mq_irecv(mq, TAG_HALO | ((uint64_t)prev << 32), ~0ull, 0, in, HALO_BYTES, NULL, &q[0]) ==
                      PSM2_OK,
                  "psm2_mq_irecv");
            check(psm2_mq_irecv(mq, TAG_HALO | ((uint64_t)next << 32), ~0ull, 0, in + HALO_BYTES, HALO_BYTES, NULL,
                                &q[1]) == PSM2_OK,
                  "psm2_mq_irecv");
            check(psm2_mq_isend(mq, addrs[next], 0, TAG_HALO | ((uint64_t)rank << 32), out, HALO_BYTES, NULL, &q[2]) ==
                      PSM2_OK,
                  "psm2_mq_isend");
            check(psm2_mq_isend(mq, addrs[prev], 0, TAG_HALO | ((uint64_t)rank << 32), out, HALO_BYTES, NULL, &q[3]) ==
                      PSM2_OK,
                  "psm2_mq_isend");
            for (int i = 0; i < 4; ++i) wait_ok(&q[i], "a halo message");
            check(in[HALO_BYTES - 1] == (unsigned char)prev && in[2 * HALO_BYTES - 1] == (unsigned char)next,
                  "the halo values");
        }
    }

    check(portico_runtime_barrier() == PTL_OK, "portico_runtime_barrier");
    memory_checkpoint();
    check(portico_runtime_barrier() == PTL_OK, "portico_runtime_barrier");
    check(psm2_mq_finalize(mq) == PSM2_OK, "psm2_mq_finalize");
    check(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0) == PSM2_OK, "psm2_ep_close");
    check(psm2_finalize() == PSM2_OK, "psm2_finalize");
    portico_runtime_finalize();
    free(epids);
    free(addrs);
    free(errs);
    free(got);
    free(reqs);
    free(out);
    free(in);
    return 0;
}
