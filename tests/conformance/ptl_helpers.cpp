// SPDX-License-Identifier: BSD-3-Clause
#include "ptl_helpers.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <array>
#include <fstream>

#include <cstdio>
#include <cstring>

#include <sstream>

extern "C" char portico_test_wait_note[256]; // tests/support/mpjob.cpp

namespace ptltest {

namespace {
// Records "<what> at <file>:<line>" as this rank's wait note while a blocking call runs. Only the
// main thread writes it: the note is one buffer per process, read by the termination handler.
class BlockedAt {
public:
    BlockedAt(const char *what, const std::source_location &at) : mine_(gettid() == getpid()) {
        if (!mine_) return;
        const char *file = at.file_name();
        if (const char *slash = std::strrchr(file, '/')) file = slash + 1;
        std::snprintf(portico_test_wait_note, sizeof portico_test_wait_note, "%s at %s:%u", what, file,
                      static_cast<unsigned>(at.line()));
    }
    ~BlockedAt() {
        if (mine_) portico_test_wait_note[0] = '\0';
    }

private:
    bool mine_;
};
} // namespace

std::ostream &operator<<(std::ostream &os, Rc rc) { return os << rc_name(rc.v) << " (" << rc.v << ")"; }
std::ostream &operator<<(std::ostream &os, Kind k) { return os << event_name(k.v); }
std::ostream &operator<<(std::ostream &os, Fail f) { return os << fail_name(f.v); }
std::ostream &operator<<(std::ostream &os, Ct c) {
    return os << "{success=" << c.success << ", failure=" << c.failure << "}";
}
std::ostream &operator<<(std::ostream &os, const Sr &s) {
    return os << "{drop=" << s.drop << ", perm=" << s.perm << ", op=" << s.op << "}";
}

std::string ni_kind_name(unsigned options) {
    std::string s = (options & PTL_NI_MATCHING) ? "Matching" : "NonMatching";
    s += (options & PTL_NI_LOGICAL) ? "Logical" : "Physical";
    return s;
}

ptl_process_t Ni::id_of(int r) const {
    if (logical()) return portico::clientkit::rank_id(static_cast<ptl_rank_t>(r));
    return phys.at(static_cast<size_t>(r));
}

std::string process_str(const ptl_process_t &p, bool logical) {
    if (logical) return "rank " + std::to_string(p.rank);
    return "nid " + std::to_string(p.phys.nid) + " pid " + std::to_string(p.phys.pid);
}

namespace {
std::vector<ptl_handle_ni_t> g_open_nis; // opened by open_ni() in the running test
} // namespace

void close_ni(Ni &ni) {
    for (auto it = g_open_nis.begin(); it != g_open_nis.end(); ++it) {
        if (*it == ni.h) {
            g_open_nis.erase(it);
            break;
        }
    }
    EXPECT_PTL(PtlNIFini(ni.h));
    ni.h = PTL_INVALID_HANDLE;
}

Ni open_ni(unsigned options, const ptl_ni_limits_t *desired) {
    Ni ni;
    ni.options = options;
    EXPECT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, options, PTL_PID_ANY, desired, &ni.limits, &ni.h));
    ptl_process_t me;
    std::memset(&me, 0, sizeof me);
    EXPECT_PTL(PtlGetPhysId(ni.h, &me));
    ptl_uid_t uid = 0;
    EXPECT_PTL(PtlGetUid(ni.h, &uid));
    ni.phys = job().allgather_pod(me);
    ni.uids = job().allgather_pod(uid);
    g_open_nis.push_back(ni.h);
    return ni;
}

ptl_handle_eq_t make_eq(const Ni &ni, ptl_size_t count) {
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    EXPECT_PTL(PtlEQAlloc(ni.h, count, &eq));
    return eq;
}

ptl_handle_ct_t make_ct(const Ni &ni) {
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    EXPECT_PTL(PtlCTAlloc(ni.h, &ct));
    return ct;
}

ptl_pt_index_t make_pt(const Ni &ni, ptl_handle_eq_t eq, unsigned options, ptl_pt_index_t req) {
    ptl_pt_index_t pt = PTL_PT_ANY;
    EXPECT_PTL(PtlPTAlloc(ni.h, options, eq, req, &pt));
    if (req != PTL_PT_ANY) {
        EXPECT_EQ(req, pt);
    }
    return pt;
}

