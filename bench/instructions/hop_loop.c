/* SPDX-License-Identifier: BSD-3-Clause */
/* hop_loop ROUNDS [ct|put]: one process puts 8 bytes to itself ROUNDS times: the software of both
 * sides of one hop, with no cache line crossing cores.
 *   ct  (default): the ct_lat shape: no ack, counted on the target entry's CT, PtlCTWait.
 *   put: the put_lat shape: an ack requested, events on both sides (the target's PUT, the
 *        initiator's SEND and ACK), each taken with PtlEQWait.
 * Run alone (no launcher: a physical NI of a job of one), under callgrind by hop_instructions.sh,
 * which turns two lengths into instructions per round. Prints the rounds done. */
#include <portals4.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != PTL_OK) {                                                                                           \
            fprintf(stderr, "hop_loop: %s returned %d\n", #call, rc_);                                                 \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv) {
    const long rounds = argc > 1 ? atol(argv[1]) : 10000;
    const int events = argc > 2 && strcmp(argv[2], "put") == 0;
    static char target[64], source[64];
    ptl_handle_ni_t ni;
    ptl_process_t me;
    ptl_pt_index_t pt;
    ptl_handle_ct_t ct;
    ptl_handle_eq_t target_eq = PTL_EQ_NONE, source_eq = PTL_EQ_NONE;
    ptl_event_t ev;
    ptl_handle_md_t md;
    ptl_handle_me_t meh;
    ptl_me_t m = {0};
    ptl_md_t d = {0};
    ptl_ct_event_t got;
    long i;
    CHECK(PtlInit());
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetPhysId(ni, &me));
    if (events) {
        CHECK(PtlEQAlloc(ni, 64, &target_eq));
        CHECK(PtlEQAlloc(ni, 64, &source_eq));
    }
    CHECK(PtlPTAlloc(ni, 0, target_eq, PTL_PT_ANY, &pt));
    CHECK(PtlCTAlloc(ni, &ct));
    m.start = target;
    m.length = sizeof target;
    m.ct_handle = ct;
    m.uid = PTL_UID_ANY;
    m.options = events ? PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE
                       : PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
    m.match_id.phys.nid = PTL_NID_ANY;
    m.match_id.phys.pid = PTL_PID_ANY;
    CHECK(PtlMEAppend(ni, pt, &m, PTL_PRIORITY_LIST, NULL, &meh));
    d.start = source;
    d.length = sizeof source;
    d.eq_handle = source_eq;
    d.ct_handle = PTL_CT_NONE;
    CHECK(PtlMDBind(ni, &d, &md));
    for (i = 0; i < rounds && events; ++i) {
        int k;
        CHECK(PtlPut(md, 0, 8, PTL_ACK_REQ, me, pt, 0, 0, NULL, 0));
        CHECK(PtlEQWait(target_eq, &ev));
        if (ev.type != PTL_EVENT_PUT || ev.mlength != 8) {
            fprintf(stderr, "hop_loop: round %ld: event %d of %lu bytes at the target, expected a PUT of 8\n", i,
                    (int)ev.type, (unsigned long)ev.mlength);
            return 1;
        }
        for (k = 0; k < 2; ++k) { /* SEND, then ACK */
            CHECK(PtlEQWait(source_eq, &ev));
            if (ev.type != (k == 0 ? PTL_EVENT_SEND : PTL_EVENT_ACK) || ev.ni_fail_type != PTL_NI_OK) {
                fprintf(stderr, "hop_loop: round %ld: event %d (failure %d) at the initiator, expected %s\n", i,
                        (int)ev.type, (int)ev.ni_fail_type, k == 0 ? "SEND" : "ACK");
                return 1;
            }
        }
    }
    for (i = 0; i < rounds && !events; ++i) {
        CHECK(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, me, pt, 0, 0, NULL, 0));
        CHECK(PtlCTWait(ct, (ptl_size_t)(i + 1), &got));
    }
    if (!events && (got.success != (ptl_size_t)rounds || got.failure != 0)) {
        fprintf(stderr, "hop_loop: counted %lu successes and %lu failures, expected %ld and 0\n",
                (unsigned long)got.success, (unsigned long)got.failure, rounds);
        return 1;
    }
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("hop_loop: %ld rounds\n", rounds);
    return 0;
}
