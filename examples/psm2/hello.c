/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psm2_hello: PSM2's matched queue in a few lines, on any number of processes.
 *
 *   cc hello.c $(pkg-config --cflags --libs libpsm2 portals4)
 *   portico-run -n 4 ./a.out
 *
 * Every process opens one endpoint; the endpoints' ids (epids) go round through the launcher
 * (portico_runtime_allgather: PSM2 leaves that exchange to its client), and every process
 * connects to all. Then each sends a tagged message to its right neighbour with psm2_mq_isend and
 * posts a receive with psm2_mq_irecv. The receive names a tag and a tag selector (the bits that
 * must match): it selects the low 32 bits, the kind of message, so a greeting from any sender
 * matches, and the sender's rank, which the upper 32 bits carry, is read from the status.
 * Each process prints one line and checks what it received: a wrong value exits with status 1.
 */
#include <portals4.h>
#include <portico_runtime.h>
#include <psm2.h>
#include <psm2_mq.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GREETING_KIND 0x48454c4fu /* "HELO" */
#define KIND_BITS 0xffffffffull
#define GREETING_LEN 64

/* Without a launcher the job service answers PTL_IGNORED: the process is a job of one, and greets
 * itself. */
static void check_runtime(int rc, const char *what) {
    if (rc != PTL_OK && rc != PTL_IGNORED) {
        fprintf(stderr, "psm2_hello: %s failed with %d: is the launcher still there?\n", what, rc);
        exit(1);
    }
}

static void check(psm2_error_t err, const char *what) {
    if (err != PSM2_OK) {
        fprintf(stderr, "psm2_hello: %s: %s\n", what, psm2_error_get_string(err));
        exit(1);
    }
}

int main(void) {
    int rank = 0, size = 0;
    check_runtime(portico_runtime_rank(&rank), "portico_runtime_rank");
    check_runtime(portico_runtime_size(&size), "portico_runtime_size");
    int major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    check(psm2_init(&major, &minor), "psm2_init");

    /* Endpoints connect only to endpoints opened with the same job key. */
    psm2_uuid_t job_key;
    memset(job_key, 0x5a, sizeof job_key);
    psm2_ep_t ep;
    psm2_epid_t my_epid;
    check(psm2_ep_open(job_key, NULL, &ep, &my_epid), "psm2_ep_open");
    psm2_epid_t *epids = calloc((size_t)size, sizeof *epids);
    psm2_epaddr_t *peers = calloc((size_t)size, sizeof *peers);
    psm2_error_t *errors = calloc((size_t)size, sizeof *errors);
    if (!epids || !peers || !errors) {
        fprintf(stderr, "psm2_hello: out of memory\n");
        return 1;
    }
    check_runtime(portico_runtime_allgather(&my_epid, sizeof my_epid, epids), "portico_runtime_allgather");
    check(psm2_ep_connect(ep, size, epids, NULL, errors, peers, 0), "psm2_ep_connect");
    psm2_mq_t mq;
    check(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_ALL, NULL, 0, &mq), "psm2_mq_init");

    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char outgoing[GREETING_LEN], incoming[GREETING_LEN] = "";
    snprintf(outgoing, sizeof outgoing, "hello from rank %d", rank);
    const uint64_t tag = (uint64_t)rank << 32 | GREETING_KIND;
    psm2_mq_req_t send, recv;
    check(psm2_mq_irecv(mq, GREETING_KIND, KIND_BITS, 0, incoming, sizeof incoming, NULL, &recv), "psm2_mq_irecv");
    check(psm2_mq_isend(mq, peers[right], 0, tag, outgoing, (uint32_t)strlen(outgoing) + 1, NULL, &send),
          "psm2_mq_isend");
    psm2_mq_status_t status;
    check(psm2_mq_wait(&recv, &status), "psm2_mq_wait (receive)");
    check(psm2_mq_wait(&send, NULL), "psm2_mq_wait (send)");

    const int sender = (int)(status.msg_tag >> 32);
    char expected[GREETING_LEN];
    snprintf(expected, sizeof expected, "hello from rank %d", left);
    if (sender != left || strcmp(incoming, expected) != 0) {
        fprintf(stderr, "psm2_hello: rank %d received \"%s\" from rank %d, expected \"%s\"\n", rank, incoming, sender,
                expected);
        return 1;
    }
    printf("[rank %d of %d] sent \"%s\" to rank %d, received \"%s\" (%u bytes, tag 0x%016" PRIx64
           ": sender %d, kind HELO)\n",
           rank, size, outgoing, right, incoming, status.nbytes, status.msg_tag, sender);

    /* Nobody closes while a neighbour may still be sending to it. */
    check_runtime(portico_runtime_barrier(), "portico_runtime_barrier");
    check(psm2_mq_finalize(mq), "psm2_mq_finalize");
    check(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0), "psm2_ep_close");
    check(psm2_finalize(), "psm2_finalize");
    free(epids);
    free(peers);
    free(errors);
    return 0;
}
