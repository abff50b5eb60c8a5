/* SPDX-License-Identifier: BSD-3-Clause */
/* One-sided communication (MPI-3 RMA) over whichever osc component mpirun selected
 * (tests/clients/ompi_run.sh chooses osc portals4): windows made by MPI_Win_create,
 * MPI_Win_allocate and MPI_Win_create_dynamic; put, get, accumulate, get_accumulate,
 * fetch_and_op, compare_and_swap and the request-based forms; fence, post/start/complete/wait,
 * lock/unlock (exclusive and shared), lock_all with flush; transfers from 1 byte to 4 MiB. Every
 * result is checked. Prints "rma: ok" on rank 0. Not used: pair types (MPI_2INT, MINLOC), which
 * osc portals4 has no mapping for, and shared-memory windows, which it does not provide
 * (docs/CLIENTS.md). */
#include "mpi_check.h"

#include <string.h>

static int rank, size;

enum { kSlots = 64, kBig = (4 << 20) + 3 };

/* Fence epochs: every rank puts into slot `rank` of every window, then gets them all back. */
static void fence(MPI_Win win, long *base) {
    for (int i = 0; i < kSlots; ++i) base[i] = -1;
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int p = 0; p < size; ++p) {
        long v = rank * 100 + p;
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, p, rank, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_fence(0, win)); /* v is reused */
    }
    for (int s = 0; s < size; ++s) CHECK(base[s] == s * 100 + rank);
    long got[kSlots];
    for (int p = 0; p < size; ++p) {
        CHECK_MPI(MPI_Get(got, size, MPI_LONG, p, 0, size, MPI_LONG, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int s = 0; s < size; ++s) CHECK(got[s] == s * 100 + p);
    }
    /* Accumulate SUM and MAX from every rank into rank 0's slots 32, 33; REPLACE into 34+rank. */
    if (rank == 0) base[32] = 0, base[33] = -1;
    CHECK_MPI(MPI_Win_fence(0, win));
    long one = rank + 1, mine = rank * 7;
    CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG, 0, 32, 1, MPI_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&mine, 1, MPI_LONG, 0, 33, 1, MPI_LONG, MPI_MAX, win));
    CHECK_MPI(MPI_Accumulate(&mine, 1, MPI_LONG, 0, 34 + rank, 1, MPI_LONG, MPI_REPLACE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0) {
        CHECK(base[32] == (long)size * (size + 1) / 2);
        CHECK(base[33] == (size - 1) * 7L);
        for (int p = 0; p < size; ++p) CHECK(base[34 + p] == p * 7L);
    }
    CHECK_MPI(MPI_Win_fence(0, win));
}

/* Passive target: a shared counter at rank 0 incremented by fetch_and_op under exclusive and
 * shared locks (the fetched values are all distinct), compare_and_swap taking turns, and
 * get_accumulate. Exclusive and shared epochs on one target never overlap between ranks (a
 * barrier separates them): Open MPI 4.1's osc portals4 grants a shared lock while an exclusive
 * one is held and releases the exclusive one by writing 0 over the count, so the shared
 * holder's release then leaves the lock word at -1, which the next MPI_Win_lock reads as
 * LOCK_ILLEGAL (MPI_ERR_RMA_SYNC): its defect, docs/CLIENTS.md. */
