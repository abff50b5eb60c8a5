// SPDX-License-Identifier: BSD-3-Clause
// Start-up, teardown and the job's end: the Portals objects (docs/UPC.md, *Portals resources*),
// the segments and which of them this process maps, upc_global_exit and the exit watcher.
#include "state.hpp"
#include "common/log.hpp"
#include "upc_settings.hpp"

#include <portico_ext.h>
#include <portico_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <csignal>
#include <memory>
#include <pthread.h>
#include <unistd.h>

#define UPC_EXPORT extern "C" __attribute__((visibility("default")))

namespace portico::upc {

namespace {

Runtime *g_runtime = nullptr;
// The program's statically declared shared data (its `upc_shared` section), as the runtime's
// main registers it: one thread's part, copied into every segment at start-up.
const unsigned char *g_statics_start = nullptr;
size_t g_statics_bytes = 0;

constexpr size_t kAlign = size_t{64} << 10; // heap water marks count 64 KiB units

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// stdio may be locked by a thread the exit interrupts: flush what can be flushed without waiting.
void flush_nonblocking() {
    for (FILE *f : {stdout, stderr}) {
        if (ftrylockfile(f) == 0) {
            fflush_unlocked(f);
            funlockfile(f);
        }
    }
}

// Every thread of the job ends with the same code, and leaves the job first
// (portico_runtime_exit): launchers such as hydra and Open MPI's mpirun kill a job one of whose
// ranks ends without leaving.
[[noreturn]] void end_process(int code) {
    flush_nonblocking();
    portico_runtime_exit(code);
}

// Another thread's upc_global_exit puts its code into this thread's exit word; the watcher ends
// this process with it whatever the program's thread is doing. It sleeps passively
// (portico_ct_poll_passive): a waiting thread that polled would scan every link of the process
// and keep the engine's progress thread from resting. Finalize wakes it with a failure.
void watch_for_exit(Runtime *r) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    const ptl_handle_ct_t ct = r->shutdown_ct.get();
    const ptl_size_t one = 1;
    ptl_ct_event_t ev{};
    while (portico_ct_poll_passive(&ct, &one, 1, PTL_TIME_FOREVER, &ev, nullptr) == PTL_OK) {
        if (r->stop_watcher.load(std::memory_order_acquire)) return;
        if (ev.success > 0) {
            acquire_fence();
            const int64_t code =
                *reinterpret_cast<volatile int64_t *>(r->segment + control_offset(&Control::shutdown_code));
            end_process(static_cast<int>(code));
        }
        if (ev.failure > 0) return; // nothing else fails on this counter: it would satisfy every wait
    }
}

void finalize_at_exit() {
    Runtime *r = g_runtime;
    if (!r || r->finalized) return;
    // main returned or exit() was called without portico_upc_finalize: UPC's termination
    // barrier still applies. From a fresh thread, because this one's thread-local objects
    // (the engine's among them) may already be gone.
    std::thread t([] { portico_upc_finalize(); });
    t.join();
}

void start(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    auto r = std::make_unique<Runtime>();
    r->library = std::make_unique<ck::Library>();
    if (portico_runtime_rank(&r->me) == PTL_FAIL || portico_runtime_size(&r->n) == PTL_FAIL)
        throw ck::Error(PTL_FAIL, "the launcher cannot be reached (see the log above)");
    if (r->n > kMaxThreads)
        throw ck::Error(PTL_FAIL, "this job has " + std::to_string(r->n) +
                                      " processes; a pointer-to-shared has room for " + std::to_string(kMaxThreads) +
                                      " threads");
    r->ni = ck::Ni(PTL_NI_NO_MATCHING | PTL_NI_LOGICAL);
    r->node_local = settings::kUpcNodeLocalMem.get();
    // A UPC thread that waits (a get, a bulk put, a barrier, a lock) waits for one other process
    // that is working for it right now; sleeping after the engine's default spin (100 us) adds two
    // wake-ups to every wait longer than that (a 4 MiB transfer through Portals: 0.78 of put_bw
    // with the default, 1.02 with 1 ms). So while this machine's processes fit on its CPUs, waits
    // spin 1 ms, as GASNet's SPIN mode; with more processes than CPUs spinning would take the CPU
    // from the process waited for, and the default stays. An explicit PORTICO_WAIT_SPIN_US wins.
    int local_rank = 0, local_size = 1;
    if (portico_runtime_local(&local_rank, &local_size) != PTL_FAIL && local_size <= sysconf(_SC_NPROCESSORS_ONLN))
        portico_set_wait_spin_us(1000);

    // The segment: control block, the program's shared statics, the heap.
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    r->statics_offset = kControlBytes;
    r->statics_bytes = g_statics_bytes;
    r->heap_base = round_up(r->statics_offset + r->statics_bytes, kAlign);
    r->seg_bytes = round_up(r->heap_base + std::max(static_cast<size_t>(settings::kUpcSharedHeapSize.get()), kAlign),
                            std::max(kAlign, page));
    if (r->seg_bytes >> UPC_PTS_VADDR_BITS)
        throw ck::Error(PTL_ARG_INVALID, "UPC_SHARED_HEAP_SIZE is larger than a pointer-to-shared can address");
    void *addr = nullptr;
    ck::check(portico_segment_create(r->seg_bytes, nullptr, &addr, &r->segment_id), "portico_segment_create");
    r->segment = static_cast<unsigned char *>(addr);
    auto *control = new (r->segment) Control{};
    control->bar_identity = {INT64_MAX, INT64_MAX};
    control->bar_up[0] = control->bar_up[1] = control->bar_identity;
    if (r->statics_bytes) std::memcpy(r->segment + r->statics_offset, g_statics_start, r->statics_bytes);

    // Who is where: each process's nid and segment id; this process maps the segments of the
    // threads on its machine (node-local memory), unless UPC_NODE_LOCAL_MEM=0.
    struct Card {
        ptl_nid_t nid;
        portico_segment_t segment;
    };
    std::vector<Card> cards(static_cast<size_t>(r->n));
    Card mine;
    std::memset(&mine, 0, sizeof mine); // the padding travels too: no stack garbage to the others
    mine.nid = r->ni.phys_id().phys.nid;
    mine.segment = r->segment_id;
    if (portico_runtime_allgather(&mine, sizeof mine, cards.data()) == PTL_FAIL)
        throw ck::Error(PTL_FAIL, "portico_runtime_allgather failed (see the log above)");
    r->bases.assign(static_cast<size_t>(r->n), nullptr);
    r->bases[static_cast<size_t>(r->me)] = r->segment;
    for (int t = 0; t < r->n; ++t) {
        if (t == r->me || !r->node_local || cards[static_cast<size_t>(t)].nid != mine.nid) continue;
        void *peer = nullptr;
        if (portico_segment_attach(&cards[static_cast<size_t>(t)].segment, &peer) == PTL_OK)
            r->bases[static_cast<size_t>(t)] = static_cast<unsigned char *>(peer);
    }

    // Portals objects (docs/UPC.md, *Portals resources*). Every LE covers the whole segment, so
    // that a remote offset is a segment offset on every portal; what differs is which counter sees
    // the message.
    const ptl_handle_ni_t ni = r->ni.get();
    r->fail_eq = ck::alloc_eq(ni, 256);
    for (ck::Ct *ct : {&r->put_ct, &r->bulk_ct, &r->get_ct, &r->op_ct, &r->notify_ct, &r->fwd_ct, &r->lock_ct,
                       &r->up_ct, &r->down_ct, &r->shutdown_ct, &r->coll_ct})
        *ct = ck::alloc_ct(ni);
    const unsigned access = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_LINK_DISABLE | PTL_LE_EVENT_SUCCESS_DISABLE |
                            PTL_LE_EVENT_COMM_DISABLE | PTL_LE_UNEXPECTED_HDR_DISABLE;
    struct Portal {
        ck::Pt *pt;
        ck::Le *le;
        ptl_pt_index_t index;
        ptl_handle_ct_t ct;
    };
    for (const Portal &p : {Portal{&r->pt_gmem, &r->le_gmem, kPtGmem, PTL_CT_NONE},
                            Portal{&r->pt_lock, &r->le_lock, kPtLock, r->lock_ct.get()},
                            Portal{&r->pt_up, &r->le_up, kPtBarUp, r->up_ct.get()},
                            Portal{&r->pt_down, &r->le_down, kPtBarDown, r->down_ct.get()},
                            Portal{&r->pt_shutdown, &r->le_shutdown, kPtShutdown, r->shutdown_ct.get()},
                            Portal{&r->pt_coll, &r->le_coll, kPtColl, r->coll_ct.get()}}) {
        *p.pt = ck::alloc_pt(ni, PTL_EQ_NONE, p.index);
        const unsigned counted = p.ct == PTL_CT_NONE ? 0u : unsigned{PTL_LE_EVENT_CT_COMM};
        *p.le = ck::append_le(ni, p.index, ck::le_desc(r->segment, r->seg_bytes, access | counted, p.ct));
    }
    const ptl_handle_eq_t feq = r->fail_eq.get();
    r->put_md =
        ck::bind_md(ni, ck::whole_memory_md(PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_ACK, feq, r->put_ct.get()));
    r->bulk_md =
        ck::bind_md(ni, ck::whole_memory_md(PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK,
                                            feq, r->bulk_ct.get()));
    r->get_md = ck::bind_md(
        ni, ck::whole_memory_md(PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_REPLY, feq, r->get_ct.get()));
    r->op_md =
        ck::bind_md(ni, ck::whole_memory_md(PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY,
                                            feq, r->op_ct.get()));
    // The barrier's messages ask for no acknowledgement: their SENDs are counted.
    r->notify_md = ck::bind_md(
        ni, ck::whole_memory_md(PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_SEND, feq, r->notify_ct.get()));
    r->fwd_md =
        ck::bind_md(ni, ck::whole_memory_md(PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_SEND, feq, r->fwd_ct.get()));
    r->max_msg = r->ni.limits().max_msg_size;

    gmem_start(*r);
    barrier_start(*r);
    g_runtime = r.release();

    // Nobody sends before every thread's portals exist (Portals drops what finds no entry).
    if (portico_runtime_barrier() == PTL_FAIL) throw ck::Error(PTL_FAIL, "portico_runtime_barrier failed");
    heap_init();
    g_runtime->exit_watcher = std::thread(watch_for_exit, g_runtime);
    std::atexit(finalize_at_exit);
    MYTHREAD = g_runtime->me;
    set_log_rank(MYTHREAD);
    THREADS = g_runtime->n;
    barrier();
}

} // namespace

