/* SPDX-License-Identifier: BSD-3-Clause */
/* Barriers (spec §3.5), in C: named and anonymous barriers, mismatch detection on every node,
 * the MISMATCH flag, wait/notify disagreement, gasnet_barrier_try, and communication between
 * notify and wait; GASNet-1's extensions gasnet_barrier, gasnet_barrier_result and
 * GASNET_BARRIERFLAG_UNNAMED (GASNet 1.28's testbarrier uses them). Works for any node count
 * (mismatches between nodes need 2 or more). */
#include <gasnet.h>

#include <string.h>

#include "test_util.h"

#define H_TRY_SEEN 130
#define H_PING 131
#define H_PONG 132

static volatile int try_seen = 0, pongs = 0;
static gasnet_hsl_t lock = GASNET_HSL_INITIALIZER;

static void try_seen_h(gasnet_token_t t) {
    (void)t;
    gasnet_hsl_lock(&lock);
    try_seen++;
    gasnet_hsl_unlock(&lock);
}
static void ping_h(gasnet_token_t t, gasnet_handlerarg_t x) { GASNET_SAFE(gasnet_AMReplyShort1(t, H_PONG, x + 1)); }
static void pong_h(gasnet_token_t t, gasnet_handlerarg_t x) {
    (void)t;
    (void)x;
    pongs++;
}

