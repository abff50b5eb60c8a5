// SPDX-License-Identifier: BSD-3-Clause
// A Portals process started on its own, without any launcher: it learns its peer's physical id
// from its standard input, the way existing Portals clients exchange ids out of band.
//   standalone_peer pingpong ROLE   exchange puts with the peer, check data and events
//   standalone_peer victim          set up, then wait to be killed
//   standalone_peer survivor        talk to a victim; see its death as failure events
//   standalone_peer guard R M       a target that must see at least R refused connections and M
//                                   malformed frames, and never a put
//   standalone_peer intruder        put to the peer; expect the put to fail (not let in)
//   standalone_peer atexit          a put to itself from an atexit handler (the engine must still
//                                   work while the process exits)
//   standalone_peer lostrank        a triggered put whose target rank leaves the map (PtlSetMap)
//                                   before it fires ends with failure events, not silently
//   standalone_peer rounds ROLE N   N put round trips with every event checked; then, told
//                                   "REFUSED k", waits until k connections have been refused
//   standalone_peer openpid P       opens a physical NI with pid P and prints "RC <code>" (the
//                                   engine's message on stderr says who holds a pid in use)
//   standalone_peer hold            opens a physical NI (PTL_PID_ANY), prints its ID, waits for BYE
#include <portals4.h>

#include <cinttypes>
#include <sched.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

[[noreturn]] void die(const char *what, int rc) {
    std::printf("FAIL %s rc=%d\n", what, rc);
    std::fflush(stdout);
    std::exit(1);
}
#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        int rc_ = (x);                                                                                                 \
        if (rc_ != PTL_OK) die(#x, rc_);                                                                               \
    } while (0)
#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) die(#cond, -1);                                                                                   \
    } while (0)

void say(const char *line) {
    std::printf("%s\n", line);
    std::fflush(stdout);
}

std::string hear() {
    char line[256];
    if (!std::fgets(line, sizeof line, stdin)) die("stdin closed", -1);
    line[std::strcspn(line, "\n")] = 0;
    return line;
}

constexpr ptl_pt_index_t kPt = 3;
constexpr ptl_match_bits_t kBits = 0x5ca1ab1e;

struct Node {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_process_t peer;
    std::vector<char> inbox = std::vector<char>(1 << 20);

    void open(bool with_me) {
        CHECK(PtlInit());
        CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr, nullptr, &ni));
        ptl_process_t me;
        CHECK(PtlGetPhysId(ni, &me));
        std::printf("ID %u %u\n", me.phys.nid, me.phys.pid);
        std::fflush(stdout);
        unsigned nid, pid;
        if (std::sscanf(hear().c_str(), "PEER %u %u", &nid, &pid) != 2) die("bad PEER line", -1);
        peer.phys.nid = nid;
        peer.phys.pid = pid;
        CHECK(PtlEQAlloc(ni, 256, &eq));
        if (!with_me) return;
        ptl_pt_index_t pt;
        CHECK(PtlPTAlloc(ni, 0, eq, kPt, &pt));
        ptl_me_t me_desc{};
        me_desc.start = inbox.data();
        me_desc.length = inbox.size();
        me_desc.ct_handle = PTL_CT_NONE;
        me_desc.uid = PTL_UID_ANY;
        me_desc.options = PTL_ME_OP_PUT | PTL_ME_OP_GET;
        me_desc.match_id = peer;
        me_desc.match_bits = kBits;
        ptl_handle_me_t h;
        CHECK(PtlMEAppend(ni, kPt, &me_desc, PTL_PRIORITY_LIST, nullptr, &h));
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev));
        EXPECT(ev.type == PTL_EVENT_LINK);
    }

    std::vector<ptl_event_t> early; // events that came before the one being waited for

    ptl_event_t wait_for(ptl_event_kind_t kind) {
        for (size_t i = 0; i < early.size(); ++i)
            if (early[i].type == kind) {
                ptl_event_t ev = early[i];
                early.erase(early.begin() + static_cast<long>(i));
                return ev;
            }
        for (;;) {
            ptl_event_t ev;
            CHECK(PtlEQWait(eq, &ev));
            if (ev.type == kind) return ev;
            EXPECT(ev.type == PTL_EVENT_SEND || ev.type == PTL_EVENT_ACK || ev.type == PTL_EVENT_PUT);
            EXPECT(ev.ni_fail_type == PTL_NI_OK);
            if (ev.type != PTL_EVENT_SEND) early.push_back(ev);
        }
    }
};

