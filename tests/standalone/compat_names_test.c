/* SPDX-License-Identifier: BSD-3-Clause */
/* The Portals 4.0/4.1 names that 4.3 deprecated and dropped from its tables, as
 * clients of that era use them (Open MPI 4.1's mtl/portals4 maps PTL_INTERRUPTED among the other
 * codes in one switch and appends its flow-control entries with PTL_ME_ACK_DISABLE; GASNet's
 * portals4-conduit does alike). They compile, PTL_INTERRUPTED differs from every code Portico
 * returns, and an entry appended with the ACK_DISABLE options behaves exactly as one without
 * (README, decision 4: the initiator alone decides on acks). One process, physical NIs, puts to
 * itself. */
#include <portals4.h>

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "compat_names_test: %s:%d: %s\n", __FILE__, __LINE__, #cond);                              \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

/* A 4.1-era client's translation of return codes (a duplicate case label would not compile). */
static const char *client_error_class(int rc) {
    switch (rc) {
    case PTL_OK: return "ok";
    case PTL_ARG_INVALID:
    case PTL_PID_IN_USE: return "bad param";
    case PTL_CT_NONE_REACHED: return "timeout";
    case PTL_EQ_DROPPED:
    case PTL_LIST_TOO_LONG:
    case PTL_NO_SPACE:
    case PTL_PT_FULL: return "out of resource";
    case PTL_EQ_EMPTY: return "temporarily out of resource";
    case PTL_IN_USE:
    case PTL_INTERRUPTED: return "busy";
    case PTL_NO_INIT: return "fatal";
    default: return "error";
    }
}

/* Appends an entry with `options` (plus OP_PUT) on `pt`, puts 8 bytes into it with an ack
 * requested, and checks the three events: SEND and ACK at the initiator, PUT at the target. */
static int put_into_entry(ptl_handle_ni_t ni, int matching, unsigned options) {
    ptl_process_t self;
    CHECK(PtlGetPhysId(ni, &self) == PTL_OK);
    ptl_handle_eq_t eq;
    CHECK(PtlEQAlloc(ni, 16, &eq) == PTL_OK);
    ptl_pt_index_t pt;
    CHECK(PtlPTAlloc(ni, 0, eq, PTL_PT_ANY, &pt) == PTL_OK);
    unsigned long long target = 0, source = 0x0123456789abcdefULL;
    ptl_handle_any_t entry;
    if (matching) {
        ptl_me_t me;
        memset(&me, 0, sizeof me);
        me.start = &target;
        me.length = sizeof target;
        me.ct_handle = PTL_CT_NONE;
        me.uid = PTL_UID_ANY;
        me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | options;
        me.match_id.phys.nid = PTL_NID_ANY;
        me.match_id.phys.pid = PTL_PID_ANY;
        me.match_bits = 7;
        CHECK(PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, NULL, &entry) == PTL_OK);
    } else {
        ptl_le_t le;
        memset(&le, 0, sizeof le);
        le.start = &target;
        le.length = sizeof target;
        le.ct_handle = PTL_CT_NONE;
        le.uid = PTL_UID_ANY;
        le.options = PTL_LE_OP_PUT | PTL_LE_EVENT_LINK_DISABLE | options;
        CHECK(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &entry) == PTL_OK);
    }
    ptl_md_t d;
    memset(&d, 0, sizeof d);
    d.start = &source;
    d.length = sizeof source;
    d.eq_handle = eq;
    d.ct_handle = PTL_CT_NONE;
    ptl_handle_md_t md;
    CHECK(PtlMDBind(ni, &d, &md) == PTL_OK);
    CHECK(PtlPut(md, 0, sizeof source, PTL_ACK_REQ, self, pt, 7, 0, NULL, 0) == PTL_OK);
    int send = 0, ack = 0, put = 0;
    for (int i = 0; i < 3; ++i) {
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev) == PTL_OK);
        CHECK(ev.ni_fail_type == PTL_NI_OK);
        if (ev.type == PTL_EVENT_SEND) ++send;
        if (ev.type == PTL_EVENT_ACK && ev.mlength == sizeof source) ++ack;
        if (ev.type == PTL_EVENT_PUT && ev.mlength == sizeof source) ++put;
    }
    CHECK(send == 1 && ack == 1 && put == 1);
    CHECK(target == source);
    CHECK(PtlMDRelease(md) == PTL_OK);
    CHECK((matching ? PtlMEUnlink(entry) : PtlLEUnlink(entry)) == PTL_OK);
    CHECK(PtlPTFree(ni, pt) == PTL_OK);
    CHECK(PtlEQFree(eq) == PTL_OK);
    return 0;
}

int main(void) {
    for (int rc = PTL_OK; rc < PTL_STATUS_LAST; ++rc) CHECK(rc != PTL_INTERRUPTED);
    CHECK(strcmp(client_error_class(PTL_INTERRUPTED), "busy") == 0);
    CHECK(strcmp(client_error_class(PTL_ABORTED), "error") == 0);
    CHECK(PtlInit() == PTL_OK);
    ptl_handle_ni_t mni, nni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &mni) == PTL_OK);
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &nni) == PTL_OK);
    CHECK(put_into_entry(mni, 1, PTL_ME_ACK_DISABLE) == 0);
    CHECK(put_into_entry(nni, 0, PTL_LE_ACK_DISABLE) == 0);
    CHECK(PtlNIFini(nni) == PTL_OK);
    CHECK(PtlNIFini(mni) == PTL_OK);
    PtlFini();
    puts("compat_names_test: ok");
    return 0;
}
