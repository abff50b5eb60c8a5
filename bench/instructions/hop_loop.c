/* hop_loop ROUNDS: one process puts 8 bytes to itself (PtlPut, no ack, counted on the target
 * entry's CT) and waits for the count (PtlCTWait), ROUNDS times: the software of both sides of one
 * ct_lat hop, with no cache line crossing cores. Run alone (no launcher: a physical NI of a job of
 * one), under callgrind by hop_instructions.sh, which turns two lengths into instructions per round.
 * Prints the rounds done. */
#include <portals4.h>

#include <stdio.h>
#include <stdlib.h>

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
    static char target[64], source[64];
    ptl_handle_ni_t ni;
    ptl_process_t me;
    ptl_pt_index_t pt;
    ptl_handle_ct_t ct;
    ptl_handle_md_t md;
    ptl_handle_me_t meh;
    ptl_me_t m = {0};
    ptl_md_t d = {0};
    ptl_ct_event_t got;
    long i;
    CHECK(PtlInit());
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetPhysId(ni, &me));
    CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &pt));
    CHECK(PtlCTAlloc(ni, &ct));
    m.start = target;
    m.length = sizeof target;
    m.ct_handle = ct;
    m.uid = PTL_UID_ANY;
    m.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
    m.match_id.phys.nid = PTL_NID_ANY;
    m.match_id.phys.pid = PTL_PID_ANY;
    CHECK(PtlMEAppend(ni, pt, &m, PTL_PRIORITY_LIST, NULL, &meh));
    d.start = source;
    d.length = sizeof source;
    d.eq_handle = PTL_EQ_NONE;
    d.ct_handle = PTL_CT_NONE;
    CHECK(PtlMDBind(ni, &d, &md));
    for (i = 0; i < rounds; ++i) {
        CHECK(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, me, pt, 0, 0, NULL, 0));
        CHECK(PtlCTWait(ct, (ptl_size_t)(i + 1), &got));
    }
    if (got.success != (ptl_size_t)rounds || got.failure != 0) {
        fprintf(stderr, "hop_loop: counted %lu successes and %lu failures, expected %ld and 0\n",
                (unsigned long)got.success, (unsigned long)got.failure, rounds);
        return 1;
    }
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("hop_loop: %ld rounds\n", rounds);
    return 0;
}
