// SPDX-License-Identifier: BSD-3-Clause
// Job control (init, attach, exit), the job environment, errors, NIS and HSLs.
#include <gasnet_tools.h>
#include <portico_ext.h>
#include <portico_runtime.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <thread>
#include <unistd.h>
#include <sys/mman.h>

#include "internal.hpp"
#include "common/log.hpp"
#include "gasnet_settings.hpp"
#include "sizing.hpp"

namespace gasnetp {

State *state = nullptr;

namespace {
// The configuration strings of every mode this library serves, for scanning the binary (§1.8).
// One line per segment mode: clang-format would scatter them.
// clang-format off
#define GASNETP_CFG(T, S)                                                                           \
    "$GASNetConfig: RELEASE=1.8.1,SPEC=1.8,CONDUIT=PORTICO(PORTALS4),THREADMODEL=" T ",SEGMENT=" S \
    ",PTR=64bit,nodebug,notrace,nostats $"
[[gnu::used]] const char kConfigStrings[] =
    GASNETP_CFG("SEQ", "FAST") "\n" GASNETP_CFG("PARSYNC", "FAST") "\n" GASNETP_CFG("PAR", "FAST") "\n"
    GASNETP_CFG("SEQ", "LARGE") "\n" GASNETP_CFG("PARSYNC", "LARGE") "\n" GASNETP_CFG("PAR", "LARGE") "\n"
    GASNETP_CFG("SEQ", "EVERYTHING") "\n" GASNETP_CFG("PARSYNC", "EVERYTHING") "\n" GASNETP_CFG("PAR", "EVERYTHING");
#undef GASNETP_CFG
// clang-format on

// Fixed portal table indices: every node must use the same ones.
constexpr ptl_pt_index_t kPtReq = 40, kPtRep = 41, kPtCtrl = 42, kPtSeg = 43, kPtExit = 44, kPtPull = 45;

std::thread *exit_watcher = nullptr;
std::atomic<bool> watcher_stop{false};
thread_local bool t_is_exit_watcher = false;
} // namespace

void fatal(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    // The spec: fatal errors end the job with SIGABRT (gasnett_fatalerror aborts; the launcher
    // then ends the other ranks).
    std::signal(SIGABRT, SIG_DFL);
    if (state && state->inited) gasnett_fatalerror("GASNet (node %u): %s", state->mynode, msg);
    gasnett_fatalerror("GASNet: %s", msg);
}

namespace {
void print_report(const char *msg) { log_error("%s", msg); }
} // namespace

// At most 20 explanations per process (docs/GASNET.md), then one line saying so.
void report(const char *fmt, ...) {
    static std::atomic<int> count{0};
    const int n = count.fetch_add(1);
    if (n > 20) return;
    if (n == 20) {
        print_report("(further error explanations suppressed)");
        return;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_report(msg);
}

void check_ptl(int rc, const char *what) {
    if (rc != PTL_OK) fatal("%s", ck::failure(rc, what).c_str());
}

void append_me(ptl_pt_index_t pt, const ptl_me_t &me, const char *what, void *user_ptr) {
    ptl_handle_me_t h;
    check_ptl(PtlMEAppend(state->ni, pt, &me, PTL_PRIORITY_LIST, user_ptr, &h), what);
}

// ---- the bootstrap exchange ------------------------------------------------------------------------
// Portico's job service (portico_runtime.h) is the one allgather every client uses.
void exchange(const void *mine, size_t len, void *all) {
    const int rc = portico_runtime_allgather(mine, len, all);
    if (rc == PTL_OK || rc == PTL_IGNORED) return;
    // A node that calls gasnet_exit during a collective exchange (between init and attach) leaves
    // the job; a PMIx launcher then fails the others' exchange at once. They follow its exit.
    if (exit_under_way(true)) follow_exit();
    fatal("the job's allgather failed: %s", ptl_rc_name(rc));
}

namespace {

// ---- exit ------------------------------------------------------------------------------------------
// Flush stdout and stderr without risking a deadlock on a stream another thread holds (the
// exit watcher and SIGQUIT paths may interrupt anything).
void flush_std_streams_nonblocking() {
    for (FILE *f : {stdout, stderr})
        if (ftrylockfile(f) == 0) {
            fflush_unlocked(f);
            funlockfile(f);
        }
}

// Tells every other node to exit with code; waits (bounded) for the acks so that the messages
// have left this process before it goes.
void notify_peers_of_exit(int code) {
    if (!state || !state->inited || state->nodes == 1) return;
    static int64_t value; // read by the volatile MD at once
    value = code;
    gasnet_node_t sent = 0;
    for (gasnet_node_t p = 0; p < state->nodes; ++p) {
        if (p == state->mynode) continue;
        if (PtlPut(state->md_exit, reinterpret_cast<uint64_t>(&value), sizeof value, PTL_CT_ACK_REQ, proc(p),
                   state->pt_exit, 0, uint64_t(state->mynode) * sizeof(int64_t), nullptr, 0) == PTL_OK)
            ++sent;
    }
    const gasnett_tick_t deadline = gasnett_ticks_now() + gasnett_tick_t(state->exit_timeout_s * 1e9);
    for (;;) {
        ptl_ct_event_t ce{};
        PtlCTGet(state->ct_exit, &ce);
        if (ce.success + ce.failure >= sent || gasnett_ticks_now() >= deadline) break;
        unsigned which;
        const ptl_size_t test = sent;
        if (ce.failure == 0)
            PtlCTPoll(&state->ct_exit, &test, 1, 10, &ce, &which);
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(1)); // a failed ack makes CTPoll return at once
    }
}

// The exit watcher sleeps until a message reaches the exit entry. This node's own empty message
// to itself only wakes it: to stop, or to act on an exit message another thread took.
void wake_exit_watcher() {
    PtlPut(state->md_quiet, 0, 0, PTL_NO_ACK_REQ, proc(state->mynode), state->pt_exit, 0, 0, nullptr, 0);
}

// Moves an exit message into state->remote_code (the first one decides).
void take_exit_message(const ptl_event_t &ev) {
    if (ev.type != PTL_EVENT_PUT || ev.initiator.rank == state->mynode || ev.mlength < sizeof(int64_t)) return;
    int64_t code;
    std::memcpy(&code, ev.start, sizeof code);
    int64_t none = State::kNoExit;
    if (state->remote_code.compare_exchange_strong(none, int64_t(int(code))) && !t_is_exit_watcher) wake_exit_watcher();
}

// Takes the exit messages that have arrived. Called by any thread that needs to know whether an
// exit is under way.
void take_exit_messages() {
    for (;;) {
        ptl_event_t ev;
        const int rc = PtlEQGet(state->eq_exit, &ev);
        if (rc != PTL_OK && rc != PTL_EQ_DROPPED) return;
        take_exit_message(ev);
    }
}

// The code this node ends with once it follows another node's exit, else the code it chose.
int code_to_exit_with(int own) {
    const int64_t c = state->remote_code.load();
    return c == State::kNoExit ? own : int(c);
}

bool client_handles_sigquit() {
    struct sigaction sa;
    if (sigaction(SIGQUIT, nullptr, &sa) != 0) return false;
    if (sa.sa_flags & SA_SIGINFO) return true;
    return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

// Ends this node, which follows another node's exit (whose code decides), leaving the job first
// (portico_runtime_exit): launchers such as hydra and Open MPI's mpirun kill a job one of whose
// ranks ends without leaving. From the client's SIGQUIT handler (gasnet_exit or exit called there)
// the exit watcher ends the process instead, since the handler's thread may have been interrupted
// holding anything and leaving the launcher is not async-signal-safe; the handler's thread waits.
[[noreturn]] void end_following(int own) {
    const int code = code_to_exit_with(own);
    flush_std_streams_nonblocking();
    if (state->in_sigquit.load() && pthread_equal(pthread_self(), state->init_thread)) {
        state->handler_exits.store(true);
        for (;;) pause();
    }
    portico_runtime_exit(code);
}

// This node follows another node's exit, which that node announced to every node itself.
void remote_exit(int code) {
    if (state->exit_started.load()) return; // our own gasnet_exit is under way and ends the process
    // GASNet raises SIGQUIT on a remote exit so that a client may shut down; its handler is
    // expected to call gasnet_exit, which ends the process with the exiting node's code. Without
    // a client handler, or if the handler does not exit in time, exit at once with that code.
    if (client_handles_sigquit() && !state->in_sigquit.exchange(true)) {
        pthread_kill(state->init_thread, SIGQUIT);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(state->exit_timeout_s);
        while (!state->handler_exits.load() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    flush_std_streams_nonblocking();
    portico_runtime_exit(code);
}

// The exit watcher: a thread of the library's own that notices an exit message even while every
// client thread computes. It sleeps passively (portico_eq_poll_passive): a waiting thread that
// polled would scan every link of the process and keep the engine's progress thread from resting
// (docs/GASNET.md, "Exit").
void exit_watcher_main() {
    t_is_exit_watcher = true;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    for (;;) {
        // Another thread may have taken the message (exit_under_way): remote_code is what counts.
        const int64_t code = state->remote_code.load();
        if (code != State::kNoExit) remote_exit(static_cast<int>(code)); // returns if we exit ourselves
        if (watcher_stop.load(std::memory_order_acquire)) return;
        ptl_event_t ev;
        const int rc = portico_eq_poll_passive(&state->eq_exit, 1, PTL_TIME_FOREVER, &ev, nullptr);
        if (rc == PTL_OK || rc == PTL_EQ_DROPPED)
            take_exit_message(ev);
        else
            return; // the NI is gone (PtlAbort): nothing more can arrive
    }
}

// main returned (or exit was called) without gasnet_exit: end the job as GASNet does, with the
// code main returned, and leave this process's own exit status alone, unless this node is
// following another node's exit (say, the client's SIGQUIT handler called exit): then it ends
// with that node's code, as gasnet_exit would. The messages go from a fresh thread, so that no
// Portals call depends on this thread's thread-local objects, which glibc has destroyed by now.
void at_exit_hook(int status) {
    if (!state || !state->inited) return;
    take_exit_messages();
    if (state->remote_code.load() != State::kNoExit) end_following(status);
    if (state->exit_started.exchange(true)) return;
    std::thread notifier(notify_peers_of_exit, status);
    notifier.join();
    watcher_stop.store(true);
    wake_exit_watcher();
    if (exit_watcher && exit_watcher->joinable()) exit_watcher->join();
    // Status 0: the exit goes on and leaves the job at its end. Any other status ends the job
    // with that code, as gasnet_exit does, and every node has been told: this node leaves the job
    // and ends now (the exit handlers registered before gasnet_init do not run, as with
    // gasnet_exit), or a launcher that takes an exit without leaving for a failure would kill the
    // others before they end with the code.
    if (status != 0) {
        std::fflush(nullptr);
        portico_runtime_exit(status);
    }
}

#ifdef __GLIBC__
void on_exit_hook(int status, void *) { at_exit_hook(status); }
#else
void atexit_hook() { at_exit_hook(0); } // without on_exit the status is unknown: the others end with 0
#endif

} // namespace

bool exit_under_way(bool wait) {
    if (!state || !state->inited) return false;
    const gasnett_tick_t deadline = gasnett_ticks_now() + gasnett_tick_t(state->exit_timeout_s * 1e9);
    for (;;) {
        take_exit_messages();
        if (state->exit_started.load() || state->remote_code.load() != State::kNoExit) return true;
        // The exiting node's message is acknowledged before it leaves, so it is normally here
        // before any failure its departure causes; the wait covers a transport that reports the
        // broken link before the last messages on it.
        if (!wait || gasnett_ticks_now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void follow_exit() {
    // The exit watcher ends the process (after the client's SIGQUIT handler, which may run on
    // this very thread); it needs nothing this thread holds.
    for (;;) pause();
}

namespace {

// ---- segments ----------------------------------------------------------------------------------------
uint64_t local_processes() {
    // The nodes on our nid, from exchange_hosts_and_environment (every launcher's count agrees with
    // it, and a job started without one is a node alone).
    if (state->hosts.empty()) return 1;
    return uint64_t(std::count(state->hosts.begin(), state->hosts.end(), state->hosts[state->mynode]));
}

// GASNET_MAX_SEGSIZE: "<size>[K|M|G|T][B]" or a fraction of physical memory ("0.5"), optionally
// followed by "/H" (divided among the processes of this host).
uintptr_t compute_max_local() {
    if (state->seg_mode == 2) return ~uintptr_t{0};
    const uint64_t phys = gasnett_getPhysMemSz(0);
    const uint64_t procs = local_processes();
    const uint64_t page = GASNET_PAGESIZE;
    uint64_t v;
    settings::MaxSegsize max;
    if (settings::parse_max_segsize(settings::kGasnetMaxSegsize.get().c_str(), &max).empty() &&
        settings::kGasnetMaxSegsize.is_set()) {
        v = max.fraction ? uint64_t(max.of_memory * double(phys)) : max.bytes;
        if (max.per_host) v /= procs;
    } else {
        v = uint64_t(0.85 * double(phys)) / procs;
    }
    if (state->seg_mode == 0) v = std::min(v, phys); // FAST: never beyond physical memory
    v &= ~(page - 1);
    return uintptr_t(v);
}

void post_segment_entry() {
    const bool everything = state->seg_mode == 2;
    append_me(state->pt_seg,
              ck::me_desc(everything ? nullptr : state->seg_base, everything ? PTL_SIZE_MAX : state->seg_size,
                          PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                              PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE),
              "PtlMEAppend (segment)");
}

void alloc_pt(ptl_handle_eq_t eq, ptl_pt_index_t want, ptl_pt_index_t *out) {
    const int rc = PtlPTAlloc(state->ni, 0, eq, want, out);
    if (rc != PTL_OK)
        fatal("PtlPTAlloc(%u) failed: %s (is another Portals client using this logical NI?)", want, ptl_rc_name(rc));
}

ptl_handle_md_t bind_md(unsigned options, ptl_handle_eq_t eq, ptl_handle_ct_t ct) {
    const ptl_md_t md = ck::whole_memory_md(options, eq, ct);
    ptl_handle_md_t h;
    check_ptl(PtlMDBind(state->ni, &md, &h), "PtlMDBind");
    return h;
}

// How long a waiting thread polls the network before it sleeps (the engine's
// PORTICO_WAIT_SPIN_US, set through portico_set_wait_spin_us: a setenv would leak into the
// application's children). Sleeping costs two thread wake-ups on the next
// message, which keeps both sides of an exchange above the engine's default spin (100 us) once a
// hiccup pushed them there (docs/GASNET.md, "Engine findings"); so when this host's processes
// fit on its CPUs, GASNet waits spin 200 us. With more processes than CPUs the default stays:
// spinning then takes the CPU from the process being waited for. GASNET_WAIT_MODE=SPIN spins
// 1 ms, BLOCK keeps the default; an explicit PORTICO_WAIT_SPIN_US always wins (the engine
// ignores the call then).
int choose_wait_mode() {
    const std::string m = settings::kGasnetWaitMode.get();
    const int mode = m == "SPIN" ? GASNET_WAIT_SPIN : m == "BLOCK" ? GASNET_WAIT_BLOCK : GASNET_WAIT_SPINBLOCK;
    const uint64_t local = local_processes();
    const unsigned us = mode == GASNET_WAIT_SPIN                                                  ? 1000
                        : mode == GASNET_WAIT_SPINBLOCK && local <= uint64_t(gasnett_cpu_count()) ? 200
                                                                                                  : 0;
    if (us) portico_set_wait_spin_us(us);
    return mode;
}

// Opens the logical NI and learns this node's rank and the job's size. Without a launcher the
// NI has no map: the job is this process alone.
int open_ni() {
    const int nrc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, nullptr, &state->limits,
                              &state->ni);
    if (nrc != PTL_OK) {
        report("PtlNIInit failed: %s", ptl_rc_name(nrc));
        return GASNET_ERR_RESOURCE;
    }
    ptl_size_t nmap = 0;
    if (PtlGetMap(state->ni, 0, nullptr, &nmap) == PTL_IGNORED) {
        ptl_process_t self;
        check_ptl(PtlGetPhysId(state->ni, &self), "PtlGetPhysId");
        check_ptl(PtlSetMap(state->ni, 1, &self), "PtlSetMap");
        nmap = 1;
    }
    ptl_process_t id;
    check_ptl(PtlGetId(state->ni, &id), "PtlGetId");
    state->mynode = id.rank;
    portico::set_log_rank(static_cast<int>(id.rank));
    state->nodes = gasnet_node_t(nmap);
    if (state->nodes > GASNET_MAXNODES) {
        report("%u nodes, more than GASNET_MAXNODES (%d)", state->nodes, GASNET_MAXNODES);
        return GASNET_ERR_RESOURCE;
    }
    return GASNET_OK;
}

// Event queues, portal table entries and MDs. The AM entries get their buffers at attach, when
// the client's handlers are known; the indices are fixed because every node must use the same.
void alloc_queues_and_entries() {
    state->eq_ops_size = settings::kGasnetOpsEqSize.get();
    check_ptl(PtlEQAlloc(state->ni, state->eq_ops_size, &state->eq_ops), "PtlEQAlloc");
    check_ptl(PtlEQAlloc(state->ni, uint64_t(state->nodes) + 16, &state->eq_exit), "PtlEQAlloc");
    // Credit per peer: the zone a class keeps (every message all senders may still send) stays
    // at GASNET_AM_ZONE_BYTES whatever the number of nodes, unless GASNET_AM_CREDIT_BYTES says
    // otherwise (sizing.hpp).
    state->credit_bytes = uint32_t(
        sizing::credit_bytes(state->nodes, settings::kGasnetAmZoneBytes.get(), settings::kGasnetAmCreditBytes.get()));
    state->eager_max = uint32_t(sizing::eager_bytes(state->credit_bytes));
    // The queues are sized for every event the credits allow; the engine allocates only what is
    // pending at once.
    const uint64_t am_events = uint64_t(state->nodes) * (state->credit_bytes / kMinCharge) + 4096;
    for (int c = 0; c < 2; ++c) {
        check_ptl(PtlEQAlloc(state->ni, std::min<uint64_t>(am_events + (c == kRep ? 4 * state->nodes : 0), 1u << 26),
                             &state->zones[c].eq),
                  "PtlEQAlloc");
        state->zones[c].cls = c;
    }
    alloc_pt(state->zones[kReq].eq, kPtReq, &state->zones[kReq].pt);
    alloc_pt(state->zones[kRep].eq, kPtRep, &state->zones[kRep].pt);
    alloc_pt(state->zones[kRep].eq, kPtCtrl, &state->pt_ctrl); // control events wake reply pollers
    alloc_pt(PTL_EQ_NONE, kPtSeg, &state->pt_seg);
    alloc_pt(state->eq_exit, kPtExit, &state->pt_exit);
    alloc_pt(state->eq_ops, kPtPull, &state->pt_pull); // GET events of pulled Mediums complete their sends

    state->md_vol = bind_md(PTL_MD_VOLATILE | PTL_MD_EVENT_SEND_DISABLE, state->eq_ops, PTL_CT_NONE);
    state->md_quiet = bind_md(PTL_MD_VOLATILE, PTL_EQ_NONE, PTL_CT_NONE);
    state->md_send = bind_md(0, state->eq_ops, PTL_CT_NONE);
    state->md_bulk = bind_md(PTL_MD_EVENT_SEND_DISABLE, state->eq_ops, PTL_CT_NONE);
    check_ptl(PtlCTAlloc(state->ni, &state->ct_exit), "PtlCTAlloc");
    state->md_exit =
        bind_md(PTL_MD_VOLATILE | PTL_MD_EVENT_SEND_DISABLE | PTL_MD_EVENT_CT_ACK, PTL_EQ_NONE, state->ct_exit);
}

// The entries that exist from init on. They are all posted before the first exchange, which is
// what lets a node send to any of them once that exchange is over.
void post_init_entries() {
    // The exit entry: one 8-byte code slot per node.
    state->exit_codes = new int64_t[state->nodes]();
    append_me(state->pt_exit,
              ck::me_desc(state->exit_codes, sizeof(int64_t) * state->nodes,
                          PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE),
              "PtlMEAppend (exit)");
    credits_setup_ctrl();
    barrier_setup();
    // The target of the loopback "tick" (progress.cpp, poll_try): an empty entry for gets.
    append_me(state->pt_ctrl,
              ck::me_desc(nullptr, 0,
                          PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                              PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE,
                          kMbPoke),
              "PtlMEAppend (tick)");

    // Rank 0's environment, for gasnet_getenv.
    if (state->mynode == 0) {
        std::vector<char> blob;
        for (char **e = environ; e && *e; ++e) blob.insert(blob.end(), *e, *e + std::strlen(*e) + 1);
        blob.push_back('\0');
        state->env_blob = blob;
        append_me(state->pt_ctrl,
                  ck::me_desc(state->env_blob.data(), state->env_blob.size(),
                              PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                                  PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE,
                              kMbEnv),
                  "PtlMEAppend (environment)");
    }
}

// Exchange 1: where every node runs (state->hosts: the lowest node on the same nid) and the size of
// rank 0's environment, which the others then fetch. It is also the barrier after which every
// node's exit entry exists.
void exchange_hosts_and_environment() {
    struct Rec1 {
        uint32_t nid;
        uint32_t pad;
        uint64_t env_bytes;
    } r1{};
    std::vector<Rec1> all1(state->nodes);
    ptl_process_t phys;
    check_ptl(PtlGetPhysId(state->ni, &phys), "PtlGetPhysId");
    r1.nid = phys.phys.nid;
    r1.env_bytes = state->env_blob.size();
    exchange(&r1, sizeof r1, all1.data());
    state->hosts.resize(state->nodes);
    for (gasnet_node_t n = 0; n < state->nodes; ++n) {
        state->hosts[n] = n;
        for (gasnet_node_t m = 0; m < n; ++m)
            if (all1[m].nid == all1[n].nid) {
                state->hosts[n] = m;
                break;
            }
    }
    if (state->mynode != 0 && all1[0].env_bytes) {
        state->env_blob.assign(all1[0].env_bytes, '\0');
        OpCounter c;
        c.pending = 1;
        reserve_events(1);
        check_ptl(PtlGet(state->md_bulk, reinterpret_cast<uint64_t>(state->env_blob.data()), state->env_blob.size(),
                         proc(0), state->pt_ctrl, kMbEnv, 0, &c),
                  "PtlGet (environment)");
        wait_until(Ctx::Restricted, [&] { return c.pending.load(std::memory_order_acquire) == 0; });
    }
}

// Exchange 2: the largest segment each node could have; the job's is the smallest of them.
void exchange_segment_limits() {
    state->max_local = compute_max_local();
    std::vector<uint64_t> all2(state->nodes);
    const uint64_t ml = state->max_local;
    exchange(&ml, sizeof ml, all2.data());
    state->max_global = uintptr_t(*std::min_element(all2.begin(), all2.end()));
}

// From here on another node's exit ends this one too, and this node's end (gasnet_exit, or
// main returning) reaches the others.
void start_exit_watcher() {
    watcher_stop = false;
    exit_watcher = new std::thread(exit_watcher_main);
#ifdef __GLIBC__
    on_exit(on_exit_hook, nullptr);
#else
    std::atexit(atexit_hook);
#endif
}

int do_init(int threadmode, int segmode) {
    if (state && state->inited) {
        report("gasnet_init() called twice");
        return GASNET_ERR_NOT_INIT; // as the reference implementation answers a second init
    }
    state = new State;
    state->thread_mode = threadmode;
    state->seg_mode = segmode;
    state->init_thread = pthread_self();
    if (PtlInit() != PTL_OK) return GASNET_ERR_RESOURCE;
    if (const int rc = open_ni(); rc != GASNET_OK) return rc;
    state->vol_max = state->limits.max_volatile_size;
    state->exit_timeout_s = std::strtod(settings::kGasnetExitTimeout.get().c_str(), nullptr);
    alloc_queues_and_entries();
    post_init_entries();
    state->inited = true; // from here on fatal() names the node and waits can complete operations
    exchange_hosts_and_environment();
    // Once the processes on this machine are counted (waits before it keep the engine's spin).
    state->wait_mode = choose_wait_mode();
    exchange_segment_limits();
    start_exit_watcher();
    return GASNET_OK;
}

int assign_handlers(gasnet_handlerentry_t *table, int n) {
    if (n < 0 || (n > 0 && !table)) return GASNET_ERR_BAD_ARG;
    std::array<bool, 256> used{};
    std::vector<gasnet_handler_t> index(size_t(n), 0);
    for (int i = 0; i < n; ++i) {
        if (!table[i].fnptr) {
            report("gasnet_attach: handler table entry %d has no function", i);
            return GASNET_ERR_BAD_ARG;
        }
        const unsigned ix = table[i].index;
        if (ix == 0) continue;
        if (ix < 128) {
            report("gasnet_attach: handler index %u is reserved for GASNet (clients use 128..255)", ix);
            return GASNET_ERR_BAD_ARG;
        }
        if (used[ix]) {
            report("gasnet_attach: handler index %u registered twice", ix);
            return GASNET_ERR_BAD_ARG;
        }
        used[ix] = true;
        index[size_t(i)] = gasnet_handler_t(ix);
    }
    unsigned next = 128;
    for (int i = 0; i < n; ++i) {
        if (table[i].index != 0) continue;
        while (next < 256 && used[next]) ++next;
        if (next >= 256) {
            report("gasnet_attach: more than 128 client handlers");
            return GASNET_ERR_BAD_ARG;
        }
        used[next] = true;
        index[size_t(i)] = gasnet_handler_t(next);
    }
    for (int i = 0; i < n; ++i) {
        table[i].index = index[size_t(i)];
        state->handlers[index[size_t(i)]] = table[i].fnptr;
    }
    return GASNET_OK;
}

// PSHM (GASNET_PSHM, default on): when other nodes run on this machine, the segment is a Portico
// shared segment that they map, so that their puts and gets to it are memcpy (docs/GASNET.md).
bool want_shared_segment() {
    if (!settings::kGasnetPshm.get()) return false;
    for (gasnet_node_t n = 0; n < state->nodes; ++n)
        if (n != state->mynode && state->hosts[n] == state->hosts[state->mynode]) return true;
    return false;
}

// Maps segsize bytes at hint (if free) or anywhere: shared when asked, else private.
void *map_memory(uintptr_t segsize, void *hint, bool shared, portico_segment_t *id) {
    if (shared) {
        void *p = nullptr;
        return portico_segment_create(segsize, hint, &p, id) == PTL_OK ? p : MAP_FAILED;
    }
    const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    return hint ? mmap(hint, segsize, prot, flags | MAP_FIXED_NOREPLACE, -1, 0)
                : mmap(nullptr, segsize, prot, flags, -1, 0);
}

void unmap_memory(void *p, uintptr_t segsize, bool shared, const portico_segment_t &id) {
    if (shared)
        portico_segment_destroy(p, &id);
    else
        munmap(p, segsize);
}

// The segment: the whole address space (EVERYTHING), or segsize bytes mapped here that GASNet
// never touches (pages are allocated on first touch, local or remote). A failure is this node's
// status in the attach exchange, so that every node fails together.
int map_segment(uintptr_t segsize, uintptr_t minheapoffset) {
    if (state->seg_mode == 2) {
        state->seg_base = nullptr;
        state->seg_size = ~uintptr_t{0};
        return GASNET_OK;
    }
    if (segsize == 0) return GASNET_OK;
    bool shared = want_shared_segment();
    portico_segment_t id{};
    void *p = map_memory(segsize, nullptr, shared, &id);
    if (p == MAP_FAILED && shared) { // a private segment still works, through Portals
        shared = false;
        p = map_memory(segsize, nullptr, false, &id);
    }
    const uintptr_t heap_end = reinterpret_cast<uintptr_t>(sbrk(0));
    if (p != MAP_FAILED && reinterpret_cast<uintptr_t>(p) < heap_end + minheapoffset &&
        reinterpret_cast<uintptr_t>(p) + segsize > heap_end) {
        // Leave minheapoffset bytes for the heap to grow into, if the address space allows.
        const uintptr_t want = (heap_end + minheapoffset + GASNET_PAGESIZE - 1) & ~uintptr_t(GASNET_PAGESIZE - 1);
        portico_segment_t moved_id{};
        void *q = map_memory(segsize, reinterpret_cast<void *>(want), shared, &moved_id);
        if (q != MAP_FAILED && q == reinterpret_cast<void *>(want)) {
            unmap_memory(p, segsize, shared, id);
            p = q;
            id = moved_id;
        } else if (q != MAP_FAILED) {
            unmap_memory(q, segsize, shared, moved_id); // not where it was wanted
        }
    }
    if (p == MAP_FAILED) {
        report("gasnet_attach: cannot map a segment of %zu bytes: %s", size_t(segsize), std::strerror(errno));
        return GASNET_ERR_RESOURCE;
    }
    state->seg_base = p;
    state->seg_size = segsize;
    state->seg_shared = shared;
    state->seg_id = id;
    return GASNET_OK;
}

// Maps the segments of the other nodes of this machine that are shared (PSHM); a node whose
// segment cannot be mapped is reached through Portals as before.
void attach_local_segments(const std::vector<portico_segment_t> &ids, const std::vector<uint8_t> &shared) {
    state->local_segs.assign(state->nodes, nullptr);
    if (!state->seg_shared) return;
    for (gasnet_node_t n = 0; n < state->nodes; ++n) {
        if (!shared[n] || state->hosts[n] != state->hosts[state->mynode]) continue;
        if (n == state->mynode) {
            state->local_segs[n] = static_cast<char *>(state->seg_base);
            continue;
        }
        void *p = nullptr;
        if (portico_segment_attach(&ids[n], &p) == PTL_OK) state->local_segs[n] = static_cast<char *>(p);
    }
}

// What gasnet.h's inline puts and gets copy to and from (gasnetp_mapped): every node whose segment
// is mapped here, as the library's own checks (extended.cpp) would find it.
void publish_inline_map() {
    state->inline_map.assign(state->nodes, gasnetp_local_segment_t{0, 0, 0});
    if (state->seg_mode == 2) { // EVERYTHING: only this node, all of its memory
        state->inline_map[state->mynode] = {0, ~uintptr_t{0}, 0};
    } else {
        for (gasnet_node_t n = 0; n < state->nodes; ++n) {
            char *here = n == state->mynode ? static_cast<char *>(state->seg_base) : state->local_segs[n];
            const auto base = reinterpret_cast<uintptr_t>(state->segs[n].addr);
            if (here && state->segs[n].size > 0)
                state->inline_map[n] = {base, state->segs[n].size,
                                        reinterpret_cast<intptr_t>(here) - static_cast<intptr_t>(base)};
        }
    }
    gasnetp_local_nodes = state->nodes;
    __atomic_store_n(&gasnetp_local_segments, state->inline_map.data(), __ATOMIC_RELEASE);
}

// The landing zones of every node of this machine must fit in its memory with room to spare; the
// first node of the machine says so when they may not (an explicit GASNET_AM_CREDIT_BYTES with
// many nodes), naming what to set, before the buffers grow.
void warn_if_am_buffers_do_not_fit() {
    if (state->hosts.empty() || state->hosts[state->mynode] != state->mynode) return;
    const uint64_t buffer =
        sizing::buffer_bytes(state->nodes, state->credit_bytes, settings::kGasnetAmBufferBytes.get());
    const uint64_t each = sizing::zones_bytes(state->nodes, state->credit_bytes, buffer);
    const uint64_t procs = local_processes(), phys = gasnett_getPhysMemSz(0);
    if (!phys || each * procs <= phys / 2) return;
    report("the active-message buffers of the %llu processes on this machine may take %llu MiB (%llu MiB each: %u "
           "nodes x %u bytes of credit per class), more than half of its %llu MiB; lower GASNET_AM_CREDIT_BYTES, or "
           "unset it and GASNET_AM_ZONE_BYTES: by default the credit shrinks with the number of nodes",
           (unsigned long long)procs, (unsigned long long)(each * procs >> 20), (unsigned long long)(each >> 20),
           state->nodes, state->credit_bytes, (unsigned long long)(phys >> 20));
}

int do_attach(gasnet_handlerentry_t *table, int numentries, uintptr_t segsize, uintptr_t minheapoffset) {
    if (!state || !state->inited) return GASNET_ERR_NOT_INIT;
    if (state->attach_done) {
        report("gasnet_attach() called twice");
        return GASNET_ERR_RESOURCE;
    }
    if (state->seg_mode != 2) {
        if (segsize % GASNET_PAGESIZE != 0) {
            report("gasnet_attach: segsize %zu is not a multiple of GASNET_PAGESIZE", size_t(segsize));
            return GASNET_ERR_BAD_ARG;
        }
        if (segsize > state->max_local) {
            report("gasnet_attach: segsize %zu exceeds gasnet_getMaxLocalSegmentSize() = %zu", size_t(segsize),
                   size_t(state->max_local));
            return GASNET_ERR_BAD_ARG;
        }
    }
    const int hrc = assign_handlers(table, numentries);
    if (hrc != GASNET_OK) return hrc;
    state->attach_done = true;

    int status = map_segment(segsize, minheapoffset);
    if (state->seg_mode == 2 || state->seg_size > 0) post_segment_entry();
    warn_if_am_buffers_do_not_fit();
    am_setup();

    // The attach exchange: segments, minheapoffset and status; also the attach barrier (every
    // node's AM buffers exist before anybody leaves).
    struct Rec {
        uint64_t base, size, minheap;
        int64_t status;
        portico_segment_t shared_id; // PSHM
        uint64_t shared;
    } r{reinterpret_cast<uint64_t>(state->seg_base),
        state->seg_size,
        minheapoffset,
        status,
        state->seg_id,
        state->seg_shared};
    std::vector<Rec> all(state->nodes);
    exchange(&r, sizeof r, all.data());
    state->segs.resize(state->nodes);
    std::vector<portico_segment_t> ids(state->nodes);
    std::vector<uint8_t> shared(state->nodes);
    for (gasnet_node_t n = 0; n < state->nodes; ++n) {
        ids[n] = all[n].shared_id;
        shared[n] = all[n].shared != 0;
    }
    attach_local_segments(ids, shared);
    for (gasnet_node_t n = 0; n < state->nodes; ++n) {
        state->segs[n].addr = reinterpret_cast<void *>(all[n].base);
        state->segs[n].size = uintptr_t(all[n].size);
        if (all[n].minheap != minheapoffset) {
            if (state->mynode == 0) report("gasnet_attach: nodes passed different minheapoffset values");
            status = status == GASNET_OK ? GASNET_ERR_BAD_ARG : status;
        }
        if (all[n].status != GASNET_OK && status == GASNET_OK) status = GASNET_ERR_RESOURCE;
    }
    if (status == GASNET_OK) {
        publish_inline_map();
        state->attached.store(true, std::memory_order_release);
    }
    return status;
}

} // namespace

} // namespace gasnetp

using namespace gasnetp;

// ---- job control -------------------------------------------------------------------------------------
GASNETP_EXPORT int gasnetp_init(int *argc, char ***argv, int threadmode, int segmode, const char *config) {
    (void)argc;
    (void)argv;
    (void)config;
    if (threadmode < 0 || threadmode > 2 || segmode < 0 || segmode > 2) return GASNET_ERR_BAD_ARG;
    return do_init(threadmode, segmode);
}

GASNETP_EXPORT int(gasnet_init)(int *argc, char ***argv) { return gasnetp_init(argc, argv, 2, 0, nullptr); }

GASNETP_EXPORT int gasnet_attach(gasnet_handlerentry_t *table, int numentries, uintptr_t segsize,
                                 uintptr_t minheapoffset) {
    return do_attach(table, numentries, segsize, minheapoffset);
}

GASNETP_EXPORT uintptr_t gasnet_getMaxLocalSegmentSize(void) { return state && state->inited ? state->max_local : 0; }
GASNETP_EXPORT uintptr_t gasnet_getMaxGlobalSegmentSize(void) { return state && state->inited ? state->max_global : 0; }

GASNETP_EXPORT void gasnet_exit(int exitcode) {
    if (!state || !state->inited) {
        std::fflush(nullptr);
        portico_runtime_exit(exitcode);
    }
    if (state->in_sigquit.load() && pthread_equal(pthread_self(), state->init_thread)) {
        // From the client's SIGQUIT handler: this node follows another node's exit, which that
        // node has announced to every node, and the node that exited first decides the job's
        // code, not the code the handler passes. The interrupted code may hold stdio locks.
        end_following(exitcode);
    }
    if (state->exit_started.exchange(true)) {
        // Another thread is ending the process already.
        for (;;) pause();
    }
    // An exit message that arrived before this call makes this node a follower of that exit.
    take_exit_messages();
    exitcode = code_to_exit_with(exitcode);
    std::fflush(nullptr);
    notify_peers_of_exit(exitcode);
    portico_runtime_exit(exitcode); // leaves the job: the launcher reports the code, kills nobody
}

// ---- environment -------------------------------------------------------------------------------------
GASNETP_EXPORT gasnet_node_t gasnet_mynode(void) { return state ? state->mynode : 0; }
GASNETP_EXPORT gasnet_node_t gasnet_nodes(void) { return state ? state->nodes : 0; }

GASNETP_EXPORT int gasnet_getSegmentInfo(gasnet_seginfo_t *table, int numentries) {
    if (!state || !state->attached.load(std::memory_order_acquire)) return GASNET_ERR_NOT_INIT;
    if (numentries < 0 || (numentries > 0 && !table)) return GASNET_ERR_BAD_ARG;
    const gasnet_node_t n = std::min<gasnet_node_t>(gasnet_node_t(numentries), state->nodes);
    for (gasnet_node_t i = 0; i < n; ++i) table[i] = state->segs[i];
    return GASNET_OK;
}

GASNETP_EXPORT int gasnet_getNodeInfo(gasnet_nodeinfo_t *table, int numentries) {
    if (!state || !state->inited) return GASNET_ERR_NOT_INIT;
    if (numentries < 0 || (numentries > 0 && !table)) return GASNET_ERR_BAD_ARG;
    const gasnet_node_t n = std::min<gasnet_node_t>(gasnet_node_t(numentries), state->nodes);
    for (gasnet_node_t i = 0; i < n; ++i) {
        table[i].host = state->hosts[i];
        // PSHM: the nodes whose segments are mapped here form this node's supernode (named by the
        // lowest node of the machine), and offset turns an address in node i's segment into the
        // address of the same byte here. Before attach nothing is mapped.
        char *local = state->local_segs.empty() ? nullptr : state->local_segs[i];
        table[i].supernode = local ? state->hosts[i] : i;
        table[i].offset = local ? static_cast<intptr_t>(reinterpret_cast<uintptr_t>(local) -
                                                        reinterpret_cast<uintptr_t>(state->segs[i].addr))
                                : 0;
    }
    return GASNET_OK;
}

GASNETP_EXPORT char *gasnet_getenv(const char *name) {
    if (!name) return nullptr;
    if (!state || !state->inited || state->env_blob.empty()) return getenv(name);
    // Rank 0's environment (the spawner's, under portico-run and mpiexec): the same on every node.
    const size_t klen = std::strlen(name);
    char *p = state->env_blob.data(), *end = p + state->env_blob.size();
    while (p < end && *p) {
        const size_t len = std::strlen(p);
        if (len > klen && p[klen] == '=' && std::strncmp(p, name, klen) == 0) return p + klen + 1;
        p += len + 1;
    }
    return nullptr;
}

// ---- errors ------------------------------------------------------------------------------------------
GASNETP_EXPORT const char *gasnet_ErrorName(int errval) {
    switch (errval) {
    case GASNET_OK: return "GASNET_OK";
    case GASNET_ERR_NOT_INIT: return "GASNET_ERR_NOT_INIT";
    case GASNET_ERR_RESOURCE: return "GASNET_ERR_RESOURCE";
    case GASNET_ERR_BAD_ARG: return "GASNET_ERR_BAD_ARG";
    case GASNET_ERR_NOT_READY: return "GASNET_ERR_NOT_READY";
    case GASNET_ERR_BARRIER_MISMATCH: return "GASNET_ERR_BARRIER_MISMATCH";
    default: return "*unknown*";
    }
}

GASNETP_EXPORT const char *gasnet_ErrorDesc(int errval) {
    switch (errval) {
    case GASNET_OK: return "No error";
    case GASNET_ERR_NOT_INIT: return "GASNet message layer not initialized";
    case GASNET_ERR_RESOURCE: return "Problem with requested resource";
    case GASNET_ERR_BAD_ARG: return "Bad argument to function call";
    case GASNET_ERR_NOT_READY: return "Non-blocking operation not complete";
    case GASNET_ERR_BARRIER_MISMATCH: return "Barrier id's mismatched";
    default: return "no description available";
    }
}

// ---- no-interrupt sections and handler-safe locks ------------------------------------------------------
// Handlers run only inside GASNet calls (never from signals), so a no-interrupt section needs no
// masking; the per-thread flag keeps waits inside one from running handlers on this thread.
// A handler, and code holding an HSL, already run with interrupts held (§2.4.3), so the calls are
// ignored there, as in GASNet: a hold left open by a handler would otherwise keep this thread from
// ever running handlers again (the job hangs), and its AMReply would be refused.
namespace {
bool interrupts_held_implicitly(const ThreadState &t) { return t.in_handler || t.hsl_held; }
} // namespace
GASNETP_EXPORT void gasnet_hold_interrupts(void) {
    ThreadState &t = ts();
    if (!interrupts_held_implicitly(t)) t.nis = true;
}
GASNETP_EXPORT void gasnet_resume_interrupts(void) {
    ThreadState &t = ts();
    if (!interrupts_held_implicitly(t)) t.nis = false;
}

GASNETP_EXPORT void gasnet_hsl_init(gasnet_hsl_t *hsl) {
    if (!hsl) fatal("gasnet_hsl_init(NULL)");
    const int rc = pthread_mutex_init(&hsl->lock, nullptr);
    if (rc) fatal("gasnet_hsl_init: %s", std::strerror(rc));
}
GASNETP_EXPORT void gasnet_hsl_destroy(gasnet_hsl_t *hsl) {
    if (!hsl) fatal("gasnet_hsl_destroy(NULL)");
    const int rc = pthread_mutex_destroy(&hsl->lock);
    if (rc) fatal("gasnet_hsl_destroy: %s (is the lock held?)", std::strerror(rc));
}
GASNETP_EXPORT void gasnet_hsl_lock(gasnet_hsl_t *hsl) {
    const int rc = pthread_mutex_lock(&hsl->lock);
    if (rc) fatal("gasnet_hsl_lock: %s", std::strerror(rc));
    ++ts().hsl_held;
}
GASNETP_EXPORT void gasnet_hsl_unlock(gasnet_hsl_t *hsl) {
    --ts().hsl_held;
    const int rc = pthread_mutex_unlock(&hsl->lock);
    if (rc) fatal("gasnet_hsl_unlock: %s", std::strerror(rc));
}
GASNETP_EXPORT int gasnet_hsl_trylock(gasnet_hsl_t *hsl) {
    if (pthread_mutex_trylock(&hsl->lock) != 0) return GASNET_ERR_NOT_READY;
    ++ts().hsl_held;
    return GASNET_OK;
}

// ---- threads -------------------------------------------------------------------------------------------
GASNETP_EXPORT gasnet_threadinfo_t gasnetp_get_threadinfo(void) { return &ts(); }

GASNETP_EXPORT int gasnet_set_waitmode(int wait_mode) {
    if (wait_mode != GASNET_WAIT_SPIN && wait_mode != GASNET_WAIT_BLOCK && wait_mode != GASNET_WAIT_SPINBLOCK)
        return GASNET_ERR_BAD_ARG;
    if (state) state->wait_mode = wait_mode;
    return GASNET_OK;
}
