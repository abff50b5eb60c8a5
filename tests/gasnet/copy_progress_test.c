/* SPDX-License-Identifier: BSD-3-Clause */
/* Puts and gets that are memory copies still run handlers (GASNet 1.28's testcontend, section G):
 * a put or get to a node whose segment is mapped here (PSHM) or to oneself moves no message, and a
 * thread that loops on them, waiting for a flag that an AM handler sets, must still see the
 * handler run. Each node: a second thread loops on gasnet_put (then gasnet_get) to the next node
 * until its flag is set, while the main thread sends the AM that sets it to itself (loopback)
 * and waits for that thread with pthread_join, making no GASNet call of its own. Before the fix,
 * with PSHM (the default on one machine) the loop never polled and the job hung. */
#include <gasnet.h>

#include <pthread.h>
#include <stdint.h>

#include "test_util.h"

#define H_SET 140

static volatile int flag = 0;
static gasnet_seginfo_t *segs;

static void set_h(gasnet_token_t t) {
    (void)t;
    flag = 1;
}

static void *put_loop(void *arg) {
    const gasnet_node_t next = (gasnet_mynode() + 1) % gasnet_nodes();
    int64_t v = 7;
    long rounds = 0;
    if (arg)
        while (!flag) gasnet_put(next, segs[next].addr, &v, sizeof v), ++rounds;
    else
        while (!flag) gasnet_get(&v, next, segs[next].addr, sizeof v), ++rounds;
    return (void *)rounds;
}

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    gasnet_handlerentry_t tab[] = {{H_SET, (void (*)())set_h}};
    GASNET_SAFE(gasnet_attach(tab, 1, 1 << 20, 0));
    segs = malloc(sizeof *segs * gasnet_nodes());
    GASNET_SAFE(gasnet_getSegmentInfo(segs, (int)gasnet_nodes()));
    for (int kind = 0; kind < 2; ++kind) { /* puts, then gets */
        flag = 0;
        gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
        GASNET_SAFE(gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS));
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, put_loop, kind == 0 ? (void *)1 : NULL), 0);
        GASNET_SAFE(gasnet_AMRequestShort0(gasnet_mynode(), H_SET));
        void *rounds = NULL;
        CHECK_EQ(pthread_join(th, &rounds), 0);
        CHECK(flag == 1);
    }
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    GASNET_SAFE(gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS));
    if (gasnet_mynode() == 0) printf("copy_progress_test: OK (%u nodes)\n", (unsigned)gasnet_nodes());
    gasnet_exit(0);
    return 0;
}
