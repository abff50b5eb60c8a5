/* SPDX-License-Identifier: BSD-3-Clause */
/* gasnet_bench: GASNet on Portico — AM round trips, put/get latency and bandwidth — against raw
 * baselines measured in the same run: a shared-memory flag ping-pong between the same two
 * processes (latency) and memcpy of the same size (bandwidth).
 *
 *   portico-run -n 2 gasnet_bench [TEST|all] [--iters N] [--reps R] [--short] [--json]
 *
 * TEST: am_short_rt, am_medium_rt, am_long_rt, put_lat, get_lat, put_bw, get_bw (default: all).
 * Ranks 0 and 1 take part (rank 0 initiates). Every result is one JSON object per line on stdout:
 *   {"test":..., "transport":..., "procs":..., "size":..., "value":..., "unit":..., "baseline":...,
 *    "ratio":..., "better":..., "min":..., "max":..., "baseline_min":..., "baseline_max":...,
 *    "baseline_kind":..., "reps":..., "iters":...}
 * value is the median over the repetitions of each repetition's mean; the baseline is measured
 * right before each repetition and summarised the same way; ratio = value / baseline. Round
 * trips (unit us): AM request + reply handled; put_lat and get_lat are blocking gasnet_put /
 * gasnet_get (remote completion, i.e. a round trip each). Bandwidth (MB/s, 10^6 bytes): a window
 * of non-blocking bulk puts or gets of one size, synchronized once. Without --json a table goes
 * to stdout instead. */
#define _GNU_SOURCE
#include <gasnet.h>
#include <gasnet_tools.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define H_PING 200
#define H_PONG 201
#define H_MPING 202
#define H_MPONG 203
#define H_LPING 204
#define H_LPONG 205
#define MAX_REPS 1000

static volatile int pongs = 0;
static gasnet_seginfo_t seg[2];
static gasnet_node_t me;
static int json = 0, reps = 7, short_mode = 0;
static long iters_opt = 0;
static const char *transport = "shm";

static void ping(gasnet_token_t t) { gasnet_AMReplyShort0(t, H_PONG); }
static void pong(gasnet_token_t t) {
    (void)t;
    pongs++;
}
static void mping(gasnet_token_t t, void *buf, size_t n) { gasnet_AMReplyMedium0(t, H_MPONG, buf, n); }
static void mpong(gasnet_token_t t, void *buf, size_t n) {
    (void)t;
    (void)buf;
    (void)n;
    pongs++;
}
static void lping(gasnet_token_t t, void *buf, size_t n) {
    gasnet_node_t src;
    gasnet_AMGetMsgSource(t, &src);
    gasnet_AMReplyLong0(t, H_LPONG, buf, n, seg[src].addr);
}
static void lpong(gasnet_token_t t, void *buf, size_t n) {
    (void)t;
    (void)buf;
    (void)n;
    pongs++;
}

/* ---- the raw shared-memory flag ping-pong (the latency baseline) ------------------------------ */
struct flags {
    _Alignas(128) volatile uint64_t ping;
    _Alignas(128) volatile uint64_t pong;
};
static struct flags *shm;
static uint64_t flag_seq = 0;

static void barrier(void) {
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
}

static void setup_flags(void) {
    /* Rank 0 creates a named region and tells rank 1 its name (through rank 1's segment). */
    char name[64];
    if (me >= 2) { /* only ranks 0 and 1 take part; the others keep the barriers company */
        barrier();
        barrier();
        barrier();
        return;
    }
    uint64_t pid = me == 0 ? (uint64_t)getpid() : 0;
    if (me == 0) gasnet_put_val(1, seg[1].addr, pid, sizeof pid);
    barrier();
    if (me == 1) memcpy(&pid, seg[1].addr, sizeof pid);
    snprintf(name, sizeof name, "/gasnet_bench.%llu", (unsigned long long)pid);
    int fd = -1;
    if (me == 0) {
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, sizeof(struct flags)) != 0) gasnett_fatalerror("shm_open %s failed", name);
    }
    barrier();
    if (me == 1) {
        fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0) gasnett_fatalerror("shm_open %s failed", name);
    }
    shm = mmap(NULL, sizeof(struct flags), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shm == MAP_FAILED) gasnett_fatalerror("mmap failed");
    close(fd);
    barrier();
    if (me == 0) shm_unlink(name);
}

