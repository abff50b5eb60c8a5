/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * triggered_collectives: a barrier and a broadcast built only from triggered puts and counters
 * over a binary tree, the way collective libraries offload them onto Portals.
 *
 *   portico-run -n 8 triggered_collectives [rounds] [bytes]
 *
 * After setup each rank only posts triggered operations and bumps or waits on counters: the
 * messages are forwarded up and down the tree by the Portals engine itself, while the process
 * waits (or computes). Rank 0 prints the time per barrier and per broadcast round (a broadcast
 * and the barrier that ends it).
 */
#include <portals4.h>
#include <portico_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT_UP 10    /* zero-byte "my subtree has arrived" puts, counted by ct_up */
#define PT_DOWN 11  /* zero-byte "release" puts from the parent, counted by ct_down */
#define PT_BCAST 12 /* broadcast data, counted by ct_bcast */
#define MAX_BYTES (1 << 20)

static void check(int rc, const char *what, int line) {
    if (rc != PTL_OK) {
        fprintf(stderr, "triggered_collectives: %s failed with %d (line %d)\n", what, rc, line);
        exit(1);
    }
}
#define CHECK(x) check((x), #x, __LINE__)

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static ptl_handle_ni_t ni;
static ptl_rank_t rank, nranks, parent, children[2];
static unsigned nchildren;

/* A persistent ME on `pt` over [start, start+length) whose arrivals count on a new CT. */
static ptl_handle_ct_t counted_entry(ptl_pt_index_t pt, void *start, ptl_size_t length) {
    ptl_handle_ct_t ct;
    ptl_pt_index_t got;
    ptl_handle_me_t me;
    CHECK(PtlCTAlloc(ni, &ct));
    CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, pt, &got));
    ptl_me_t d;
    memset(&d, 0, sizeof d);
    d.start = start;
    d.length = length;
    d.ct_handle = ct;
    d.uid = PTL_UID_ANY;
    d.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM;
    d.match_id.rank = PTL_RANK_ANY;
    CHECK(PtlMEAppend(ni, pt, &d, PTL_PRIORITY_LIST, NULL, &me));
    return ct;
}

int main(int argc, char **argv) {
    const unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 4096;
    if (bytes > MAX_BYTES) bytes = MAX_BYTES;

    CHECK(PtlInit());
    if (PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK) {
        fprintf(stderr, "triggered_collectives: start it with a launcher: portico-run -n N, mpiexec, or srun "
                        "--mpi=pmix or --mpi=pmi2 (PtlNIInit failed)\n");
        return 1;
    }
    ptl_process_t me;
    ptl_size_t n;
    CHECK(PtlGetId(ni, &me));
    CHECK(PtlGetMap(ni, 0, NULL, &n));
    rank = me.rank;
    nranks = (ptl_rank_t)n;
    parent = rank ? (rank - 1) / 2 : 0;
    nchildren = 0;
    for (ptl_rank_t c = 2 * rank + 1; c <= 2 * rank + 2 && c < nranks; ++c) children[nchildren++] = c;

    static char data[MAX_BYTES];
    ptl_handle_ct_t ct_up = counted_entry(PT_UP, NULL, 0);
    ptl_handle_ct_t ct_down = counted_entry(PT_DOWN, NULL, 0);
    ptl_handle_ct_t ct_bcast = counted_entry(PT_BCAST, data, sizeof data);
    ptl_md_t zero_desc = {NULL, 0, 0, PTL_EQ_NONE, PTL_CT_NONE};
    ptl_md_t data_desc = {data, sizeof data, 0, PTL_EQ_NONE, PTL_CT_NONE};
    ptl_handle_md_t zero, data_md;
    CHECK(PtlMDBind(ni, &zero_desc, &zero));
    CHECK(PtlMDBind(ni, &data_desc, &data_md));
    CHECK(portico_runtime_barrier()); /* every entry exists before anybody sends */

    /* Round k of the barrier: my counter `up` reaches k*(children+1) when my subtree and I have
     * arrived; that fires "arrived" to my parent (or, at the root, the releases); a release from my
     * parent (counter `down` reaching k) fires the releases to my children. */
    const ptl_ct_event_t one = {1, 0};
    ptl_ct_event_t ct;
    const ptl_process_t up = {.rank = parent};
    unsigned long barrier_rounds = 0;
#define BARRIER()                                                                                                      \
    do {                                                                                                               \
        const ptl_size_t k = ++barrier_rounds;                                                                         \
        const ptl_size_t all_arrived = k * (nchildren + 1);                                                            \
        for (unsigned c = 0; c < nchildren; ++c) {                                                                     \
            ptl_process_t child = {.rank = children[c]};                                                               \
            CHECK(PtlTriggeredPut(zero, 0, 0, PTL_NO_ACK_REQ, child, PT_DOWN, 0, 0, NULL, 0, rank ? ct_down : ct_up,   \
                                  rank ? k : all_arrived));                                                            \
        }                                                                                                              \
        if (rank) CHECK(PtlTriggeredPut(zero, 0, 0, PTL_NO_ACK_REQ, up, PT_UP, 0, 0, NULL, 0, ct_up, all_arrived));    \
        CHECK(PtlCTInc(ct_up, one)); /* I have arrived */                                                              \
        if (rank)                                                                                                      \
            CHECK(PtlCTWait(ct_down, k, &ct));                                                                         \
        else                                                                                                           \
            CHECK(PtlCTWait(ct_up, all_arrived, &ct));                                                                 \
    } while (0)

    BARRIER(); /* warm up */
    double t0 = now_us();
    for (unsigned r = 0; r < rounds; ++r) BARRIER();
    const double barrier_us = (now_us() - t0) / rounds;

    /* Broadcast from rank 0: a child forwards to its children when its counter says the data has
     * landed; the triggered put reads the buffer when it fires. A barrier ends every round, so a
     * round's data is never overwritten before every rank has checked it. */
    unsigned bad = 0;
    t0 = now_us();
    for (unsigned r = 1; r <= rounds; ++r) {
        if (rank == 0) {
            memset(data, (int)(r & 0xff), bytes);
            for (unsigned c = 0; c < nchildren; ++c) {
                ptl_process_t child = {.rank = children[c]};
                CHECK(PtlPut(data_md, 0, bytes, PTL_NO_ACK_REQ, child, PT_BCAST, 0, 0, NULL, 0));
            }
        } else {
            for (unsigned c = 0; c < nchildren; ++c) {
                ptl_process_t child = {.rank = children[c]};
                CHECK(PtlTriggeredPut(data_md, 0, bytes, PTL_NO_ACK_REQ, child, PT_BCAST, 0, 0, NULL, 0, ct_bcast, r));
            }
            CHECK(PtlCTWait(ct_bcast, r, &ct));
            for (size_t i = 0; i < bytes; i += 512) bad += data[i] != (char)(r & 0xff);
        }
        BARRIER();
    }
    /* Reported with the barrier that ends it: the barrier's own time, measured apart, varies too
     * much on a busy machine to be taken off. */
    const double bcast_us = (now_us() - t0) / rounds;

    if (bad) {
        fprintf(stderr, "[rank %u] broadcast delivered wrong data %u times\n", rank, bad);
        return 1;
    }
    if (rank == 0)
        printf("triggered collectives over %u ranks (binary tree, %u rounds): barrier %.2f us, broadcast of %zu B "
               "and a barrier %.2f us\n",
               nranks, rounds, barrier_us, bytes, bcast_us);
    CHECK(portico_runtime_barrier());
    CHECK(PtlNIFini(ni));
    PtlFini();
    return 0;
}