static int barrier(int id, int flags) {
    gasnet_barrier_notify(id, flags);
    return gasnet_barrier_wait(id, flags);
}

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    gasnet_handlerentry_t tab[] = {
        {H_TRY_SEEN, (void (*)())try_seen_h}, {H_PING, (void (*)())ping_h}, {H_PONG, (void (*)())pong_h}};
    GASNET_SAFE(gasnet_attach(tab, 3, 1 << 20, 0));
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes();
    gasnet_seginfo_t *segs = malloc(sizeof *segs * n);
    GASNET_SAFE(gasnet_getSegmentInfo(segs, (int)n));

    TEST_SECTION("1000 named barriers with varying ids");
    for (int i = 0; i < 1000; i++) CHECK_EQ(barrier(i * 7919 - 500000, 0), GASNET_OK);

    TEST_SECTION("anonymous, and anonymous mixed with named");
    for (int i = 0; i < 100; i++) CHECK_EQ(barrier(i, GASNET_BARRIERFLAG_ANONYMOUS), GASNET_OK);
    for (int i = 0; i < 100; i++) {
        /* Node i % n names the barrier, the others are anonymous: no mismatch. */
        const int flags = (gasnet_node_t)i % n == me ? 0 : GASNET_BARRIERFLAG_ANONYMOUS;
        CHECK_EQ(barrier(12345, flags), GASNET_OK);
    }
    for (int i = 0; i < 100; i++) {
        /* Several named with the same id, the rest anonymous. */
        const int flags = me % 2 ? GASNET_BARRIERFLAG_ANONYMOUS : 0;
        CHECK_EQ(barrier(-7, flags), GASNET_OK);
    }

    TEST_SECTION("different named ids: every node sees the mismatch");
    for (int i = 0; i < 20; i++) {
        const int rc = barrier((int)me + 1000 * i, 0);
        CHECK_EQ(rc, n > 1 ? GASNET_ERR_BARRIER_MISMATCH : GASNET_OK);
        CHECK_EQ(barrier(5, 0), GASNET_OK); /* the next barrier is fine */
    }
    if (n > 2) {
        /* Only the last node differs, and it is anonymous elsewhere: still detected everywhere. */
        const int rc = barrier(me == n - 1 ? 99 : 98, me == 0 ? GASNET_BARRIERFLAG_ANONYMOUS : 0);
        CHECK_EQ(rc, GASNET_ERR_BARRIER_MISMATCH);
        CHECK_EQ(barrier(0, 0), GASNET_OK);
    }

    TEST_SECTION("the MISMATCH flag on one node reaches every node");
    for (gasnet_node_t culprit = 0; culprit < n; culprit++) {
        const int flags = me == culprit ? GASNET_BARRIERFLAG_MISMATCH : 0;
        gasnet_barrier_notify(3, flags);
        CHECK_EQ(gasnet_barrier_wait(3, flags), GASNET_ERR_BARRIER_MISMATCH);
        CHECK_EQ(barrier(4, 0), GASNET_OK);
    }

    TEST_SECTION("wait disagreeing with this node's notify");
    gasnet_barrier_notify(10, 0);
    CHECK_EQ(gasnet_barrier_wait(me == 0 ? 11 : 10, 0), me == 0 ? GASNET_ERR_BARRIER_MISMATCH : GASNET_OK);
    gasnet_barrier_notify(10, 0);
    CHECK_EQ(gasnet_barrier_wait(10, me == 0 ? GASNET_BARRIERFLAG_ANONYMOUS : 0),
             me == 0 ? GASNET_ERR_BARRIER_MISMATCH : GASNET_OK);
    CHECK_EQ(barrier(0, GASNET_BARRIERFLAG_ANONYMOUS), GASNET_OK);

    TEST_SECTION("barrier_try: NOT_READY until every node notified");
    if (me == 0) {
        GASNET_BLOCKUNTIL(try_seen == (int)n - 1); /* every other node saw NOT_READY */
        gasnet_barrier_notify(77, 0);
        int rc;
        while ((rc = gasnet_barrier_try(77, 0)) == GASNET_ERR_NOT_READY) {
        }
        CHECK_EQ(rc, GASNET_OK);
    } else {
        gasnet_barrier_notify(77, 0);
        CHECK_EQ(gasnet_barrier_try(77, 0), GASNET_ERR_NOT_READY); /* node 0 has not notified */
        GASNET_SAFE(gasnet_AMRequestShort0(0, H_TRY_SEEN));
        int rc;
        while ((rc = gasnet_barrier_try(77, 0)) == GASNET_ERR_NOT_READY) {
        }
        CHECK_EQ(rc, GASNET_OK);
    }

    TEST_SECTION("gasnet_barrier, gasnet_barrier_result, UNNAMED");
    for (int i = 0; i < 50; i++) {
        int id = -1;
        CHECK_EQ(gasnet_barrier(i * 31 + 1, 0), GASNET_OK);
        CHECK_EQ(gasnet_barrier_result(&id), 0); /* named: 0 and the id */
        CHECK_EQ(id, i * 31 + 1);
        CHECK_EQ(gasnet_barrier(i, GASNET_BARRIERFLAG_ANONYMOUS), GASNET_OK);
        CHECK(gasnet_barrier_result(&id) != 0); /* nobody named it */
        CHECK_EQ(gasnet_barrier(0, GASNET_BARRIERFLAG_UNNAMED), GASNET_OK);
        CHECK(gasnet_barrier_result(&id) != 0);
        /* One node names it, the others are anonymous: named, with that node's id, everywhere. */
        const int flags = (gasnet_node_t)i % n == me ? 0 : GASNET_BARRIERFLAG_ANONYMOUS;
        CHECK_EQ(gasnet_barrier(1000 + i, flags), GASNET_OK);
        id = -1;
        CHECK_EQ(gasnet_barrier_result(&id), 0);
        CHECK_EQ(id, 1000 + i);
        /* Split-phase with UNNAMED. */
        gasnet_barrier_notify(0, GASNET_BARRIERFLAG_UNNAMED);
        CHECK_EQ(gasnet_barrier_wait(0, GASNET_BARRIERFLAG_UNNAMED), GASNET_OK);
        CHECK(gasnet_barrier_result(&id) != 0);
    }
    if (n > 1) { /* a mismatch is reported by gasnet_barrier too */
        CHECK_EQ(gasnet_barrier((int)me + 5, 0), GASNET_ERR_BARRIER_MISMATCH);
        CHECK_EQ(gasnet_barrier(0, 0), GASNET_OK);
    }

    TEST_SECTION("AMs and puts complete between notify and wait");
    for (int i = 0; i < 50; i++) {
        const gasnet_node_t right = (me + 1) % n;
        gasnet_barrier_notify(i, 0);
        const int before = pongs;
        GASNET_SAFE(gasnet_AMRequestShort1(right, H_PING, i));
        GASNET_BLOCKUNTIL(pongs == before + 1);
        int v = i * 3 + (int)me;
        gasnet_put(right, segs[right].addr, &v, sizeof v);
        int back = -1;
        gasnet_get(&back, right, segs[right].addr, sizeof back);
        CHECK_EQ(back, v);
        CHECK_EQ(gasnet_barrier_wait(i, 0), GASNET_OK);
    }
    CHECK_EQ(barrier(0, 0), GASNET_OK);
    if (me == 0) printf("barrier_test: OK (%u nodes)\n", n);
    gasnet_exit(0);
}
