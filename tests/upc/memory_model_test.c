/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory-model stress (docs/UPC.md's case 56): every thread issues a random mix of relaxed and
 * strict puts, gets, block copies and memsets of 1 B to 3 KiB (bounced and waited puts, typed and
 * block entries) to regions it owns on every thread, and checks each read against a shadow copy: a
 * read sees this thread's last write of every byte (same-location RAW, and WAW between its own
 * writes of different sizes and kinds). After a barrier each owner checks, in its own memory, that
 * every region holds what its writer last wrote (WAW as the other threads see it), by checksum. */
#include <string.h>

#include "upc_test.h"

#define REGION 8192

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

int upc_main(int argc, char **argv, char **envp) {
    (void)envp;
    const int ops = argc > 1 ? atoi(argv[1]) : 4000;
    const unsigned T = (unsigned)THREADS, ME = (unsigned)MYTHREAD;
    /* shared [REGION] char regions[T * T * REGION]: region w*T + t lives on thread t, written by w */
    const upc_shared_ptr_t regions = upc_all_alloc(T * T, REGION);
    const upc_shared_ptr_t sums = upc_all_alloc(T * T, sizeof(uint64_t)); /* sums[w*T + t] on t */
    CHECK(!upc_pts_is_null(regions) && !upc_pts_is_null(sums));
    unsigned char *shadow = calloc(T, REGION), *buf = malloc(REGION);
    CHECK(shadow && buf);
    for (unsigned t = 0; t < T; t++) upc_memset(upc_pts_add(regions, ME * T + t, REGION, 1, T), 0, REGION);
    unsigned s = 777u + 31u * ME;
    for (int i = 0; i < ops; i++) {
        const unsigned t = rnd(&s) % T;
        const upc_shared_ptr_t base = upc_pts_add(regions, ME * T + t, REGION, 1, T);
        unsigned char *sh = shadow + (size_t)t * REGION;
        const unsigned kind = rnd(&s) % 10;
        size_t len = 1 + rnd(&s) % 3072;
        if (rnd(&s) % 2) len = (size_t)1 << (rnd(&s) % 4); /* 1, 2, 4, 8: the typed entries */
        const size_t off = rnd(&s) % (REGION - len);
        const upc_shared_ptr_t p = upc_pts_add(base, (int64_t)off, 1, 0, T);
        const int strict = rnd(&s) % 4 == 0;
        if (kind < 4) { /* write */
            for (size_t k = 0; k < len; k++) buf[k] = (unsigned char)rnd(&s);
            if (len == 4 && !strict)
                __putsi2(p, (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24);
            else if (len == 8 && strict) {
                uint64_t v;
                memcpy(&v, buf, 8);
                __putsdi2(p, v);
            } else if (strict)
                __putsblk3(p, buf, len);
            else
                upc_memput(p, buf, len);
            memcpy(sh + off, buf, len);
        } else if (kind < 8) { /* read */
            if (len == 2 && !strict) {
                const uint16_t v = __gethi2(p);
                memcpy(buf, &v, 2);
            } else if (len == 1 && strict) {
                buf[0] = __getsqi2(p);
            } else if (strict)
                __getsblk3(buf, p, len);
            else
                upc_memget(buf, p, len);
            if (memcmp(buf, sh + off, len) != 0) {
                fprintf(stderr, "thread %u: op %d: %s read of %zu bytes at %zu on thread %u is stale\n", ME, i,
                        strict ? "strict" : "relaxed", len, off, t);
                upc_global_exit(1);
            }
        } else if (kind == 8) { /* copy between two of my regions, possibly on two threads */
            const unsigned t2 = rnd(&s) % T;
            const size_t off2 = rnd(&s) % (REGION - len);
            const upc_shared_ptr_t q =
                upc_pts_add(upc_pts_add(regions, ME * T + t2, REGION, 1, T), (int64_t)off2, 1, 0, T);
            if (t2 == t && (off2 < off + len && off < off2 + len)) continue; /* memcpy's overlap is undefined */
            if (strict)
                __copysblk3(q, p, len);
            else
                upc_memcpy(q, p, len);
            memcpy(shadow + (size_t)t2 * REGION + off2, sh + off, len);
        } else { /* memset */
            const int c = (int)(rnd(&s) & 0xff);
            upc_memset(p, c, len);
            memset(sh + off, c, len);
        }
        if (i % 500 == 0) __upc_fence();
    }
    for (unsigned t = 0; t < T; t++)
        __putdi2(upc_pts_add(sums, ME * T + t, sizeof(uint64_t), 1, T), fnv(shadow + (size_t)t * REGION, REGION));
    UPC_BARRIER();
    /* The owner's view, in its own memory: every region as its writer last wrote it. */
    for (unsigned w = 0; w < T; w++) {
        const upc_shared_ptr_t r = upc_pts_add(regions, w * T + ME, REGION, 1, T);
        const unsigned char *local = __cvtaddr(r);
        CHECK(local != NULL);
        CHECK(fnv(local, REGION) == __getdi2(upc_pts_add(sums, w * T + ME, sizeof(uint64_t), 1, T)));
    }
    UPC_BARRIER();
    if (ME == 0) printf("memory model: %d random accesses per thread on %u threads, no stale read\n", ops, T);
    free(shadow);
    free(buf);
    return 0;
}
