// SPDX-License-Identifier: BSD-3-Clause
// libpsm2 on Portals: the state behind the PSM2 handles, and how a PSM2 message travels as
// Portals operations. A client of the public Portals API (portals4.h, portico_ext.h's wide match)
// like GASNet and UPC; see docs/PSM2.md for the design.
//
// One Portals NI (matching, physical) serves every endpoint of the process. Endpoint c (its
// "context", 0..kMaxEndpoints-1) owns three portal table entries at fixed indices, so a peer
// reaches them knowing only the epid: receives, the rendezvous sources it exposes, and control
// (connect's identity check, active messages).
//
// A message is one put to the receive PT:
//   match_bits    = tag0 | tag1 << 32
//   match_bits_hi = tag2 | sender's context << 32 | kHiRendezvous when the data waits at the sender
//   hdr_data      = tag2 | message length << 32 (the target's events do not carry the hi bits)
//   remote_offset = flags | sender's context << 8 | send id << 16 (every receive entry manages
//                   its offset locally, so Portals reports this value without using it)
// Eager messages carry their data from the sender's retain ring, where it stays until the ack
// says the receiver has it (remote_offset's send id is then the ring offset). An unexpected one
// lands in a slab on the overflow list; with every slab full (the receiver is away from PSM2), in
// the zero-length catch-all entry behind them, so only its header waits and the receiver later
// gets the data from the sender's ring. Nothing is dropped for want of room.
// Rendezvous messages (long, or synchronous) leave their source exposed on the sender's
// rendezvous PT under the send id; on shared memory the put still carries the data (the engine
// moves it single copy straight into a posted receive), over the network it carries none. An
// unexpected rendezvous message lands in the catch-all, so only its header waits.
// The receiver gets what the put did not deliver; the sender's request completes on the get, or on
// an ack from the priority list when the put delivered everything.
#pragma once

#include <portals4.h>
#include <portico_ext.h>
#include <psm2.h>
#include <psm2_am.h>
#include <psm2_mq.h>

#include <sched.h>

#include "common/futex_mutex.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory_resource>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace portico::psm2 {

inline constexpr int kMaxEndpoints = 64;
// Portal table indices of endpoint c: kPtBase + 3c (receives), +1 (rendezvous), +2 (control).
inline constexpr ptl_pt_index_t kPtBase = 16;
inline ptl_pt_index_t recv_pt(unsigned ctx) { return kPtBase + 3 * ctx; }
inline ptl_pt_index_t rndv_pt(unsigned ctx) { return kPtBase + 3 * ctx + 1; }
inline ptl_pt_index_t ctl_pt(unsigned ctx) { return kPtBase + 3 * ctx + 2; }

// PSM2_DEVICES: "self" (the endpoint itself), "shm" (peers reached through shared memory), "hfi"
// (Portico's network transport, for every other peer).
inline constexpr unsigned kDeviceSelf = 1;
inline constexpr unsigned kDeviceShm = 2;
inline constexpr unsigned kDeviceHfi = 4;

inline constexpr uint64_t kHiRendezvous = uint64_t{1} << 40;
inline constexpr uint64_t kHiContextShift = 32;
inline constexpr uint64_t kHiContextMask = uint64_t{0xFF} << kHiContextShift;

// The largest eager message: thresholds (options and environment) are capped to it, and every
// receiver keeps this much room in its unexpected-message slabs, since a sender's threshold is its
// own and may exceed the receiver's.
inline constexpr uint32_t kMaxEagerBytes = uint32_t{2} << 20;

// remote_offset flags of a message.
inline constexpr uint64_t kMsgRendezvous = 1; // the receiver gets what the put did not carry
inline constexpr uint64_t kMsgCarriesData = 2;
inline constexpr uint64_t kMsgSync = 4;