static void passive(MPI_Win win, long *base) {
    enum { kIncs = 50 };
    if (rank == 0) base[40] = 0, base[41] = -1, base[42] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long fetched[2 * kIncs], inc = 1;
    for (int i = 0; i < 2 * kIncs; ++i) {
        CHECK_MPI(MPI_Win_lock(i % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Fetch_and_op(&inc, &fetched[i], MPI_LONG, 0, 40, MPI_SUM, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every rank's epoch of this kind is over */
    }
    long *all = xmalloc(sizeof(long) * 2 * kIncs * (size_t)size);
    CHECK_MPI(MPI_Allgather(fetched, 2 * kIncs, MPI_LONG, all, 2 * kIncs, MPI_LONG, MPI_COMM_WORLD));
    const long total = 2L * kIncs * size;
    char *seen = xmalloc((size_t)total);
    memset(seen, 0, (size_t)total);
    for (long i = 0; i < total; ++i) {
        CHECK(all[i] >= 0 && all[i] < total);
        CHECK(!seen[all[i]]);
        seen[all[i]] = 1;
    }
    free(seen);
    free(all);
    /* compare_and_swap: rank r waits until slot 41 holds r-1, then swaps in r. */
    long expect = rank - 1, desired = rank, old = -2;
    do {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_MPI(MPI_Compare_and_swap(&desired, &expect, &old, MPI_LONG, 0, 41, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    } while (old != expect);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the shared epochs above end before the exclusive ones */
    /* get_accumulate SUM, then NO_OP reads. */
    long add = 1, before = -1;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    CHECK_MPI(MPI_Get_accumulate(&add, 1, MPI_LONG, &before, 1, MPI_LONG, 0, 42, 1, MPI_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK(before >= 0 && before < size);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long now = -1, counter = -1, turn = -1;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    CHECK_MPI(MPI_Get_accumulate(NULL, 0, MPI_LONG, &now, 1, MPI_LONG, 0, 42, 1, MPI_LONG, MPI_NO_OP, win));
    CHECK_MPI(MPI_Get(&counter, 1, MPI_LONG, 0, 40, 1, MPI_LONG, win));
    CHECK_MPI(MPI_Get(&turn, 1, MPI_LONG, 0, 41, 1, MPI_LONG, win));
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK(now == size);
    CHECK(counter == total);
    CHECK(turn == size - 1);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Large transfers in a lock_all epoch, request-based, completed by flush and by MPI_Wait:
 * rank r writes a pattern into rank r+1's big window and reads rank r-1's back. */
static void bulk(MPI_Win win, unsigned char *base) {
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    const size_t sizes[] = {1, 2048, 2049, 65536, 1 << 20, kBig};
    unsigned char *src = xmalloc(kBig), *dst = xmalloc(kBig);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const size_t n = sizes[k];
        fill(src, n, (unsigned)(rank * 31 + k));
        CHECK_MPI(MPI_Win_lock_all(0, win));
        MPI_Request req;
        CHECK_MPI(MPI_Rput(src, (int)n, MPI_BYTE, to, 0, (int)n, MPI_BYTE, win, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Win_flush(to, win));
        CHECK_MPI(MPI_Win_unlock_all(win));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(verify(base, n, (unsigned)(from * 31 + k)) == -1);
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, from, 0, win));
        memset(dst, 0, n);
        CHECK_MPI(MPI_Rget(dst, (int)n, MPI_BYTE, from, 0, (int)n, MPI_BYTE, win, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Win_unlock(from, win));
        CHECK(verify(dst, n, (unsigned)(((from + size - 1) % size) * 31 + k)) == -1);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    free(src);
    free(dst);
}

/* Generalized active target: each rank exposes its window to its left neighbour and accesses
 * its right neighbour's. */
static void pscw(MPI_Win win, long *base) {
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Group world, to_group, from_group;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, 1, &to, &to_group));
    CHECK_MPI(MPI_Group_incl(world, 1, &from, &from_group));
    base[50] = -1;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 0; round < 10; ++round) {
        long v = rank * 1000 + round;
        CHECK_MPI(MPI_Win_post(from_group, 0, win));
        CHECK_MPI(MPI_Win_start(to_group, 0, win));
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, to, 50, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_complete(win));
        CHECK_MPI(MPI_Win_wait(win));
        CHECK(base[50] == from * 1000 + round);
    }
    CHECK_MPI(MPI_Group_free(&to_group));
    CHECK_MPI(MPI_Group_free(&from_group));
    CHECK_MPI(MPI_Group_free(&world));
}

/* A dynamic window: each rank attaches a buffer and publishes its address. */
static void dynamic(void) {
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    long *buf = xmalloc(sizeof(long) * kSlots);
    for (int i = 0; i < kSlots; ++i) buf[i] = -1;
    CHECK_MPI(MPI_Win_attach(win, buf, sizeof(long) * kSlots));
    MPI_Aint mine, *addrs = xmalloc(sizeof(MPI_Aint) * (size_t)size);
    CHECK_MPI(MPI_Get_address(buf, &mine));
    CHECK_MPI(MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    long v = 4242 + rank;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, to, 0, win));
    CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, to, addrs[to] + (MPI_Aint)(sizeof(long) * 3), 1, MPI_LONG, win));
    CHECK_MPI(MPI_Win_unlock(to, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(buf[3] == 4242 + from);
    CHECK_MPI(MPI_Win_detach(win, buf));
    CHECK_MPI(MPI_Win_free(&win));
    free(addrs);
    free(buf);
}

int main(int argc, char **argv) {
    check_program = "rma";
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && size <= 30);

    long *created = xmalloc(sizeof(long) * kSlots);
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(created, sizeof(long) * kSlots, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    fence(win, created);
    passive(win, created);
    pscw(win, created);
    CHECK_MPI(MPI_Win_free(&win));

    long *allocated = NULL;
    CHECK_MPI(MPI_Win_allocate(sizeof(long) * kSlots, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &allocated, &win));
    fence(win, allocated);
    passive(win, allocated);
    CHECK_MPI(MPI_Win_free(&win));

    unsigned char *big = NULL;
    CHECK_MPI(MPI_Win_allocate(kBig, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &big, &win));
    bulk(win, big);
    CHECK_MPI(MPI_Win_free(&win));

    dynamic();
    free(created);
    CHECK_MPI(MPI_Finalize());
    if (rank == 0) printf("rma: ok (%d ranks)\n", size);
    return 0;
}
