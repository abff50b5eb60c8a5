/* SPDX-License-Identifier: BSD-3-Clause */
/* A GASNet client as README's GASNet section builds it (install.readme): every node puts its
 * number into its right neighbour's segment, and after a barrier checks what its left one put. */
#include <gasnet.h>

#include <stdio.h>

int main(int argc, char **argv) {
    if (gasnet_init(&argc, &argv) != GASNET_OK) return 1;
    if (gasnet_attach(NULL, 0, GASNET_PAGESIZE, 0) != GASNET_OK) gasnet_exit(1);
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes();
    gasnet_seginfo_t seg[256];
    if (n > 256) gasnet_exit(1);
    gasnet_getSegmentInfo(seg, (int)n);
    const gasnet_node_t right = (gasnet_node_t)((me + 1) % n), left = (gasnet_node_t)((me + n - 1) % n);
    gasnet_put_val(right, seg[right].addr, me + 1000, sizeof(int));
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    const int got = *(volatile int *)seg[me].addr;
    if (got != (int)left + 1000) {
        fprintf(stderr, "node %u: expected %d from node %u, found %d\n", me, (int)left + 1000, left, got);
        gasnet_exit(2);
    }
    printf("node %u of %u: gasnet ok\n", me, n);
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(0);
    return 0;
}