// Match bits of the retain ring's entry on the rendezvous PT (send ids, the rendezvous entries'
// match bits, start at 1).
inline constexpr ptl_match_bits_t kRingMatchBits = 0;
// Set in the match bits of the last get of a rendezvous message: the sender's request completes
// on it (over the network the receiver gets the data in pieces).
inline constexpr ptl_match_bits_t kLastPiece = ptl_match_bits_t{1} << 63;

// Control PT match bits.
inline constexpr ptl_match_bits_t kCtlIdentity = 1; // connect reads the endpoint's Identity
inline constexpr ptl_match_bits_t kCtlAmRequest = 2;
inline constexpr ptl_match_bits_t kCtlAmReply = 3;

// What connect reads from a peer endpoint: who it is and its job key.
struct Identity {
    uint64_t epid;
    uint8_t uuid[16];
};

// epid: nid (32 bits) | pid (24) | context (8). PSM2 clients treat it as opaque; epid_nid/port/
// context return the fields.
inline psm2_epid_t make_epid(ptl_nid_t nid, ptl_pid_t pid, unsigned ctx) {
    return uint64_t{nid} << 32 | uint64_t{pid & 0xFFFFFFu} << 8 | (ctx & 0xFFu);
}
inline ptl_nid_t epid_nid_of(psm2_epid_t e) { return static_cast<ptl_nid_t>(e >> 32); }
inline ptl_pid_t epid_pid_of(psm2_epid_t e) { return static_cast<ptl_pid_t>((e >> 8) & 0xFFFFFFu); }
inline unsigned epid_ctx_of(psm2_epid_t e) { return static_cast<unsigned>(e & 0xFFu); }

struct Slab;
struct AmOp;
struct AmHandler;

} // namespace portico::psm2

struct psm2_ep;

// The handles of psm2.h are pointers to these (global namespace: the header names the tags).
struct psm2_epaddr {
    psm2_epid_t epid = 0;
    ptl_process_t proc{};
    unsigned ctx = 0;
    psm2_ep *ep = nullptr; // the local endpoint that knows this peer
    void *user_ctxt = nullptr;
    const char *label = nullptr;
    bool connected = false; // by psm2_ep_connect (implicit ones are known from a message)
    int8_t shm = -1;        // reached through shared memory (same_node, asked once), -1: not yet
};

struct psm2_mq {
    psm2_ep *ep = nullptr;
};

struct psm2_mq_req {
    psm2_mq_req_user user{}; // first: psm2_mq_ipeek_dequeue_multi's callback reads it
    enum class Kind { Send, Recv, Probed } kind = Kind::Send;
    psm2_ep *ep = nullptr;
    bool complete = false;
    bool in_completions = false; // on Ep::completed (ipeek's order)
    psm2_mq_req *done_prev = nullptr;
    psm2_mq_req *done_next = nullptr;
    bool user_released = false; // test/wait/req_free handed it back
    int engine_refs = 0;        // Portals events still to come that name it
    // Receive state.
    ptl_handle_me_t me = PTL_INVALID_HANDLE;
    bool matched = false;
    bool cancelled = false;
    uint64_t msg_flags = 0;
    uint32_t msg_len = 0;
    uint32_t got = 0; // bytes in the user buffer so far
    // Fetching from the sender: the next byte to ask for, where to stop, gets under way.
    uint32_t fetch_next = 0;
    uint32_t fetch_end = 0;
    int gets = 0;
    // Probed: where an improbe'd message waits (a slab, or the sender: rendezvous, or an eager
    // message whose header alone landed).
    const void *stash = nullptr;
    bool at_sender = false; // an eager message whose data waits in the sender's retain ring
    uint64_t send_id = 0;   // rendezvous: the sender's send id; eager: its retain-ring offset
    // Send state.
    uint64_t id = 0;
    ptl_handle_me_t rndv_me = PTL_INVALID_HANDLE;
    // The endpoint's list of live requests.
    psm2_mq_req *live_prev = nullptr;
    psm2_mq_req *live_next = nullptr;
};

