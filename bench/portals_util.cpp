#include "common/ptl_names.hpp"
#include "portals_util.hpp"

#include <cstdio>

#include "bench.hpp"
#include "job.hpp"

namespace portico::bench {

const char *rc_name(int rc) { return portico::names::return_code(rc); }

const char *event_name(ptl_event_kind_t k) { return portico::names::event_kind(k); }

const char *fail_name(ptl_ni_fail_t f) { return portico::names::ni_fail(f); }

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

ptl_handle_me_t append_me(ptl_handle_ni_t ni, ptl_pt_index_t pt, void *start, ptl_size_t length, unsigned options,
                          ptl_handle_ct_t ct) {
    ptl_me_t me{};
    me.start = start;
    me.length = length;
    me.ct_handle = ct;
    me.uid = PTL_UID_ANY;
    me.options = options;
    me.match_id.phys.nid = PTL_NID_ANY;
    me.match_id.phys.pid = PTL_PID_ANY;
    ptl_handle_me_t h;
    check(PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, nullptr, &h), "PtlMEAppend");
    return h;
}

ptl_handle_md_t bind_md(ptl_handle_ni_t ni, void *start, ptl_size_t length, unsigned options, ptl_handle_eq_t eq,
                        ptl_handle_ct_t ct) {
    ptl_md_t md{};
    md.start = start;
    md.length = length;
    md.options = options;
    md.eq_handle = eq;
    md.ct_handle = ct;
    ptl_handle_md_t h;
    check(PtlMDBind(ni, &md, &h), "PtlMDBind");
    return h;
}

} // namespace portico::bench
