// SPDX-License-Identifier: BSD-3-Clause
// Portico's GASNet 1.8.1: the state shared by the library's files. Only portals4.h,
// portico_runtime.h and clientkit (the clients' shared set-up on the same public API) are used
// underneath, no engine internals. docs/GASNET.md explains the design.
#pragma once

#ifndef GASNET_PAR
#define GASNET_PAR 1 // the library itself is thread-safe; clients pick their mode in gasnet_init
#endif
#include <gasnet.h>
#include <portals4.h>
#include <portico_ext.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "clientkit.hpp"
#include "common/futex_mutex.hpp"

#define GASNETP_EXPORT extern "C" __attribute__((visibility("default")))

namespace gasnetp {

namespace ck = portico::clientkit;

// ---- fixed sizes --------------------------------------------------------------------------------
constexpr size_t kMaxArgs = GASNETP_AM_MAX_ARGS;
constexpr size_t kMaxMedium = GASNETP_AM_MAX_MEDIUM;
constexpr size_t kMaxLong = GASNETP_AM_MAX_LONG;
// The largest AM put (one message in a landing buffer): Long destination, 16 arguments and a
// maximal Medium payload, rounded to 16. With many nodes the credit is small and messages are
// smaller still (State::eager_max; the target pulls a larger Medium's payload).
constexpr uint64_t kMaxFoot = 65536;
static_assert(8 + 4 * kMaxArgs + kMaxMedium <= kMaxFoot);
// The payload of a Medium whose message would exceed State::eager_max stays with the sender, in
// an entry of its pull portal (kMbPull | id) that the target gets from before the handler runs;
// the message carries this after the arguments, and hdr_nbytes is its size.
struct PullHeader {
    uint64_t id;    // the entry's, unique per sender (below 2^56)
    uint32_t total; // the payload's bytes
    uint32_t reserved;
};
static_assert(sizeof(PullHeader) == 16);
// Credits charge at least this much per message, which bounds the events a zone can produce.
constexpr uint32_t kMinCharge = 128;
// Long payloads up to this size travel inside the AM message and are copied into place by the
// target right before the handler runs (one message instead of two).
constexpr size_t kLongPackedMax = 4096;

enum Class : int { kReq = 0, kRep = 1 };
enum Cat : unsigned { kShort = 0, kMedium = 1, kLong = 2, kLongPacked = 3 };

// hdr_data of an AM put: handler (8 bits) | nargs (5) | category (2) | payload bytes (32, at bit 16)
// | a Medium whose payload the target pulls (bit 48).
constexpr uint64_t kHdrPulled = uint64_t{1} << 48;
inline uint64_t am_hdr(unsigned handler, unsigned nargs, unsigned cat, uint64_t nbytes) {
    return uint64_t(handler) | (uint64_t(nargs) << 8) | (uint64_t(cat) << 13) | (nbytes << 16);
}
inline unsigned hdr_handler(uint64_t h) { return unsigned(h & 0xff); }
inline unsigned hdr_nargs(uint64_t h) { return unsigned((h >> 8) & 0x1f); }
inline unsigned hdr_cat(uint64_t h) { return unsigned((h >> 13) & 3); }
inline uint64_t hdr_nbytes(uint64_t h) { return (h >> 16) & 0xffffffffu; }
inline bool hdr_pulled(uint64_t h) { return (h & kHdrPulled) != 0; }
inline size_t round16(size_t n) { return (n + 15) & ~size_t{15}; }
// Bytes before the payload: the Long destination (8) and the arguments, rounded to 16.
inline size_t am_prefix(unsigned cat, unsigned nargs) {
    return round16((cat == kLong || cat == kLongPacked ? 8 : 0) + 4 * size_t(nargs));
}

// Match bits of the control portal entries (kind in the top byte).
constexpr ptl_match_bits_t kMbCredit = 1ull << 56;
constexpr ptl_match_bits_t kMbBarrier = 2ull << 56;
constexpr ptl_match_bits_t kMbPoke = 3ull << 56;
constexpr ptl_match_bits_t kMbEnv = 5ull << 56;  // (4 was the start-up exchange, now the job service's)
constexpr ptl_match_bits_t kMbPull = 6ull << 56; // a pulled Medium's payload (PullHeader::id below)

// ---- completion of put/get/memset operations ----------------------------------------------------
// Every event on the operations EQ carries a user_ptr that says what it completes: an OpCounter
// (an explicit handle, an access region, a thread's nbi puts or gets) whose pending count drops by
// one, or one of the tagged records below (low bits).
struct OpCounter {
    std::atomic<int64_t> pending{0};
};
constexpr uintptr_t kTagFlag = 1; // std::atomic<int>* set to 1 (a SEND the caller waits for)
constexpr uintptr_t kTagDual = 2; // Dual* (a non-bulk put larger than the volatile limit)
constexpr uintptr_t kTagMask = 3;
void *ignore_send_tag(); // user_ptr of a SEND nobody waits for

struct Dual {
    OpCounter *ctr = nullptr;
    std::atomic<int> sent{0};
    std::atomic<int> refs{3}; // SEND event, ACK event, the initiating thread
};

} // namespace gasnetp