int pingpong(int role) {
    Node n;
    n.open(true);
    say("READY");
    EXPECT(hear() == "GO");
    std::vector<char> out(1 << 20);
    ptl_md_t md{out.data(), out.size(), 0, n.eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(n.ni, &md, &mdh));
    for (size_t len : {size_t{8}, size_t{4096}, size_t{300000}, size_t{1} << 20}) {
        for (size_t i = 0; i < len; ++i) out[i] = static_cast<char>(i * 31 + len + role);
        if (role == 0) {
            CHECK(PtlPut(mdh, 0, len, PTL_ACK_REQ, n.peer, kPt, kBits, 0, nullptr, len));
            ptl_event_t ack = n.wait_for(PTL_EVENT_ACK);
            EXPECT(ack.mlength == len && ack.ni_fail_type == PTL_NI_OK);
        }
        ptl_event_t put = n.wait_for(PTL_EVENT_PUT);
        EXPECT(put.mlength == len && put.hdr_data == len && put.initiator.phys.pid == n.peer.phys.pid);
        for (size_t i = 0; i < len; ++i) EXPECT(n.inbox[i] == static_cast<char>(i * 31 + len + (1 - role)));
        if (role == 1) {
            CHECK(PtlPut(mdh, 0, len, PTL_ACK_REQ, n.peer, kPt, kBits, 0, nullptr, len));
            ptl_event_t ack = n.wait_for(PTL_EVENT_ACK);
            EXPECT(ack.mlength == len && ack.ni_fail_type == PTL_NI_OK);
        }
    }
    say("DONE");
    EXPECT(hear() == "BYE"); // stay until the peer no longer needs us
    PtlFini();
    return 0;
}

ptl_sr_value_t status(ptl_handle_ni_t ni, ptl_sr_index_t reg);

int rounds(int role, long n_rounds) {
    Node n;
    n.open(true);
    say("READY");
    EXPECT(hear() == "GO");
    std::vector<char> out(8);
    ptl_md_t md{out.data(), out.size(), 0, n.eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(n.ni, &md, &mdh));
    long sends = 0, acks = 0, puts = 0;
    auto put = [&](long r) {
        std::memcpy(out.data(), &r, sizeof r);
        CHECK(PtlPut(mdh, 0, sizeof r, PTL_ACK_REQ, n.peer, kPt, kBits, 0, nullptr, static_cast<ptl_hdr_data_t>(r)));
    };
    // Every event is counted and checked; the PUT of round r must carry r.
    auto next_put = [&](long r) {
        for (;;) {
            ptl_event_t ev;
            CHECK(PtlEQWait(n.eq, &ev));
            EXPECT(ev.ni_fail_type == PTL_NI_OK);
            if (ev.type == PTL_EVENT_SEND) {
                ++sends;
            } else if (ev.type == PTL_EVENT_ACK) {
                EXPECT(ev.mlength == sizeof r);
                ++acks;
            } else {
                EXPECT(ev.type == PTL_EVENT_PUT);
                long got;
                std::memcpy(&got, n.inbox.data(), sizeof got);
                EXPECT(ev.hdr_data == static_cast<ptl_hdr_data_t>(r) && got == r);
                ++puts;
                return;
            }
        }
    };
    for (long r = 0; r < n_rounds; ++r) {
        if (role == 0) put(r);
        next_put(r);
        if (role == 1) put(r);
    }
    while (sends < n_rounds || acks < n_rounds) {
        ptl_event_t ev;
        CHECK(PtlEQWait(n.eq, &ev));
        EXPECT(ev.ni_fail_type == PTL_NI_OK && (ev.type == PTL_EVENT_SEND || ev.type == PTL_EVENT_ACK));
        ++(ev.type == PTL_EVENT_SEND ? sends : acks);
    }
    EXPECT(sends == n_rounds && acks == n_rounds && puts == n_rounds);
    ptl_event_t ev;
    EXPECT(PtlEQGet(n.eq, &ev) == PTL_EQ_EMPTY);
    say("DONE");
    long refused = -1;
    if (std::sscanf(hear().c_str(), "REFUSED %ld", &refused) != 1) die("bad REFUSED line", -1);
    // The test's deadline on our output bounds this loop.
    while (status(n.ni, PTL_SR_REFUSED_CONNECTIONS) < refused) sched_yield();
    say("OK");
    EXPECT(hear() == "BYE");
    PtlFini();
    return 0;
}