ptl_handle_md_t bind_md(const Ni &ni, void *start, ptl_size_t length, ptl_handle_eq_t eq, ptl_handle_ct_t ct,
                        unsigned options) {
    const ptl_md_t md = portico::clientkit::md_desc(start, length, options, eq, ct);
    ptl_handle_md_t h = PTL_INVALID_HANDLE;
    EXPECT_PTL(PtlMDBind(ni.h, &md, &h));
    return h;
}

void check_entry_event(const ptl_event_t &ev, ptl_event_kind_t type, ptl_pt_index_t pt, const void *user_ptr) {
    EXPECT_EQ(Kind{type}, Kind{ev.type}) << describe(ev);
    EXPECT_EQ(pt, ev.pt_index) << describe(ev);
    EXPECT_EQ(user_ptr, ev.user_ptr) << describe(ev);
    EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
}

ptl_handle_me_t append_me(const Ni &ni, ptl_pt_index_t pt, const ptl_me_t &me, ptl_list_t list, void *user_ptr,
                          ptl_handle_eq_t eq) {
    ptl_handle_me_t h = PTL_INVALID_HANDLE;
    EXPECT_PTL(PtlMEAppend(ni.h, pt, &me, list, user_ptr, &h));
    if (!(me.options & PTL_ME_EVENT_LINK_DISABLE) && eq != PTL_EQ_NONE)
        check_entry_event(wait_event(eq), PTL_EVENT_LINK, pt, user_ptr);
    return h;
}

ptl_handle_le_t append_le(const Ni &ni, ptl_pt_index_t pt, const ptl_le_t &le, ptl_list_t list, void *user_ptr,
                          ptl_handle_eq_t eq) {
    ptl_handle_le_t h = PTL_INVALID_HANDLE;
    EXPECT_PTL(PtlLEAppend(ni.h, pt, &le, list, user_ptr, &h));
    if (!(le.options & PTL_LE_EVENT_LINK_DISABLE) && eq != PTL_EQ_NONE)
        check_entry_event(wait_event(eq), PTL_EVENT_LINK, pt, user_ptr);
    return h;
}

ptl_handle_any_t append_entry(const Ni &ni, ptl_pt_index_t pt, const ptl_me_t &me, ptl_list_t list, void *user_ptr,
                              ptl_handle_eq_t eq) {
    if (ni.matching()) return append_me(ni, pt, me, list, user_ptr, eq);
    ptl_le_t le = le_desc(me.start, me.length, me.options, me.ct_handle);
    le.uid = me.uid;
    return append_le(ni, pt, le, list, user_ptr, eq);
}

int unlink_entry(const Ni &ni, ptl_handle_any_t h) { return ni.matching() ? PtlMEUnlink(h) : PtlLEUnlink(h); }

ptl_event_t wait_event(ptl_handle_eq_t eq, std::source_location at) {
    ptl_event_t ev;
    std::memset(&ev, 0, sizeof ev);
    int rc;
    {
        BlockedAt note("PtlEQWait", at);
        rc = PtlEQWait(eq, &ev);
    }
    EXPECT_RC(PTL_OK, rc) << " (called at " << at.file_name() << ":" << at.line() << "; event: " << describe(ev) << ")";
    return ev;
}

ptl_event_t expect_event(ptl_handle_eq_t eq, ptl_event_kind_t kind, std::source_location at) {
    ptl_event_t ev = wait_event(eq, at);
    EXPECT_EQ(Kind{kind}, Kind{ev.type}) << describe(ev) << " (called at " << at.file_name() << ":" << at.line() << ")";
    return ev;
}

std::vector<ptl_event_t> wait_events(ptl_handle_eq_t eq, size_t n, std::source_location at) {
    std::vector<ptl_event_t> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(wait_event(eq, at));
    return out;
}

void expect_eq_empty(ptl_handle_eq_t eq, const char *what) {
    ptl_event_t ev;
    std::memset(&ev, 0, sizeof ev);
    const int rc = PtlEQGet(eq, &ev);
    EXPECT_EQ(Rc{PTL_EQ_EMPTY}, Rc{rc}) << "unexpected event " << what << ": " << describe(ev);
}