Runtime *runtime_or_null() { return g_runtime; }

Runtime &rt() {
    if (!g_runtime || g_runtime->finalized) fatal("the UPC runtime is not running (portico_upc_init first)");
    return *g_runtime;
}

bool started() { return g_runtime && !g_runtime->finalized; }
int mythread() { return rt().me; }
int threads() { return rt().n; }
size_t segment_bytes() { return rt().seg_bytes; }
uint64_t heap_base() { return rt().heap_base; }
unsigned char *local_base(int thread) { return rt().bases[static_cast<size_t>(thread)]; }
Control &my_control() { return *reinterpret_cast<Control *>(rt().segment); }

void fatal(const std::string &message) {
    char text[1024];
    const int me = g_runtime ? g_runtime->me : -1;
    std::snprintf(text, sizeof text, "UPC thread %d: %s", me, message.c_str());
    flush_nonblocking();
    // The launcher ends every process of the job and reports the message.
    portico_runtime_abort(1, text);
}

void global_exit(int code) {
    Runtime *r = g_runtime;
    if (!r || r->finalized) end_process(code);
    flush_nonblocking();
    // Every other thread's watcher ends its process with this code. The puts are acknowledged
    // before this process ends, so none is lost with its sender; a peer that is gone already
    // does not hold us longer than the bound.
    static int64_t code_word;
    code_word = code;
    int sent = 0;
    for (int t = 0; t < r->n; ++t) {
        if (t == r->me) continue;
        if (PtlPut(r->op_md.get(), reinterpret_cast<ptl_size_t>(&code_word), sizeof code_word, PTL_ACK_REQ,
                   ck::rank_id(static_cast<ptl_rank_t>(t)), kPtShutdown, 0, control_offset(&Control::shutdown_code),
                   nullptr, 0) == PTL_OK)
            ++sent;
    }
    ptl_ct_event_t ev{};
    unsigned which = 0;
    const ptl_size_t test = r->ops_issued + static_cast<ptl_size_t>(sent);
    ptl_handle_ct_t ct = r->op_ct.get();
    PtlCTPoll(&ct, &test, 1, 10000, &ev, &which);
    end_process(code);
}

