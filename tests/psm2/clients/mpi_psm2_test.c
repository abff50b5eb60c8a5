/* SPDX-License-Identifier: BSD-3-Clause */
/* An MPI program for Open MPI's mtl psm2 over Portico's libpsm2 (ompi.sh runs it): point to
 * point with wildcards, probe and mprobe, synchronous sends, messages on both sides of the
 * rendezvous thresholds, crossed large sends, and collectives. Every check names what failed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);                                             \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                              \
        }                                                                                                              \
    } while (0)

static unsigned char pattern(int from, int tag, size_t i) { return (unsigned char)(from * 31 + tag * 7 + i % 251); }

static void fill(unsigned char *b, size_t n, int from, int tag) {
    for (size_t i = 0; i < n; ++i) b[i] = pattern(from, tag, i);
}
static void verify(const unsigned char *b, size_t n, int from, int tag) {
    for (size_t i = 0; i < n; ++i)
        CHECK(b[i] == pattern(from, tag, i), "byte %zu of a %zu-byte message from %d tag %d", i, n, from, tag);
}

/* Everyone sends to everyone; receivers take ANY_SOURCE/ANY_TAG and check what the status says. */
static void all_to_all_wildcards(size_t n) {
    unsigned char *s = malloc(n + 1), *r = malloc(n + 1);
    MPI_Request *reqs = malloc(sizeof *reqs * (size_t)size);
    fill(s, n, rank, 5);
    for (int p = 0; p < size; ++p) MPI_Isend(s, (int)n, MPI_BYTE, p, 5, MPI_COMM_WORLD, &reqs[p]);
    int seen = 0;
    for (int k = 0; k < size; ++k) {
        MPI_Status st;
        MPI_Recv(r, (int)n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(st.MPI_TAG == 5 && count == (int)n, "status tag %d count %d, wanted 5 and %zu", st.MPI_TAG, count, n);
        CHECK(!(seen & (1 << st.MPI_SOURCE)), "two messages from %d", st.MPI_SOURCE);
        seen |= 1 << st.MPI_SOURCE;
        verify(r, n, st.MPI_SOURCE, 5);
    }
    MPI_Waitall(size, reqs, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD); /* the next round's larger messages must not meet these wildcards */
    free(s);
    free(r);
    free(reqs);
}

/* Messages from one sender arrive in order whatever their sizes (non-overtaking). */
static void ordering(void) {
    const size_t sizes[] = {0, 1, 100, 16000, 16001, 64000, 64001, 300000, 8, 2 << 20, 3};
    const int count = (int)(sizeof sizes / sizeof *sizes);
    if (rank == 0) {
        for (int i = 0; i < count; ++i) {
            unsigned char *b = malloc(sizes[i] + 1);
            fill(b, sizes[i], 0, i);
            MPI_Send(b, (int)sizes[i], MPI_BYTE, 1, 9, MPI_COMM_WORLD);
            free(b);
        }
    } else if (rank == 1) {
        for (int i = 0; i < count; ++i) {
            MPI_Status st;
            MPI_Probe(0, 9, MPI_COMM_WORLD, &st);
            int n;
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK(n == (int)sizes[i], "message %d: probe says %d bytes, sent %zu", i, n, sizes[i]);
            unsigned char *b = malloc((size_t)n + 1);
            MPI_Recv(b, n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            verify(b, (size_t)n, 0, i);
            free(b);
        }
    }
}

/* Matched probe: the message it takes is invisible to a receive posted meanwhile. */
static void mprobe(void) {
    if (rank == 0) {
        int a = 111, b = 222;
        MPI_Send(&a, 1, MPI_INT, 1, 20, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 1, 20, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Message msg;
        MPI_Status st;
        MPI_Mprobe(0, 20, MPI_COMM_WORLD, &msg, &st);
        int got = 0, other = 0;
        MPI_Recv(&other, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Mrecv(&got, 1, MPI_INT, &msg, &st);
        CHECK(got == 111 && other == 222, "mprobe took %d, the receive %d (wanted 111, 222)", got, other);
    }
}

/* A synchronous send completes only once matched; crossed large blocking sends finish. */
static void sync_and_crossed(void) {
    if (rank < 2 && size >= 2) {
        const int peer = 1 - rank;
        int v = rank + 40, w = -1;
        MPI_Request r;
        MPI_Irecv(&w, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &r);
        MPI_Ssend(&v, 1, MPI_INT, peer, 30, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(w == peer + 40, "ssend delivered %d", w);
        const size_t n = 4 << 20;
        unsigned char *s = malloc(n), *d = malloc(n);
        fill(s, n, rank, 31);
        MPI_Sendrecv(s, (int)n, MPI_BYTE, peer, 31, d, (int)n, MPI_BYTE, peer, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        verify(d, n, peer, 31);
        free(s);
        free(d);
    }
}

static void collectives(void) {
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == (long)size * (size + 1) / 2, "allreduce %ld", sum);
    int root_value = rank == 0 ? 77 : 0;
    MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(root_value == 77, "bcast %d", root_value);
    int *all = malloc(sizeof *all * (size_t)size);
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; ++i) CHECK(all[i] == i, "allgather[%d] = %d", i, all[i]);
    int *to = malloc(sizeof *to * (size_t)size), *from = malloc(sizeof *from * (size_t)size);
    for (int i = 0; i < size; ++i) to[i] = rank * 100 + i;
    MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; ++i) CHECK(from[i] == i * 100 + rank, "alltoall[%d] = %d", i, from[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    free(all);
    free(to);
    free(from);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && size <= 30, "run on 2..30 ranks, not %d", size);
    for (size_t n = 0; n <= (1u << 20); n = n ? n * 16 : 1) all_to_all_wildcards(n);
    ordering();
    mprobe();
    sync_and_crossed();
    collectives();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_psm2_test: %d ranks OK\n", size);
    MPI_Finalize();
    return 0;
}
