/* SPDX-License-Identifier: BSD-3-Clause */
/* Portico's libpmi (include/portico/pmi/pmi.h) as a PMI program sees it, under any launcher
 * (portico-run, MPICH's mpiexec.hydra, Open MPI's mpirun, none). Modes:
 *   api [names=fail|any]  every call of the PMI-1 API: the job, the key-value space across ranks
 *                         (put, commit, barrier, get, the longest key and value), the clique, the
 *                         calls the launcher cannot serve (PMI_FAIL), argument errors, calls before
 *                         PMI_Init and after PMI_Finalize. names=fail: the launcher has no name
 *                         service (portico-run, PMIx); any: it may have one (hydra)
 *   portals               libpmi beside Portico's own use of the launcher connection: PMI calls
 *                         interleaved with portico_runtime_* collectives, a logical NI (whose rank
 *                         map is built over the same connection) and PMI gets from another thread
 *                         while the main thread runs collectives; then PtlFini, after which PMI is
 *                         still usable (the job service's finalize is not the launcher's while
 *                         PMI_Init holds it), then PMI_Finalize
 *   portals-pmi-first     the same, but PMI_Finalize before PtlFini (which then sends the
 *                         launcher's finalize)
 * Exits 0 when every check holds; prints the failed check and exits 1 otherwise. */
#include <portico/pmi/pmi.h>

#include <portals4.h>
#include <portico_runtime.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "pmi_lib_test[rank %d] %s:%d: check failed: %s\n", g_rank, __FILE__, __LINE__, #cond);     \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define CHECK_RC(call, want) CHECK((call) == (want))

static char g_kvs[1024];
static int g_size, g_keymax, g_valmax;

