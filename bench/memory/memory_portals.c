/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/memory's Portals program: a logical matching NI, then the traffic of a typical
 * application: one 8-byte put to every other rank (so that this rank has a link with each) and a
 * halo exchange of 16 KiB puts with its two neighbours in a ring of ranks (HALO_ROUNDS rounds,
 * enough to cycle every byte of the default shared-memory rings), every value checked; then the
 * checkpoint (memory_checkpoint.h). */
#include <portals4.h>
#include <portico_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory_checkpoint.h"

#define PT_INDEX 5
#define MB_SLOTS 1
#define MB_HALO 2
#define HALO_BYTES 16384
#define HALO_ROUNDS 128

static void check(int rc, const char *what) {
    if (rc == PTL_OK) return;
    fprintf(stderr, "memory_portals: %s failed (%d)\n", what, rc);
    portico_runtime_abort(1, what);
    exit(1);
}

static void wait_ct(ptl_handle_ct_t ct, ptl_size_t count, const char *what) {
    ptl_ct_event_t ev;
    check(PtlCTWait(ct, count, &ev), what);
    if (ev.failure != 0) check(PTL_FAIL, what);
}

int main(void) {
    int rank = 0, size = 1;
    check(portico_runtime_rank(&rank), "portico_runtime_rank");
    check(portico_runtime_size(&size), "portico_runtime_size");
    memory_phase("memory_portals", rank, "start");
    check(PtlInit(), "PtlInit");
    ptl_handle_ni_t ni;
    ptl_ni_limits_t limits;
    check(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &limits, &ni), "PtlNIInit");
    ptl_handle_ct_t ct_slots, ct_halo, ct_acks;
    check(PtlCTAlloc(ni, &ct_slots), "PtlCTAlloc");
    check(PtlCTAlloc(ni, &ct_halo), "PtlCTAlloc");
    check(PtlCTAlloc(ni, &ct_acks), "PtlCTAlloc");
    ptl_pt_index_t pt;
    check(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT_INDEX, &pt), "PtlPTAlloc");

    uint64_t *slots = calloc((size_t)size, sizeof *slots);
    char *halo_in = malloc(2 * HALO_BYTES), *halo_out = malloc(HALO_BYTES);
    if (!slots || !halo_in || !halo_out) check(PTL_NO_SPACE, "malloc");
    memset(halo_out, rank & 0xff, HALO_BYTES);
    ptl_me_t me;
    memset(&me, 0, sizeof me);
    me.start = slots;
    me.length = (ptl_size_t)size * sizeof *slots;
    me.ct_handle = ct_slots;
    me.match_id.rank = PTL_RANK_ANY;
    me.match_bits = MB_SLOTS;
    me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
    ptl_handle_me_t me_slots, me_halo;
    check(PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, NULL, &me_slots), "PtlMEAppend");
    me.start = halo_in;
    me.length = 2 * HALO_BYTES;
    me.ct_handle = ct_halo;
    me.match_bits = MB_HALO;
    check(PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, NULL, &me_halo), "PtlMEAppend");
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.start = NULL;
    md.length = PTL_SIZE_MAX;
    md.options = PTL_MD_EVENT_CT_ACK;
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = ct_acks;
    ptl_handle_md_t mdh;
    check(PtlMDBind(ni, &md, &mdh), "PtlMDBind");
    check(portico_runtime_barrier(), "portico_runtime_barrier");
    memory_phase("memory_portals", rank, "PtlNIInit and the first barrier");

    /* One put to every other rank: this rank's value into its slot there. */
    const uint64_t mine = (uint64_t)rank + 1;
    ptl_size_t acks = 0;
    for (int i = 1; i < size; ++i) {
        ptl_process_t to;
        to.rank = (ptl_rank_t)((rank + i) % size);
        check(PtlPut(mdh, (ptl_size_t)(uintptr_t)&mine, sizeof mine, PTL_CT_ACK_REQ, to, pt, MB_SLOTS,
                     (ptl_size_t)rank * sizeof mine, NULL, 0),
              "PtlPut (all-to-all)");
        ++acks;
    }
    wait_ct(ct_acks, acks, "acks of the all-to-all");
    wait_ct(ct_slots, (ptl_size_t)size - 1, "the all-to-all's puts");
    for (int p = 0; p < size; ++p)
        if (p != rank && slots[p] != (uint64_t)p + 1) check(PTL_FAIL, "a value of the all-to-all");

    memory_phase("memory_portals", rank, "the all-to-all");
    /* The halo exchange: to the next rank's first half and the previous rank's second half. */
    if (size > 1) {
        ptl_process_t next, prev;
        next.rank = (ptl_rank_t)((rank + 1) % size);
        prev.rank = (ptl_rank_t)((rank + size - 1) % size);
        for (int r = 0; r < HALO_ROUNDS; ++r) {
            check(
                PtlPut(mdh, (ptl_size_t)(uintptr_t)halo_out, HALO_BYTES, PTL_CT_ACK_REQ, next, pt, MB_HALO, 0, NULL, 0),
                "PtlPut (halo)");
            check(PtlPut(mdh, (ptl_size_t)(uintptr_t)halo_out, HALO_BYTES, PTL_CT_ACK_REQ, prev, pt, MB_HALO,
                         HALO_BYTES, NULL, 0),
                  "PtlPut (halo)");
            acks += 2;
            wait_ct(ct_acks, acks, "acks of the halo exchange");
        }
        wait_ct(ct_halo, 2 * HALO_ROUNDS, "the halo exchange's puts");
        if (halo_in[0] != (char)(prev.rank & 0xff) || halo_in[HALO_BYTES] != (char)(next.rank & 0xff))
            check(PTL_FAIL, "the halo values");
    }

    memory_phase("memory_portals", rank, "the halo exchange");
    check(portico_runtime_barrier(), "portico_runtime_barrier");
    memory_phase("memory_portals", rank, "the barrier before the checkpoint");
    memory_checkpoint();
    check(portico_runtime_barrier(), "portico_runtime_barrier");
    PtlMEUnlink(me_slots);
    PtlMEUnlink(me_halo);
    PtlMDRelease(mdh);
    PtlPTFree(ni, pt);
    PtlCTFree(ct_slots);
    PtlCTFree(ct_halo);
    PtlCTFree(ct_acks);
    PtlNIFini(ni);
    PtlFini();
    memory_phase("memory_portals", rank, "the checkpoint, a barrier and PtlNIFini");
    portico_runtime_finalize();
    free(slots);
    free(halo_in);
    free(halo_out);
    return 0;
}
