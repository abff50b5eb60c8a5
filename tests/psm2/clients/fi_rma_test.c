/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_rma_test.c — libfabric's psm2 provider over Portico's libpsm2, the way a libfabric program
 * uses it for one-sided operations: RDM endpoints, an address vector, a registered memory region,
 * fi_write, fi_read and fi_atomic (the provider builds RMA and atomics from PSM2 active messages
 * and tagged messages), fi_send for the "done" signal. Two processes under portico-run (the
 * endpoint names, keys and addresses travel over portico_runtime_allgather), inside fake_hfi.sh.
 *
 * Rank 0 writes every size of a list into rank 1's region (each at its own offset, pattern
 * seeded by the size), reads each back and compares byte for byte, adds to a counter with
 * fi_atomic(FI_SUM) 100 times, fetches it with fi_fetch_atomic, then sends "done"; rank 1 keeps
 * its completion queue polled (the provider's progress is manual) until "done" arrives, and then
 * checks its region itself.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <portico_runtime.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, "fi_rma_test[rank %d] %s:%d: ", g_rank, __FILE__, __LINE__);                                   \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        portico_runtime_abort(1, "fi_rma_test failed");                                                                \
        exit(1);                                                                                                       \
    } while (0)
#define FI(call)                                                                                                       \
    do {                                                                                                               \
        const int rc_ = (int)(call);                                                                                   \
        if (rc_ < 0) FAIL("%s: %s", #call, fi_strerror(-rc_));                                                         \
    } while (0)

static int g_rank;
static struct fid_cq *g_cq;

#define REGION (8u << 20)
static const size_t kSizes[] = {1, 8, 100, 4096, 16384, 65536, 1u << 20, 3u << 20};
#define NSIZES (sizeof kSizes / sizeof kSizes[0])

struct peer_info {
    char name[64];
    size_t name_len;
    uint64_t key;
    uint64_t addr; /* where the region starts in the target's addressing */
};

static uint8_t pattern_byte(size_t seed, size_t i) { return (uint8_t)(seed * 131u + i * 7u + (i >> 11)); }

/* Waits for one completion of the operation whose context is ctx, polling (manual progress). */
static void wait_for(void *ctx) {
    for (;;) {
        struct fi_cq_entry e;
        const ssize_t n = fi_cq_read(g_cq, &e, 1);
        if (n == 1) {
            if (e.op_context == ctx) return;
            continue;
        }
        if (n == -FI_EAGAIN) continue;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof err);
            fi_cq_readerr(g_cq, &err, 0);
            FAIL("completion error: %s (%d)", fi_strerror(err.err), err.prov_errno);
        }
        FAIL("fi_cq_read: %s", fi_strerror((int)-n));
    }
}

