/* SPDX-License-Identifier: BSD-3-Clause */
/* Job control, environment, constants and gasnet_tools, as a plain C99 client. The test driver
 * (pkgconfig_test.sh) compiles this file exactly as an installed client would:
 *     cc init_test.c $(pkg-config --cflags --libs gasnet-seq)
 * and runs it under portico-run with GASNET_TEST_VAR=hello in the environment. */
#include <gasnet.h>
#include <gasnet_tools.h>

#include <string.h>

#include "test_util.h"

/* Compile-time constants usable in #if (spec §1.8). */
#if SIZEOF_GASNET_REGISTER_VALUE_T != 8
#error "SIZEOF_GASNET_REGISTER_VALUE_T must be a preprocessor literal"
#endif
#if GASNET_PAGESIZE < 4096 || (GASNET_PAGESIZE & (GASNET_PAGESIZE - 1))
#error "GASNET_PAGESIZE"
#endif
#if (defined(GASNET_SEGMENT_FAST) + defined(GASNET_SEGMENT_LARGE) + defined(GASNET_SEGMENT_EVERYTHING)) != 1
#error "exactly one segment configuration"
#endif
#if GASNET_SPEC_VERSION_MAJOR != 1 || GASNET_SPEC_VERSION_MINOR != 8 || GASNET_VERSION != 1
#error "spec version"
#endif
#if !defined(GASNET_SEQ) || GASNET_MAXNODES < 1 || GASNET_ALIGNED_SEGMENTS != 0
#error "configuration"
#endif

#define H_ID 130
static volatile int ids_seen = 0;
static unsigned char id_seen[GASNET_MAXNODES];
static volatile int long_done = 0;

static void id_handler(gasnet_token_t t, gasnet_handlerarg_t id) {
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(src, id);
    CHECK(id_seen[id] == 0); /* mynode values are unique */
    id_seen[id] = 1;
    ids_seen++;
}
static void dontcare_a(gasnet_token_t t) { (void)t; }
static void dontcare_b(gasnet_token_t t) { (void)t; }
static void long_handler(gasnet_token_t t, void *buf, size_t n) {
    (void)t;
    CHECK_EQ(n, 3 * GASNET_PAGESIZE);
    CHECK(((unsigned char *)buf)[n - 1] == 0x5C);
    long_done = 1;
}

