/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives over whichever coll components mpirun selected (tests/clients/ompi_run.sh puts
 * coll portals4 first): on MPI_COMM_WORLD, a duplicate and a split, every root, the blocking and
 * non-blocking forms of the operations coll portals4 provides (barrier, bcast, reduce, allreduce,
 * gather, scatter) from 1 element to 1 MiB, and a few it leaves to others (allgather, alltoall,
 * scan) so that the components work side by side. Results are checked against their closed
 * forms. Prints "coll: ok" on rank 0. Not used: MPI_PROD on MPI_LONG/MPI_UNSIGNED_LONG, which
 * coll portals4 maps to an 8-bit type (docs/CLIENTS.md). */
#include "mpi_check.h"

#include <string.h>

static int wrank;

static const int counts[] = {1, 7, 512, 4097, 65536, 262144};
enum { kCounts = sizeof counts / sizeof counts[0], kMaxCount = 262144 };

static void bcasts(MPI_Comm comm, int rank, int size, int blocking) {
    unsigned char *buf = xmalloc((size_t)kMaxCount * 4);
    for (int root = 0; root < size; ++root) {
        for (int c = 0; c < kCounts; ++c) {
            const size_t n = (size_t)counts[c] * 4;
            if (rank == root)
                fill(buf, n, (unsigned)(root * 17 + c));
            else
                memset(buf, 0, n);
            if (blocking) {
                CHECK_MPI(MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm));
            } else {
                MPI_Request req;
                CHECK_MPI(MPI_Ibcast(buf, (int)n, MPI_BYTE, root, comm, &req));
                CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            }
            CHECK(verify(buf, n, (unsigned)(root * 17 + c)) == -1);
        }
    }
    free(buf);
}

/* Element i of rank r's contribution. */
static int contrib(int r, int i) { return r * 3 + i % 5 + 1; }

static void reductions(MPI_Comm comm, int rank, int size, int blocking) {
    int *in = xmalloc(sizeof(int) * kMaxCount), *out = xmalloc(sizeof(int) * kMaxCount);
    double *din = xmalloc(sizeof(double) * kMaxCount), *dout = xmalloc(sizeof(double) * kMaxCount);
    for (int c = 0; c < kCounts; ++c) {
        const int n = counts[c];
        for (int i = 0; i < n; ++i) in[i] = contrib(rank, i), din[i] = 0.5 * contrib(rank, i);
        const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
        for (int o = 0; o < 4; ++o) {
            if (ops[o] == MPI_PROD && n > 512) continue; /* products of a few ranks stay exact */
            for (int root = -1; root < size; root += (size > 2 ? size / 2 : 1)) {
                memset(out, 0, sizeof(int) * (size_t)n);
                memset(dout, 0, sizeof(double) * (size_t)n);
                MPI_Request reqs[2];
                if (root < 0 && blocking) {
                    CHECK_MPI(MPI_Allreduce(in, out, n, MPI_INT, ops[o], comm));
                    CHECK_MPI(MPI_Allreduce(din, dout, n, MPI_DOUBLE, ops[o], comm));
                } else if (root < 0) {
                    CHECK_MPI(MPI_Iallreduce(in, out, n, MPI_INT, ops[o], comm, &reqs[0]));
                    CHECK_MPI(MPI_Iallreduce(din, dout, n, MPI_DOUBLE, ops[o], comm, &reqs[1]));
                    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
                } else if (blocking) {
                    CHECK_MPI(MPI_Reduce(in, out, n, MPI_INT, ops[o], root, comm));
                    CHECK_MPI(MPI_Reduce(din, dout, n, MPI_DOUBLE, ops[o], root, comm));
                } else {
                    CHECK_MPI(MPI_Ireduce(in, out, n, MPI_INT, ops[o], root, comm, &reqs[0]));
                    CHECK_MPI(MPI_Ireduce(din, dout, n, MPI_DOUBLE, ops[o], root, comm, &reqs[1]));
                    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
                }
                if (root >= 0 && root != rank) continue;
                for (int i = 0; i < n; ++i) {
                    long want = ops[o] == MPI_PROD ? 1 : 0;
                    for (int r = 0; r < size; ++r) {
                        const long v = contrib(r, i);
                        if (ops[o] == MPI_SUM) want += v;
                        if (ops[o] == MPI_MAX) want = r == 0 || v > want ? v : want;
                        if (ops[o] == MPI_MIN) want = r == 0 || v < want ? v : want;
                        if (ops[o] == MPI_PROD) want *= v;
                    }
                    double dwant = (double)want;
                    if (ops[o] == MPI_PROD)
                        for (int r = 0; r < size; ++r) dwant *= 0.5;
                    else
                        dwant *= 0.5;
                    CHECK(out[i] == (int)want);
                    CHECK(dout[i] == dwant);
                }
            }
        }
    }
    free(in);
    free(out);
    free(din);
    free(dout);
}