namespace portico::psm2 {

using Req = psm2_mq_req;

// An endpoint's requests: the live ones (closing unlinks their entries and frees them) and freed
// ones kept for reuse, so that a message costs no allocation once the pool is warm.
class Requests {
public:
    Requests() = default;
    Requests(const Requests &) = delete;
    Requests &operator=(const Requests &) = delete;
    ~Requests() {
        clear();
        for (Req *r : spare_) delete r;
    }
    Req *take() {
        Req *r = nullptr;
        if (spare_.empty()) {
            r = new Req;
        } else {
            r = spare_.back();
            spare_.pop_back();
            *r = Req{};
        }
        r->live_next = live_;
        if (live_) live_->live_prev = r;
        live_ = r;
        return r;
    }
    void give_back(Req *r) {
        if (r->live_prev)
            r->live_prev->live_next = r->live_next;
        else
            live_ = r->live_next;
        if (r->live_next) r->live_next->live_prev = r->live_prev;
        if (spare_.size() < kSpareRequests)
            spare_.push_back(r);
        else
            delete r;
    }
    template <class F> void for_each(F f) const {
        for (Req *r = live_; r;) {
            Req *next = r->live_next;
            f(r);
            r = next;
        }
    }
    void clear() {
        for_each([](Req *r) { delete r; });
        live_ = nullptr;
    }

private:
    static constexpr size_t kSpareRequests = 4096;
    Req *live_ = nullptr;
    std::vector<Req *> spare_;
};

// The requests completed and not yet handed back, in completion order (psm2_mq_ipeek's), linked
// through the requests themselves: a wait takes its own out of the middle without a search.
class Completions {
public:
    bool empty() const { return !head_; }
    Req *front() const { return head_; }
    void push_back(Req *r) {
        r->in_completions = true;
        r->done_prev = tail_;
        r->done_next = nullptr;
        (tail_ ? tail_->done_next : head_) = r;
        tail_ = r;
    }
    void remove(Req *r) {
        if (!r->in_completions) return;
        r->in_completions = false;
        (r->done_prev ? r->done_prev->done_next : head_) = r->done_next;
        (r->done_next ? r->done_next->done_prev : tail_) = r->done_prev;
    }
    void pop_front() { remove(head_); }
    void clear() {
        while (head_) pop_front();
    }

private:
    Req *head_ = nullptr;
    Req *tail_ = nullptr;
};

// An overflow-list buffer for unexpected messages. An MQ slab is relinked once it has unlinked
// itself, the engine said that no unexpected header points into it (AUTO_FREE) and no improbe'd
// message waits in it: it raises no event per arrival, so a flood cannot overflow the queue.
struct Slab {
    std::unique_ptr<std::byte[]> mem;
    size_t size = 0;
    ptl_handle_me_t me = PTL_INVALID_HANDLE;
    bool linked = false;
    bool freed = true; // MQ: AUTO_FREE came since it was last linked
    int probed = 0;    // MQ: improbe'd messages in it, not received yet
};

// The buffers of one portal table entry (MQ receives, or control) for messages no posted entry
// takes: slabs on the overflow list, the catch-all behind them (buffers.cpp). Arrivals raise no
// event; a counter counts them.
struct Overflow {
    ptl_pt_index_t pt = 0;
    size_t slab_bytes = 0;
    ptl_size_t min_free = 0; // room a slab keeps for the largest message
    int slabs_linked = 0;    // at a time
    ptl_match_bits_t match_bits = 0;
    ptl_match_bits_t ignore_bits = 0;
    portico_match_hi_t slab_hi{0, ~uint64_t{0}};
    std::list<Slab> slabs;
    // Zero-length entries that keep a message's header when no slab takes it: the last is behind
    // every slab; older ones wait to be unlinked until no header points into them.
    std::deque<ptl_handle_me_t> catch_alls;
    ptl_handle_ct_t arrivals = PTL_INVALID_HANDLE;
    ptl_size_t arrivals_seen = 0;
};

// A sender's copy of one message, kept until the receiver has the data.
struct Retained {
    uint64_t offset = 0; // in the ring
    uint32_t reserved = 0;
    uint32_t length = 0;
    bool acked = false;        // the put's ack came
    bool awaited = false;      // the ack said only the header landed: the receiver gets the data
    bool fetched = false;      // that get came
    bool released = false;     // done, and its bytes are free (RetainRing::live no longer has it)
    uint64_t am_op = 0;        // an active message request whose completion callback waits on it
    psm2_epaddr *to = nullptr; // the receiver
    bool done() const { return acked && (!awaited || fetched); }
};

// Where eager sends keep their data until acknowledged: a ring of bytes bound as an MD (the put's
// source) and exposed to gets on the rendezvous PT. Full, an eager send falls back to rendezvous.
struct RetainRing {
    std::unique_ptr<std::byte[]> mem;
    size_t size = 0;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    ptl_handle_me_t me = PTL_INVALID_HANDLE;
    std::deque<Retained> slots; // allocation order; references stay valid (deque, ends only)
    // offset -> reserved bytes of the slots not done yet. One insert and one erase per message:
    // the nodes come from a pool the ring keeps, not from malloc, once it has warmed up.
    std::pmr::unsynchronized_pool_resource live_nodes;
    std::pmr::map<uint64_t, uint32_t> live{&live_nodes};
    uint64_t head = 0;                      // where the last slot ended: the next one goes there if it fits
    size_t unacked = 0;                     // slots whose ack has not come
    std::map<uint64_t, Retained *> awaited; // by offset
};

// An endpoint's lock: recursive (a handler may call back in: am_reply_short), and handed over by a
// thread that blocks in a PSM2 call (psm2_mq_wait, a blocking send, a full retain ring, a graceful
// close) to the threads waiting for it, as opa-psm2's PSMI_BLOCKUNTIL does (PSMI_YIELD). A thread
// that kept it while it waited would stop every other thread of the process, and with it the peer
// whose message it waits for when that peer waits for one of those threads (GASNet's psm-conduit
// in PAR mode, MPI_THREAD_MULTIPLE).
//
// Every PSM2 call takes it, a message four times: it is a futex word (common/futex_mutex.hpp: one
// locked instruction to take and one to leave, inline) with the holder's identity beside it for
// the recursion, not a std::recursive_mutex (three calls into libc and about 110 instructions per
// lock and unlock).
class EpLock {
public:
    void lock() {
        const uintptr_t me = self();
        // Only this thread ever stores its own identity here, so a relaxed look is exact for it.
        if (holder_.load(std::memory_order_relaxed) == me) {
            ++depth_;
            return;
        }
        if (!mutex_.try_lock()) {
            waiting_.fetch_add(1, std::memory_order_acq_rel);
            mutex_.lock();
            waiting_.fetch_sub(1, std::memory_order_acq_rel);
            handovers_.fetch_add(1, std::memory_order_acq_rel);
        }
        holder_.store(me, std::memory_order_relaxed);
        depth_ = 1;
    }
    void unlock() {
        if (--depth_ > 0) return;
        holder_.store(0, std::memory_order_relaxed);
        mutex_.unlock();
    }
    // Called by the holder while it blocks: when other threads wait for the lock and the holder
    // took it once (not from inside a handler), lets one of them take it first.
    void hand_over() {
        if (depth_ != 1 || waiting_.load(std::memory_order_acquire) == 0) return;
        const uint64_t before = handovers_.load(std::memory_order_acquire);
        unlock();
        while (handovers_.load(std::memory_order_acquire) == before && waiting_.load(std::memory_order_acquire) > 0)
            sched_yield();
        lock();
    }

private:
    // A thread's identity: the address of a thread-local of its own (initial-exec: no call).
    static uintptr_t self() {
        static constinit __attribute__((tls_model("initial-exec"))) thread_local char tag = 0;
        return reinterpret_cast<uintptr_t>(&tag);
    }
    FutexMutex mutex_;
    std::atomic<uintptr_t> holder_{0}; // self() of the thread that holds it, or 0
    int depth_ = 0;                    // the holder's nesting (written by the holder only)
    std::atomic<int> waiting_{0};
    std::atomic<uint64_t> handovers_{0}; // times a waiting thread got it
};

struct AmHandler {
    psm2_am_handler_fn_t fn = nullptr;
    psm2_am_handler_2_fn_t fn2 = nullptr;
    void *hctx = nullptr;
};

// A request whose completion callback waits for its handler to have run (the reply, or the
// target's "done" message, says so).
struct AmOp {
    psm2_am_completion_fn_t done = nullptr;
    void *done_ctxt = nullptr;
};

} // namespace portico::psm2