// An explicit handle (gasnet_handle_t) or an access region.
struct gasnetp_op : gasnetp::OpCounter {
    uint32_t magic = 0;
    gasnetp_op *next_free = nullptr;
};
struct gasnetp_valget {
    gasnetp_op op;
    uint64_t value = 0;
    size_t nbytes = 0;
};

namespace gasnetp {

constexpr uint32_t kOpMagic = 0x6f705f31;    // live handle
constexpr uint32_t kTokenMagic = 0x746f6b31; // live token

// ---- per-thread state ---------------------------------------------------------------------------
struct Token {
    uint32_t magic = kTokenMagic;
    gasnet_node_t src = 0;
    int cls = kReq;
    bool replied = false;
};

struct ThreadState {
    int in_handler = 0; // 0: none; 1 + class of the handler running on this thread
    Token *token = nullptr;
    bool replying = false; // inside gasnet_AMReply* of a request handler (may run reply handlers)
    bool nis = false;      // explicit no-interrupt section
    int hsl_held = 0;      // handler-safe locks held
    OpCounter nbi_puts, nbi_gets;
    gasnetp_op *region = nullptr; // the open access region
    gasnetp_op *free_ops = nullptr;
    std::vector<char> staging; // an AM message being built
    uint64_t last_try_ns = 0;  // when a try-style poll last returned (progress.cpp, poll_try)
    unsigned try_streak = 0;   // consecutive quick, empty try-style polls (poll_try)
    bool tick_mode = false;    // bound engine waits with a loopback tick (poll_try)
    unsigned idle_ticks = 0;   // waits in a row that only the tick ended (poll_try backs off)
    unsigned sends = 0;        // AM requests sent (am_request polls every 16th)
};
// The calling thread's state, made on its first call. Inline, through an initial-exec
// thread-local: nearly every GASNet call looks at it, and the default model for a shared library
// cost a __tls_get_addr call and a call to ts() each time (about 200 instructions per AM round trip).
extern constinit __attribute__((tls_model("initial-exec"))) thread_local ThreadState *t_thread_state;
ThreadState &first_thread_state();
inline ThreadState &ts() {
    ThreadState *t = t_thread_state;
    return t ? *t : first_thread_state();
}

// What a thread may do while it waits (see progress.cpp).
enum class Ctx {
    Normal,    // run request and reply handlers, complete operations
    Replying,  // in AMReply: reply handlers and operations only (no request handler nesting)
    Restricted // in a handler, NIS or HSL: complete operations only
};
Ctx ctx_of(const ThreadState &t);

// ---- active-message landing buffers (one zone per class) ---------------------------------------
struct Buffer {
    char *mem = nullptr;
    uint64_t len = 0;
    bool linked = false; // appended and not known to be spent
    bool spent = false;  // the message that unlinked it (end > len - eager_max) was seen
    uint64_t spent_end = 0;
    uint64_t used_known = 0; // bytes of the messages seen
    uint64_t seen = 0;
    std::atomic<uint64_t> done{0}; // messages whose handler has returned
};

struct Zone {
    int cls = kReq;
    ptl_pt_index_t pt = 0;
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    uint64_t buf_len = 0;
    // Taken for every message that lands (handle_am_event): a futex word, inline, not a std::mutex.
    portico::FutexMutex mu;
    std::vector<Buffer *> bufs;
    // slack = E + S - R (docs/GASNET.md, "Flow control"): E the guaranteed capacity of the linked
    // buffers, S the credit charges of the messages seen, R the credits returned. Credits are
    // returned only while slack stays >= nodes * credit bytes, so no sender can overrun us.
    int64_t slack = 0;
};

struct Peer {
    std::atomic<uint32_t> sent[2] = {0, 0};     // credit charges we sent to the peer, per class
    std::atomic<uint32_t> handled[2] = {0, 0};  // charges of the peer's messages we handled
    std::atomic<uint32_t> reported[2] = {0, 0}; // the last handled value we told the peer
};

// ---- barrier ------------------------------------------------------------------------------------
struct BarrierSlot {
    uint32_t seq;
    int32_t id;
    uint32_t flags; // GASNET_BARRIERFLAG_* of the combined value; bit 31: a named id is present
    uint32_t pad;
};

// ---- the library state ---------------------------------------------------------------------------
struct State {
    int thread_mode = 2;
    int seg_mode = 0; // 0 FAST, 1 LARGE, 2 EVERYTHING
    bool inited = false;
    bool attach_done = false;
    std::atomic<bool> attached{false};
    gasnet_node_t mynode = 0;
    gasnet_node_t nodes = 1;

    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_ni_limits_t limits{};
    uint64_t vol_max = 0; // puts from the volatile MD up to this size copy the source at once
    ptl_handle_eq_t eq_ops = PTL_INVALID_HANDLE, eq_exit = PTL_INVALID_HANDLE;
    ptl_pt_index_t pt_ctrl = 0, pt_seg = 0, pt_exit = 0, pt_pull = 0;
    ptl_handle_md_t md_vol = PTL_INVALID_HANDLE; // whole address space, volatile, no SEND events
    // Whole address space, volatile, no EQ or CT: puts without ack from it are observed by nothing
    // here, so the engine sends them without tracking them (and small ones without its lock).
    ptl_handle_md_t md_quiet = PTL_INVALID_HANDLE;
    ptl_handle_md_t md_send = PTL_INVALID_HANDLE; // whole address space, SEND events
    ptl_handle_md_t md_bulk = PTL_INVALID_HANDLE; // whole address space, no SEND events
    ptl_handle_md_t md_exit = PTL_INVALID_HANDLE; // volatile, acks counted in ct_exit
    ptl_handle_ct_t ct_exit = PTL_INVALID_HANDLE;
    uint64_t eq_ops_size = 0;
    std::atomic<int64_t> inflight{0}; // events still to come on eq_ops