int victim() {
    Node n;
    n.open(false); // the test stops this process before the survivor's get arrives: never answered
    say("READY");
    for (;;) pause();
}

int survivor() {
    Node n;
    n.open(true);
    std::vector<char> buf(64);
    ptl_md_t md{buf.data(), buf.size(), 0, n.eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(n.ni, &md, &mdh));
    // The test stops the victim (SIGSTOP) before it says GO, so no reply ever comes, until the
    // victim dies: then the failure must be reported, not waited for forever. (A live victim
    // would answer PTL_NI_DROPPED: it has no portal entry.)
    EXPECT(hear() == "GO");
    CHECK(PtlGet(mdh, 0, 64, n.peer, kPt, kBits, 0, reinterpret_cast<void *>(1)));
    say("SENT");
    ptl_event_t ev;
    CHECK(PtlEQWait(n.eq, &ev));
    EXPECT(ev.type == PTL_EVENT_REPLY);
    EXPECT(ev.ni_fail_type == PTL_NI_UNDELIVERABLE);
    EXPECT(ev.user_ptr == reinterpret_cast<void *>(1));
    // A later put to the dead peer completes with failure events, never a hang. Its ACK must report
    // the failure; its SEND may be OK: the peer's exit closes the link before its listening socket,
    // so the put can still leave our buffer (SEND only says the buffer is free again, §3.13.3).
    CHECK(PtlPut(mdh, 0, 8, PTL_ACK_REQ, n.peer, kPt, kBits, 0, reinterpret_cast<void *>(2), 0));
    bool send = false, ack = false;
    while (!(send && ack)) {
        CHECK(PtlEQWait(n.eq, &ev));
        EXPECT(ev.user_ptr == reinterpret_cast<void *>(2));
        if (ev.type == PTL_EVENT_SEND) {
            EXPECT(ev.ni_fail_type == PTL_NI_OK || ev.ni_fail_type == PTL_NI_UNDELIVERABLE);
            send = true;
        } else {
            EXPECT(ev.type == PTL_EVENT_ACK);
            EXPECT(ev.ni_fail_type == PTL_NI_UNDELIVERABLE);
            ack = true;
        }
    }
    say("OK");
    PtlFini();
    return 0;
}

ptl_sr_value_t status(ptl_handle_ni_t ni, ptl_sr_index_t reg) {
    ptl_sr_value_t v = 0;
    CHECK(PtlNIStatus(ni, reg, &v));
    return v;
}

int guard(long refused, long malformed) {
    Node n;
    n.open(true);
    say("READY");
    // The test's deadline on our output bounds this loop.
    while (status(n.ni, PTL_SR_REFUSED_CONNECTIONS) < refused || status(n.ni, PTL_SR_MALFORMED_MESSAGES) < malformed)
        sched_yield();
    ptl_event_t ev;
    EXPECT(PtlEQGet(n.eq, &ev) == PTL_EQ_EMPTY); // nothing got through
    say("OK");
    EXPECT(hear() == "BYE");
    PtlFini();
    return 0;
}