int main(void) {
    int size = 0;
    if (portico_runtime_rank(&g_rank) != 0 || portico_runtime_size(&size) != 0 || size != 2) {
        fprintf(stderr, "fi_rma_test: run me as 2 processes under portico-run\n");
        return 1;
    }
    struct fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
    hints->fabric_attr->prov_name = strdup("psm2");
    struct fi_info *info = NULL;
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    /* The provider says how it addresses a region: virtual addresses or offsets, its key or ours. */
    const int virt = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    const int prov_key = (info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_av *av;
    FI(fi_fabric(info->fabric_attr, &fabric, NULL));
    FI(fi_domain(fabric, info, &domain, NULL));
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 256};
    FI(fi_cq_open(domain, &cq_attr, &g_cq, NULL));
    struct fi_av_attr av_attr = {.type = FI_AV_MAP};
    FI(fi_av_open(domain, &av_attr, &av, NULL));
    FI(fi_endpoint(domain, info, &ep, NULL));
    FI(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV));
    FI(fi_ep_bind(ep, &av->fid, 0));
    FI(fi_enable(ep));

    uint8_t *region = aligned_alloc(4096, REGION);
    memset(region, 0, REGION);
    struct fid_mr *mr;
    FI(fi_mr_reg(domain, region, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, prov_key ? 0 : 42 + (uint64_t)g_rank, 0,
                 &mr, NULL));

    struct peer_info mine, all[2];
    memset(&mine, 0, sizeof mine);
    mine.name_len = sizeof mine.name;
    FI(fi_getname(&ep->fid, mine.name, &mine.name_len));
    mine.key = fi_mr_key(mr);
    mine.addr = virt ? (uint64_t)(uintptr_t)region : 0;
    if (portico_runtime_allgather(&mine, sizeof mine, all) != 0) FAIL("allgather");
    const struct peer_info *other = &all[1 - g_rank];
    fi_addr_t peer;
    if (fi_av_insert(av, other->name, 1, &peer, 0, NULL) != 1) FAIL("fi_av_insert");

    struct fi_context ctx;
    char note[8] = {0};
    if (g_rank == 1) {
        FI(fi_recv(ep, note, sizeof note, NULL, peer, &ctx));
        wait_for(&ctx); /* polling all along: rank 0's operations progress here */
        if (strcmp(note, "done") != 0) FAIL("rank 0 said \"%s\"", note);
        size_t at = 0;
        for (size_t s = 0; s < NSIZES; ++s) { /* the last write of each size stays */
            for (size_t i = 0; i < kSizes[s]; ++i)
                if (region[at + i] != pattern_byte(kSizes[s] + 1, i))
                    FAIL("region byte %zu of the %zu-byte write is wrong", i, kSizes[s]);
            at += (kSizes[s] + 4095) & ~(size_t)4095;
        }
        printf("fi_rma_test: rank 1's region holds what rank 0 wrote\n");
    } else {
        uint8_t *local = aligned_alloc(4096, REGION);
        uint8_t *back = aligned_alloc(4096, REGION);
        size_t at = 0;
        for (size_t s = 0; s < NSIZES; ++s) {
            const size_t n = kSizes[s];
            for (int round = 0; round < 2; ++round) { /* the second write overwrites the first */
                for (size_t i = 0; i < n; ++i) local[i] = pattern_byte(n + (size_t)round, i);
                FI(fi_write(ep, local, n, NULL, peer, other->addr + at, other->key, &ctx));
                wait_for(&ctx);
            }
            memset(back, 0xEE, n);
            FI(fi_read(ep, back, n, NULL, peer, other->addr + at, other->key, &ctx));
            wait_for(&ctx);
            for (size_t i = 0; i < n; ++i)
                if (back[i] != pattern_byte(n + 1, i)) FAIL("read back byte %zu of %zu: %u", i, n, back[i]);
            at += (n + 4095) & ~(size_t)4095;
        }
        /* Atomics on a counter past the written area. */
        const uint64_t counter = other->addr + REGION - 8;
        size_t count = 0;
        if (fi_atomicvalid(ep, FI_UINT64, FI_SUM, &count) == 0 && count >= 1) {
            uint64_t one = 3;
            for (int i = 0; i < 100; ++i) {
                FI(fi_atomic(ep, &one, 1, NULL, peer, counter, other->key, FI_UINT64, FI_SUM, &ctx));
                wait_for(&ctx);
            }
            uint64_t zero = 0, got = 0;
            FI(fi_fetch_atomic(ep, &zero, 1, NULL, &got, NULL, peer, counter, other->key, FI_UINT64, FI_SUM, &ctx));
            wait_for(&ctx);
            if (got != 300) FAIL("the counter is %" PRIu64 " after 100 atomic adds of 3", got);
        } else {
            FAIL("the psm2 provider offers no FI_SUM on FI_UINT64");
        }
        strcpy(note, "done");
        FI(fi_send(ep, note, sizeof note, NULL, peer, &ctx));
        wait_for(&ctx);
        printf("fi_rma_test: %zu sizes written and read back, 100 atomic adds (virtual addresses: %s)\n", NSIZES,
               virt ? "yes" : "no");
        free(local);
        free(back);
    }
    portico_runtime_barrier();
    fi_close(&mr->fid);
    fi_close(&ep->fid);
    fi_close(&av->fid);
    fi_close(&g_cq->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    free(region);
    return 0;
}