/* Round trip in microseconds (rank 0's measurement; rank 1 returns 0). */
static double flag_pingpong(long iters) {
    if (me >= 2) return 0;
    const uint64_t base = flag_seq;
    flag_seq += (uint64_t)iters;
    if (me == 0) {
        const gasnett_tick_t t0 = gasnett_ticks_now();
        for (long i = 1; i <= iters; i++) {
            __atomic_store_n(&shm->ping, base + (uint64_t)i, __ATOMIC_RELEASE);
            while (__atomic_load_n(&shm->pong, __ATOMIC_ACQUIRE) != base + (uint64_t)i) gasnett_spinloop_hint();
        }
        return (double)gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1000.0 / (double)iters;
    }
    for (long i = 1; i <= iters; i++) {
        while (__atomic_load_n(&shm->ping, __ATOMIC_ACQUIRE) != base + (uint64_t)i) gasnett_spinloop_hint();
        __atomic_store_n(&shm->pong, base + (uint64_t)i, __ATOMIC_RELEASE);
    }
    return 0;
}

/* ---- the measured operations (rank 0; rank 1 serves) ------------------------------------------- */

static double am_rt(int kind, size_t size, long iters, void *buf) {
    if (me != 0) return 0;
    const int start = pongs;
    const gasnett_tick_t t0 = gasnett_ticks_now();
    for (long i = 0; i < iters; i++) {
        if (kind == 0)
            gasnet_AMRequestShort0(1, H_PING);
        else if (kind == 1)
            gasnet_AMRequestMedium0(1, H_MPING, buf, size);
        else
            gasnet_AMRequestLong0(1, H_LPING, buf, size, seg[1].addr);
        GASNET_BLOCKUNTIL(pongs == start + i + 1);
    }
    return (double)gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1000.0 / (double)iters;
}

static double putget_lat(int get, size_t size, long iters, void *buf) {
    if (me != 0) return 0;
    const gasnett_tick_t t0 = gasnett_ticks_now();
    for (long i = 0; i < iters; i++) {
        if (get)
            gasnet_get(buf, 1, seg[1].addr, size);
        else
            gasnet_put(1, seg[1].addr, buf, size);
    }
    return (double)gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1000.0 / (double)iters;
}

/* MB/s of a window of non-blocking bulk operations, synchronized once. */
static double putget_bw(int get, size_t size, long iters, void *buf) {
    if (me != 0) return 0;
    const size_t span = seg[1].size / size; /* distinct target slots, as large as the segment allows */
    const gasnett_tick_t t0 = gasnett_ticks_now();
    for (long i = 0; i < iters; i++) {
        char *remote = (char *)seg[1].addr + ((size_t)i % span) * size;
        if (get)
            gasnet_get_nbi_bulk(buf, 1, remote, size);
        else
            gasnet_put_nbi_bulk(1, remote, buf, size);
    }
    gasnet_wait_syncnbi_all();
    const double us = (double)gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1000.0;
    return (double)size * (double)iters / us;
}