    // Segments.
    uintptr_t max_local = 0, max_global = 0;
    void *seg_base = nullptr;
    uintptr_t seg_size = 0;
    std::vector<gasnet_seginfo_t> segs;
    // PSHM: our segment is a Portico shared segment (GASNET_PSHM, on by default when nodes share
    // this machine), and local_segs[n] is where node n's segment is mapped here (nullptr: reached
    // through Portals), so that puts and gets to the nodes of this machine are memcpy.
    bool seg_shared = false;
    portico_segment_t seg_id{};
    std::vector<char *> local_segs;
    // The same for gasnet.h's inline copies (gasnetp_local_segments), with this node's segment
    // also when it is private; never freed (a thread may still be in a copy at exit).
    std::vector<gasnetp_local_segment_t> inline_map;
    std::vector<gasnet_node_t> hosts;

    // Active messages.
    gasnet_handler_fn_t handlers[256] = {};
    Zone zones[2];
    uint32_t credit_bytes = 0; // per peer and class (sizing.hpp)
    uint32_t eager_max = 0;    // the largest message one put carries; the landing entries' min_free
    Peer *peers = nullptr;
    // Mediums above eager_max are pulled by their target (PullHeader).
    std::atomic<uint64_t> next_pull_id{0};
    uint64_t *credit_slots = nullptr; // [class][peer]: handled charges the peer reported
    // Control entries.
    BarrierSlot *barrier_slots = nullptr; // [parity][round]
    int barrier_rounds = 0;

    // Waiting (progress.cpp).
    std::atomic<int> poller{0};
    std::atomic<uint64_t> generation{0};
    std::atomic<int> followers{0};
    std::mutex wait_mu;
    std::condition_variable wait_cv;
    int wait_mode = GASNET_WAIT_SPINBLOCK;

