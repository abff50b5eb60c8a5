// SPDX-License-Identifier: BSD-3-Clause
// The Portals engine: Portico's software "NIC".
//
// All object state (NIs, portal tables, MDs, list entries, unexpected headers, operations) is
// guarded by one engine mutex, taken by API calls and by whichever thread handles incoming frames
// (the endpoint's progress thread, or an application thread waiting in PtlEQWait/PtlCTWait that
// polls the transport itself). EQ reads and CT values have their own synchronisation so that
// polling them does not contend with message processing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <string>
#include <array>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <portals4.h>

#include "common/futex_mutex.hpp"
#include "engine/event_ring.hpp"
#include "engine/handles.hpp"
#include "transport/transport.hpp"
#include "wire/protocol.hpp"

namespace portico::engine {

struct NI;
struct Endpoint;
struct Entry;

// What a thread can sleep on (Engine::wait_for): an EQ or a CT. Its count of sleepers lets the
// delivery of an event skip the sleepers' lock when nobody sleeps on that object, so that a
// thread asleep on a quiet object (a client's exit watcher) costs other objects' events nothing.
struct Waitable {
    std::atomic<int> sleepers{0};
};

struct EQ : Waitable {
    NI *ni = nullptr;
    ptl_handle_eq_t handle = 0;
    EventRing events;          // pushed under the engine lock, taken without it
    std::atomic<int> users{0}; // threads inside a call on this EQ (see Engine::pin)
};

struct MD;

// An operation waiting for a counter to reach its threshold (spec §3.16).
struct Trigger {
    enum class Kind { Put, Get, Atomic, FetchAtomic, CTInc, CTSet } kind;
    MD *md = nullptr;     // the (put) MD
    MD *get_md = nullptr; // FetchAtomic/Swap: where the old data goes
    ptl_size_t local_offset = 0, local_get_offset = 0, length = 0;
    ptl_ack_req_t ack_req = PTL_NO_ACK_REQ;
    ptl_process_t target{};
    ptl_pt_index_t pt_index = 0;
    ptl_match_bits_t match_bits = 0;
    ptl_size_t remote_offset = 0;
    void *user_ptr = nullptr;
    ptl_hdr_data_t hdr_data = 0;
    ptl_op_t op = PTL_SUM;
    ptl_datatype_t type = PTL_INT8_T;
    bool has_operand = false;
    std::array<std::byte, 32> operand{}; // copied at posting time: the caller's buffer may be gone
    struct CT *ct = nullptr;             // CTInc/CTSet: the counter to change
    ptl_ct_event_t value{};
};

struct CT : Waitable {
    NI *ni = nullptr;
    ptl_handle_ct_t handle = 0;
    std::atomic<uint64_t> success{0};
    std::atomic<uint64_t> failure{0};
    std::atomic<int> users{0};
    // Pending triggered operations by threshold; equal thresholds keep posting order (multimap).
    std::multimap<uint64_t, Trigger> triggers;
    bool firing = false;
};

struct MD {
    NI *ni = nullptr;
    ptl_handle_md_t handle = 0;
    ptl_md_t desc{};
    std::vector<ptl_iovec_t> iov; // PTL_IOVEC: the caller's array, copied
    ptl_size_t length = 0;        // bytes described
    EQ *eq = nullptr;
    CT *ct = nullptr;
    int pending = 0; // operations whose SEND or REPLY has not been delivered
    int refs = 0;    // operations that still refer to it (acks included)
    bool released = false;
    std::atomic<int> users{0}; // threads sending from it without the engine lock (Engine::pin)
};

// The wide-match extension (portico_ext.h): 64 match bits above Portals' own, for clients whose
// tags are wider (PSM2). An entry that ignores them all matches as Portals says.
struct WideMatch {
    uint64_t match_bits_hi = 0;
    uint64_t ignore_bits_hi = ~uint64_t{0};
};

struct Unexpected {
    wire::Kind kind;
    ptl_op_t atomic_op;
    ptl_datatype_t atomic_type;
    ptl_process_t initiator;
    uint32_t src_rank;
    ptl_uid_t uid;
    ptl_match_bits_t match_bits;
    uint64_t match_bits_hi;
    ptl_hdr_data_t hdr_data;
    ptl_size_t rlength;
    ptl_size_t mlength;
    ptl_size_t remote_offset;
    void *start;
    Entry *entry; // the overflow entry holding the data
    ptl_ni_fail_t fail;
};

// The priority-list entry of a PT that matched last, and which messages may take it without a
// walk of the list (Engine::find_entry states the rule and why it holds).
struct MatchCache {
    Entry *entry = nullptr;
    uint64_t gen = 0;   // PT::list_gen when it was filled
    bool first = false; // the entry was the first of the priority list
    // The message it was filled for: all that decides whether an entry matches.
    ptl_match_bits_t bits = 0;
    uint64_t bits_hi = 0;
    uint32_t src_nid = 0, src_pid = 0, src_rank = 0;
    ptl_size_t rlength = 0, remote_offset = 0;
};

// A PT's priority or overflow list, linked through its entries (Entry::list_prev/list_next), so
// that an append allocates nothing and an unlink frees nothing: a std::list node cost a malloc
// and a free per message to clients that post an entry per receive (PSM2, MPI over Portals).
// Range-for iterates it; an entry may be unlinked only once the iterator has moved past it.
class EntryList {
public:
    class iterator {
    public:
        explicit iterator(Entry *e) : e_(e) {}
        Entry *operator*() const { return e_; }
        inline iterator &operator++();
        bool operator!=(const iterator &o) const { return e_ != o.e_; }