static double memcpy_bw(size_t size, long iters, char *a, char *b) {
    if (me != 0) return 0;
    const gasnett_tick_t t0 = gasnett_ticks_now();
    for (long i = 0; i < iters; i++) {
        memcpy(b, a, size);
        gasnett_compiler_fence();
    }
    return (double)size * (double)iters / ((double)gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1000.0);
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(const char *test, size_t size, double *val, double *base, int n, const char *unit,
                   const char *better, const char *base_kind, long iters) {
    if (me != 0) return;
    const double v = median(val, n), b = median(base, n);
    if (json)
        printf("{\"test\":\"%s\",\"transport\":\"%s\",\"procs\":%u,\"size\":%zu,\"value\":%.6g,\"unit\":\"%s\","
               "\"baseline\":%.6g,\"ratio\":%.6g,\"better\":\"%s\",\"min\":%.6g,\"max\":%.6g,"
               "\"baseline_min\":%.6g,\"baseline_max\":%.6g,\"baseline_kind\":\"%s\",\"reps\":%d,\"iters\":%ld}\n",
               test, transport, gasnet_nodes(), size, v, unit, b, b > 0 ? v / b : 0.0, better, val[0], val[n - 1],
               base[0], base[n - 1], base_kind, n, iters);
    else
        printf("%-14s %-4s %9zu B  %10.3f %-5s [%.3f .. %.3f]  baseline %s %.3f  ratio %.2f\n", test, transport, size,
               v, unit, val[0], val[n - 1], base_kind, b, b > 0 ? v / b : 0.0);
    fflush(stdout);
}

typedef double (*op_fn)(int, size_t, long, void *);
static double op_am(int kind, size_t size, long iters, void *buf) { return am_rt(kind, size, iters, buf); }
static double op_lat(int get, size_t size, long iters, void *buf) { return putget_lat(get, size, iters, buf); }
static double op_bw(int get, size_t size, long iters, void *buf) { return putget_bw(get, size, iters, buf); }

/* One latency test: per repetition, the flag ping-pong then the operation. */
static void run_latency(const char *test, op_fn fn, int arg, size_t size, long iters, void *buf) {
    double val[MAX_REPS], base[MAX_REPS];
    const long flag_iters = iters * 4;
    fn(arg, size, iters / 10 + 1, buf); /* warm-up */
    for (int r = 0; r < reps; r++) {
        barrier();
        base[r] = flag_pingpong(flag_iters);
        barrier();
        val[r] = fn(arg, size, iters, buf);
    }
    barrier();
    report(test, size, val, base, reps, "us", "lower", "shm_flag_pingpong_rt", iters);
}

static void run_bandwidth(const char *test, int get, size_t size, long iters, char *buf, char *tmp) {
    double val[MAX_REPS], base[MAX_REPS];
    putget_bw(get, size, iters / 4 + 1, buf);
    for (int r = 0; r < reps; r++) {
        barrier();
        base[r] = memcpy_bw(size, iters, buf, tmp);
        barrier();
        val[r] = op_bw(get, size, iters, buf);
    }
    barrier();
    report(test, size, val, base, reps, "MB/s", "higher", "memcpy_same_size", iters);
}

static long lat_iters(void) { return iters_opt ? iters_opt : short_mode ? 1000 : 20000; }
static long bw_iters(size_t size) {
    if (iters_opt) return iters_opt;
    const long budget = short_mode ? (16l << 20) : (512l << 20); /* bytes per repetition */
    long n = budget / (long)size;
    return n < 8 ? 8 : n > 100000 ? 100000 : n;
}

static int wants(const char *which, const char *test) { return !strcmp(which, "all") || !strcmp(which, test); }

int main(int argc, char **argv) {
    if (gasnet_init(&argc, &argv) != GASNET_OK) return 1;
    const char *which = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--short")) {
            short_mode = 1;
            reps = 3;
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters_opt = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (argv[i][0] != '-')
            which = argv[i];
        else {
            fprintf(stderr,
                    "usage: portico-run -n 2 gasnet_bench [TEST|all] [--iters N] [--reps R] [--short] [--json]\n");
            gasnet_exit(2);
        }
    }
    if (reps < 1 || reps > MAX_REPS) reps = 7;
    const char *t = getenv("PORTICO_TRANSPORT");
    if (t && !strcmp(t, "tcp")) transport = "tcp";
    gasnet_handlerentry_t tab[] = {{H_PING, (void (*)())ping},   {H_PONG, (void (*)())pong},
                                   {H_MPING, (void (*)())mping}, {H_MPONG, (void (*)())mpong},
                                   {H_LPING, (void (*)())lping}, {H_LPONG, (void (*)())lpong}};
    const uintptr_t segsize = 64u << 20;
    if (gasnet_attach(tab, 6, segsize, 0) != GASNET_OK) gasnet_exit(1);
    me = gasnet_mynode();
    if (gasnet_nodes() < 2) {
        fprintf(stderr, "gasnet_bench needs at least 2 processes\n");
        gasnet_exit(1);
    }
    gasnet_getSegmentInfo(seg, 2);
    setup_flags();
    const size_t maxbuf = 4u << 20;
    char *buf = malloc(maxbuf), *tmp = malloc(maxbuf);
    memset(buf, 1, maxbuf);
    memset(tmp, 2, maxbuf);

    {
        if (wants(which, "am_short_rt")) run_latency("am_short_rt", op_am, 0, 0, lat_iters(), buf);
        const size_t medium[] = {64, 1024, 8192, gasnet_AMMaxMedium()};
        if (wants(which, "am_medium_rt"))
            for (int i = 0; i < 4; i++) run_latency("am_medium_rt", op_am, 1, medium[i], lat_iters(), buf);
        const size_t longs[] = {64, 8192, 65536, 1u << 20};
        if (wants(which, "am_long_rt"))
            for (int i = 0; i < 4; i++)
                run_latency("am_long_rt", op_am, 2, longs[i], lat_iters() / (i == 3 ? 20 : 1), buf);
        const size_t lat[] = {8, 64, 1024, 8192, 65536};
        if (wants(which, "put_lat"))
            for (int i = 0; i < 5; i++) run_latency("put_lat", op_lat, 0, lat[i], lat_iters(), buf);
        if (wants(which, "get_lat"))
            for (int i = 0; i < 5; i++) run_latency("get_lat", op_lat, 1, lat[i], lat_iters(), buf);
        const size_t bw[] = {4096, 65536, 1u << 20, 4u << 20};
        if (wants(which, "put_bw"))
            for (int i = 0; i < 4; i++) run_bandwidth("put_bw", 0, bw[i], bw_iters(bw[i]), buf, tmp);
        if (wants(which, "get_bw"))
            for (int i = 0; i < 4; i++) run_bandwidth("get_bw", 1, bw[i], bw_iters(bw[i]), buf, tmp);
    }
    barrier();
    gasnet_exit(0);
}
