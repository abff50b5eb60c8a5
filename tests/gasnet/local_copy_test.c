/* SPDX-License-Identifier: BSD-3-Clause */
/* gasnet.h's inline node-local puts and gets: a put or get to oneself or to a node whose segment
 * is mapped here (PSHM) is copied in the caller, not in the library. Checks, on every node:
 *  - each of the twelve put and get calls moves the right bytes to and from the next node and
 *    oneself, and the explicit-handle ones return GASNET_INVALID_HANDLE for a copy;
 *  - every copy is counted (gasnetp_local_copies: the library's every-256th poll depends on it),
 *    and a transfer to a node that is not mapped here (GASNET_PSHM=0) is not;
 *  - the macros evaluate each argument once;
 *  - &gasnet_put and &gasnet_get are the library's functions and work.
 * The library's argument checks behind the inline path: gasnet.exit.bad-put. */
#include <gasnet.h>

#include <stdint.h>
#include <string.h>

#include "test_util.h"

#define N 24

static gasnet_seginfo_t *segs;

static void fill(unsigned char *p, unsigned seed) {
    int i;
    for (i = 0; i < N; ++i) p[i] = (unsigned char)(seed * 31u + (unsigned)i);
}

static void check_fill(const unsigned char *p, unsigned seed) {
    int i;
    for (i = 0; i < N; ++i) CHECK_EQ(p[i], (unsigned char)(seed * 31u + (unsigned)i));
}

static void barrier(void) {
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    GASNET_SAFE(gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS));
}

/* Puts with each of the six put calls into node's segment (slot v), then gets them back with each
 * of the six get calls; returns how many copies were counted meanwhile. */
static unsigned round_trip(gasnet_node_t node, unsigned seed) {
    unsigned char src[N], back[N];
    char *base = (char *)segs[node].addr;
    const unsigned before = gasnetp_local_copies;
    int v;
    gasnet_handle_t h;
    for (v = 0; v < 6; ++v) {
        fill(src, seed + (unsigned)v);
        switch (v) {
        case 0: gasnet_put(node, base + v * N, src, N); break;
        case 1: gasnet_put_bulk(node, base + v * N, src, N); break;
        case 2: gasnet_put_nbi(node, base + v * N, src, N); break;
        case 3: gasnet_put_nbi_bulk(node, base + v * N, src, N); break;
        case 4:
            h = gasnet_put_nb(node, base + v * N, src, N);
            gasnet_wait_syncnb(h);
            break;
        default:
            h = gasnet_put_nb_bulk(node, base + v * N, src, N);
            gasnet_wait_syncnb(h);
            break;
        }
    }
    gasnet_wait_syncnbi_puts();
    for (v = 0; v < 6; ++v) {
        memset(back, 0, sizeof back);
        switch (v) {
        case 0: gasnet_get(back, node, base + v * N, N); break;
        case 1: gasnet_get_bulk(back, node, base + v * N, N); break;
        case 2:
            gasnet_get_nbi(back, node, base + v * N, N);
            gasnet_wait_syncnbi_gets();
            break;
        case 3:
            gasnet_get_nbi_bulk(back, node, base + v * N, N);
            gasnet_wait_syncnbi_gets();
            break;
        case 4:
            h = gasnet_get_nb(back, node, base + v * N, N);
            gasnet_wait_syncnb(h);
            break;
        default:
            h = gasnet_get_nb_bulk(back, node, base + v * N, N);
            gasnet_wait_syncnb(h);
            break;
        }
        check_fill(back, seed + (unsigned)v);
    }
    return gasnetp_local_copies - before;
}

int main(int argc, char **argv) {
    const char *pshm;
    gasnet_node_t me, next;
    int mapped;
    unsigned char src[N];
    void (*put_fn)(gasnet_node_t, void *, void *, size_t) = &gasnet_put;
    void (*get_fn)(void *, gasnet_node_t, void *, size_t) = &gasnet_get;
    GASNET_SAFE(gasnet_init(&argc, &argv));
    CHECK(gasnetp_local_segments == NULL); /* nothing is copied inline before attach */
    GASNET_SAFE(gasnet_attach(NULL, 0, 1 << 20, 0));
    CHECK(gasnetp_local_segments != NULL);
    segs = (gasnet_seginfo_t *)malloc(sizeof *segs * gasnet_nodes());
    GASNET_SAFE(gasnet_getSegmentInfo(segs, (int)gasnet_nodes()));
    me = gasnet_mynode();
    next = (me + 1) % gasnet_nodes();
    pshm = getenv("GASNET_PSHM");
    mapped = next == me || pshm == NULL || strcmp(pshm, "0") != 0;

    /* Oneself: always a copy, 12 of them. */
    CHECK_EQ(round_trip(me, 1), 12);
    /* The next node's segment: copies when it is mapped here, messages otherwise. Its owner
     * writes the same slots of its own segment only after the barrier. */
    barrier();
    CHECK_EQ(round_trip(next, 2 + me), mapped ? 12 : 0);
    barrier();

    { /* Each argument once (a macro that named one twice would copy from src + 2, or twice). */
        gasnet_node_t node = me;
        char *dest = (char *)segs[me].addr + 512;
        unsigned char *from = src;
        size_t n = N;
        int calls = 0;
        fill(src, 9);
        gasnet_put((calls++, node), dest++, from++, n--);
        CHECK_EQ(calls, 1);
        CHECK(dest == (char *)segs[me].addr + 513 && from == src + 1 && n == N - 1);
        check_fill((const unsigned char *)segs[me].addr + 512, 9);
    }
    /* The library's functions, by address. */
    fill(src, 11);
    put_fn(next, (char *)segs[next].addr + 1024 + me * N, src, N);
    barrier();
    {
        unsigned char back[N];
        gasnet_node_t prev = (me + gasnet_nodes() - 1) % gasnet_nodes();
        check_fill((const unsigned char *)segs[me].addr + 1024 + prev * N, 11);
        get_fn(back, next, (char *)segs[next].addr + 1024 + me * N, N);
        check_fill(back, 11);
    }
    barrier();
    if (me == 0) printf("local_copy_test: OK (%u nodes)\n", (unsigned)gasnet_nodes());
    gasnet_exit(0);
    return 0;
}