    private:
        Entry *e_;
    };
    iterator begin() const { return iterator(head_); }
    iterator end() const { return iterator(nullptr); }
    bool empty() const { return head_ == nullptr; }
    size_t size() const { return size_; }
    inline void push_back(Entry *e);
    inline void erase(Entry *e); // e is on this list

private:
    Entry *head_ = nullptr;
    Entry *tail_ = nullptr;
    size_t size_ = 0;
};

// clang-tidy 14 sees the implicit copy of lists[] as code naming __i0 (a false positive).
struct PT { // NOLINT(bugprone-reserved-identifier)
    bool allocated = false;
    bool enabled = false;
    unsigned options = 0;
    EQ *eq = nullptr;
    EntryList lists[2]; // PTL_PRIORITY_LIST, PTL_OVERFLOW_LIST
    std::list<Unexpected> unexpected;
    int streams = 0; // messages partly received into entries of this PT
    // Bumped by every append to, unlink from and search of this PT's lists (engine lock held):
    // a cache filled at another generation is not used.
    uint64_t list_gen = 0;
    MatchCache cache;
    void lists_changed() { ++list_gen; }
};

struct Entry {
    NI *ni = nullptr;
    ptl_handle_any_t handle = 0;
    bool is_me = false;
    ptl_pt_index_t pt_index = 0;
    ptl_list_t list = PTL_PRIORITY_LIST;
    ptl_me_t d{}; // an LE is kept as an ME that matches everything
    WideMatch hi;
    std::vector<ptl_iovec_t> iov;
    ptl_size_t length = 0; // bytes described
    CT *ct = nullptr;
    void *user_ptr = nullptr;
    ptl_size_t local_offset = 0;
    bool linked = false;
    Entry *list_prev = nullptr; // neighbours on its PT's list while linked (EntryList)
    Entry *list_next = nullptr;
    int busy = 0;               // messages partly received into it
    int uh_refs = 0;            // unexpected headers whose data lives in it
    bool auto_unlinked = false; // unlinked by the engine; the object is in NI::retired
    bool handle_live = true;    // false once nothing more can happen to it (retire_handle)
    bool free_pending = false;  // AUTO_FREE owed once uh_refs drops to 0
};

EntryList::iterator &EntryList::iterator::operator++() {
    e_ = e_->list_next;
    return *this;
}
void EntryList::push_back(Entry *e) {
    e->list_prev = tail_;
    e->list_next = nullptr;
    (tail_ ? tail_->list_next : head_) = e;
    tail_ = e;
    ++size_;
}
void EntryList::erase(Entry *e) {
    (e->list_prev ? e->list_prev->list_next : head_) = e->list_next;
    (e->list_next ? e->list_next->list_prev : tail_) = e->list_prev;
    e->list_prev = e->list_next = nullptr;
    --size_;
}

// An operation started by this process and not yet complete.
struct Op {
    uint32_t gen = 1;
    bool in_use = false;
    wire::Kind kind = wire::Kind::Put;
    MD *md = nullptr;     // the MD sent from (Put, Atomic, FetchAtomic) or read into (Get)
    MD *get_md = nullptr; // FetchAtomic: the MD the old data goes into
    ptl_size_t local_get_offset = 0;
    NI *ni = nullptr;
    void *user_ptr = nullptr;
    ptl_ack_req_t ack_req = PTL_NO_ACK_REQ;
    ptl_size_t local_offset = 0;
    ptl_size_t length = 0;
    transport::PeerId peer;
    bool await_send = false;
    bool await_ack = false;
    bool await_reply = false;
    bool rendezvous = false; // the target reads our buffer: SEND waits for its word, not for the header
};

// A message partly received on one link (its payload spans several frames).
// A message's first frame, as the engine handles it: Portals' header and what the transport says
// of the frame.
struct Arrival {
    wire::Header h;
    const std::byte *payload; // frame_bytes of it, valid during the call
    uint32_t frame_bytes;
    uint64_t total; // payload bytes of the whole message
    bool fault;     // the sender could not read (part of) this frame's payload
};

// Where a request landed at the target: its entry and the part of it the request uses.
struct Landing {
    NI *ni = nullptr;
    PT *pt = nullptr;
    Entry *e = nullptr;
    ptl_size_t offset = 0;
    ptl_size_t mlength = 0;
    bool spent = false; // the entry unlinks once this request is done with it
};

// How a message is handed to the transport (Transport::send's arguments, named).
struct SendOptions {
    uint64_t token = 0;        // names the message in on_send_complete, should it have to wait
    bool copy_payload = false; // a message that waits keeps a copy, not the caller's memory
    bool defer_wakeup = false; // inside a bundle: a sleeping peer's wakeup waits for flush_wakeups()
    transport::Hold hold = transport::Hold::No;
};

// Sends a Portals message: header h, encoded as the protocol header of its first frame, and its payload.
inline transport::SendStatus send_message(transport::Transport &tr, transport::PeerId to, const wire::Header &h,
                                          const transport::Gather &payload, SendOptions o) {
    static_assert(wire::kMaxEncodedBytes <= transport::kProtocolHeaderBytes);
    transport::FrameHeader f; // only the encoded bytes of the protocol part are ever read
    f.t = transport::TransportHeader{};
    f.t.protocol = transport::Protocol::Portals;
    f.t.protocol_bytes = static_cast<uint8_t>(wire::encode(h, f.protocol));
    return tr.send(to, f, payload, o.token, o.copy_payload, o.defer_wakeup, o.hold);
}

struct RxState {
    bool active = false;
    wire::Header h{};
    uint64_t total = 0; // payload bytes of the message
    ptl_size_t received = 0;
    // Put at the target
    NI *ni = nullptr;
    Entry *entry = nullptr;
    ptl_size_t offset = 0;
    ptl_size_t mlength = 0;
    ptl_ni_fail_t fail = PTL_NI_OK;
    // Reply at the initiator
    uint64_t cookie = 0;
};

struct NI {
    Endpoint *ep = nullptr;
    ptl_handle_ni_t handle = 0;
    unsigned options = 0;
    int kind = 0; // wire::kNiMatching | wire::kNiLogical
    int refs = 0;
    ptl_ni_limits_t limits{};
    std::vector<PT> pts;
    std::atomic<int64_t> sr[PTL_SR_LAST] = {};
    std::vector<ptl_process_t> map; // logical NIs: rank -> physical id
    bool map_static = false;        // supplied by the launcher; PtlSetMap answers IGNORED
    ptl_rank_t rank = 0;
    int n_mds = 0, n_eqs = 0, n_cts = 0, n_entries = 0, n_triggered = 0;
    std::atomic<int> bundle_depth{0}; // read without the lock by puts that take none
    std::vector<Entry *> retired;     // auto-unlinked entries, freed at an append once nothing points into them