static void init(void) {
    int spawned = -1, initialized = -1;
    CHECK_RC(PMI_Initialized(&initialized), PMI_SUCCESS);
    CHECK(initialized == PMI_FALSE);
    CHECK_RC(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK(spawned == PMI_FALSE);
    CHECK_RC(PMI_Init(&spawned), PMI_SUCCESS); /* again: harmless */
    CHECK_RC(PMI_Initialized(&initialized), PMI_SUCCESS);
    CHECK(initialized == PMI_TRUE);
    CHECK_RC(PMI_Get_rank(&g_rank), PMI_SUCCESS);
    CHECK_RC(PMI_Get_size(&g_size), PMI_SUCCESS);
    CHECK(g_size >= 1 && g_rank >= 0 && g_rank < g_size);
    int namemax = 0;
    CHECK_RC(PMI_KVS_Get_name_length_max(&namemax), PMI_SUCCESS);
    CHECK(namemax > 1 && namemax <= (int)sizeof g_kvs);
    CHECK_RC(PMI_KVS_Get_my_name(g_kvs, namemax), PMI_SUCCESS);
    CHECK(strlen(g_kvs) > 0);
    CHECK_RC(PMI_KVS_Get_key_length_max(&g_keymax), PMI_SUCCESS);
    CHECK_RC(PMI_KVS_Get_value_length_max(&g_valmax), PMI_SUCCESS);
    CHECK(g_keymax >= 64 && g_valmax >= 512); /* values fit a 1024-byte request line where the launcher reads no more */
}

/* Every rank puts "<prefix>.<rank>" = "<tag>-<rank>"; after a barrier every rank reads them all. */
static void exchange(const char *prefix, const char *tag) {
    char key[64], val[128], got[128];
    snprintf(key, sizeof key, "%s.%d", prefix, g_rank);
    snprintf(val, sizeof val, "%s-%d", tag, g_rank);
    CHECK_RC(PMI_KVS_Put(g_kvs, key, val), PMI_SUCCESS);
    CHECK_RC(PMI_KVS_Commit(g_kvs), PMI_SUCCESS);
    CHECK_RC(PMI_Barrier(), PMI_SUCCESS);
    for (int r = 0; r < g_size; ++r) {
        snprintf(key, sizeof key, "%s.%d", prefix, r);
        snprintf(val, sizeof val, "%s-%d", tag, r);
        CHECK_RC(PMI_KVS_Get(g_kvs, key, got, sizeof got), PMI_SUCCESS);
        CHECK(strcmp(got, val) == 0);
    }
}

static void api(const char *names) {
    /* Before PMI_Init. */
    int n = 0;
    char buf[2048];
    CHECK_RC(PMI_Get_size(&n), PMI_ERR_INIT);
    CHECK_RC(PMI_Barrier(), PMI_ERR_INIT);
    CHECK_RC(PMI_KVS_Get_my_name(buf, sizeof buf), PMI_ERR_INIT);
    CHECK_RC(PMI_Finalize(), PMI_ERR_INIT);
    init();

    /* The job. */
    int universe = 0, appnum = -1, idmax = 0;
    CHECK_RC(PMI_Get_universe_size(&universe), PMI_SUCCESS);
    CHECK(universe >= g_size);
    CHECK_RC(PMI_Get_appnum(&appnum), PMI_SUCCESS);
    CHECK(appnum == 0);
    CHECK_RC(PMI_Get_id_length_max(&idmax), PMI_SUCCESS);
    CHECK_RC(PMI_Get_id(buf, idmax), PMI_SUCCESS);
    CHECK(strcmp(buf, g_kvs) == 0);
    CHECK_RC(PMI_Get_kvs_domain_id(buf, idmax), PMI_SUCCESS);
    CHECK(strcmp(buf, g_kvs) == 0);
    CHECK_RC(PMI_KVS_Get_my_name(buf, (int)strlen(g_kvs)), PMI_ERR_INVALID_LENGTH); /* no room for the NUL */

    /* The key-value space across ranks, twice. */
    exchange("pmi_lib", "first");
    exchange("pmi_lib.again", "second");
    /* The longest key and value, and every printable character but space and backslash. */
    char *key = malloc((size_t)g_keymax), *val = malloc((size_t)g_valmax), *got = malloc((size_t)g_valmax);
    memset(key, 'k', (size_t)g_keymax - 1);
    key[g_keymax - 1] = '\0';
    key[0] = (char)('a' + g_rank % 26);
    for (int i = 0; i < g_valmax - 1; ++i) {
        char c = (char)('!' + (i + g_rank) % 94);
        val[i] = c == '\\' ? '/' : c;
    }
    val[g_valmax - 1] = '\0';
    if (g_rank < 26) CHECK_RC(PMI_KVS_Put(g_kvs, key, val), PMI_SUCCESS);
    CHECK_RC(PMI_Barrier(), PMI_SUCCESS);
    if (g_rank < 26) {
        CHECK_RC(PMI_KVS_Get(g_kvs, key, got, g_valmax), PMI_SUCCESS);
        CHECK(strcmp(got, val) == 0);
        CHECK_RC(PMI_KVS_Get(g_kvs, key, got, g_valmax - 1), PMI_ERR_INVALID_LENGTH);
    }
    /* Backslashes, which GASNet's pmi-spawner puts (its values are Ascii85: every character from
     * '!' to 'u'), come back as they were: the wire escapes them. */
    char bkey[32], want[64];
    snprintf(bkey, sizeof bkey, "backslash.%d", g_rank);
    snprintf(buf, sizeof buf, "\\%d\\\\!u\\", g_rank);
    CHECK_RC(PMI_KVS_Put(g_kvs, bkey, buf), PMI_SUCCESS);
    CHECK_RC(PMI_Barrier(), PMI_SUCCESS);
    for (int r = 0; r < g_size; ++r) {
        snprintf(bkey, sizeof bkey, "backslash.%d", r);
        snprintf(want, sizeof want, "\\%d\\\\!u\\", r);
        CHECK_RC(PMI_KVS_Get(g_kvs, bkey, got, g_valmax), PMI_SUCCESS);
        CHECK(strcmp(got, want) == 0);
    }

    /* Argument errors, answered before anything is sent. */
    CHECK_RC(PMI_KVS_Put("not-this-job", "k", "v"), PMI_ERR_INVALID_ARG);
    CHECK_RC(PMI_KVS_Get("not-this-job", "k", buf, sizeof buf), PMI_ERR_INVALID_ARG);
    CHECK_RC(PMI_KVS_Put(NULL, "k", "v"), PMI_ERR_INVALID_ARG);
    CHECK_RC(PMI_KVS_Put(g_kvs, "two words", "v"), PMI_ERR_INVALID_KEY);
    CHECK_RC(PMI_KVS_Put(g_kvs, "", "v"), PMI_ERR_INVALID_KEY);
    memset(got, 'k', (size_t)g_keymax); /* one character too many (got has room: g_valmax > g_keymax) */
    got[g_keymax] = '\0';
    CHECK_RC(PMI_KVS_Put(g_kvs, got, "v"), PMI_ERR_INVALID_KEY_LENGTH);
    CHECK_RC(PMI_KVS_Put(g_kvs, "k", ""), PMI_ERR_INVALID_VAL);
    char *long_val = malloc((size_t)g_valmax + 1);
    memset(long_val, 'v', (size_t)g_valmax);
    long_val[g_valmax] = '\0';
    CHECK_RC(PMI_KVS_Put(g_kvs, "k", long_val), PMI_ERR_INVALID_VAL_LENGTH);
    CHECK_RC(PMI_KVS_Put(g_kvs, "k", NULL), PMI_ERR_INVALID_ARG);
    CHECK_RC(PMI_KVS_Get(g_kvs, "no.such.key", buf, sizeof buf), PMI_FAIL);
    CHECK_RC(PMI_Get_rank(NULL), PMI_ERR_INVALID_ARG);
    free(key), free(val), free(got), free(long_val);

    /* The clique: every rank of these tests runs on this machine, placed by the launcher. */
    int clique = 0;
    CHECK_RC(PMI_Get_clique_size(&clique), PMI_SUCCESS);
    CHECK(clique == g_size);
    int *ranks = calloc((size_t)clique, sizeof *ranks);
    CHECK_RC(PMI_Get_clique_ranks(ranks, clique), PMI_SUCCESS);
    for (int i = 0; i < clique; ++i) CHECK(ranks[i] == i);
    if (clique > 1) CHECK_RC(PMI_Get_clique_ranks(ranks, clique - 1), PMI_ERR_INVALID_LENGTH);
    free(ranks);

    /* What the launcher cannot serve. */
    CHECK_RC(PMI_KVS_Create(buf, sizeof buf), PMI_FAIL);
    CHECK_RC(PMI_KVS_Destroy(g_kvs), PMI_FAIL);
    char ikey[256], ival[2048];
    CHECK_RC(PMI_KVS_Iter_first(g_kvs, ikey, sizeof ikey, ival, sizeof ival), PMI_FAIL);
    CHECK_RC(PMI_KVS_Iter_next(g_kvs, ikey, sizeof ikey, ival, sizeof ival), PMI_FAIL);
    char service[64], port[256];
    snprintf(service, sizeof service, "pmi_lib_test.%d", g_rank);
    const int published = PMI_Publish_name(service, "port-of-test");
    if (strcmp(names, "fail") == 0) {
        CHECK(published == PMI_FAIL);
        CHECK_RC(PMI_Lookup_name(service, port), PMI_FAIL);
        CHECK_RC(PMI_Unpublish_name(service), PMI_FAIL);
    } else if (published == PMI_SUCCESS) {
        CHECK_RC(PMI_Lookup_name(service, port), PMI_SUCCESS);
        CHECK(strcmp(port, "port-of-test") == 0);
        CHECK_RC(PMI_Unpublish_name(service), PMI_SUCCESS);
    } else {
        CHECK(published == PMI_FAIL);
    }
    const char *cmds[1] = {"/bin/true"};
    const char **argvs[1] = {NULL};
    const int maxprocs[1] = {2}, infosizes[1] = {0};
    const PMI_keyval_t *infos[1] = {NULL};
    int errors[2] = {0, 0};
    CHECK_RC(PMI_Spawn_multiple(1, cmds, argvs, maxprocs, infosizes, infos, 0, NULL, errors), PMI_FAIL);
    CHECK(errors[0] == PMI_FAIL && errors[1] == PMI_FAIL);

    /* Options: Portico's PMI has none. */
    char arg0[] = "prog", arg1[] = "-pmi-whatever";
    char *args[] = {arg0, arg1, NULL};
    int parsed = -1, kvsize = -1, argc = 2;
    PMI_keyval_t *kv = (PMI_keyval_t *)1;
    CHECK_RC(PMI_Parse_option(2, args, &parsed, &kv, &kvsize), PMI_SUCCESS);
    CHECK(parsed == 0 && kv == NULL && kvsize == 0);
    CHECK_RC(PMI_Parse_option(0, args, &parsed, &kv, &kvsize), PMI_ERR_INVALID_NUM_ARGS);
    CHECK_RC(PMI_Parse_option(2, NULL, &parsed, &kv, &kvsize), PMI_ERR_INVALID_ARGS);
    CHECK_RC(PMI_Parse_option(2, args, NULL, &kv, &kvsize), PMI_ERR_INVALID_NUM_PARSED);
    CHECK_RC(PMI_Parse_option(2, args, &parsed, NULL, &kvsize), PMI_ERR_INVALID_KEYVALP);
    CHECK_RC(PMI_Parse_option(2, args, &parsed, &kv, NULL), PMI_ERR_INVALID_SIZE);
    char *(*argvp)[] = &args;
    kv = (PMI_keyval_t *)1;
    CHECK_RC(PMI_Args_to_keyval(&argc, argvp, &kv, &kvsize), PMI_SUCCESS);
    CHECK(argc == 2 && args[1] == arg1 && kv == NULL && kvsize == 0);
    CHECK_RC(PMI_Free_keyvals(kv, kvsize), PMI_SUCCESS);
    PMI_keyval_t foreign[1] = {{"k", arg0}};
    CHECK_RC(PMI_Free_keyvals(foreign, 1), PMI_ERR_INVALID_ARG);
    int optlen = (int)sizeof buf;
    CHECK_RC(PMI_Get_options(buf, &optlen), PMI_SUCCESS);
    CHECK(buf[0] == '\0' && optlen == 1);
    optlen = 0;
    CHECK_RC(PMI_Get_options(buf, &optlen), PMI_ERR_NOMEM);

    /* The end: nobody finalizes while others still read. */
    CHECK_RC(PMI_Barrier(), PMI_SUCCESS);
    CHECK_RC(PMI_Finalize(), PMI_SUCCESS);
    int initialized = -1;
    CHECK_RC(PMI_Initialized(&initialized), PMI_SUCCESS);
    CHECK(initialized == PMI_FALSE);
    CHECK_RC(PMI_Get_rank(&n), PMI_ERR_INIT);
    CHECK_RC(PMI_KVS_Put(g_kvs, "after", "finalize"), PMI_ERR_INIT);
    CHECK_RC(PMI_Finalize(), PMI_ERR_INIT);
}

/* Reads every rank's "pmi_lib.<r>" over and over while the main thread runs collectives. */
static atomic_int g_stop;
static void *reader(void *arg) {
    atomic_long *reads = arg;
    char key[64], want[64], got[128];
    while (!atomic_load(&g_stop)) {
        for (int r = 0; r < g_size; ++r) {
            snprintf(key, sizeof key, "pmi_lib.%d", r);
            snprintf(want, sizeof want, "first-%d", r);
            CHECK_RC(PMI_KVS_Get(g_kvs, key, got, sizeof got), PMI_SUCCESS);
            CHECK(strcmp(got, want) == 0);
            atomic_fetch_add(reads, 1);
        }
    }
    return NULL;
}

static void portals(int pmi_first) {
    init();
    exchange("pmi_lib", "first");
    CHECK_RC(PtlInit(), PTL_OK);
    ptl_handle_ni_t ni;
    ptl_ni_limits_t limits;
    CHECK_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &limits, &ni), PTL_OK);
    ptl_process_t *map = calloc((size_t)g_size, sizeof *map);
    ptl_size_t got_size = 0;
    CHECK_RC(PtlGetMap(ni, (ptl_size_t)g_size, map, &got_size), PTL_OK);
    CHECK(got_size == (ptl_size_t)g_size);
    ptl_rank_t me = 0;
    ptl_process_t id;
    CHECK_RC(PtlGetId(ni, &id), PTL_OK);
    me = id.rank;
    CHECK((int)me == g_rank);

    /* The job service's collectives and PMI gets from another thread, on the one connection. */
    /* At least 20 rounds, and as many more as it takes for every rank's reader to have read
     * once (a descheduled reader may not have started by the 20th: that is no failure); the ranks
     * agree on it, each round, so that they run the same collectives. */
    atomic_long reads = 0;
    pthread_t t;
    atomic_store(&g_stop, 0);
    CHECK(pthread_create(&t, NULL, reader, &reads) == 0);
    for (int round = 0, all_read = 0; round < 20 || !all_read; ++round) {
        int *all = calloc((size_t)g_size, sizeof *all), mine = g_rank * 1000 + round;
        CHECK_RC(portico_runtime_allgather(&mine, sizeof mine, all), PTL_OK);
        for (int r = 0; r < g_size; ++r) CHECK(all[r] == r * 1000 + round);
        CHECK_RC(portico_runtime_barrier(), PTL_OK);
        const int read = atomic_load(&reads) > 0;
        CHECK_RC(portico_runtime_allgather(&read, sizeof read, all), PTL_OK);
        all_read = 1;
        for (int r = 0; r < g_size; ++r) all_read &= all[r];
        free(all);
    }
    atomic_store(&g_stop, 1);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(atomic_load(&reads) > 0);
    /* PMI collectives between the job service's. */
    exchange("pmi_lib.between", "between");
    CHECK_RC(portico_runtime_barrier(), PTL_OK);
    free(map);

    if (pmi_first) {
        CHECK_RC(PMI_Barrier(), PMI_SUCCESS);
        CHECK_RC(PMI_Finalize(), PMI_SUCCESS);
        CHECK_RC(portico_runtime_barrier(), PTL_OK); /* the job service still reaches the launcher */
        CHECK_RC(PtlNIFini(ni), PTL_OK);
        PtlFini(); /* the last user: the launcher's finalize */
        CHECK_RC(portico_runtime_barrier(), PTL_FAIL);
        return;
    }
    CHECK_RC(PtlNIFini(ni), PTL_OK);
    PtlFini(); /* the job service leaves; PMI still holds the connection */
    CHECK_RC(portico_runtime_barrier(), PTL_FAIL);
    exchange("pmi_lib.after", "after-ptlfini");
    CHECK_RC(PMI_Finalize(), PMI_SUCCESS);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "api";
    if (strcmp(mode, "api") == 0) {
        const char *names = argc > 2 && strncmp(argv[2], "names=", 6) == 0 ? argv[2] + 6 : "fail";
        api(names);
    } else if (strcmp(mode, "portals") == 0) {
        portals(0);
    } else if (strcmp(mode, "portals-pmi-first") == 0) {
        portals(1);
    } else {
        fprintf(stderr, "pmi_lib_test: unknown mode '%s'\n", mode);
        return 2;
    }
    if (g_rank == 0) printf("pmi_lib_test %s: %d ranks OK\n", mode, g_size);
    return 0;
}
