/* SPDX-License-Identifier: BSD-3-Clause */
/* A GASNet job with many ranks on one machine (docs/PERFORMANCE.md, *Memory per rank*): every
 * node talks to every other
 * one (an AM request and reply, a 2 KiB Medium, an 8-byte put into its segment) and sends the
 * largest Medium to its two neighbours, every value checked; then, with a budget, the job's memory
 * per rank must fit in it.
 *
 *   portico-run -n N many_ranks_test [BUDGET_MIB]
 *
 * The memory of a rank is what /proc/self/smaps_rollup calls Pss_Anon + Pss_Shmem once every rank
 * has done its traffic and holds its links, queues and buffers: its private memory and its share
 * of the shared-memory rings and segments (a link's pages are split between its two processes).
 * Library text is left out. Node 0 checks the mean over the ranks against BUDGET_MIB (0 or
 * absent: no check) and prints the mean and the largest. With 64 ranks, GASNet's active-message
 * queues and buffers took 30 MiB per rank before they were sized by the number of nodes. */
#define _GNU_SOURCE
#include <gasnet.h>
#include <portals4.h>
#include <portico_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gasnet/test_util.h"

#define H_HELLO 200
#define H_HELLO_BACK 201
#define H_MEDIUM 202
#define H_MEDIUM_BACK 203
#define SMALL_MEDIUM 2048

static volatile int hellos = 0, mediums = 0, big_mediums = 0, backs = 0;

static unsigned char pattern(gasnet_node_t from, size_t i) { return (unsigned char)(from * 131u + i * 7u + (i >> 8)); }

static void hello(gasnet_token_t t, gasnet_handlerarg_t from) {
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(from, src);
    hellos++;
    GASNET_SAFE(gasnet_AMReplyShort1(t, H_HELLO_BACK, (gasnet_handlerarg_t)gasnet_mynode()));
}
static void hello_back(gasnet_token_t t, gasnet_handlerarg_t from) {
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(from, src);
    backs++;
}
static void medium(gasnet_token_t t, void *buf, size_t n) {
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK(n == SMALL_MEDIUM || n == gasnet_AMMaxMedium());
    for (size_t i = 0; i < n; ++i)
        if (((unsigned char *)buf)[i] != pattern(src, i)) {
            fprintf(stderr, "node %u: byte %zu of a %zu-byte Medium from node %u is wrong\n", gasnet_mynode(), i, n,
                    src);
            gasnet_exit(1);
        }
    if (n == SMALL_MEDIUM)
        mediums++;
    else
        big_mediums++;
    GASNET_SAFE(gasnet_AMReplyShort0(t, H_MEDIUM_BACK));
}
static void medium_back(gasnet_token_t t) {
    (void)t;
    backs++;
}

/* Pss_Anon + Pss_Shmem of this process, in KiB. */
static uint64_t own_memory_kib(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    CHECK(f != NULL);
    char line[256];
    uint64_t kib = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v = 0;
        if (sscanf(line, "Pss_Anon: %llu kB", &v) == 1 || sscanf(line, "Pss_Shmem: %llu kB", &v) == 1) kib += v;
    }
    fclose(f);
    return kib;
}

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    gasnet_handlerentry_t table[] = {{H_HELLO, (void (*)())hello},
                                     {H_HELLO_BACK, (void (*)())hello_back},
                                     {H_MEDIUM, (void (*)())medium},
                                     {H_MEDIUM_BACK, (void (*)())medium_back}};
    GASNET_SAFE(gasnet_attach(table, 4, 1u << 20, 0));
    const double budget_mib = argc > 1 ? atof(argv[1]) : 0;
    const gasnet_node_t me = gasnet_mynode(), nodes = gasnet_nodes();
    gasnet_seginfo_t *segs = malloc(nodes * sizeof *segs);
    const size_t big = gasnet_AMMaxMedium();
    unsigned char *out = malloc(big);
    CHECK(segs && out);
    GASNET_SAFE(gasnet_getSegmentInfo(segs, (int)nodes));
    for (size_t i = 0; i < big; ++i) out[i] = pattern(me, i);
    test_barrier();

    /* Everybody to everybody: a Short request and its reply, a small Medium, a put. */
    int want = 0;
    for (gasnet_node_t i = 1; i < nodes; ++i) {
        const gasnet_node_t to = (me + i) % nodes;
        GASNET_SAFE(gasnet_AMRequestShort1(to, H_HELLO, (gasnet_handlerarg_t)me));
        GASNET_SAFE(gasnet_AMRequestMedium0(to, H_MEDIUM, out, SMALL_MEDIUM));
        const uint64_t mine = 0x1000000ull * me + to;
        gasnet_put(to, (char *)segs[to].addr + 8 * me, (void *)&mine, sizeof mine);
        want += 2;
    }
    GASNET_BLOCKUNTIL(backs == want);
    /* The largest Medium to both neighbours: with many nodes its target pulls it. */
    if (nodes > 1) {
        want += 2;
        GASNET_SAFE(gasnet_AMRequestMedium0((me + 1) % nodes, H_MEDIUM, out, big));
        GASNET_SAFE(gasnet_AMRequestMedium0((me + nodes - 1) % nodes, H_MEDIUM, out, big));
        GASNET_BLOCKUNTIL(backs == want);
    }
    GASNET_BLOCKUNTIL(hellos == (int)nodes - 1 && mediums == (int)nodes - 1 && big_mediums == (nodes == 1 ? 0 : 2));
    test_barrier();
    for (gasnet_node_t from = 0; from < nodes; ++from)
        if (from != me) CHECK_EQ(((uint64_t *)segs[me].addr)[from], 0x1000000ull * from + me);

    /* Every rank holds its resources now; measure, then gather (nobody leaves before that). */
    const uint64_t kib = own_memory_kib();
    uint64_t *all = malloc(nodes * sizeof *all);
    CHECK(all != NULL);
    CHECK_EQ(portico_runtime_allgather(&kib, sizeof kib, all), PTL_OK);
    if (me == 0) {
        uint64_t sum = 0, most = 0;
        for (gasnet_node_t n = 0; n < nodes; ++n) {
            sum += all[n];
            if (all[n] > most) most = all[n];
        }
        const double mean_mib = (double)sum / nodes / 1024.0;
        printf("many_ranks_test: %u nodes, every value checked; memory per rank (Pss_Anon + Pss_Shmem): mean %.2f "
               "MiB, largest %.2f MiB",
               nodes, mean_mib, (double)most / 1024.0);
        if (budget_mib > 0) printf(", budget %.2f MiB", budget_mib);
        printf("\n");
        fflush(stdout);
        if (budget_mib > 0 && mean_mib > budget_mib) {
            fprintf(stderr, "many_ranks_test: %.2f MiB per rank is over the budget of %.2f MiB\n", mean_mib,
                    budget_mib);
            gasnet_exit(1);
        }
    }
    test_barrier();
    free(all);
    free(segs);
    free(out);
    gasnet_exit(0);
    return 0;
}