    bool matching() const { return kind & wire::kNiMatching; }
    bool logical() const { return kind & wire::kNiLogical; }
};

struct Endpoint;

class Engine;

// How a wait (PtlEQPoll, PtlCTPoll) waits. Active: it polls the transport itself for a while, then
// sleeps with the progress thread listening for it. Passive (portico_eq_poll_passive): it sleeps
// at once and leaves the network to whoever moves it (the application's other calls, or the
// progress thread, which parks no longer than PORTICO_PROGRESS_PARK_US while nobody calls): a
// thread that watches for a rare event then costs the job nothing while it waits.
enum class WaitStyle { Active, Passive };

class EndpointReceiver final : public transport::Receiver {
public:
    EndpointReceiver(Engine &e, Endpoint &ep) : engine_(e), ep_(ep) {}
    void on_frame(transport::Link &link, const transport::FrameHeader &h, const std::byte *payload) override;
    void on_link_failed(transport::Link &link, bool last) override;
    void on_send_complete(uint64_t token, bool ok, bool source_fault) override;
    // The engine lock is taken once for a run of frames instead of once per frame.
    void begin_frames() override;
    void end_frames() override;
    void frames_published() override;

private:
    Engine &engine_;
    Endpoint &ep_;
};

struct Endpoint {
    ptl_interface_t iface = 0;
    std::unique_ptr<transport::Transport> transport;
    size_t direct_from = SIZE_MAX; // transport->direct_access_from(), asked once
    std::unique_ptr<EndpointReceiver> receiver;
    NI *nis[4] = {nullptr, nullptr, nullptr, nullptr};
    int open_nis = 0;
    std::vector<std::unique_ptr<RxState>> rx_states;

