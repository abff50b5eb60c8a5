/* SPDX-License-Identifier: BSD-3-Clause */
/* A Portals program whose PtlInit and PtlFini do not balance, as Open MPI's osc/portals4 does (it
 * calls PtlInit without a matching PtlFini): two PtlInit, one PtlFini. Its NI is physical, as Open
 * MPI's are, so the launcher is needed only for the TCP transport's job secret (run it with
 * PORTICO_TRANSPORT=tcp): each rank puts to the next one and waits for the ack. The engine never
 * reaches its last PtlFini, so the job service never leaves the job through it: only the exit does
 * (an exit with 0 sends the launcher's finalize, bounded). Under a launcher that takes an exit
 * without finalize for a failure (Open MPI's mpirun: "exiting improperly", status 1; hydra: the
 * job killed) the job must still end with status 0. */
#include <portals4.h>
#include <portico_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != PTL_OK) {                                                                                           \
            fprintf(stderr, "unbalanced_init: %s returned %d\n", #call, rc_);                                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
/* A job service call: PTL_IGNORED (no launcher: a job of one) is fine too. */
#define JOB(call)                                                                                                      \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != PTL_OK && rc_ != PTL_IGNORED) {                                                                     \
            fprintf(stderr, "unbalanced_init: %s returned %d\n", #call, rc_);                                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

int main(void) {
    CHECK(PtlInit());
    CHECK(PtlInit()); /* the one never matched */
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_process_t me;
    CHECK(PtlGetPhysId(ni, &me));
    int rank = 0, size = 1;
    JOB(portico_runtime_rank(&rank));
    JOB(portico_runtime_size(&size));
    ptl_process_t *ids = calloc((size_t)size, sizeof *ids);
    JOB(portico_runtime_allgather(&me, sizeof me, ids));

    ptl_handle_eq_t eq;
    ptl_pt_index_t pt;
    CHECK(PtlEQAlloc(ni, 64, &eq));
    CHECK(PtlPTAlloc(ni, 0, eq, 5, &pt));
    static char inbox[8];
    ptl_me_t me_desc = {.start = inbox,
                        .length = sizeof inbox,
                        .ct_handle = PTL_CT_NONE,
                        .uid = PTL_UID_ANY,
                        .options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE,
                        .match_id = {.phys = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY}},
                        .match_bits = 0,
                        .ignore_bits = 0,
                        .min_free = 0};
    ptl_handle_me_t meh;
    CHECK(PtlMEAppend(ni, pt, &me_desc, PTL_PRIORITY_LIST, NULL, &meh));
    JOB(portico_runtime_barrier()); /* every ME is there before anyone puts */

    static char outbox[8] = "hello";
    ptl_md_t md = {.start = outbox, .length = sizeof outbox, .options = 0, .eq_handle = eq, .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(ni, &md, &mdh));
    CHECK(PtlPut(mdh, 0, sizeof outbox, PTL_ACK_REQ, ids[(rank + 1) % size], pt, 0, 0, NULL, 0));
    int acked = 0, received = 0;
    while (!acked || !received) {
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev));
        if (ev.ni_fail_type != PTL_NI_OK) {
            fprintf(stderr, "unbalanced_init: event %d failed (%d)\n", (int)ev.type, (int)ev.ni_fail_type);
            return 1;
        }
        acked |= ev.type == PTL_EVENT_ACK;
        received |= ev.type == PTL_EVENT_PUT;
    }
    JOB(portico_runtime_barrier()); /* nobody closes while a neighbour still waits for its ack */
    CHECK(PtlMDRelease(mdh));
    CHECK(PtlMEUnlink(meh));
    CHECK(PtlPTFree(ni, pt));
    CHECK(PtlEQFree(eq));
    CHECK(PtlNIFini(ni));
    PtlFini(); /* one of two */
    free(ids);
    if (rank == 0) printf("unbalanced_init: %d ranks OK\n", size);
    return 0;
}