/* Gather and scatter of every count (per rank) to and from every root. */
static void gather_scatter(MPI_Comm comm, int rank, int size, int blocking) {
    enum { kPer = 16384 };
    unsigned char *mine = xmalloc(kPer), *all = xmalloc((size_t)kPer * (size_t)size);
    const int per[] = {1, 100, 2049, kPer};
    for (int root = 0; root < size; ++root) {
        for (int c = 0; c < 4; ++c) {
            const size_t n = (size_t)per[c];
            fill(mine, n, (unsigned)(rank * 7 + c));
            memset(all, 0, n * (size_t)size);
            MPI_Request req;
            if (blocking) {
                CHECK_MPI(MPI_Gather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, root, comm));
            } else {
                CHECK_MPI(MPI_Igather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, root, comm, &req));
                CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            }
            if (rank == root)
                for (int r = 0; r < size; ++r) CHECK(verify(all + n * (size_t)r, n, (unsigned)(r * 7 + c)) == -1);
            if (rank == root)
                for (int r = 0; r < size; ++r) fill(all + n * (size_t)r, n, (unsigned)(r * 11 + root + c));
            memset(mine, 0, n);
            if (blocking) {
                CHECK_MPI(MPI_Scatter(all, (int)n, MPI_BYTE, mine, (int)n, MPI_BYTE, root, comm));
            } else {
                CHECK_MPI(MPI_Iscatter(all, (int)n, MPI_BYTE, mine, (int)n, MPI_BYTE, root, comm, &req));
                CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            }
            CHECK(verify(mine, n, (unsigned)(rank * 11 + root + c)) == -1);
        }
    }
    free(mine);
    free(all);
}

static void barriers(MPI_Comm comm, int blocking) {
    for (int i = 0; i < 200; ++i) {
        if (blocking) {
            CHECK_MPI(MPI_Barrier(comm));
        } else {
            MPI_Request req;
            CHECK_MPI(MPI_Ibarrier(comm, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
    }
}

/* Operations coll portals4 leaves to the other components. */
static void others(MPI_Comm comm, int rank, int size) {
    int *all = xmalloc(sizeof(int) * (size_t)size), *back = xmalloc(sizeof(int) * (size_t)size);
    int mine = rank * 5 + 1;
    CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm));
    for (int r = 0; r < size; ++r) CHECK(all[r] == r * 5 + 1);
    for (int r = 0; r < size; ++r) all[r] = rank * 100 + r;
    CHECK_MPI(MPI_Alltoall(all, 1, MPI_INT, back, 1, MPI_INT, comm));
    for (int r = 0; r < size; ++r) CHECK(back[r] == r * 100 + rank);
    int prefix = 0;
    CHECK_MPI(MPI_Scan(&mine, &prefix, 1, MPI_INT, MPI_SUM, comm));
    CHECK(prefix == 5 * rank * (rank + 1) / 2 + rank + 1);
    free(all);
    free(back);
}

static void everything(MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int blocking = 1; blocking >= 0; --blocking) {
        barriers(comm, blocking);
        bcasts(comm, rank, size, blocking);
        reductions(comm, rank, size, blocking);
        gather_scatter(comm, rank, size, blocking);
    }
    others(comm, rank, size);
    barriers(comm, 1);
}

int main(int argc, char **argv) {
    check_program = "coll";
    CHECK_MPI(MPI_Init(&argc, &argv));
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    everything(MPI_COMM_WORLD);
    MPI_Comm dup, half;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    everything(dup);
    /* Reversed order, in halves (of 2 or more ranks when the job has 4). */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, size >= 4 ? wrank % 2 : 0, size - wrank, &half));
    everything(half);
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&dup));
    everything(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Finalize());
    if (wrank == 0) printf("coll: ok (%d ranks)\n", size);
    return 0;
}