    // Background progress, and the handshake that lets the application's own polling replace it.
    //
    // The progress thread is in one of three states. Running: it polls. Armed: it sleeps in the
    // transport and peers ring its doorbell; this is how a process whose application is away
    // (computing, or asleep in a wait) still makes progress. Parked: it sleeps on park_word for at
    // most PORTICO_PROGRESS_PARK_US (doubling up to PORTICO_PROGRESS_PARK_MAX_US while the
    // application goes on polling) while the application itself polls (waits, PtlEQGet, ...); no
    // doorbell is rung and no thread is handed a frame, which is what a ping-pong needs. A parked
    // thread arms as soon as a waiter goes to sleep, or when a whole park passes without a call.
    enum class Progress { Running, Parked, Armed };
    std::thread progress_thread;
    std::atomic<bool> stop{false};
    std::mutex sleep_mutex;
    int active_waiters = 0;                // threads polling in a wait (guarded by sleep_mutex)
    Progress progress = Progress::Running; // guarded by sleep_mutex
    bool armed = false;                    // peers have been told to wake us (guarded by sleep_mutex)
    bool arm_request = false;              // a waiter went to sleep: listen to peers (guarded by sleep_mutex)
    std::atomic<uint32_t> park_word{0};    // bumped (under sleep_mutex) to end a park early
    std::atomic<uint64_t> app_calls{0};    // calls that poll; the progress thread parks while this moves
    // A load and a store, not an atomic add: two threads may count one call between them, and the
    // value still moves, which is all the progress thread looks at.
    void note_app_call() { app_calls.store(app_calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
    // What poll_soon must do to make the progress thread poll (set by the progress thread).
    // kParkedLong: parked for longer than PORTICO_PROGRESS_PARK_US (the park grows while the
    // application keeps polling); poll_soon ends such a park.
    static constexpr uint8_t kAwake = 0, kDeciding = 1, kParked = 2, kArmed = 3, kParkedLong = 4;
    std::atomic<uint8_t> resting{kAwake};

    // Unpark and arm: a thread is about to sleep and needs the progress thread to listen.
    void request_arm();
    // The transport holds frames for the next poll (SendStatus::Held): a progress thread asleep in
    // the transport must poll (a parked one wakes within its park, and the application that made
    // it park polls on its next wait).
    void poll_soon();

    int poll() { return transport->poll(*receiver); }
    int poll_in_background() { return transport->poll_in_background(*receiver); } // the progress thread's

    // Tracked operations of this endpoint not yet done (most wait for an ack or a reply). Changed
    // under the engine lock, read without it by puts that take none.
    std::atomic<int> live_ops{0};
    // How a new request may wait in the transport: with earlier ones unanswered the link is
    // streaming, whatever comes back meanwhile (transport::Hold::Stream).
    transport::Hold request_hold() const {
        return live_ops.load(std::memory_order_relaxed) > 0 ? transport::Hold::Stream : transport::Hold::Burst;
    }
    void count_op(int delta) {
        live_ops.store(live_ops.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
    }
};

class Engine {
public:
    // The process's engine, made on first use. Inline: every Portals call asks for it, twice.
    static Engine &instance() {
        Engine *e = instance_.load(std::memory_order_acquire);
        return e ? *e : make_instance();
    }

    // ---- library (engine.cpp)
    int init();
    void fini();
    void abort();
    bool initialized() const { return init_count_.load(std::memory_order_acquire) > 0; }

    // ---- NI and portal table (ni.cpp)
    int ni_init(ptl_interface_t iface, unsigned options, ptl_pid_t pid, const ptl_ni_limits_t *desired,
                ptl_ni_limits_t *actual, ptl_handle_ni_t *out);
    int ni_fini(ptl_handle_ni_t h);
    int ni_status(ptl_handle_ni_t h, ptl_sr_index_t reg, ptl_sr_value_t *status);
    int ni_handle(ptl_handle_any_t h, ptl_handle_ni_t *out);
    int set_map(ptl_handle_ni_t h, ptl_size_t n, const ptl_process_t *map);
    int get_map(ptl_handle_ni_t h, ptl_size_t n, ptl_process_t *map, ptl_size_t *actual);
    int get_uid(ptl_handle_ni_t h, ptl_uid_t *uid);
    int get_id(ptl_handle_ni_t h, ptl_process_t *id);
    int get_phys_id(ptl_handle_ni_t h, ptl_process_t *id);
    int peer_shares_memory(ptl_handle_ni_t h, ptl_process_t peer, int *shares);
    int pt_alloc(ptl_handle_ni_t h, unsigned options, ptl_handle_eq_t eq, ptl_pt_index_t req, ptl_pt_index_t *out);
    int pt_free(ptl_handle_ni_t h, ptl_pt_index_t idx);
    int pt_disable(ptl_handle_ni_t h, ptl_pt_index_t idx);
    int pt_enable(ptl_handle_ni_t h, ptl_pt_index_t idx);

    // ---- MDs (md.cpp)
    int md_bind(ptl_handle_ni_t h, const ptl_md_t *md, ptl_handle_md_t *out);
    int md_release(ptl_handle_md_t h);

    // ---- list entries (list_entry.cpp)
    // hi: the wide-match extension's upper bits of an ME (portico_me_append_wide); PtlMEAppend's
    // entries ignore them all.
    int append(ptl_handle_ni_t h, ptl_pt_index_t pt, const ptl_me_t &me, bool is_me, ptl_list_t list, void *user_ptr,
               ptl_handle_any_t *out, WideMatch hi = {});
    int unlink(ptl_handle_any_t h, bool is_me);
    int search(ptl_handle_ni_t h, ptl_pt_index_t pt, const ptl_me_t &me, bool is_me, ptl_search_op_t op, void *user_ptr,
               WideMatch hi = {});

    // ---- EQs and CTs (eq.cpp, ct.cpp)
    int eq_alloc(ptl_handle_ni_t h, ptl_size_t count, ptl_handle_eq_t *out);
    int eq_free(ptl_handle_eq_t h);
    int eq_get(ptl_handle_eq_t h, ptl_event_t *ev);
    int eq_poll(const ptl_handle_eq_t *hs, unsigned n, ptl_time_t timeout, ptl_event_t *ev, unsigned *which,
                WaitStyle style = WaitStyle::Active);
    int ct_alloc(ptl_handle_ni_t h, ptl_handle_ct_t *out);
    int ct_free(ptl_handle_ct_t h);
    int ct_get(ptl_handle_ct_t h, ptl_ct_event_t *ev);
    int ct_poll(const ptl_handle_ct_t *hs, const ptl_size_t *tests, unsigned n, ptl_time_t timeout, ptl_ct_event_t *ev,
                unsigned *which, WaitStyle style = WaitStyle::Active);
    int ct_set(ptl_handle_ct_t h, ptl_ct_event_t v);
    int ct_inc(ptl_handle_ct_t h, ptl_ct_event_t v);

    // ---- data movement (data_movement.cpp)
    // bits_hi: the wide-match extension's upper match bits (portico_put_wide); 0 for PtlPut.
    int put(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
            ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
            uint64_t bits_hi = 0);
    int get(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
            ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr);

    int atomic(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
               ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
               ptl_hdr_data_t hdr_data, ptl_op_t op, ptl_datatype_t type);
    // PtlFetchAtomic (operand == nullptr) and PtlSwap.
    int fetch_atomic(ptl_handle_md_t get_md, ptl_size_t local_get_offset, ptl_handle_md_t put_md,
                     ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
                     ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                     const void *operand, ptl_op_t op, ptl_datatype_t type, bool is_swap);
    int atomic_sync();

    // ---- triggered operations and bundles (triggered.cpp)
    // Posts t to fire when trig_ct's success count reaches threshold; `t` holds handles resolved
    // by the caller-facing wrappers below.
    int trigger_put(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                    ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                    void *user_ptr, ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct, ptl_size_t threshold);
    int trigger_get(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target,
                    ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                    ptl_handle_ct_t trig_ct, ptl_size_t threshold);
    int trigger_atomic(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                       ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                       void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t op, ptl_datatype_t type,
                       ptl_handle_ct_t trig_ct, ptl_size_t threshold);
    int trigger_fetch_atomic(ptl_handle_md_t get_md, ptl_size_t local_get_offset, ptl_handle_md_t put_md,
                             ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
                             ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                             const void *operand, ptl_op_t op, ptl_datatype_t type, bool is_swap,
                             ptl_handle_ct_t trig_ct, ptl_size_t threshold);
    int trigger_ct(ptl_handle_ct_t ct, ptl_ct_event_t value, bool set, ptl_handle_ct_t trig_ct, ptl_size_t threshold);
    int ct_cancel_triggered(ptl_handle_ct_t h);
    int start_bundle(ptl_handle_ni_t h);
    int end_bundle(ptl_handle_ni_t h);

    // ---- called by the transport receiver (data_movement.cpp)
    void handle_frame(Endpoint &ep, transport::Link &link, const transport::FrameHeader &f, const std::byte *payload);
    void handle_frame_locked(Endpoint &ep, transport::Link &link, const transport::FrameHeader &f,
                             const std::byte *payload);
    void handle_link_failed(Endpoint &ep, transport::Link &link, bool last);
    void report_lost_peer(transport::PeerId peer);
    // Says goodbye on every link (a normal exit that skipped PtlFini).
    void farewell();
    void handle_send_complete(uint64_t token, bool ok, bool source_fault);

private:
    friend class EndpointReceiver;

    // engine.cpp: progress and waiting
    void start_progress(Endpoint &ep);
    void stop_progress(Endpoint &ep);
    void progress_loop(Endpoint &ep);
    // Waits until ready() (called without the engine lock) holds, polling `ep` for a bounded time
    // and then sleeping. ready() may consume what it reports (an event): once it returns true it is
    // not called again. Returns PTL_OK, PTL_ABORTED, or PTL_EQ_EMPTY/PTL_CT_NONE_REACHED on timeout.
    // activity() returns a value that changes when what the wait is about makes progress short of
    // ready() (a counter below its threshold); a sleeper woken by such progress polls again.
    // A sleeper is woken by news about one of objs (EQs or CTs), or by any news if nobjs is 0.
    // A passive wait (WaitStyle) never polls and goes to sleep at once.
    template <class Ready, class Activity>
    int wait_for(Endpoint *ep, ptl_time_t timeout_ms, int timeout_rc, Ready ready, Activity activity,
                 Waitable *const *objs, unsigned nobjs, WaitStyle style = WaitStyle::Active);
    template <class Ready> int wait_for(Endpoint *ep, ptl_time_t timeout_ms, int timeout_rc, Ready ready) {
        return wait_for(
            ep, timeout_ms, timeout_rc, ready, [] { return uint64_t{0}; }, nullptr, 0);
    }
    // Wakes the sleepers that wait on obj (an EQ or a CT that has news), or every sleeper.
    // Wakes the threads asleep on obj (nullptr: everybody). Inside a frame run the look at the
    // sleepers waits for the run's closing fence (EndpointReceiver::frames_published).
    void notify_waiters(const Waitable *obj = nullptr);
    void wake_sleepers_of(const Waitable *obj);
    void notify_deferred_waiters();
    // A non-blocking check found nothing: poll the endpoint once (no thread hand-off for an
    // application that polls with PtlEQGet/PtlCTGet) and note that the application is active.
    void poll_once(Endpoint *ep);

    // ni.cpp
    NI *ni_of(ptl_handle_ni_t h) const { return nis_.lookup(ObjType::NI, h); }
    std::unique_ptr<transport::Transport> open_transport(ptl_pid_t pid);
    // The process's endpoint, opened at its first NI (caller holds the lock); a PTL_ code.
    int open_endpoint_locked(ptl_pid_t pid, Endpoint **out);
    // The job service's secret and rank map (bootstrap/job.hpp); engine.cpp.
    std::string job_secret();
    std::string shared_job_secret(); // bootstrap::Job::shared_secret: never a collective
    int fetch_job_map(std::vector<ptl_process_t> *map, ptl_rank_t *rank, ptl_process_t self);
    static bool resolve_target(const NI *ni, ptl_process_t target, transport::PeerId *peer);
    void destroy_ni(NI *ni);

    // eq.cpp / ct.cpp (engine lock held by callers that produce events)
    void push_event(EQ *eq, const ptl_event_t &ev);
    void ct_add(CT *ct, uint64_t success, uint64_t failure);
    EQ *eq_of(ptl_handle_eq_t h) const { return eqs_.lookup(ObjType::EQ, h); }
    CT *ct_of(ptl_handle_ct_t h) const { return cts_.lookup(ObjType::CT, h); }
    // Without the engine lock: the live object h names, its users count raised so that a
    // concurrent free keeps it (the caller lowers it), or nullptr.
    template <class T> static T *pin(const HandleTable<T> &table, ObjType type, ptl_handle_any_t h) {
        const auto *slot = table.slot_of(type, h);
        T *o = slot ? slot->object(h) : nullptr;
        if (!o) return nullptr;
        o->users.fetch_add(1, std::memory_order_seq_cst);
        // Pairs with the freer's removal from the table before its look at users (Dekker).
        if (slot->object(h) == o) return o;
        o->users.fetch_sub(1, std::memory_order_seq_cst);
        return nullptr;
    }
    EQ *pin_eq(ptl_handle_eq_t h) const { return pin(eqs_, ObjType::EQ, h); }
    CT *pin_ct(ptl_handle_ct_t h) const { return pin(cts_, ObjType::CT, h); }
    MD *pin_md(ptl_handle_md_t h) const { return pin(mds_, ObjType::MD, h); }
    // A freed object kept for reuse (spare_eqs_, spare_cts_), or a new one.
    template <class T> static T *reuse_or_new(std::vector<std::unique_ptr<T>> &spares) {
        if (spares.empty()) return new T;
        T *o = spares.back().release();
        spares.pop_back();
        return o;
    }
    void retire_eq(EQ *eq); // removed from the table: spare, or dead while users remain
    void retire_ct(CT *ct);
    void retire_md(MD *md);

    // list_entry.cpp
    // A message still streaming into an overflow entry of pt that `probe` matches: its header
    // becomes unexpected only once it is whole (finish_put).
    bool overflow_stream_matches(const NI &ni, ptl_pt_index_t pt, const Entry &probe) const;
    bool entry_matches(const NI &ni, const Entry &e, ptl_match_bits_t bits, uint64_t bits_hi, ptl_process_t initiator,
                       uint32_t src_rank, ptl_size_t rlength, ptl_size_t remote_offset) const;
    void auto_unlink(Entry *e);
    // AUTO_UNLINK for an entry taken off its list at match time, once no message streams into it.
    void unlink_if_spent(Entry *e);
    // A message streaming into pt has ended (a PtlPTDisable may wait for the last one).
    void stream_ended(PT &pt);
    void release_header(Unexpected &u);
    void retire_handle(Entry *e);
    void retire_entries(NI *ni);
    void destroy_entry(Entry *e);
    void entry_event(Entry *e, ptl_event_kind_t type, const ptl_event_t &base);
    // Whether entry_event would queue an event of this type and outcome for e.
    static bool entry_wants_event(const Entry &e, ptl_event_kind_t type, ptl_ni_fail_t fail);
    void entry_count(Entry *e, bool overflow_kind, ptl_ni_fail_t fail, ptl_size_t mlength);
    int consume_unexpected(NI *ni, PT &pt, Entry *e, bool searching, ptl_search_op_t op, bool *linked);

    // data_movement.cpp (engine lock held): the operations themselves, shared by the immediate
    // calls and by triggered operations when they fire.
    // bundled: the application started it on an NI inside a bundle, so a sleeping peer's wakeup
    // may wait for PtlEndBundle (never for operations fired by triggers or for responses).
    // put without the engine lock (untracked puts), and the pieces both paths share.
    static bool untracked(const MD *md, ptl_size_t length);
    // send(md) with md pinned and no engine lock, if mdh names an MD and the operation is
    // untracked; its result, or -1 when the caller must take the locked path.
    template <class Send> int unlocked_if_untracked(ptl_handle_md_t mdh, ptl_size_t length, Send send) {
        MD *md = pin_md(mdh);
        if (!md) return -1;
        const int rc = untracked(md, length) ? send(md) : -1;
        md->users.fetch_sub(1, std::memory_order_seq_cst);
        return rc;
    }
    static int check_put(const MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                         ptl_process_t target, transport::PeerId *peer);
    wire::Header put_header(const MD *md, ptl_size_t length, ptl_ack_req_t ack, ptl_pt_index_t pt,
                            ptl_match_bits_t bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data, uint64_t cookie,
                            uint64_t bits_hi) const;
    static void send_untracked(NI *ni, transport::PeerId peer, const wire::Header &h, const transport::Gather &payload,
                               bool bundled);
    int put_unlocked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
                     ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
                     uint64_t bits_hi);
    int atomic_unlocked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
                        ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
                        ptl_op_t op, ptl_datatype_t type);
    int put_locked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
                   ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                   ptl_hdr_data_t hdr_data, bool bundled = false, uint64_t bits_hi = 0);
    int get_locked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
                   ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, bool bundled = false);
    // Atomic (get_md == nullptr) or FetchAtomic/Swap.
    int atomic_locked(MD *get_md, ptl_size_t local_get_offset, MD *put_md, ptl_size_t local_offset, ptl_size_t length,
                      ptl_ack_req_t ack, ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
                      ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, const void *operand,
                      ptl_op_t op, ptl_datatype_t type, bool bundled = false);
    // Argument checks shared by immediate and triggered calls.
    int check_atomic(MD *get_md, ptl_size_t local_get_offset, MD *put_md, ptl_size_t local_put_offset,
                     ptl_size_t length, ptl_op_t op, ptl_datatype_t type, int call);
    void target_atomic(Endpoint &ep, const Arrival &a, NI *ni, PT &pt, Entry *e, ptl_size_t offset, ptl_size_t mlength,
                       bool spent);
    // A request has been applied to entry e: its target event, its count and, in an overflow
    // entry, its unexpected header.
    void complete_target(PT &pt, Entry *e, const wire::Header &h, ptl_size_t offset, ptl_size_t mlength,
                         ptl_ni_fail_t fail);
    // The trigger counter of a data-movement trigger, if it, the MD and the target belong together.
    CT *trigger_counter(ptl_handle_ct_t trig_ct, MD *md, ptl_process_t target);
    // Posts t on ct (engine lock held); fires at once if the threshold is already reached.
    int post_trigger(CT *ct, const Trigger &t, ptl_size_t threshold);
    void fire_triggers(CT *ct);
    void execute(Trigger &t);
    // Ends a fired data-movement operation that could not start with failure events.
    void fail_fired(const Trigger &t);
    void drop_triggers(CT *ct);