int intruder() {
    Node n;
    n.open(false);
    std::vector<char> buf(8);
    ptl_md_t md{buf.data(), buf.size(), 0, n.eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(n.ni, &md, &mdh));
    CHECK(PtlPut(mdh, 0, 8, PTL_ACK_REQ, n.peer, kPt, kBits, 0, nullptr, 0));
    bool send = false, ack = false;
    while (!(send && ack)) {
        ptl_event_t ev;
        CHECK(PtlEQWait(n.eq, &ev));
        if (ev.type == PTL_EVENT_SEND) {
            send = true;
        } else {
            EXPECT(ev.type == PTL_EVENT_ACK);
            EXPECT(ev.ni_fail_type == PTL_NI_UNDELIVERABLE);
            ack = true;
        }
    }
    say("OK");
    PtlFini();
    return 0;
}

Node *g_exit_node = nullptr;

void put_at_exit() {
    Node &n = *g_exit_node;
    static char src[64] = "late";
    ptl_md_t md{src, sizeof src, 0, n.eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(n.ni, &md, &mdh));
    ptl_process_t me;
    CHECK(PtlGetPhysId(n.ni, &me));
    CHECK(PtlPut(mdh, 0, sizeof src, PTL_ACK_REQ, me, kPt, kBits, 0, nullptr, 0));
    bool put = false, ack = false;
    while (!(put && ack)) {
        ptl_event_t ev;
        CHECK(PtlEQWait(n.eq, &ev));
        EXPECT(ev.ni_fail_type == PTL_NI_OK);
        put = put || ev.type == PTL_EVENT_PUT;
        ack = ack || ev.type == PTL_EVENT_ACK;
    }
    EXPECT(std::strcmp(n.inbox.data(), "late") == 0);
    say("ATEXIT OK");
}

int at_exit() {
    g_exit_node = new Node;
    g_exit_node->open(true); // PEER line: the test gives our own id, the ME accepts only us
    std::atexit(put_at_exit);
    say("READY");
    return 0;
}

} // namespace

