// SPDX-License-Identifier: BSD-3-Clause
// A rank of a job that opens all its links late, for outsiders_test's flood (docs/ARCHITECTURE.md,
// *Connections that have not authenticated*):
// it opens a logical NI (the job's map, exchanged through the launcher: no link yet), prints
// "ID <rank> <nid> <pid>", and waits until rank 0 hears "GO" on its stdin (the test has set a
// flood of outsiders' connections on every rank's port by then). Then every rank puts to every
// other rank, each put acknowledged, opening every link of the job during the flood; every event
// is checked (kind, failure type, length, initiator, header data, data). Each rank ends with
// "DONE <rank> refused=<PTL_SR_REFUSED_CONNECTIONS>".
#include <portals4.h>
#include <portico_runtime.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

int g_rank = -1;

[[noreturn]] void die(const char *what, int rc) {
    std::fprintf(stderr, "flood_rank %d: FAILED %s (%d)\n", g_rank, what, rc);
    std::fflush(stderr);
    portico_runtime_abort(1, "flood_rank: a check failed");
    std::exit(1);
}
#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        const int rc_ = (x);                                                                                           \
        if (rc_ != PTL_OK) die(#x, rc_);                                                                               \
    } while (0)
#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) die(#cond, -1);                                                                                   \
    } while (0)

constexpr ptl_pt_index_t kPt = 5;

uint64_t value_of(int from, int to) { return 0x1000u * static_cast<uint64_t>(from + 1) + static_cast<uint64_t>(to); }

} // namespace

int main() {
    int size = 0;
    CHECK(portico_runtime_rank(&g_rank));
    CHECK(portico_runtime_size(&size));
    CHECK(PtlInit());
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, nullptr, nullptr, &ni));
    ptl_process_t me;
    CHECK(PtlGetPhysId(ni, &me));
    std::printf("ID %d %u %u\n", g_rank, me.phys.nid, me.phys.pid);
    std::fflush(stdout);

    ptl_handle_eq_t eq;
    CHECK(PtlEQAlloc(ni, 1024, &eq));
    ptl_pt_index_t pt;
    CHECK(PtlPTAlloc(ni, 0, eq, kPt, &pt));
    std::vector<uint64_t> inbox(static_cast<size_t>(size), 0);
    ptl_me_t me_desc{};
    me_desc.start = inbox.data();
    me_desc.length = inbox.size() * sizeof(uint64_t);
    me_desc.ct_handle = PTL_CT_NONE;
    me_desc.uid = PTL_UID_ANY;
    me_desc.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE;
    me_desc.match_id.rank = PTL_RANK_ANY;
    ptl_handle_me_t meh;
    CHECK(PtlMEAppend(ni, kPt, &me_desc, PTL_PRIORITY_LIST, nullptr, &meh));
    std::vector<uint64_t> outbox(static_cast<size_t>(size));
    ptl_md_t md{outbox.data(), outbox.size() * sizeof(uint64_t), 0, eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(ni, &md, &mdh));

    CHECK(portico_runtime_barrier());
    if (g_rank == 0) {
        std::string line;
        if (!std::getline(std::cin, line) || line != "GO") die("no GO on stdin", -1);
    }
    CHECK(portico_runtime_barrier()); // the flood is on: now every link of the job opens

    for (int to = 0; to < size; ++to) {
        if (to == g_rank) continue;
        outbox[static_cast<size_t>(to)] = value_of(g_rank, to);
        ptl_process_t target{};
        target.rank = static_cast<ptl_rank_t>(to);
        CHECK(PtlPut(mdh, static_cast<ptl_size_t>(to) * sizeof(uint64_t), sizeof(uint64_t), PTL_ACK_REQ, target, kPt, 0,
                     static_cast<ptl_size_t>(g_rank) * sizeof(uint64_t), reinterpret_cast<void *>(uintptr_t(to) + 1),
                     static_cast<ptl_hdr_data_t>(g_rank)));
    }
    const int peers = size - 1;
    int sends = 0, acks = 0, puts = 0;
    std::vector<bool> acked(static_cast<size_t>(size)), put_from(static_cast<size_t>(size));
    while (sends < peers || acks < peers || puts < peers) {
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev));
        if (ev.ni_fail_type != PTL_NI_OK) die("an event failed (ni_fail_type)", static_cast<int>(ev.ni_fail_type));
        if (ev.type == PTL_EVENT_SEND) {
            ++sends;
        } else if (ev.type == PTL_EVENT_ACK) {
            const auto to = static_cast<size_t>(reinterpret_cast<uintptr_t>(ev.user_ptr) - 1);
            EXPECT(to < acked.size() && !acked[to] && ev.mlength == sizeof(uint64_t));
            acked[to] = true;
            ++acks;
        } else {
            EXPECT(ev.type == PTL_EVENT_PUT);
            const auto from = static_cast<size_t>(ev.initiator.rank);
            EXPECT(from < put_from.size() && !put_from[from] && ev.hdr_data == from && ev.mlength == sizeof(uint64_t));
            EXPECT(inbox[from] == value_of(static_cast<int>(from), g_rank));
            put_from[from] = true;
            ++puts;
        }
    }
    ptl_event_t extra;
    EXPECT(PtlEQGet(eq, &extra) == PTL_EQ_EMPTY);
    ptl_sr_value_t refused = 0;
    CHECK(PtlNIStatus(ni, PTL_SR_REFUSED_CONNECTIONS, &refused));
    std::printf("DONE %d refused=%ld\n", g_rank, static_cast<long>(refused));
    std::fflush(stdout);
    CHECK(portico_runtime_barrier()); // nobody closes a link another still needs
    CHECK(PtlMDRelease(mdh));
    CHECK(PtlNIFini(ni));
    PtlFini();
    portico_runtime_finalize();
    return 0;
}