    uint64_t alloc_op();
    // Starts an operation from `md` (its SEND/REPLY pending until settled) and returns its cookie.
    uint64_t start_op(wire::Kind kind, MD *md, void *user_ptr, ptl_size_t local_offset, ptl_size_t length,
                      transport::PeerId peer);
    // The header of a request from `ni`: addressing, our ids and the operation's cookie.
    wire::Header request_header(NI *ni, wire::Kind kind, ptl_pt_index_t pt, ptl_match_bits_t bits,
                                ptl_size_t remote_offset, ptl_size_t length, uint64_t cookie) const;
    Op *op_of(uint64_t cookie);
    void free_op_if_done(uint64_t cookie);
    void complete_send(uint64_t cookie, ptl_ni_fail_t fail);
    void complete_ack(uint64_t cookie, const wire::Header *h, ptl_ni_fail_t fail);
    void complete_reply(uint64_t cookie, const wire::Header *h, ptl_ni_fail_t fail);
    void md_event(MD *md, ptl_event_kind_t type, void *user_ptr, ptl_ni_fail_t fail, ptl_size_t mlength,
                  ptl_size_t remote_offset, ptl_list_t list);
    void md_release_ref(MD *md);
    // A request at the target: matched (or refused, and consumed), its entry claimed, then applied.
    void target_request(Endpoint &ep, transport::Link &link, const Arrival &a);
    ptl_ni_fail_t match_request(Endpoint &ep, const wire::Header &h, Landing *at);
    // The entry of pt a request matches first (priority list, then overflow), through pt's cache
    // when it may serve, else by walking the lists (which refills the cache); nullptr if none.
    Entry *find_entry(const NI &ni, PT &pt, const wire::Header &h, ptl_process_t initiator);
    void trace_request(const wire::Header &h, const Landing &at, ptl_ni_fail_t fail) const; // PORTICO_TRACE
    void reject_request(Endpoint &ep, transport::Link &link, const Arrival &a, ptl_ni_fail_t fail);
    void claim_entry(const wire::Header &h, Landing *at);
    void start_put(Endpoint &ep, transport::Link &link, const Arrival &a, const Landing &at);
    // The one-frame path (docs/FASTPATH.md §4): a put whose whole payload is in its first frame,
    // copied into the entry from the frame and completed at once, with no RxState and no stream.
    bool whole_in_frame(const Arrival &a) const;
    void put_in_one_frame(Endpoint &ep, const Arrival &a, const Landing &at);
    // A put's data is in its entry: its event, count, answer and the spent entry's AUTO_UNLINK
    // (both paths).
    void deliver_put(Endpoint &ep, PT &pt, Entry *e, const wire::Header &h, ptl_size_t offset, ptl_size_t mlength,
                     ptl_ni_fail_t fail);
    void answer_get(Endpoint &ep, transport::Link &link, const Arrival &a, const Landing &at);
    enum class SingleCopy { None, Direct, Segment };
    static constexpr size_t kSegmentFrom = 2048;
    static SingleCopy single_copy(Endpoint &ep, transport::PeerId peer, const void *addr, size_t length,
                                  wire::SegmentRef *ref);
    void target_data(Endpoint &ep, RxState &rx, const std::byte *payload, size_t n, bool fault);
    void finish_put(Endpoint &ep, RxState &rx);
    // Sends an Ack or Reply; returns PTL_NI_SEGV if the payload could not be read (sent without it).
    ptl_ni_fail_t send_response(Endpoint &ep, const wire::Header &req, wire::Kind kind, ptl_ni_fail_t fail,
                                ptl_size_t mlength, ptl_size_t offset, ptl_list_t list,
                                const transport::Gather &payload, uint8_t flags = 0, bool may_hold = false);
    // Answers a put: a real ack (is_ack and the initiator asked for one) and/or, for a rendezvous
    // put, the news that the target no longer needs the initiator's buffer.
    void answer_put(Endpoint &ep, const wire::Header &req, bool is_ack, ptl_ni_fail_t fail, ptl_size_t mlength,
                    ptl_size_t offset, ptl_list_t list);
    void initiator_reply_data(RxState &rx, const std::byte *payload, size_t n, bool fault);