    // Exit.
    std::atomic<bool> exit_started{false};
    std::atomic<bool> in_sigquit{false};    // we raised SIGQUIT for a remote exit
    pthread_t init_thread{};                // receives that SIGQUIT
    std::atomic<bool> handler_exits{false}; // its handler called gasnet_exit or exit: the watcher ends us
    // The code of the first exit message received (kNoExit: none). Once set, this node follows
    // that exit: it ends with this code whatever code a later gasnet_exit or exit passes.
    static constexpr int64_t kNoExit = INT64_MIN;
    std::atomic<int64_t> remote_code{kNoExit};
    int64_t *exit_codes = nullptr;
    double exit_timeout_s = 2.0;

    // Environment of rank 0 (gasnet_getenv).
    std::vector<char> env_blob;
};
// This process's node: made by gasnet_init, kept to the end of the process (exit paths read it).
extern State *state;

// Where node's segment is mapped in this process (PSHM: the node shares this machine and its
// segment is a shared segment; our own segment for this node), or nullptr.
inline char *local_segment(gasnet_node_t node) { return state->local_segs.empty() ? nullptr : state->local_segs[node]; }

// ---- helpers shared across files ------------------------------------------------------------------
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Explains an error code on stderr ("GASNet: ..."); after 20 messages a process stays quiet.
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
inline const char *ptl_rc_name(int rc) { return ck::rc_name(rc); }
void check_ptl(int rc, const char *what); // fatal unless PTL_OK
inline ptl_process_t proc(gasnet_node_t n) { return ck::rank_id(n); }
// Appends `me` to the priority list of `pt` for the rest of the process; fatal on failure.
void append_me(ptl_pt_index_t pt, const ptl_me_t &me, const char *what, void *user_ptr = nullptr);

// Puts len bytes from buf so that buf may be reused on return: small puts through the volatile
// MD (the engine copies them at once), larger ones (above copy_max, or the volatile limit)
// straight from buf, waiting for their SEND event (on one machine the target then reads buf
// itself: a single copy).
constexpr size_t kZeroCopyMin = 16384; // copy_max for client payloads (Long, non-bulk puts)
void put_copy(gasnet_node_t dest, ptl_pt_index_t pt, ptl_match_bits_t mb, uint64_t remote_offset, const void *buf,
              size_t len, ptl_ack_req_t ack, void *user_ptr, ptl_hdr_data_t hdr, size_t copy_max = SIZE_MAX);
// Reserves room for k more events on eq_ops (blocks, completing operations, when full).
void reserve_events(int64_t k);

// progress.cpp
int poll(Ctx ctx);
int poll_try(Ctx ctx); // poll for the try-style calls (spinning clients)
void block_step(Ctx ctx, unsigned *iter);
template <class Pred> void wait_until(Ctx ctx, Pred done) {
    unsigned iter = 0;
    while (!done()) block_step(ctx, &iter);
}
void bump_generation();

// am.cpp
void credits_setup_ctrl(); // the credit slots' entry (init)
void am_setup();           // the landing buffers (attach, before the attach exchange)
void handle_am_event(int cls, const ptl_event_t &ev);
int am_request(unsigned cat, gasnet_node_t dest, gasnet_handler_t handler, void *src, size_t nbytes, void *dest_addr,
               unsigned nargs, const gasnet_handlerarg_t *args, bool async);
int am_reply(unsigned cat, gasnet_token_t token, gasnet_handler_t handler, void *src, size_t nbytes, void *dest_addr,
             unsigned nargs, const gasnet_handlerarg_t *args);
// barrier.cpp
void barrier_setup();
void barrier_arrival(const ptl_event_t &ev);
// core.cpp
void exchange(const void *mine, size_t len, void *all);
// True if this node is ending because of an exit: its own, or another node's exit message has
// arrived (waits up to GASNET_EXITTIMEOUT for one when wait is set). An operation that failed
// because its target left is then no error: the caller calls follow_exit.
bool exit_under_way(bool wait);
// Parks the calling thread until the exit under way ends the process (the exit watcher, or this
// node's own exiting thread, does it with the right code).
[[noreturn]] void follow_exit();

} // namespace gasnetp