void check_target_event(const ptl_event_t &ev, const TargetEv &want, const Ni &ni) {
    const std::string d = describe(ev);
    EXPECT_EQ(Kind{want.type}, Kind{ev.type}) << d;
    EXPECT_EQ(Fail{want.fail}, Fail{ev.ni_fail_type}) << d;
    EXPECT_TRUE(same_process(ni.id_of(want.initiator), ev.initiator, ni.logical()))
        << "initiator: expected " << process_str(ni.id_of(want.initiator), ni.logical()) << "; " << d;
    EXPECT_EQ(want.pt_index, ev.pt_index) << d;
    EXPECT_EQ(ni.uids.at(static_cast<size_t>(want.initiator)), ev.uid) << "uid; " << d;
    EXPECT_EQ(ni.matching() ? want.match_bits : 0, ev.match_bits) << "match_bits; " << d;
    EXPECT_EQ(want.mlength, ev.mlength) << "mlength; " << d;
    EXPECT_EQ(want.start, ev.start) << "start; " << d;
    EXPECT_EQ(want.user_ptr, ev.user_ptr) << "user_ptr; " << d;
    if (want.fail == PTL_NI_OK) { // rlength and remote_offset are defined on success only
        EXPECT_EQ(want.rlength, ev.rlength) << "rlength; " << d;
        EXPECT_EQ(want.remote_offset, ev.remote_offset) << "remote_offset; " << d;
    }
    if (want.hdr_data) {
        EXPECT_EQ(*want.hdr_data, ev.hdr_data) << "hdr_data; " << d;
    }
}

void check_init_event(const ptl_event_t &ev, const InitEv &want) {
    const std::string d = describe(ev);
    EXPECT_EQ(Kind{want.type}, Kind{ev.type}) << d;
    EXPECT_EQ(want.user_ptr, ev.user_ptr) << "user_ptr; " << d;
    EXPECT_EQ(Fail{want.fail}, Fail{ev.ni_fail_type}) << d;
    if (want.fail != PTL_NI_OK) return; // the remaining fields are defined on success only
    if (want.mlength) {
        EXPECT_EQ(*want.mlength, ev.mlength) << "mlength; " << d;
    }
    if (want.remote_offset) {
        EXPECT_EQ(*want.remote_offset, ev.remote_offset) << "remote_offset; " << d;
    }
    if (want.list) {
        EXPECT_EQ(static_cast<int>(*want.list), static_cast<int>(ev.ptl_list)) << "ptl_list; " << d;
    }
}

void expect_send_and_ack(ptl_handle_eq_t eq, const void *user_ptr, ptl_size_t length, ptl_size_t mlength,
                         ptl_size_t remote_offset, ptl_list_t list, std::source_location at) {
    bool send = false, ack = false;
    while (!send || !ack) {
        ptl_event_t ev = wait_event(eq, at);
        if (ev.type == PTL_EVENT_SEND && !send) {
            send = true;
            check_init_event(ev, {.type = PTL_EVENT_SEND, .user_ptr = user_ptr, .mlength = length});
        } else if (ev.type == PTL_EVENT_ACK && !ack) {
            ack = true;
            check_init_event(ev, {.type = PTL_EVENT_ACK,
                                  .user_ptr = user_ptr,
                                  .mlength = mlength,
                                  .remote_offset = remote_offset,
                                  .list = list});
        } else {
            ADD_FAILURE() << "expected SEND and ACK, got " << describe(ev);
            return;
        }
    }
}

void expect_send_and_failed_ack(ptl_handle_eq_t eq, const void *user_ptr, ptl_size_t length, ptl_ni_fail_t fail,
                                std::source_location at) {
    bool send = false, ack = false;
    while (!send || !ack) {
        ptl_event_t ev = wait_event(eq, at);
        if (ev.type == PTL_EVENT_SEND && !send) {
            send = true;
            check_init_event(ev, {.type = PTL_EVENT_SEND, .user_ptr = user_ptr, .mlength = length});
        } else if (ev.type == PTL_EVENT_ACK && !ack) {
            ack = true;
            check_init_event(ev, {.type = PTL_EVENT_ACK, .user_ptr = user_ptr, .fail = fail});
        } else {
            ADD_FAILURE() << "expected SEND and ACK, got " << describe(ev);
            return;
        }
    }
}

Sender::Sender(const Ni &n, size_t size, uint32_t seed, int target_rank) : ni(n), target(target_rank), src(size) {
    fill_pattern(src.data(), src.size(), seed);
    eq = make_eq(ni);
    md = bind_md(ni, src.data(), src.size(), eq);
}