struct psm2_ep {
    portico::psm2::EpLock lock; // everything below
    unsigned ctx = 0;
    psm2_epid_t epid = 0;
    uint8_t uuid[16]{};
    psm2_ep_errhandler_t errhandler = nullptr;
    unsigned devices = 0; // PSM2_DEVICES: the kDevice* bits of the paths to peers it may use
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE; // the whole address space
    portico::psm2::Identity identity{};
    ptl_handle_me_t identity_me = PTL_INVALID_HANDLE;
    portico::psm2::Overflow mq_overflow; // unexpected MQ messages
    portico::psm2::RetainRing ring;      // eager messages and active messages until acknowledged
    psm2_mq mq_obj{};
    bool mq_open = false;
    uint32_t rndv_net = 64000; // PSM2_MQ_RNDV_HFI_THRESH
    uint32_t rndv_shm = 16000; // PSM2_MQ_RNDV_SHM_THRESH
    psm2_mq_stats_t stats{};
    uint64_t next_send_id = 1;
    std::map<psm2_epid_t, std::unique_ptr<psm2_epaddr>> peers;
    portico::psm2::Completions completed; // completion order, for ipeek
    std::deque<psm2_mq_req *> fetches;    // receives waiting to ask a network peer for a piece
    int net_gets = 0;                     // pieces under way over the network
    portico::psm2::Requests requests;
    // Control: connect's identity reads and active messages, on their own queue and MD.
    ptl_handle_eq_t ctl_eq = PTL_INVALID_HANDLE;
    ptl_handle_md_t ctl_md = PTL_INVALID_HANDLE;
    std::vector<portico::psm2::AmHandler> am_handlers;
    portico::psm2::Overflow am_overflow;                             // active messages
    std::map<uint64_t, std::unique_ptr<portico::psm2::AmOp>> am_ops; // requests awaiting their reply
    uint64_t next_am_id = 1;
    bool closing = false;
    uint64_t lost_eager = 0; // eager sends their receiver refused (no header room, or gone)
};

