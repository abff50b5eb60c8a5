/* SPDX-License-Identifier: BSD-3-Clause */
/* The job service's C face (portico_runtime.h), as a program sees it: a rank program started by
 * portico-run (or alone, without a launcher). Modes:
 *   collectives     rank, size, local ranks, barrier, allgather (empty, small, and larger than one
 *                   launcher value), allgatherv (every rank its own length, some empty),
 *                   broadcast from every root, and the argument checks
 *   engine-leaves   PtlInit first: the last PtlFini leaves the job, later collectives fail
 *   program-leaves  a runtime call before PtlInit: the job outlives PtlFini until
 *                   portico_runtime_finalize
 * Exits 0 when every check holds; prints the failed check and exits 1 otherwise. */
#include <portals4.h>
#include <portico_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "job_service[rank %d] %s:%d: check failed: %s\n", g_rank, __FILE__, __LINE__, #cond);      \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* PTL_OK under a launcher, PTL_IGNORED alone. */
static int g_ok;

static unsigned char pattern(int rank, size_t i) { return (unsigned char)((size_t)rank * 31 + i * 7 + 1); }

static void collectives(void) {
    int size = 0, local_rank = -1, local_size = 0;
    CHECK(portico_runtime_size(&size) == g_ok);
    CHECK(size >= 1 && g_rank >= 0 && g_rank < size);
    if (g_ok == PTL_IGNORED) CHECK(size == 1 && g_rank == 0);

    /* Every rank of these tests runs on this machine. */
    CHECK(portico_runtime_local(&local_rank, &local_size) == g_ok);
    CHECK(local_size == size && local_rank == g_rank);
    CHECK(portico_runtime_barrier() == g_ok);

    /* Small records, in rank order. */
    struct Rec {
        int32_t rank;
        uint32_t magic;
    } mine = {g_rank, 0xC0FFEEu}, *all = calloc((size_t)size, sizeof *all);
    CHECK(portico_runtime_allgather(&mine, sizeof mine, all) == g_ok);
    for (int r = 0; r < size; ++r) CHECK(all[r].rank == r && all[r].magic == 0xC0FFEEu);
    free(all);

    /* Nothing at all: legal, and NULL buffers are fine then. */
    CHECK(portico_runtime_allgather(NULL, 0, NULL) == g_ok);

    /* Every length modulo the encoding's 3-byte groups, and every byte value. */
    for (size_t len = 1; len <= 7; ++len) {
        unsigned char tiny[7], *tall = malloc(len * (size_t)size);
        for (size_t i = 0; i < len; ++i) tiny[i] = (unsigned char)((size_t)g_rank * 37 + i * 101 + len);
        CHECK(portico_runtime_allgather(tiny, len, tall) == g_ok);
        for (int r = 0; r < size; ++r)
            for (size_t i = 0; i < len; ++i)
                CHECK(tall[(size_t)r * len + i] == (unsigned char)((size_t)r * 37 + i * 101 + len));
        free(tall);
    }

    /* Larger than one launcher value (196607 characters under portico-run, about 1000 under
     * other PMI-1 launchers): split and joined. */
    const size_t big = 200000;
    unsigned char *bmine = malloc(big), *ball = malloc(big * (size_t)size);
    for (size_t i = 0; i < big; ++i) bmine[i] = pattern(g_rank, i);
    CHECK(portico_runtime_allgather(bmine, big, ball) == g_ok);
    for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < big; ++i) CHECK(ball[(size_t)r * big + i] == pattern(r, i));

    /* Variable lengths: rank r contributes r * 1000 bytes (rank 0 nothing), then all nothing. */
    {
        const size_t vlen = (size_t)g_rank * 1000;
        size_t *lens = calloc((size_t)size, sizeof *lens);
        void *vall = NULL;
        CHECK(portico_runtime_allgatherv(bmine, vlen, lens, &vall) == g_ok);
        CHECK(vall != NULL);
        const unsigned char *at = vall;
        for (int r = 0; r < size; ++r) {
            CHECK(lens[r] == (size_t)r * 1000);
            for (size_t i = 0; i < lens[r]; ++i) CHECK(at[i] == pattern(r, i));
            at += lens[r];
        }
        free(vall);
        vall = NULL;
        CHECK(portico_runtime_allgatherv(NULL, 0, lens, &vall) == g_ok);
        CHECK(vall != NULL); /* a buffer to free even when every rank contributed nothing */
        for (int r = 0; r < size; ++r) CHECK(lens[r] == 0);
        free(vall);
        free(lens);
    }

    /* Every rank a root once; the others' buffers are overwritten. */
    for (int root = 0; root < size; ++root) {
        unsigned char data[3000];
        for (size_t i = 0; i < sizeof data; ++i) data[i] = g_rank == root ? pattern(root, i) : 0;
        CHECK(portico_runtime_broadcast(data, sizeof data, root) == g_ok);
        for (size_t i = 0; i < sizeof data; ++i) CHECK(data[i] == pattern(root, i));
    }
    free(bmine);
    free(ball);

    /* Argument checks: nothing reaches the launcher, so no rank is left in a collective. */
    int x;
    CHECK(portico_runtime_rank(NULL) == PTL_ARG_INVALID);
    CHECK(portico_runtime_size(NULL) == PTL_ARG_INVALID);
    CHECK(portico_runtime_local(NULL, &x) == PTL_ARG_INVALID);
    CHECK(portico_runtime_local(&x, NULL) == PTL_ARG_INVALID);
    CHECK(portico_runtime_allgather(NULL, 4, &x) == PTL_ARG_INVALID);
    CHECK(portico_runtime_allgather(&x, 4, NULL) == PTL_ARG_INVALID);
    size_t one_len;
    void *one_all = &x;
    CHECK(portico_runtime_allgatherv(NULL, 4, &one_len, &one_all) == PTL_ARG_INVALID);
    CHECK(portico_runtime_allgatherv(&x, 4, NULL, &one_all) == PTL_ARG_INVALID);
    CHECK(portico_runtime_allgatherv(&x, 4, &one_len, NULL) == PTL_ARG_INVALID);
    CHECK(portico_runtime_broadcast(NULL, 4, 0) == PTL_ARG_INVALID);
    CHECK(portico_runtime_broadcast(&x, sizeof x, -1) == PTL_ARG_INVALID);
    CHECK(portico_runtime_broadcast(&x, sizeof x, size) == PTL_ARG_INVALID);

    CHECK(portico_runtime_barrier() == g_ok);
    CHECK(portico_runtime_finalize() == g_ok);
    CHECK(portico_runtime_finalize() == g_ok); /* idempotent */
    if (g_ok == PTL_OK) CHECK(portico_runtime_barrier() == PTL_FAIL);
}