void check_ct(const Runtime &r, ptl_handle_ct_t ct, const ptl_ct_event_t &ev, const char *what) {
    if (ev.failure == 0) return;
    (void)ct;
    std::string detail;
    ptl_event_t e{};
    while (PtlEQGet(r.fail_eq.get(), &e) == PTL_OK) {
        detail += "; ";
        detail += ck::describe(e);
    }
    fatal(std::string(what) + " failed (" + std::to_string(ev.failure) + " failed operations" + detail + ")");
}

void check_counter(ptl_handle_ct_t ct, const ptl_ct_event_t &ev) { check_ct(rt(), ct, ev, "a counted operation"); }

void wait_ct_at(const Runtime &r, ptl_handle_ct_t ct, uint64_t count, const char *what) {
    ptl_ct_event_t ev{};
    const int rc = PtlCTWait(ct, count, &ev);
    if (rc != PTL_OK) fatal(ck::failure(rc, "PtlCTWait"));
    check_ct(r, ct, ev, what);
}

ptl_handle_ct_t counter_of(ptl_pt_index_t pt) {
    Runtime &r = rt();
    switch (pt) {
    case kPtLock: return r.lock_ct.get();
    case kPtColl: return r.coll_ct.get();
    case kPtBarUp: return r.up_ct.get();
    case kPtBarDown: return r.down_ct.get();
    default: fatal("no counter on portal " + std::to_string(pt));
    }
}

} // namespace portico::upc

