/* SPDX-License-Identifier: BSD-3-Clause */
/* GASNet ping-pong: node 0 and node 1 bounce an Active Message and then a put, and print the
 * round-trip times; exits 1 if a reply carries another request's number.
 * Build: cc pingpong.c $(pkg-config --cflags --libs gasnet-seq)
 * Run:   portico-run -n 2 ./gasnet_pingpong [iterations] */
#include <gasnet.h>
#include <gasnet_tools.h>

#include <stdio.h>
#include <stdlib.h>

#define H_PING 200
#define H_PONG 201

static volatile int pongs = 0;
static volatile int misnumbered = 0; /* replies whose argument is not their request's number */

static void ping(gasnet_token_t token, gasnet_handlerarg_t seq) { gasnet_AMReplyShort1(token, H_PONG, seq); }
static void pong(gasnet_token_t token, gasnet_handlerarg_t seq) {
    (void)token;
    if (seq != pongs) misnumbered++;
    pongs++;
}

int main(int argc, char **argv) {
    if (gasnet_init(&argc, &argv) != GASNET_OK) {
        fprintf(stderr, "gasnet_pingpong: start it with a launcher: portico-run -n N, mpiexec, or srun --mpi=pmix or "
                        "--mpi=pmi2 (gasnet_init failed)\n");
        return 1;
    }
    gasnet_handlerentry_t handlers[] = {{H_PING, (void (*)())ping}, {H_PONG, (void (*)())pong}};
    if (gasnet_attach(handlers, 2, GASNET_PAGESIZE, 0) != GASNET_OK) gasnet_exit(1);
    const int iters = argc > 1 ? atoi(argv[1]) : 10000;
    const gasnet_node_t me = gasnet_mynode();
    if (gasnet_nodes() < 2) {
        if (me == 0) fprintf(stderr, "pingpong needs 2 nodes\n");
        gasnet_exit(1);
    }
    gasnet_seginfo_t seg[2];
    gasnet_getSegmentInfo(seg, 2);
    volatile int *flag = (volatile int *)seg[me].addr; /* node 1 watches its own segment */

    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    if (me == 0) {
        gasnett_tick_t t0 = gasnett_ticks_now();
        for (int i = 0; i < iters; i++) {
            gasnet_AMRequestShort1(1, H_PING, i);
            GASNET_BLOCKUNTIL(pongs == i + 1);
        }
        gasnett_tick_t t1 = gasnett_ticks_now();
        if (misnumbered) { /* node 1 is still serving AMs, so this exit code is the job's */
            fprintf(stderr, "pingpong: %d of %d AM replies carried another request's number\n", misnumbered, iters);
            gasnet_exit(1);
        }
        printf("%d AM Short round trips: %.3f us each\n", iters, (double)gasnett_ticks_to_ns(t1 - t0) / 1000.0 / iters);
        t0 = gasnett_ticks_now();
        for (int i = 1; i <= iters; i++) {
            gasnet_put_val(1, seg[1].addr, (gasnet_register_value_t)i, sizeof(int)); /* remote completion */
            while (gasnet_get_val(1, seg[1].addr, sizeof(int)) != (gasnet_register_value_t)i) {
            }
        }
        t1 = gasnett_ticks_now();
        printf("%d put_val + get_val round trips: %.3f us each\n", iters,
               (double)gasnett_ticks_to_ns(t1 - t0) / 1000.0 / iters);
        gasnet_put_val(1, seg[1].addr, (gasnet_register_value_t)-1, sizeof(int)); /* tell node 1 to stop */
    } else if (me == 1) {
        while (*flag != -1) gasnet_AMPoll(); /* serves AMs; puts and gets need nothing from us */
    }
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(0);
}