void Sender::put(ptl_pt_index_t pt, ptl_size_t len, ptl_match_bits_t bits, ptl_size_t roff, ptl_hdr_data_t hdr,
                 ptl_size_t mlength, ptl_size_t used_offset, ptl_list_t list, ptl_size_t local_offset,
                 std::source_location at) {
    EXPECT_PTL(PtlPut(md, local_offset, len, PTL_ACK_REQ, ni.id_of(target), pt, bits, roff, tag(hdr), hdr));
    expect_send_and_ack(eq, tag(hdr), len, mlength, used_offset, list, at);
}

Sr read_sr(const Ni &ni) {
    Sr s;
    EXPECT_PTL(PtlNIStatus(ni.h, PTL_SR_DROP_COUNT, &s.drop));
    EXPECT_PTL(PtlNIStatus(ni.h, PTL_SR_PERMISSION_VIOLATIONS, &s.perm));
    EXPECT_PTL(PtlNIStatus(ni.h, PTL_SR_OPERATION_VIOLATIONS, &s.op));
    return s;
}

Ct ct_get(ptl_handle_ct_t ct) {
    ptl_ct_event_t e{};
    EXPECT_PTL(PtlCTGet(ct, &e));
    return ct_of(e);
}

Ct ct_wait(ptl_handle_ct_t ct, ptl_size_t test, std::source_location at) {
    ptl_ct_event_t e{};
    int rc;
    {
        BlockedAt note("PtlCTWait", at);
        rc = PtlCTWait(ct, test, &e);
    }
    EXPECT_RC(PTL_OK, rc) << " (called at " << at.file_name() << ":" << at.line() << ")";
    return ct_of(e);
}

Ct ct_reach(ptl_handle_ct_t ct, Ct want, std::source_location at) {
    if (want.failure == 0) return ct_wait(ct, want.success, at);
    BlockedAt note("a counter poll", at);
    for (;;) {
        const Ct now = ct_get(ct);
        if (now.success >= want.success && now.failure >= want.failure) return now;
        sched_yield();
    }
}

void fill_pattern(void *buf, size_t n, uint32_t seed, uint64_t first_index) {
    auto *p = static_cast<uint8_t *>(buf);
    for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(seed, first_index + i);
}

long check_pattern(const void *buf, size_t n, uint32_t seed, uint64_t first_index) {
    const auto *p = static_cast<const uint8_t *>(buf);
    for (size_t i = 0; i < n; ++i)
        if (p[i] != pattern_byte(seed, first_index + i)) return static_cast<long>(i);
    return -1;
}

long check_fill(const void *buf, size_t n, uint8_t value) {
    const auto *p = static_cast<const uint8_t *>(buf);
    for (size_t i = 0; i < n; ++i)
        if (p[i] != value) return static_cast<long>(i);
    return -1;
}

void PtlTest::SetUp() {
    static const int process_reference = PtlInit(); // never released, see the header
    ASSERT_PTL(process_reference);
    ASSERT_PTL(PtlInit());
}

void PtlTest::TearDown() {
    // Nobody tears down while a peer may still talk to it.
    barrier();
    while (!g_open_nis.empty()) {
        EXPECT_PTL(PtlNIFini(g_open_nis.back())) << "closing an NI left open by the test";
        g_open_nis.pop_back();
    }
    PtlFini();
}

void wait_until_stopped(pid_t pid) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    for (;;) {
        bool all_stopped = true;
        DIR *d = opendir(dir.c_str());
        ASSERT_NE(nullptr, d) << dir;
        while (dirent *e = readdir(d)) {
            if (e->d_name[0] == '.') continue;
            std::ifstream stat(dir + "/" + e->d_name + "/stat");
            std::string line;
            std::getline(stat, line);
            const size_t paren = line.rfind(')');
            if (paren == std::string::npos || paren + 2 >= line.size()) continue; // the thread just exited
            const char state = line[paren + 2];
            if (state != 'T' && state != 't') all_stopped = false;
        }
        closedir(d);
        if (all_stopped) return;
        sched_yield();
    }
}

bool same_host() {
    std::array<char, 256> host{};
    gethostname(host.data(), host.size() - 1);
    for (const auto &h : job().allgather_pod(host))
        if (h != host) return false;
    return true;
}

} // namespace ptltest