    FutexMutex mutex_; // the engine lock
    // A completion's full event and its count reach the application as one: the event goes first
    // (a counter that reached its threshold has its events queued), and PtlCTGet waits out a
    // completion in progress, so a counter read after an event was seen includes that event. Odd
    // while a completion is under way; written only under the engine lock.
    std::atomic<uint64_t> completion_seq_{0};
    unsigned completion_depth_ = 0; // completions nest: a count may fire triggers that complete
    class CompletionWindow {
    public:
        explicit CompletionWindow(Engine &e) : e_(e) {
            if (e_.completion_depth_++ == 0)
                e_.completion_seq_.store(e_.completion_seq_.load(std::memory_order_relaxed) + 1,
                                         std::memory_order_relaxed);
        }
        ~CompletionWindow() {
            if (--e_.completion_depth_ == 0)
                e_.completion_seq_.store(e_.completion_seq_.load(std::memory_order_relaxed) + 1,
                                         std::memory_order_release);
        }
        CompletionWindow(const CompletionWindow &) = delete;
        CompletionWindow &operator=(const CompletionWindow &) = delete;

    private:
        Engine &e_;
    };
    // PORTICO_FAST_PATH, read at the first init; off: every message takes the generic path.
    bool fast_path_ = true;
    static Engine &make_instance();
    static constinit inline std::atomic<Engine *> instance_{nullptr};
    std::atomic<int> init_count_{0};
    bool finalized_ = false;
    std::atomic<bool> aborted_{false};

