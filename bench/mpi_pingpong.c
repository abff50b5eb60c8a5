/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_pingpong: MPI ping-pong latency between ranks 0 and 1, for bench/psm2_mpi_pingpong.sh (which
 * builds it with mpicc.openmpi and runs it under Open MPI with different transports).
 *
 *   mpi_pingpong [--sizes 8,1024,65536,1048576] [--iters N] [--reps R]
 *
 * Per size: a warm-up of a tenth of the round trips, then R repetitions of N round trips (fewer
 * for large messages: at most 64 MiB each way per repetition, at least 50 round trips). Rank 0
 * sends with MPI_Send and receives the answer with MPI_Recv; rank 1 receives and answers the same
 * number of bytes (the classic blocking ping-pong of the OSU and IMB latency tests). The first and
 * last byte of every message carry the round number, which the receiver checks. One-way latency =
 * round trip / 2; rank 0 prints one line per size:
 *
 *   size <bytes> us <median> min <min> max <max> iters <round trips per repetition> reps <R>
 *
 * (median, minimum and maximum over the repetitions, microseconds). Other ranks take no part. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

static void die(const char *msg) {
    fprintf(stderr, "mpi_pingpong[rank %d]: %s\n", rank, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* `rounds` round trips of `size` bytes; rank 0 returns the one-way latency in µs. */
static double pingpong(unsigned char *sbuf, unsigned char *rbuf, size_t size, long rounds, long *seq) {
    const int n = (int)size;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long i = 0; i < rounds; ++i) {
        const unsigned char mark = (unsigned char)(++*seq);
        if (rank == 0) {
            sbuf[0] = sbuf[size - 1] = mark;
            MPI_Send(sbuf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(rbuf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sbuf[0] = sbuf[size - 1] = mark;
            MPI_Send(sbuf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
        if (rank <= 1 && (rbuf[0] != mark || rbuf[size - 1] != mark)) die("a message did not carry its round number");
    }
    const double t1 = MPI_Wtime();
    return (t1 - t0) * 1e6 / (2.0 * (double)rounds);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2) die("needs at least 2 ranks");

    size_t sizes[64];
    int nsizes = 0;
    long iters = 20000;
    int reps = 7;
    const char *list = "8,1024,65536,1048576";
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            list = argv[++i];
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atol(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            die("usage: mpi_pingpong [--sizes 8,1024,...] [--iters N] [--reps R]");
    }
    if (iters < 1 || reps < 1 || reps > 1000) die("--iters and --reps must be positive (reps at most 1000)");
    for (const char *p = list; *p && nsizes < 64;) {
        char *end = NULL;
        const unsigned long long v = strtoull(p, &end, 10);
        if (end == p || v < 1 || v > (1ull << 30)) die("bad --sizes list");
        sizes[nsizes++] = (size_t)v;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') die("bad --sizes list");
    }

    size_t largest = 1;
    for (int i = 0; i < nsizes; ++i)
        if (sizes[i] > largest) largest = sizes[i];
    unsigned char *sbuf = calloc(largest, 1), *rbuf = calloc(largest, 1);
    double *v = calloc((size_t)reps, sizeof *v);
    if (!sbuf || !rbuf || !v) die("out of memory");
    long seq = 0;
    for (int s = 0; s < nsizes; ++s) {
        const size_t size = sizes[s];
        long rounds = (long)((64ull << 20) / size);
        if (rounds < 50) rounds = 50;
        if (rounds > iters) rounds = iters;
        const long warm = rounds / 10 > 10 ? rounds / 10 : 10;
        pingpong(sbuf, rbuf, size, warm, &seq);
        for (int r = 0; r < reps; ++r) v[r] = pingpong(sbuf, rbuf, size, rounds, &seq);
        if (rank == 0) {
            qsort(v, (size_t)reps, sizeof *v, cmp_double);
            const double median = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
            printf("size %zu us %.4f min %.4f max %.4f iters %ld reps %d\n", size, median, v[0], v[reps - 1], rounds,
                   reps);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    free(v);
    MPI_Finalize();
    return 0;
}
