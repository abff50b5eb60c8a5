#include "portals_util.hpp"

#include <cstdio>

#include "bench.hpp"
#include "job.hpp"

namespace portico::bench {

const char *rc_name(int rc) {
    switch (rc) {
    case PTL_OK: return "PTL_OK";
    case PTL_ARG_INVALID: return "PTL_ARG_INVALID";
    case PTL_CT_NONE_REACHED: return "PTL_CT_NONE_REACHED";
    case PTL_EQ_DROPPED: return "PTL_EQ_DROPPED";
    case PTL_EQ_EMPTY: return "PTL_EQ_EMPTY";
    case PTL_FAIL: return "PTL_FAIL";
    case PTL_IGNORED: return "PTL_IGNORED";
    case PTL_IN_USE: return "PTL_IN_USE";
    case PTL_LIST_TOO_LONG: return "PTL_LIST_TOO_LONG";
    case PTL_NO_INIT: return "PTL_NO_INIT";
    case PTL_NO_SPACE: return "PTL_NO_SPACE";
    case PTL_PID_IN_USE: return "PTL_PID_IN_USE";
    case PTL_PT_FULL: return "PTL_PT_FULL";
    case PTL_PT_EQ_NEEDED: return "PTL_PT_EQ_NEEDED";
    case PTL_PT_IN_USE: return "PTL_PT_IN_USE";
    case PTL_ABORTED: return "PTL_ABORTED";
    default: return "unknown return code";
    }
}

const char *event_name(ptl_event_kind_t k) {
    switch (k) {
    case PTL_EVENT_GET: return "PTL_EVENT_GET";
    case PTL_EVENT_GET_OVERFLOW: return "PTL_EVENT_GET_OVERFLOW";
    case PTL_EVENT_PUT: return "PTL_EVENT_PUT";
    case PTL_EVENT_PUT_OVERFLOW: return "PTL_EVENT_PUT_OVERFLOW";
    case PTL_EVENT_ATOMIC: return "PTL_EVENT_ATOMIC";
    case PTL_EVENT_ATOMIC_OVERFLOW: return "PTL_EVENT_ATOMIC_OVERFLOW";
    case PTL_EVENT_FETCH_ATOMIC: return "PTL_EVENT_FETCH_ATOMIC";
    case PTL_EVENT_FETCH_ATOMIC_OVERFLOW: return "PTL_EVENT_FETCH_ATOMIC_OVERFLOW";
    case PTL_EVENT_REPLY: return "PTL_EVENT_REPLY";
    case PTL_EVENT_SEND: return "PTL_EVENT_SEND";
    case PTL_EVENT_ACK: return "PTL_EVENT_ACK";
    case PTL_EVENT_PT_DISABLED: return "PTL_EVENT_PT_DISABLED";
    case PTL_EVENT_LINK: return "PTL_EVENT_LINK";
    case PTL_EVENT_AUTO_UNLINK: return "PTL_EVENT_AUTO_UNLINK";
    case PTL_EVENT_AUTO_FREE: return "PTL_EVENT_AUTO_FREE";
    case PTL_EVENT_SEARCH: return "PTL_EVENT_SEARCH";
    case PTL_EVENT_ERROR: return "PTL_EVENT_ERROR";
    }
    return "unknown event";
}

const char *fail_name(ptl_ni_fail_t f) {
    switch (f) {
    case PTL_NI_OK: return "PTL_NI_OK";
    case PTL_NI_UNDELIVERABLE: return "PTL_NI_UNDELIVERABLE";
    case PTL_NI_PT_DISABLED: return "PTL_NI_PT_DISABLED";
    case PTL_NI_DROPPED: return "PTL_NI_DROPPED";
    case PTL_NI_PERM_VIOLATION: return "PTL_NI_PERM_VIOLATION";
    case PTL_NI_OP_VIOLATION: return "PTL_NI_OP_VIOLATION";
    case PTL_NI_SEGV: return "PTL_NI_SEGV";
    case PTL_NI_NO_MATCH: return "PTL_NI_NO_MATCH";
    }
    return "unknown failure";
}

void check(int rc, const char *what) {
    if (rc == PTL_OK) return;
    throw Error(std::string(what) + " failed: " + rc_name(rc) + " (" + std::to_string(rc) + ")");
}

void check_event(const ptl_event_t &ev, const char *where) {
    if (ev.ni_fail_type == PTL_NI_OK) return;
    throw Error(std::string(where) + ": " + event_name(ev.type) + " reports " + fail_name(ev.ni_fail_type));
}

Library::Library() { check(PtlInit(), "PtlInit"); }
Library::~Library() { PtlFini(); }

PhysicalNi::PhysicalNi(unsigned matching) {
    check(PtlNIInit(PTL_IFACE_DEFAULT, matching | PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr, &limits_, &ni_),
          "PtlNIInit(physical)");
    const int rc = PtlGetPhysId(ni_, &id_);
    if (rc != PTL_OK) {
        PtlNIFini(ni_);
        check(rc, "PtlGetPhysId");
    }
}

PhysicalNi::~PhysicalNi() { PtlNIFini(ni_); }

std::string id_string(ptl_process_t id) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%x:%x", id.phys.nid, id.phys.pid);
    return buf;
}

std::vector<Peer> exchange_peers(Job &job, ptl_process_t self, ptl_pt_index_t pt) {
    char mine[48];
    std::snprintf(mine, sizeof mine, "%x:%x:%x", self.phys.nid, self.phys.pid, pt);
    std::vector<Peer> peers;
    int r = 0;
    for (const std::string &v : job.allgather(mine)) {
        unsigned nid = 0, pid = 0, idx = 0;
        if (std::sscanf(v.c_str(), "%x:%x:%x", &nid, &pid, &idx) != 3)
            throw Error("rank " + std::to_string(r) + " published a malformed endpoint '" + v + "'");
        Peer p;
        p.id.phys.nid = nid;
        p.id.phys.pid = pid;
        p.pt = idx;
        peers.push_back(p);
        ++r;
    }
    return peers;
}

} // namespace portico::bench