    HandleTable<NI> nis_;
    HandleTable<MD> mds_;
    HandleTable<Entry> entries_;
    HandleTable<EQ> eqs_; // looked up without the lock by waiting and polling threads (pin)
    HandleTable<CT> cts_;
    std::vector<std::unique_ptr<Endpoint>> endpoints_;
    std::vector<Op> ops_;
    std::vector<uint32_t> free_ops_;

    // Gather lists, reused under the engine lock: no allocation per message. A member, not a
    // thread_local: the engine outlives every thread's locals (Portals calls from atexit handlers).
    std::vector<iovec> iov_scratch_;
    std::vector<std::byte> atomic_old_, atomic_new_; // a target atomic's data before and after
    // A thread asleep in a wait, registered in sleeping_: an event on one EQ wakes only the
    // threads that wait on that EQ (a thread parked on a quiet EQ sleeps through other traffic).
    struct Sleeper {
        std::atomic<uint32_t> word{0}; // set to 1 to wake it
        Waitable *const *objs = nullptr;
        unsigned nobjs = 0;
    };
    std::mutex sleepers_mutex_;
    std::vector<Sleeper *> sleeping_; // under sleepers_mutex_
    // Threads on their way to sleep or asleep: those of active waits (the progress thread listens
    // for them instead of parking), those of passive ones, and those woken by any news (nobjs 0).
    std::atomic<int> sleepers_{0};
    std::atomic<int> passive_sleepers_{0};
    std::atomic<int> wildcard_sleepers_{0};
    std::atomic<int> pt_disable_waiters_{0}; // threads in PtlPTDisable waiting for streams to end