namespace portico::psm2 {

using Ep = ::psm2_ep;

// ---- library state (core.cpp) ---------------------------------------------------------------------
struct Library {
    std::mutex lock;
    int init_count = 0;
    bool finalized = false;
    bool multi_ep = false;
    psm2_ep_errhandler_t global_handler = PSM2_ERRHANDLER_NO_HANDLER;
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_process_t self{};
    ptl_size_t max_volatile = 0; // the NI's max_volatile_size: eager sends this small complete at once
    Ep *eps[kMaxEndpoints]{};
    int open_eps = 0;
};
Library &library();

// Reports err through ep's handler (or the global one when ep is null) and returns what the
// handler returns: psm2 calls end with `return report(ep, err, "...")`.
psm2_error_t report(Ep *ep, psm2_error_t err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// The peer record of epid at ep, made on first use (a message, connect or lookup).
psm2_epaddr *peer_of(Ep &ep, psm2_epid_t epid);
// Whether epid is reached through shared memory: on this node, and the engine's transports for
// such peers include shm (PORTICO_TRANSPORT=tcp takes TCP even on one node). The engine answers
// (portico_peer_shares_memory); a peer record keeps the answer.
bool same_node(psm2_epid_t epid);
inline bool same_node(psm2_epaddr &peer) {
    if (peer.shm < 0) peer.shm = same_node(peer.epid) ? 1 : 0;
    return peer.shm == 1;
}

// Whether PSM2_DEVICES lets ep reach epid (itself through "self", a peer through "shm" or "hfi").
bool device_allows(const Ep &ep, psm2_epid_t epid);

// ---- matched queues (mq.cpp) ---------------------------------------------------------------------
// Takes every event ep's queues hold and acts on it; true if there was one. Caller holds ep.lock.
// psm2_ep_connect drains the matched queue's only: it takes its own replies from the control queue.
bool drain(Ep &ep, bool control = true);
// Acts on the events queued, or else waits (bounded) for one and acts on it; true if there was
// one. Caller holds ep.lock.
bool wait_event(Ep &ep, ptl_time_t timeout_ms);
// Links the MQ's overflow entries (slabs, the catch-all) and exposes the retain ring, at
// psm2_ep_open.
psm2_error_t mq_start(Ep &ep);
void mq_stop(Ep &ep);
// Sends the network still owes an answer (graceful close waits for them).
bool sends_pending(const Ep &ep);
// Unlinks every request's entries and frees the requests (closing). Caller holds ep.lock.
void drop_requests(Ep &ep);

// ---- overflow buffers and the retain ring (buffers.cpp); callers hold ep.lock ---------------------
psm2_error_t overflow_start(Overflow &o); // the counter, the slabs, the catch-all
void overflow_stop(Overflow &o);
void overflow_free_ct(Overflow &o);
// A slab's AUTO_UNLINK (full: a replacement is linked) or AUTO_FREE (no header points into it).
void overflow_slab_event(Overflow &o, const ptl_event_t &ev, bool closing);
Slab *overflow_slab_holding(Overflow &o, const void *p);
// Unlinks the catch-alls that a newer one replaced and that no header points into now.
void overflow_trim_catch_alls(Overflow &o);
// A header was taken from the unexpected list: replaced catch-alls it emptied must go.
inline void overflow_header_taken(Overflow &o) {
    if (o.catch_alls.size() > 1) overflow_trim_catch_alls(o);
}
// Whether messages arrived since the last call.
bool overflow_new_arrivals(Overflow &o);

psm2_error_t ring_start(Ep &ep); // its MD (the puts' source) and its entry on the rendezvous PT
void ring_stop(Ep &ep);
// Room for len bytes, or nullptr when the ring is full; a full ring whose acks are under way is
// waited for (the receiving engine sends them whether or not its application runs).
Retained *ring_take(RetainRing &g, uint32_t len);
Retained *ring_take_waiting(Ep &ep, uint32_t len);
void ring_put_failed(RetainRing &g, Retained *s);
void ring_trim(RetainRing &g);
// Frees a slot's bytes once it is done (acked, and fetched if it had to be); call after each change.
void ring_release(RetainRing &g, Retained *s);
// The put's ack: the slot is free, or (only the header landed) waits for the receiver's get.
// False when the message was refused.
bool ring_ack(RetainRing &g, Retained *s, const ptl_event_t &ev);
void ring_fetched(RetainRing &g, const ptl_event_t &ev); // a GET event of the ring's entry
// Ack events name a slot by its address with the low bit set (requests are at least 8-aligned).
void *slot_cookie(Retained *s);
Retained *slot_of(void *cookie);

// ---- control: active messages and connect (am.cpp) -------------------------------------------------
psm2_error_t ctl_start(Ep &ep);
void ctl_stop(Ep &ep);
// Runs the handlers of the active messages that arrived; true if there was one.
bool take_active_messages(Ep &ep);
// A request the target refused (or that could not reach it): its completion callback runs, as
// its handler never will.
void am_undelivered(Ep &ep, uint64_t op_id);
// Asks each receiver that still has to fetch data from the ring whether it is there (a read of
// its identity); the slots of one that is gone are given up, so a graceful close never waits
// for the dead.
void forget_dead_receivers(Ep &ep);
// Acts on an event of ep's control queue.
void ctl_event(Ep &ep, const ptl_event_t &ev);

} // namespace portico::psm2
