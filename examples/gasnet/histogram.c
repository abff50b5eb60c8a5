/* SPDX-License-Identifier: BSD-3-Clause */
/* A distributed histogram: every node draws random keys; bin b belongs to node b % nodes, which
 * keeps it in its segment. Updates travel in batches as AM Medium requests whose handler adds
 * them under a handler-safe lock; at the end node 0 reads every bin with gasnet_get and checks
 * the total. Build: cc histogram.c $(pkg-config --cflags --libs gasnet-par)
 * Run:   portico-run -n 4 ./gasnet_histogram [keys per node] [bins] */
#include <gasnet.h>
#include <gasnet_tools.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H_ADD 200
#define BATCH 1024 /* keys per message: 4 KiB, well under gasnet_AMMaxMedium() */

static gasnet_hsl_t bins_lock = GASNET_HSL_INITIALIZER;
static uint64_t *my_bins; /* in this node's segment */
static volatile long batches_done = 0;
static gasnet_node_t nodes;

static void add_handler(gasnet_token_t token, void *buf, size_t nbytes) {
    (void)token;
    const uint32_t *keys = (const uint32_t *)buf;
    gasnet_hsl_lock(&bins_lock);
    for (size_t i = 0; i < nbytes / sizeof(uint32_t); i++) my_bins[keys[i] / nodes]++;
    batches_done++;
    gasnet_hsl_unlock(&bins_lock);
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv) {
    if (gasnet_init(&argc, &argv) != GASNET_OK) {
        fprintf(stderr, "gasnet_histogram: start it with a launcher: portico-run -n N, mpiexec, or srun --mpi=pmix or "
                        "--mpi=pmi2 (gasnet_init failed)\n");
        return 1;
    }
    const long keys = argc > 1 ? atol(argv[1]) : 1000000;
    const uint32_t bins = argc > 2 ? (uint32_t)atol(argv[2]) : 4096;
    nodes = gasnet_nodes();
    const gasnet_node_t me = gasnet_mynode();
    const uint32_t per_node = (bins + nodes - 1) / nodes;
    const uintptr_t segsize = ((per_node * sizeof(uint64_t)) / GASNET_PAGESIZE + 1) * GASNET_PAGESIZE;
    gasnet_handlerentry_t handlers[] = {{H_ADD, (void (*)())add_handler}};
    if (gasnet_attach(handlers, 1, segsize, 0) != GASNET_OK) gasnet_exit(1);
    gasnet_seginfo_t *seg = malloc(sizeof *seg * nodes);
    gasnet_getSegmentInfo(seg, (int)nodes);
    my_bins = (uint64_t *)seg[me].addr; /* zero: fresh pages */

    /* Draw keys and send them to their owners in batches. */
    uint32_t *batch = malloc(sizeof(uint32_t) * BATCH * nodes);
    int *fill = calloc(nodes, sizeof *fill);
    long *sent = calloc(nodes, sizeof *sent);
    uint64_t state = 0x9E3779B97F4A7C15ull ^ (me + 1);
    gasnett_tick_t t0 = gasnett_ticks_now();
    for (long k = 0; k < keys; k++) {
        const uint32_t key = (uint32_t)(xorshift(&state) % bins);
        const gasnet_node_t owner = key % nodes;
        batch[owner * BATCH + fill[owner]++] = key;
        if (fill[owner] == BATCH) {
            gasnet_AMRequestMedium0(owner, H_ADD, &batch[owner * BATCH], BATCH * sizeof(uint32_t));
            fill[owner] = 0;
            sent[owner]++;
        }
    }
    for (gasnet_node_t o = 0; o < nodes; o++)
        if (fill[o]) {
            gasnet_AMRequestMedium0(o, H_ADD, &batch[o * BATCH], fill[o] * sizeof(uint32_t));
            sent[o]++;
        }
    /* Tell every owner how many batches to expect from us, then wait for ours. */
    long *expect_all = malloc(sizeof(long) * nodes);
    long expected = 0;
    for (gasnet_node_t o = 0; o < nodes; o++) {
        gasnet_put_val(o, (char *)seg[o].addr + segsize - sizeof(long) * (nodes - me), (gasnet_register_value_t)sent[o],
                       sizeof(long));
    }
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    memcpy(expect_all, (char *)seg[me].addr + segsize - sizeof(long) * nodes, sizeof(long) * nodes);
    for (gasnet_node_t o = 0; o < nodes; o++) expected += expect_all[o];
    GASNET_BLOCKUNTIL(batches_done == expected);
    gasnet_barrier_notify(1, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(1, GASNET_BARRIERFLAG_ANONYMOUS);
    const gasnett_tick_t t1 = gasnett_ticks_now();

    if (me == 0) {
        uint64_t total = 0, maxbin = 0;
        uint64_t *all = malloc(sizeof(uint64_t) * per_node);
        for (gasnet_node_t o = 0; o < nodes; o++) {
            gasnet_get_bulk(all, o, seg[o].addr, sizeof(uint64_t) * per_node);
            for (uint32_t i = 0; i < per_node; i++) {
                total += all[i];
                if (all[i] > maxbin) maxbin = all[i];
            }
        }
        printf("histogram: %ld keys x %u nodes into %u bins in %.3f ms (%.1f Mkeys/s); largest bin %llu\n", keys, nodes,
               bins, (double)gasnett_ticks_to_ns(t1 - t0) / 1e6,
               (double)keys * nodes / ((double)gasnett_ticks_to_ns(t1 - t0) / 1e3), (unsigned long long)maxbin);
        if (total != (uint64_t)keys * nodes) {
            printf("histogram: WRONG total %llu\n", (unsigned long long)total);
            gasnet_exit(1);
        }
        printf("histogram: total correct\n");
    }
    gasnet_barrier_notify(2, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(2, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(0);
}