    std::vector<ptl_process_t> job_map_;
    ptl_rank_t job_rank_ = 0;

    // Objects freed while another thread may still be inside a wait on them; deleted at PtlFini.
    std::vector<std::unique_ptr<EQ>> dead_eqs_;
    std::vector<std::unique_ptr<CT>> dead_cts_;
    std::vector<std::unique_ptr<MD>> dead_mds_;
    // Freed EQs and CTs, kept for the next allocation instead of deleted: a thread that found one
    // without the lock may still touch its users count (pin).
    std::vector<std::unique_ptr<EQ>> spare_eqs_;
    std::vector<std::unique_ptr<CT>> spare_cts_;
    std::vector<std::unique_ptr<MD>> spare_mds_;
    // Entries freed, kept for the next append (a PSM2 receive appends one and frees it per
    // message; malloc and free were a fifth of that). At most kSpareEntries; none under ASan,
    // which then still sees a use of a freed entry.
    std::vector<std::unique_ptr<Entry>> spare_entries_;
#if defined(__SANITIZE_ADDRESS__)
    static constexpr size_t kSpareEntries = 0;
#else
    static constexpr size_t kSpareEntries = 256;
#endif
};

// Tunables (see portico-info)
struct Tunables {
    uint64_t wait_pause_ns; // the first part of a wait's polling, with `pause`; sched_yield after it
    uint64_t progress_spin_ns;
    uint64_t progress_park_ns;
    uint64_t progress_park_max_ns; // at least progress_park_ns
    static const Tunables &get();
    // How long a wait polls before it sleeps: PORTICO_WAIT_SPIN_US, else what
    // portico_set_wait_spin_us (portico_ext.h) set last, else the default.
    static uint64_t wait_spin_ns();
    static int set_wait_spin_us(uint64_t us); // PTL_OK, or PTL_IGNORED when the environment sets it
    // The transports an endpoint opened from now on selects (portico_set_transport): PTL_OK;
    // PTL_IGNORED when PORTICO_TRANSPORT is set; PTL_ARG_INVALID for a name no transport has.
    static int set_transport(const char *names);
};

ptl_ni_limits_t default_limits();

} // namespace portico::engine
