/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/memory's GASNet program: gasnet_init and gasnet_attach with a 1 MiB segment (what the
 * project's GASNet tests and examples ask for), then the traffic of a typical client: one AM
 * request (Short, answered by a Short reply) to every other node, so that it has talked to each,
 * and a halo exchange with its two neighbours in a ring of nodes: HALO_ROUNDS rounds of a 16 KiB
 * Medium request each way (answered by a Short reply) and a 16 KiB gasnet_put into the
 * neighbour's segment; every value checked; a barrier, then the checkpoint
 * (memory_checkpoint.h). */
#include <gasnet.h>

#include <portico_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory_checkpoint.h"

#define H_HELLO 200
#define H_HELLO_BACK 201
#define H_HALO 202
#define H_HALO_BACK 203
#define SEGMENT_BYTES (1u << 20)
#define HALO_BYTES 16384
#define HALO_ROUNDS 128

static volatile int replies = 0;
static volatile int halos = 0;
static int bad = 0;

static void hello(gasnet_token_t t, gasnet_handlerarg_t from) {
    gasnet_node_t src;
    gasnet_AMGetMsgSource(t, &src);
    if ((gasnet_node_t)from != src) bad = 1;
    gasnet_AMReplyShort1(t, H_HELLO_BACK, (gasnet_handlerarg_t)gasnet_mynode());
}
static void hello_back(gasnet_token_t t, gasnet_handlerarg_t from) {
    gasnet_node_t src;
    gasnet_AMGetMsgSource(t, &src);
    if ((gasnet_node_t)from != src) bad = 1;
    replies++;
}
static void halo(gasnet_token_t t, void *buf, size_t n) {
    gasnet_node_t src;
    gasnet_AMGetMsgSource(t, &src);
    if (n != HALO_BYTES || ((unsigned char *)buf)[n - 1] != (unsigned char)src) bad = 1;
    halos++;
    gasnet_AMReplyShort0(t, H_HALO_BACK);
}
static void halo_back(gasnet_token_t t) {
    (void)t;
    replies++;
}

static void fail(const char *what) {
    fprintf(stderr, "memory_gasnet[%u]: %s\n", gasnet_mynode(), what);
    gasnet_exit(1);
}

int main(int argc, char **argv) {
    int rank = 0;
    portico_runtime_rank(&rank);
    memory_phase("memory_gasnet", rank, "start");
    if (gasnet_init(&argc, &argv) != GASNET_OK) return 1;
    memory_phase("memory_gasnet", rank, "gasnet_init");
    gasnet_handlerentry_t table[] = {{H_HELLO, (void (*)())hello},
                                     {H_HELLO_BACK, (void (*)())hello_back},
                                     {H_HALO, (void (*)())halo},
                                     {H_HALO_BACK, (void (*)())halo_back}};
    if (gasnet_attach(table, 4, SEGMENT_BYTES, 0) != GASNET_OK) return 1;
    memory_phase("memory_gasnet", rank, "gasnet_attach");
    const gasnet_node_t me = gasnet_mynode(), nodes = gasnet_nodes();
    gasnet_seginfo_t *segs = malloc(nodes * sizeof *segs);
    unsigned char *out = malloc(HALO_BYTES);
    if (!segs || !out) fail("out of memory");
    if (gasnet_getSegmentInfo(segs, (int)nodes) != GASNET_OK) fail("gasnet_getSegmentInfo");
    memset(out, me & 0xff, HALO_BYTES);
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    memory_phase("memory_gasnet", rank, "the first barrier");

    for (gasnet_node_t i = 1; i < nodes; ++i)
        gasnet_AMRequestShort1((me + i) % nodes, H_HELLO, (gasnet_handlerarg_t)me);
    GASNET_BLOCKUNTIL(replies == (int)nodes - 1);
    memory_phase("memory_gasnet", rank, "a request to every node");

    if (nodes > 1) {
        const gasnet_node_t next = (me + 1) % nodes, prev = (me + nodes - 1) % nodes;
        for (int r = 0; r < HALO_ROUNDS; ++r) {
            const int want = replies + 2;
            gasnet_AMRequestMedium0(next, H_HALO, out, HALO_BYTES);
            gasnet_AMRequestMedium0(prev, H_HALO, out, HALO_BYTES);
            gasnet_put(next, segs[next].addr, out, HALO_BYTES);
            GASNET_BLOCKUNTIL(replies == want);
        }
        GASNET_BLOCKUNTIL(halos == 2 * HALO_ROUNDS);
    }
    memory_phase("memory_gasnet", rank, "the halo exchange");
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    if (nodes > 1 && ((unsigned char *)segs[me].addr)[HALO_BYTES - 1] != (unsigned char)((me + nodes - 1) % nodes))
        bad = 1;
    if (bad) fail("a wrong value");
    memory_phase("memory_gasnet", rank, "the barrier before the checkpoint");

    memory_checkpoint();
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    free(segs);
    free(out);
    gasnet_exit(0);
    return 0;
}