using namespace portico::upc;

extern "C" {
__attribute__((visibility("default"))) int THREADS = 1;
__attribute__((visibility("default"))) int MYTHREAD = 0;
__attribute__((visibility("default"))) int __upc_forall_depth = 0;
}

UPC_EXPORT void portico_upc_init(int *argc, char ***argv) {
    if (g_runtime) return;
    try {
        start(argc, argv);
    } catch (const std::exception &e) {
        log_error("start-up failed: %s", e.what());
        portico_runtime_abort(1, "UPC runtime start-up failed");
    }
}

UPC_EXPORT void portico_upc_register_statics(const void *start, const void *stop) {
    if (g_runtime) fatal("portico_upc_register_statics after start-up");
    if (!start || !stop || stop < start) return;
    g_statics_start = static_cast<const unsigned char *>(start);
    g_statics_bytes = static_cast<size_t>(static_cast<const unsigned char *>(stop) - g_statics_start);
}

UPC_EXPORT upc_shared_ptr_t portico_upc_static_ptr(const void *object) {
    const Runtime &r = rt();
    const auto *o = static_cast<const unsigned char *>(object);
    if (o < g_statics_start || o >= g_statics_start + g_statics_bytes)
        fatal("portico_upc_static_ptr: the object is not in the program's upc_shared section");
    return upc_pts_make(0, 0, r.statics_offset + static_cast<uint64_t>(o - g_statics_start));
}

UPC_EXPORT void portico_upc_finalize(void) {
    Runtime *r = g_runtime;
    if (!r || r->finalized) return;
    // UPC §5.1.2.2.3: the end of a thread is a barrier; every put is complete before it.
    fence();
    barrier();
    // Barrier messages are not acknowledged: a thread leaves its final wait once its forwards are
    // sent, not received. Nobody closes its portals before every thread has left that wait.
    if (portico_runtime_barrier() == PTL_FAIL) fatal("the job service's barrier failed at the end");
    r->stop_watcher.store(true, std::memory_order_release);
    PtlCTInc(r->shutdown_ct.get(), ptl_ct_event_t{0, 1});
    if (r->exit_watcher.joinable()) r->exit_watcher.join();
    r->finalized = true;
    std::fflush(nullptr);
    // The objects go in reverse order of creation (Runtime's member order), the NI with them,
    // then PtlFini; the mapped segments stay until the process ends, since nothing can reach
    // them once the portals are gone.
    delete r;
    g_runtime = nullptr;
    static Runtime finished;
    finished.finalized = true;
    g_runtime = &finished;
}

UPC_EXPORT void upc_global_exit(int status) { global_exit(status); }