// No launcher, so the logical NI's map is ours to set (and to replace). A triggered put to rank 1
// is posted while rank 1 is in the map, then the map shrinks to rank 0 alone and the put fires:
// it cannot start, and must end like a put to an unreachable peer (SEND and ACK with
// PTL_NI_UNDELIVERABLE, one failure each on the MD's counter). A witness put to rank 0, posted
// after it on the same counter and threshold, fires after it (posting order, Note 16): its ACK
// is the point by which the failure events are due. No PEER line: only this process is involved.
int lost_rank() {
    CHECK(PtlInit());
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, nullptr, nullptr, &ni));
    ptl_process_t me;
    CHECK(PtlGetPhysId(ni, &me));
    ptl_process_t two[2] = {me, me};
    CHECK(PtlSetMap(ni, 2, two));
    ptl_handle_eq_t teq, meq;
    CHECK(PtlEQAlloc(ni, 64, &teq));
    CHECK(PtlEQAlloc(ni, 64, &meq));
    ptl_pt_index_t pt;
    CHECK(PtlPTAlloc(ni, 0, teq, kPt, &pt));
    static char inbox[64], src[16] = "witness";
    ptl_me_t me_desc{};
    me_desc.start = inbox;
    me_desc.length = sizeof inbox;
    me_desc.ct_handle = PTL_CT_NONE;
    me_desc.uid = PTL_UID_ANY;
    me_desc.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE;
    me_desc.match_id.rank = PTL_RANK_ANY;
    ptl_handle_me_t meh;
    CHECK(PtlMEAppend(ni, kPt, &me_desc, PTL_PRIORITY_LIST, nullptr, &meh));
    ptl_handle_ct_t trig, count;
    CHECK(PtlCTAlloc(ni, &trig));
    CHECK(PtlCTAlloc(ni, &count));
    ptl_md_t d{src, sizeof src, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK, meq, count};
    ptl_handle_md_t md;
    CHECK(PtlMDBind(ni, &d, &md));
    ptl_process_t lost{}, self{};
    lost.rank = 1;
    self.rank = 0;
    auto *kLost = reinterpret_cast<void *>(uintptr_t{1});
    auto *kWitness = reinterpret_cast<void *>(uintptr_t{2});
    CHECK(PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, lost, kPt, 0, 0, kLost, 0, trig, 1));
    CHECK(PtlTriggeredPut(md, 0, 8, PTL_ACK_REQ, self, kPt, 0, 0, kWitness, 0, trig, 1));
    CHECK(PtlSetMap(ni, 1, two));
    CHECK(PtlCTInc(trig, ptl_ct_event_t{1, 0}));
    bool lost_send = false, lost_ack = false;
    for (;;) {
        ptl_event_t ev;
        CHECK(PtlEQWait(meq, &ev));
        if (ev.user_ptr == kLost) {
            EXPECT(ev.ni_fail_type == PTL_NI_UNDELIVERABLE);
            EXPECT(ev.type == PTL_EVENT_SEND || ev.type == PTL_EVENT_ACK);
            (ev.type == PTL_EVENT_SEND ? lost_send : lost_ack) = true;
            continue;
        }
        EXPECT(ev.user_ptr == kWitness);
        EXPECT(ev.ni_fail_type == PTL_NI_OK);
        if (ev.type == PTL_EVENT_ACK) break;
    }
    EXPECT(lost_send && lost_ack);
    ptl_ct_event_t c;
    CHECK(PtlCTGet(count, &c));
    EXPECT(c.success == 2 && c.failure == 2);
    ptl_event_t ev;
    EXPECT(PtlEQGet(meq, &ev) == PTL_EQ_EMPTY);
    CHECK(PtlMDRelease(md)); // nothing left pending on it
    say("OK");
    CHECK(PtlNIFini(ni));
    PtlFini();
    return 0;
}

int open_pid(ptl_pid_t pid) {
    CHECK(PtlInit());
    ptl_handle_ni_t ni;
    const int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, pid, nullptr, nullptr, &ni);
    std::printf("RC %d\n", rc);
    std::fflush(stdout);
    PtlFini();
    return 0;
}

int hold() {
    CHECK(PtlInit());
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr, nullptr, &ni));
    ptl_process_t me;
    CHECK(PtlGetPhysId(ni, &me));
    std::printf("ID %u %u\n", me.phys.nid, me.phys.pid);
    std::fflush(stdout);
    EXPECT(hear() == "BYE");
    PtlFini();
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && std::string(argv[1]) == "openpid") return open_pid(static_cast<ptl_pid_t>(std::atol(argv[2])));
    if (argc >= 2 && std::string(argv[1]) == "hold") return hold();
    if (argc >= 3 && std::string(argv[1]) == "pingpong") return pingpong(std::atoi(argv[2]));
    if (argc >= 2 && std::string(argv[1]) == "victim") return victim();
    if (argc >= 2 && std::string(argv[1]) == "survivor") return survivor();
    if (argc >= 4 && std::string(argv[1]) == "guard") return guard(std::atol(argv[2]), std::atol(argv[3]));
    if (argc >= 2 && std::string(argv[1]) == "intruder") return intruder();
    if (argc >= 2 && std::string(argv[1]) == "atexit") return at_exit();
    if (argc >= 2 && std::string(argv[1]) == "lostrank") return lost_rank();
    if (argc >= 4 && std::string(argv[1]) == "rounds") return rounds(std::atoi(argv[2]), std::atol(argv[3]));
    std::fprintf(stderr,
                 "usage: %s pingpong 0|1 | victim | survivor | guard R M | intruder | atexit | lostrank | rounds R N "
                 "| openpid P | hold\n",
                 argv[0]);
    return 2;
}
