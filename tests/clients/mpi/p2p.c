/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point over whichever PML/MTL/BTL mpirun selected (tests/clients/ompi_run.sh chooses
 * the Portals 4 ones): expected and unexpected messages from 0 bytes to 4 MiB (across the eager
 * limit, the 2 KiB short-message and overflow-buffer sizes, and Open MPI's rendezvous), probes,
 * matched probes, synchronous sends, ordering of many small messages, wildcards, a derived
 * datatype, a cancelled receive, and every rank exchanging with every other at once. Data,
 * counts, sources and tags are checked. Prints "p2p: ok" on rank 0.
 * Argument --btl-portals4: leave out what Open MPI 4.1.4's btl portals4 loses (its defects,
 * docs/CLIENTS.md): a packed (non-contiguous) send over its 32 KiB eager limit, which it puts with
 * match bits only its zero-length overflow entry matches, events off, so the data is dropped; and
 * 2000 sends posted at once, whose SEND and ACK events (up to its 8192 pending operations, two
 * events each) overflow its 4096-entry event queue: it reports "Flow control situation without
 * recovery (EQ_DROPPED)" and the lost events' messages never complete. With it the datatype is
 * sent at 16 KiB only and the ordering test posts 1000 sends. */
#include "mpi_check.h"

#include <string.h>

static int rank, size;

static const size_t sizes[] = {0, 1, 8, 2047, 2048, 2049, 4096, 12288, 65536, 65537, 1 << 20, (4 << 20) + 3};
enum { kSizes = sizeof sizes / sizeof sizes[0], kMax = (4 << 20) + 3 };

static unsigned seed_of(int from, int to, int round) { return (unsigned)(from * 1000003 + to * 1009 + round); }

static void check_status(const MPI_Status *st, int source, int tag, size_t bytes) {
    int count = -1;
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK(st->MPI_SOURCE == source);
    CHECK(st->MPI_TAG == tag);
    CHECK(count == (int)bytes);
}

/* Ring: rank r sends to r+1. expected = the receive is posted before the send starts. */
static void ring(int expected, unsigned char *sbuf, unsigned char *rbuf) {
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int i = 0; i < kSizes; ++i) {
        const size_t n = sizes[i];
        const int tag = 100 + i;
        fill(sbuf, n, seed_of(rank, to, i));
        memset(rbuf, 0, n);
        MPI_Request rreq, sreq;
        MPI_Status st;
        if (expected) {
            CHECK_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, &rreq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&rreq, &st));
        } else {
            CHECK_MPI(MPI_Isend(sbuf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &sreq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the message is out before the receive */
            CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        }
        check_status(&st, from, tag, n);
        CHECK(verify(rbuf, n, seed_of(from, rank, i)) == -1);
    }
}

/* Unexpected messages found by MPI_Probe/MPI_Iprobe (wildcards) and MPI_Mprobe, received into a
 * buffer sized from the probe's count. */
static void probes(unsigned char *sbuf) {
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int i = 0; i < kSizes; ++i) {
        const size_t n = sizes[i];
        fill(sbuf, n, seed_of(rank, to, 50 + i));
        MPI_Request sreq;
        CHECK_MPI(MPI_Isend(sbuf, (int)n, MPI_BYTE, to, 200 + i, MPI_COMM_WORLD, &sreq));
        MPI_Status st;
        int count = -1;
        if (i % 3 == 0) {
            CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        } else if (i % 3 == 1) {
            int flag = 0;
            while (!flag) CHECK_MPI(MPI_Iprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        }
        unsigned char *rbuf;
        if (i % 3 == 2) {
            MPI_Message msg;
            CHECK_MPI(MPI_Mprobe(from, 200 + i, MPI_COMM_WORLD, &msg, &st));
            check_status(&st, from, 200 + i, n);
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            rbuf = xmalloc((size_t)count);
            CHECK_MPI(MPI_Mrecv(rbuf, count, MPI_BYTE, &msg, &st));
        } else {
            check_status(&st, from, 200 + i, n);
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            rbuf = xmalloc((size_t)count);
            CHECK_MPI(MPI_Recv(rbuf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        }
        check_status(&st, from, 200 + i, n);
        CHECK(verify(rbuf, n, seed_of(from, rank, 50 + i)) == -1);
        free(rbuf);
        CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    }
}

/* MPI_Ssend completes only once the receive matched: the receiver posts late. */
static void synchronous(unsigned char *sbuf, unsigned char *rbuf) {
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (size_t n = 0; n <= 65536; n = n ? n * 16 : 1) {
        fill(sbuf, n, seed_of(rank, to, 7));
        MPI_Request sreq, rreq;
        CHECK_MPI(MPI_Issend(sbuf, (int)n, MPI_BYTE, to, 300, MPI_COMM_WORLD, &sreq));
        CHECK_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, from, 300, MPI_COMM_WORLD, &rreq));
        MPI_Status st;
        CHECK_MPI(MPI_Wait(&rreq, &st));
        CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        check_status(&st, from, 300, n);
        CHECK(verify(rbuf, n, seed_of(from, rank, 7)) == -1);
    }
}