static void engine_leaves(void) {
    CHECK(PtlInit() == PTL_OK);
    g_ok = portico_runtime_rank(&g_rank);
    CHECK(g_ok == PTL_OK || g_ok == PTL_IGNORED);
    CHECK(portico_runtime_barrier() == g_ok);
    PtlFini();
    /* The job is gone with the last PtlFini. */
    if (g_ok == PTL_OK) CHECK(portico_runtime_barrier() == PTL_FAIL);
}

static void program_leaves(void) {
    CHECK(portico_runtime_barrier() == g_ok);
    CHECK(PtlInit() == PTL_OK);
    PtlFini();
    /* Still in the job: the program leaves it. */
    CHECK(portico_runtime_barrier() == g_ok);
    CHECK(portico_runtime_finalize() == g_ok);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: job_service collectives|engine-leaves|program-leaves\n");
        return 2;
    }
    /* engine-leaves must not touch the job before PtlInit. */
    if (strcmp(argv[1], "engine-leaves") == 0) {
        engine_leaves();
        return 0;
    }
    g_ok = portico_runtime_rank(&g_rank);
    CHECK(g_ok == PTL_OK || g_ok == PTL_IGNORED);
    if (strcmp(argv[1], "collectives") == 0)
        collectives();
    else if (strcmp(argv[1], "program-leaves") == 0)
        program_leaves();
    else
        return 2;
    return 0;
}
