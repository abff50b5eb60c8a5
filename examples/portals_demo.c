/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * portals_demo: a small Portals 4 job that shows what the engine does.
 *
 *   portico-run -n 4 portals_demo
 *
 * Every rank opens a logical, matching NI (the launcher supplies the rank map), exposes a
 * mailbox with one slot per rank, puts a greeting into every other rank's slot for it, counts
 * the arrivals with a counting event, then reads its right neighbour's mailbox with a get.
 * portico_runtime_barrier() (through the launcher) separates the phases: setting up, the
 * greetings, the gets, leaving.
 * Written in C against portals4.h only, as any Portals client would be.
 */
#include <portals4.h>
#include <portico_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT 64
#define MAX_RANKS 256
#define MAILBOX_PT 7
#define MAILBOX_BITS 0x6d61696cULL /* "mail" */

static int check(int rc, const char *what, int line) {
    if (rc != PTL_OK) {
        fprintf(stderr, "portals_demo: %s failed with %d (line %d)\n", what, rc, line);
        exit(1);
    }
    return rc;
}
#define CHECK(x) check((x), #x, __LINE__)

int main(void) {
    ptl_handle_ni_t ni;
    ptl_ni_limits_t limits;
    ptl_process_t me, phys;
    ptl_size_t nranks = 0;

    CHECK(PtlInit());
    /* Logical NIs are collective under the launcher: every rank opens one. It fails when a
     * launcher started several copies but gave them no way to find each other (the library says
     * which launcher and how to fix it). */
    if (PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &limits, &ni) != PTL_OK) {
        fprintf(stderr, "portals_demo: start it with a launcher: portico-run -n N, mpiexec, or srun --mpi=pmix "
                        "or --mpi=pmi2 (PtlNIInit failed)\n");
        return 1;
    }
    CHECK(PtlGetId(ni, &me));
    CHECK(PtlGetPhysId(ni, &phys));
    if (PtlGetMap(ni, 0, NULL, &nranks) != PTL_OK) {
        fprintf(stderr, "portals_demo: no rank map; start it with portico-run -n N\n");
        return 1;
    }
    if (nranks > MAX_RANKS) {
        fprintf(stderr, "portals_demo: at most %d ranks\n", MAX_RANKS);
        return 1;
    }
    const ptl_rank_t rank = me.rank, n = (ptl_rank_t)nranks;
    printf("[rank %u] NI open: nid %u.%u.%u.%u pid %u, %u ranks, %d portal table entries\n", rank, phys.phys.nid >> 24,
           (phys.phys.nid >> 16) & 255, (phys.phys.nid >> 8) & 255, phys.phys.nid & 255, phys.phys.pid, n,
           limits.max_pt_index + 1);

    /* The mailbox: one ME over n slots, remote offsets choose the slot, a CT counts arrivals. */
    static char mailbox[MAX_RANKS * SLOT];
    ptl_handle_eq_t eq;
    ptl_handle_ct_t arrivals;
    ptl_pt_index_t pt;
    CHECK(PtlEQAlloc(ni, 4 * (ptl_size_t)n + 16, &eq));
    CHECK(PtlCTAlloc(ni, &arrivals));
    CHECK(PtlPTAlloc(ni, 0, eq, MAILBOX_PT, &pt));
    ptl_me_t me_desc;
    memset(&me_desc, 0, sizeof me_desc);
    me_desc.start = mailbox;
    me_desc.length = (ptl_size_t)n * SLOT;
    me_desc.ct_handle = arrivals;
    me_desc.uid = PTL_UID_ANY;
    me_desc.options =
        PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
    me_desc.match_id.rank = PTL_RANK_ANY;
    me_desc.match_bits = MAILBOX_BITS;
    ptl_handle_me_t meh;
    CHECK(PtlMEAppend(ni, pt, &me_desc, PTL_PRIORITY_LIST, NULL, &meh));
    snprintf(mailbox + (size_t)rank * SLOT, SLOT, "(rank %u's own slot)", rank);

    /* Nobody may put before every mailbox exists (a put to a missing entry is dropped, as the
     * spec requires): wait for every rank once, through the launcher. */
    static char greeting[SLOT];
    snprintf(greeting, sizeof greeting, "hello from rank %u", rank);
    ptl_md_t md_desc = {greeting, sizeof greeting, 0, eq, PTL_CT_NONE};
    ptl_handle_md_t md;
    CHECK(PtlMDBind(ni, &md_desc, &md));
    CHECK(portico_runtime_barrier());

    /* All-to-all: my greeting into slot `rank` of every other mailbox, each acknowledged. */
    for (ptl_rank_t peer = 0; peer < n; ++peer) {
        if (peer == rank) continue;
        ptl_process_t to = {.rank = peer};
        CHECK(PtlPut(md, 0, SLOT, PTL_ACK_REQ, to, pt, MAILBOX_BITS, (ptl_size_t)rank * SLOT, NULL, 0));
    }
    unsigned acks = 0, sends = 0;
    while (acks < n - 1 || sends < n - 1) {
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev));
        if (ev.ni_fail_type != PTL_NI_OK) {
            fprintf(stderr, "[rank %u] event %d failed with %d\n", rank, ev.type, ev.ni_fail_type);
            return 1;
        }
        if (ev.type == PTL_EVENT_ACK) ++acks;
        if (ev.type == PTL_EVENT_SEND) ++sends;
    }
    /* The CT counts every operation on the mailbox, gets too: the barrier below keeps the
     * neighbour's get out until every rank has seen its n - 1 greetings arrive. */
    ptl_ct_event_t ct;
    CHECK(PtlCTWait(arrivals, n - 1, &ct));
    printf("[rank %u] %u puts acknowledged; mailbox counted %lu operations; greetings:", rank, acks,
           (unsigned long)ct.success);
    for (ptl_rank_t s = 0; s < n; ++s)
        if (s != rank) printf(" \"%s\"", mailbox + (size_t)s * SLOT);
    printf("\n");
    CHECK(portico_runtime_barrier());

    /* A get: read the right neighbour's whole mailbox straight from its memory. */
    static char copy[MAX_RANKS * SLOT];
    ptl_md_t get_desc = {copy, sizeof copy, 0, eq, PTL_CT_NONE};
    ptl_handle_md_t get_md;
    CHECK(PtlMDBind(ni, &get_desc, &get_md));
    ptl_process_t right = {.rank = (rank + 1) % n};
    CHECK(PtlGet(get_md, 0, (ptl_size_t)n * SLOT, right, pt, MAILBOX_BITS, 0, NULL));
    ptl_event_t ev;
    do CHECK(PtlEQWait(eq, &ev));
    while (ev.type != PTL_EVENT_REPLY);
    printf("[rank %u] got %lu bytes from rank %u; its own slot says \"%s\"\n", rank, (unsigned long)ev.mlength,
           right.rank, copy + (size_t)right.rank * SLOT);

    /* Stay until everybody has read our mailbox. */
    CHECK(portico_runtime_barrier());
    ptl_sr_value_t drops;
    CHECK(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &drops));
    printf("[rank %u] done; %ld messages dropped\n", rank, (long)drops);
    CHECK(PtlNIFini(ni));
    PtlFini();
    return 0;
}