/* Messages between one pair do not overtake each other: `msgs` (at most 2000) sends of growing size
 * received with MPI_ANY_TAG arrive in the order sent, most of them unexpected. */
static void ordering(int msgs) {
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    static int out[2000][64], in[64];
    static MPI_Request reqs[2000];
    for (int m = 0; m < msgs; ++m) {
        const int len = 1 + m % 64;
        for (int k = 0; k < len; ++k) out[m][k] = rank * 1000000 + m * 64 + k;
        CHECK_MPI(MPI_Isend(out[m], len, MPI_INT, to, m % 7, MPI_COMM_WORLD, &reqs[m]));
    }
    for (int m = 0; m < msgs; ++m) {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(in, 64, MPI_INT, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == 1 + m % 64);
        CHECK(st.MPI_TAG == m % 7);
        for (int k = 0; k < count; ++k) CHECK(in[k] == from * 1000000 + m * 64 + k);
    }
    CHECK_MPI(MPI_Waitall(msgs, reqs, MPI_STATUSES_IGNORE));
}

/* A strided vector of `count` doubles (at most 4096), sent and received with MPI_Sendrecv_replace
 * around the ring. */
static void datatype(int count) {
    enum { kStride = 3 };
    static double buf[4096 * kStride];
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int i = 0; i < count * kStride; ++i) buf[i] = (i % kStride == 0) ? rank * 1e6 + i : -1.0;
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(count, 1, kStride, MPI_DOUBLE, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    CHECK_MPI(MPI_Sendrecv_replace(buf, 1, vec, to, 400, from, 400, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < count * kStride; ++i) CHECK(buf[i] == ((i % kStride == 0) ? from * 1e6 + i : -1.0));
    CHECK_MPI(MPI_Type_free(&vec));
}

/* A receive that nothing matches is cancelled. */
static void cancel(void) {
    int x;
    MPI_Request req;
    MPI_Status st;
    CHECK_MPI(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    int cancelled = 0;
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled);
}

/* Every rank sends 64 KiB + 1 to every other rank at once (Isend/Irecv, any completion order). */
static void all_pairs(unsigned char *sbuf, unsigned char *rbuf) {
    const size_t n = 65537;
    MPI_Request *reqs = xmalloc(sizeof(MPI_Request) * 2 * (size_t)size);
    int k = 0;
    for (int p = 0; p < size; ++p) {
        if (p == rank) continue;
        CHECK_MPI(MPI_Irecv(rbuf + (size_t)p * n, (int)n, MPI_BYTE, p, 500, MPI_COMM_WORLD, &reqs[k++]));
    }
    for (int p = 0; p < size; ++p) {
        if (p == rank) continue;
        fill(sbuf + (size_t)p * n, n, seed_of(rank, p, 9));
        CHECK_MPI(MPI_Isend(sbuf + (size_t)p * n, (int)n, MPI_BYTE, p, 500, MPI_COMM_WORLD, &reqs[k++]));
    }
    CHECK_MPI(MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE));
    for (int p = 0; p < size; ++p)
        if (p != rank) CHECK(verify(rbuf + (size_t)p * n, n, seed_of(p, rank, 9)) == -1);
    free(reqs);
}

int main(int argc, char **argv) {
    check_program = "p2p";
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    const size_t bytes = (size_t)kMax > 65537 * (size_t)size ? (size_t)kMax : 65537 * (size_t)size;
    unsigned char *sbuf = xmalloc(bytes), *rbuf = xmalloc(bytes);
    ring(1, sbuf, rbuf);
    ring(0, sbuf, rbuf);
    probes(sbuf);
    synchronous(sbuf, rbuf);
    const int btl_portals4 = argc > 1 && strcmp(argv[1], "--btl-portals4") == 0;
    ordering(btl_portals4 ? 1000 : 2000);
    datatype(2048);                    /* 16 KiB packed */
    if (!btl_portals4) datatype(4096); /* 32 KiB packed */
    cancel();
    all_pairs(sbuf, rbuf);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(sbuf);
    free(rbuf);
    CHECK_MPI(MPI_Finalize());
    if (rank == 0) printf("p2p: ok (%d ranks)\n", size);
    return 0;
}