static int threadinfo_user(void) {
    GASNET_BEGIN_FUNCTION();
    return 1;
}

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    CHECK(gasnet_init(&argc, &argv) != GASNET_OK); /* a second init is an error */
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes();
    CHECK(me < n);

    /* Between init and attach: environment and segment limits. */
    CHECK(gasnet_getenv("GASNET_TEST_VAR") != NULL && strcmp(gasnet_getenv("GASNET_TEST_VAR"), "hello") == 0);
    CHECK(gasnet_getenv("GASNET_TEST_SURELY_UNSET_VARIABLE") == NULL);
    const uintptr_t max_local = gasnet_getMaxLocalSegmentSize(), max_global = gasnet_getMaxGlobalSegmentSize();
    CHECK(max_local % GASNET_PAGESIZE == 0 && max_local >= 16 * GASNET_PAGESIZE);
    CHECK(max_global <= max_local);

    /* Error codes, names and descriptions. */
    const int codes[6] = {GASNET_OK,          GASNET_ERR_NOT_INIT,  GASNET_ERR_RESOURCE,
                          GASNET_ERR_BAD_ARG, GASNET_ERR_NOT_READY, GASNET_ERR_BARRIER_MISMATCH};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            CHECK(gasnet_ErrorName(codes[i]) && gasnet_ErrorDesc(codes[i]));
            if (i != j) {
                CHECK(codes[i] != codes[j]);
                CHECK(strcmp(gasnet_ErrorName(codes[i]), gasnet_ErrorName(codes[j])) != 0);
                CHECK(strcmp(gasnet_ErrorDesc(codes[i]), gasnet_ErrorDesc(codes[j])) != 0);
            }
        }
    CHECK(strcmp(gasnet_ErrorName(GASNET_ERR_BAD_ARG), "GASNET_ERR_BAD_ARG") == 0);
    CHECK(strlen(GASNET_CONFIG_STRING) > 0 && strstr(GASNET_CONFIG_STRING, "THREADMODEL=SEQ") != NULL);

    /* Bad handler tables and segment sizes are refused before anything is set up. */
    {
        gasnet_handlerentry_t reserved[1] = {{5, (void (*)())dontcare_a}};
        CHECK_EQ(gasnet_attach(reserved, 1, 0, 0), GASNET_ERR_BAD_ARG);
        gasnet_handlerentry_t dup[2] = {{200, (void (*)())dontcare_a}, {200, (void (*)())dontcare_b}};
        CHECK_EQ(gasnet_attach(dup, 2, 0, 0), GASNET_ERR_BAD_ARG);
        gasnet_handlerentry_t many[129];
        for (int i = 0; i < 129; i++) {
            many[i].index = 0;
            many[i].fnptr = (void (*)())dontcare_a;
        }
        CHECK_EQ(gasnet_attach(many, 129, 0, 0), GASNET_ERR_BAD_ARG);
        CHECK_EQ(gasnet_attach(NULL, 0, GASNET_PAGESIZE + 1, 0), GASNET_ERR_BAD_ARG);
        if (max_local < UINTPTR_MAX - GASNET_PAGESIZE)
            CHECK_EQ(gasnet_attach(NULL, 0, max_local + GASNET_PAGESIZE, 0), GASNET_ERR_BAD_ARG);
    }

    /* The real attach: fixed indices honoured, don't-care ones get the lowest free from 128. */
    gasnet_handlerentry_t table[4] = {{0, (void (*)())dontcare_a},
                                      {H_ID, (void (*)())id_handler},
                                      {0, (void (*)())dontcare_b},
                                      {0, (void (*)())long_handler}};
    const uintptr_t segsize = 64 * GASNET_PAGESIZE;
    GASNET_SAFE(gasnet_attach(table, 4, segsize, GASNET_PAGESIZE));
    CHECK(table[1].index == H_ID);
    CHECK(table[0].index == 128 && table[2].index == 129 && table[3].index == 131);
    CHECK(gasnet_attach(table, 4, segsize, GASNET_PAGESIZE) != GASNET_OK); /* a second attach */

    /* Segment information: entries beyond the job are untouched, fewer entries are fine. */
    gasnet_seginfo_t *si = malloc(sizeof *si * (n + 2));
    for (gasnet_node_t i = 0; i < n + 2; i++) {
        si[i].addr = (void *)0x1234;
        si[i].size = 77;
    }
    GASNET_SAFE(gasnet_getSegmentInfo(si, (int)(n + 2)));
    CHECK(si[n].addr == (void *)0x1234 && si[n + 1].size == 77);
    for (gasnet_node_t i = 0; i < n; i++) {
        CHECK(si[i].size <= segsize && si[i].size > 0);
        CHECK((uintptr_t)si[i].addr % GASNET_PAGESIZE == 0 && si[i].size % GASNET_PAGESIZE == 0);
    }
    gasnet_seginfo_t one[1] = {{(void *)0x1234, 77}};
    GASNET_SAFE(gasnet_getSegmentInfo(one, 1));
    CHECK(one[0].addr == si[0].addr && one[0].size == si[0].size);
    CHECK_EQ(gasnet_getSegmentInfo(NULL, -1), GASNET_ERR_BAD_ARG);
    gasnet_nodeinfo_t *ni = malloc(sizeof *ni * n);
    GASNET_SAFE(gasnet_getNodeInfo(ni, (int)n));
    /* PSHM (all nodes of this test run on one machine): each node's segment is mapped here, and
     * what its owner wrote at its start is seen through offset; with GASNET_PSHM=0 nothing is. */
    const char *pshm = getenv("GASNET_PSHM");
    const int shared = !(pshm && strcmp(pshm, "0") == 0);
    *(volatile uint64_t *)si[me].addr = 0xABCD0000u + me;
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    GASNET_SAFE(gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS));
    for (gasnet_node_t i = 0; i < n; i++) {
        CHECK(ni[i].host <= i);
        if (shared) {
            CHECK(ni[i].supernode == ni[i].host);
            CHECK(*(volatile uint64_t *)((char *)si[i].addr + ni[i].offset) == 0xABCD0000u + i);
        } else {
            CHECK(ni[i].supernode == i && (i == me || ni[i].offset == 0));
        }
    }

    /* Unique node ids (everyone reports to node 0). */
    GASNET_SAFE(gasnet_AMRequestShort1(0, H_ID, (gasnet_handlerarg_t)me));
    if (me == 0) GASNET_BLOCKUNTIL(ids_seen == (int)n);

    /* Pages never touched before take a remote put and a Long AM (first touch = allocate). */
    {
        const gasnet_node_t right = (me + 1) % n;
        char *remote = (char *)si[right].addr + 40 * GASNET_PAGESIZE;
        static unsigned char buf[3 * GASNET_PAGESIZE];
        memset(buf, 0x5C, sizeof buf);
        gasnet_put_bulk(right, remote, buf, sizeof buf);
        GASNET_SAFE(gasnet_AMRequestLong0(right, table[3].index, buf, sizeof buf, remote + 8 * GASNET_PAGESIZE));
        GASNET_BLOCKUNTIL(long_done);
    }

    /* Handles, thread info, wait modes. */
    {
        gasnet_handle_t h;
        memset(&h, 0, sizeof h);
        CHECK(h == GASNET_INVALID_HANDLE);
        CHECK(threadinfo_user() == 1);
        {
            GASNET_POST_THREADINFO(GASNET_GET_THREADINFO());
            GASNET_SAFE(gasnet_set_waitmode(GASNET_WAIT_SPINBLOCK));
        }
        CHECK(gasnet_AMMaxArgs() >= 2 * (sizeof(int) > sizeof(void *) ? sizeof(int) : sizeof(void *)));
    }

    /* gasnet_tools. */
    {
        const gasnett_tick_t t0 = gasnett_ticks_now();
        gasnett_tick_t t1 = gasnett_ticks_now();
        while (t1 == t0) t1 = gasnett_ticks_now();
        CHECK(t1 > t0 && gasnett_ticks_to_ns(t1 - t0) > 0);
        CHECK(gasnett_tick_granularityus() > 0 && gasnett_tick_overheadus() >= 0);
        CHECK(gasnett_gettimeofday_us() > 1000000);
        gasnett_atomic_t a = gasnett_atomic_init(5);
        gasnett_atomic_increment(&a, 0);
        CHECK(gasnett_atomic_read(&a, 0) == 6);
        CHECK(gasnett_atomic_add(&a, 4, GASNETT_ATOMIC_MB_POST) == 10);
        CHECK(gasnett_atomic_compare_and_swap(&a, 10, 3, 0) && !gasnett_atomic_compare_and_swap(&a, 10, 4, 0));
        gasnett_atomic_set(&a, 1, GASNETT_ATOMIC_REL);
        CHECK(gasnett_atomic_decrement_and_test(&a, 0));
        CHECK(gasnett_atomic_signed(gasnett_atomic_subtract(&a, 2, 0)) == -2);
        gasnett_atomic64_t b = gasnett_atomic64_init(1ull << 40);
        CHECK(gasnett_atomic64_swap(&b, 7, 0) == (1ull << 40) && gasnett_atomic64_read(&b, 0) == 7);
        gasnett_local_mb();
        gasnett_local_wmb();
        gasnett_local_rmb();
        gasnett_compiler_fence();
        gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
        gasnett_cond_t c = GASNETT_COND_INITIALIZER;
        CHECK(gasnett_mutex_lock(&m) == 0);
        CHECK(gasnett_cond_signal(&c) == 0);
        CHECK(gasnett_mutex_unlock(&m) == 0);
        CHECK(gasnett_sched_yield() == 0);
        CHECK(gasnett_cpu_count() >= 1 && gasnett_getPhysMemSz(1) > 0);
        CHECK(strcmp(gasnett_getenv_withdefault("GASNET_TEST_VAR", "x"), "hello") == 0);
        CHECK(gasnett_getenv_yesno_withdefault("GASNET_TEST_SURELY_UNSET_VARIABLE", 1) == 1);
        CHECK(gasnett_getenv_int_withdefault("GASNET_TEST_SURELY_UNSET_VARIABLE", 42, 0) == 42);
        CHECK(gasnett_parse_int("4K", 1) == 4096 && gasnett_parse_int("2", 1024 * 1024) == 2 * 1024 * 1024);
        CHECK(gasnett_parse_int("3GB", 1) == 3LL << 30);
        CHECK(gasnett_print_backtrace(-1) == 0); /* writes nowhere, but walks the stack */
        static GASNETT_THREADKEY_DEFINE(key);
        CHECK(gasnett_threadkey_get(key) == NULL);
        gasnett_threadkey_set(key, &a);
        CHECK(gasnett_threadkey_get(key) == &a);
        CHECK(gasnett_gethostname()[0] != '\0');
    }

    test_barrier();
    if (me == 0) printf("init_test: OK (%u nodes)\n", n);
    gasnet_exit(0);
}
