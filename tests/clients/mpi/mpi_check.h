/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the MPI programs of tests/clients: checks that end the job with the place of the
 * failure, and the byte pattern the data checks use. */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *check_program = "mpi";

static void check_failed(const char *file, int line, const char *what) {
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "%s: rank %d: %s:%d: check failed: %s\n", check_program, rank, file, line, what);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) check_failed(__FILE__, __LINE__, #cond);                                                          \
    } while (0)
#define CHECK_MPI(call) CHECK((call) == MPI_SUCCESS)

/* Byte i of the pattern for (seed): distinct per sender, message and offset. */
static inline unsigned char pattern(unsigned seed, size_t i) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0xC2B2AE3D27D4EB4Full);
    x ^= x >> 29;
    return (unsigned char)(x ^ (x >> 17));
}
static inline void fill(unsigned char *buf, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i) buf[i] = pattern(seed, i);
}
/* Index of the first byte that differs from the pattern, or -1. */
static inline long verify(const unsigned char *buf, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i)
        if (buf[i] != pattern(seed, i)) return (long)i;
    return -1;
}

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    CHECK(p != NULL);
    return p;
}

#endif
