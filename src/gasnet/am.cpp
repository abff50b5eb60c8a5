// SPDX-License-Identifier: BSD-3-Clause
// Active messages over Portals.
//
// A message is one PtlPut into the target's request (or reply) portal entry: hdr_data names the
// handler, category, argument count and payload size; the body is [Long destination][arguments]
// padded to 16 bytes, then the Medium payload (or a small Long payload). The target lands it in a
// buffer of its zone (MEs with PTL_ME_MANAGE_LOCAL, min_free = the largest message), takes the
// PUT event when it polls, runs the handler in place and re-posts a buffer once every message in
// it has been handled. Long payloads above kLongPackedMax go first, by a put straight into the
// target segment; Portico applies messages whole and in order per initiator-target pair, so they
// are in place before the message that runs the handler.
//
// Flow control: per peer and class, a sender may have at most credit_bytes of messages that the
// target has not yet handled and reported. The target reports by writing its "handled" count into
// the sender's credit slot (a put; the sender never polls for it), and only after making sure its
// zone can take every message all senders may still send (see Zone::slack). Replies have their own
// zone and credits, so a handler that replies never waits for request traffic.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "internal.hpp"
#include "gasnet_settings.hpp"
#include "sizing.hpp"

namespace gasnetp {

namespace {

uint64_t *credit_slot(int cls, gasnet_node_t peer) { return &state->credit_slots[size_t(cls) * state->nodes + peer]; }

void link_buffer(Zone &z, Buffer *b) {
    // Caller holds z.mu (or is alone, at attach).
    b->spent = false;
    b->spent_end = 0;
    b->used_known = 0;
    b->seen = 0;
    b->done.store(0, std::memory_order_relaxed);
    ptl_me_t me = ck::me_desc(
        b->mem, b->len, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE);
    me.min_free = state->eager_max;
    append_me(z.pt, me, "PtlMEAppend (AM buffer)", b);
    b->linked = true;
    z.slack += int64_t(b->len) - int64_t(state->eager_max);
}

// Makes slack >= need: re-posts buffers whose messages have all been handled, then allocates.
void top_up(Zone &z, int64_t need) {
    if (z.slack >= need) return;
    for (Buffer *b : z.bufs) {
        if (b->spent && b->used_known == b->spent_end && b->done.load(std::memory_order_acquire) == b->seen) {
            link_buffer(z, b);
            if (z.slack >= need) return;
        }
    }
    while (z.slack < need) {
        Buffer *b = new Buffer;
        b->len = z.buf_len;
        b->mem = static_cast<char *>(std::aligned_alloc(64, z.buf_len));
        if (!b->mem) fatal("out of memory for active-message buffers");
        z.bufs.push_back(b);
        link_buffer(z, b);
    }
}

int64_t zone_floor() { return int64_t(state->nodes) * int64_t(state->credit_bytes); }

void send_credit(int cls, gasnet_node_t peer, uint32_t handled) {
    if (peer == state->mynode) {
        __atomic_store_n(credit_slot(cls, peer), uint64_t(handled), __ATOMIC_RELEASE);
        return;
    }
    const uint64_t v = handled;
    put_copy(peer, state->pt_ctrl, kMbCredit, (uint64_t(cls) * state->nodes + state->mynode) * sizeof(uint64_t), &v,
             sizeof v, PTL_NO_ACK_REQ, nullptr, 0);
}

// The handler of one of src's messages returned: count it, and report once half the credit is
// owed (so a sender that ran out always gets its credit back once we have handled its messages).
void credit_return(int cls, gasnet_node_t src, uint32_t charge) {
    Peer &p = state->peers[src];
    const uint32_t half = state->credit_bytes / 2;
    const uint32_t h = p.handled[cls].fetch_add(charge, std::memory_order_acq_rel) + charge;
    if (uint32_t(h - p.reported[cls].load(std::memory_order_acquire)) < half) return;
    Zone &z = state->zones[cls];
    std::lock_guard lk(z.mu);
    const uint32_t hh = p.handled[cls].load(std::memory_order_acquire);
    const uint32_t x = hh - p.reported[cls].load(std::memory_order_relaxed);
    if (x < half) return;
    top_up(z, zone_floor() + int64_t(x));
    z.slack -= int64_t(x);
    p.reported[cls].store(hh, std::memory_order_release);
    send_credit(cls, src, hh); // under z.mu: reports to one peer leave in order
}

// Takes charge bytes of credit toward dest, waiting (and serving the network) if need be.
void acquire_credit(int cls, gasnet_node_t dest, uint32_t charge) {
    Peer &p = state->peers[dest];
    const uint64_t *slot = credit_slot(cls, dest);
    unsigned iter = 0;
    for (;;) {
        const uint32_t freed = uint32_t(__atomic_load_n(slot, __ATOMIC_ACQUIRE));
        uint32_t s = p.sent[cls].load(std::memory_order_relaxed);
        if (uint64_t(uint32_t(s - freed)) + charge <= state->credit_bytes) {
            if (p.sent[cls].compare_exchange_weak(s, s + charge, std::memory_order_relaxed)) return;
            continue;
        }
        block_step(ctx_of(ts()), &iter);
    }
}

// ---- calling a handler with its exact prototype ----------------------------------------------------
using Arg = gasnet_handlerarg_t;
template <size_t> using ArgT = Arg;

template <size_t... I>
void call_short(gasnet_handler_fn_t fn, gasnet_token_t tok, const Arg *a, std::index_sequence<I...>) {
    using F = void (*)(gasnet_token_t, ArgT<I>...);
    reinterpret_cast<F>(fn)(tok, a[I]...);
}
template <size_t... I>
void call_medlong(gasnet_handler_fn_t fn, gasnet_token_t tok, void *buf, size_t n, const Arg *a,
                  std::index_sequence<I...>) {
    using F = void (*)(gasnet_token_t, void *, size_t, ArgT<I>...);
    reinterpret_cast<F>(fn)(tok, buf, n, a[I]...);
}
using ShortCall = void (*)(gasnet_handler_fn_t, gasnet_token_t, const Arg *);
using MedLongCall = void (*)(gasnet_handler_fn_t, gasnet_token_t, void *, size_t, const Arg *);
template <size_t M> void short_m(gasnet_handler_fn_t fn, gasnet_token_t tok, const Arg *a) {
    call_short(fn, tok, a, std::make_index_sequence<M>{});
}
template <size_t M> void medlong_m(gasnet_handler_fn_t fn, gasnet_token_t tok, void *buf, size_t n, const Arg *a) {
    call_medlong(fn, tok, buf, n, a, std::make_index_sequence<M>{});
}
template <size_t... M> constexpr auto short_table(std::index_sequence<M...>) {
    return std::array<ShortCall, sizeof...(M)>{{&short_m<M>...}};
}
template <size_t... M> constexpr auto medlong_table(std::index_sequence<M...>) {
    return std::array<MedLongCall, sizeof...(M)>{{&medlong_m<M>...}};
}
constexpr auto kShortCalls = short_table(std::make_index_sequence<kMaxArgs + 1>{});
constexpr auto kMedLongCalls = medlong_table(std::make_index_sequence<kMaxArgs + 1>{});

const char *cat_name(unsigned cat) {
    switch (cat) {
    case kShort: return "Short";
    case kMedium: return "Medium";
    default: return "Long";
    }
}

void *flag_tag(std::atomic<int> *flag) {
    return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(flag) | kTagFlag);
}

// The payload of a pulled Medium (PullHeader), fetched from its sender. The wait runs no handler:
// the sender's engine serves the get whatever its application does.
std::unique_ptr<char[]> pull_payload(gasnet_node_t src, const char *header, size_t *len) {
    PullHeader ph;
    std::memcpy(&ph, header, sizeof ph);
    if (ph.total == 0 || ph.total > kMaxMedium || (ph.id >> 56) != 0)
        fatal("malformed active message (a pulled Medium of %u bytes) from node %u", ph.total, src);
    auto buf = std::make_unique_for_overwrite<char[]>(ph.total);
    std::atomic<int> got{0};
    reserve_events(1);
    check_ptl(PtlGet(state->md_bulk, reinterpret_cast<uint64_t>(buf.get()), ph.total, proc(src), state->pt_pull,
                     kMbPull | ph.id, 0, flag_tag(&got)),
              "PtlGet (Medium payload)");
    wait_until(Ctx::Restricted, [&] { return got.load(std::memory_order_acquire) != 0; });
    *len = ph.total;
    return buf;
}

void dispatch(int cls, const ptl_event_t &ev) {
    const uint64_t hd = ev.hdr_data;
    const unsigned h = hdr_handler(hd), nargs = hdr_nargs(hd), cat = hdr_cat(hd);
    const uint64_t nbytes = hdr_nbytes(hd);
    const bool pulled = hdr_pulled(hd);
    const gasnet_node_t src = ev.initiator.rank;
    char *m = static_cast<char *>(ev.start);
    const size_t prefix = am_prefix(cat, nargs);
    const size_t body = cat == kMedium || cat == kLongPacked ? nbytes : 0;
    if (nargs > kMaxArgs || ev.mlength < prefix + body || src >= state->nodes ||
        (pulled && (cat != kMedium || nbytes != sizeof(PullHeader))))
        fatal("malformed active message (%llu bytes) from node %u", (unsigned long long)ev.mlength, src);
    const gasnet_handler_fn_t fn = state->handlers[h];
    if (!fn)
        fatal("an AM %s %s arrived from node %u for handler index %u, which is not registered on this node",
              cat_name(cat), cls == kReq ? "request" : "reply", src, h);
    void *dest = nullptr;
    if (cat == kLong || cat == kLongPacked) std::memcpy(&dest, m, sizeof dest);
    Arg a[kMaxArgs];
    std::memcpy(a, m + (cat == kLong || cat == kLongPacked ? 8 : 0), sizeof(Arg) * nargs);
    void *buf = nullptr;
    size_t len = nbytes;
    std::unique_ptr<char[]> pulled_payload;
    switch (cat) {
    case kMedium:
        if (pulled) {
            pulled_payload = pull_payload(src, m + prefix, &len);
            buf = pulled_payload.get();
        } else {
            buf = m + prefix;
        }
        break;
    case kLongPacked:
        if (nbytes) std::memcpy(dest, m + prefix, nbytes); // in place before the handler runs
        buf = dest;
        break;
    case kLong: buf = dest; break;
    default: break;
    }
    Token tok;
    tok.src = src;
    tok.cls = cls;
    ThreadState &t = ts();
    const int saved_in = t.in_handler;
    Token *const saved_tok = t.token;
    const bool saved_replying = t.replying;
    const int hsl0 = t.hsl_held;
    t.in_handler = 1 + cls;
    t.token = &tok;
    t.replying = false;
    if (cat == kShort)
        kShortCalls[nargs](fn, &tok, a);
    else
        kMedLongCalls[nargs](fn, &tok, buf, len, a);
    if (t.hsl_held != hsl0) fatal("AM handler %u returned while holding a handler-safe lock", h);
    t.in_handler = saved_in;
    t.token = saved_tok;
    t.replying = saved_replying;
    tok.magic = 0;
}

// How a message of category cat travels to dest: a Long payload goes ahead of its message (kLong),
// by memcpy into the destination's segment when it is mapped here (PSHM) or through Portals when
// it is large, and inside the message (kLongPacked) when the message stays small.
unsigned wire_category(unsigned cat, size_t nbytes, unsigned nargs, gasnet_node_t dest) {
    if (cat != kLong) return cat;
    const bool packs = nbytes <= kLongPackedMax && round16(am_prefix(kLongPacked, nargs) + nbytes) <= state->eager_max;
    return !packs || dest == state->mynode || local_segment(dest) ? unsigned(kLong) : unsigned(kLongPacked);
}

// A Medium whose message would be larger than one put may carry (state->eager_max: small credits,
// many nodes) is pulled by its target.
bool medium_pulled(unsigned cat, size_t nbytes, unsigned nargs) {
    return cat == kMedium && round16(am_prefix(kMedium, nargs) + nbytes) > state->eager_max;
}

// Sends one message of class cls (credits already taken for charge); hdr_flags go into its
// hdr_data beside the category's fields (kHdrPulled).
void send_message(int cls, gasnet_node_t dest, gasnet_handler_t h, unsigned cat, const void *src, size_t nbytes,
                  void *dest_addr, unsigned nargs, const Arg *args, bool async, uint64_t hdr_flags = 0) {
    const unsigned wire = wire_category(cat, nbytes, nargs, dest);
    if (wire == kLong && nbytes) {
        const uint64_t roff = state->seg_mode == 2 ? reinterpret_cast<uint64_t>(dest_addr)
                                                   : reinterpret_cast<uintptr_t>(dest_addr) -
                                                         reinterpret_cast<uintptr_t>(state->segs[dest].addr);
        if (dest == state->mynode) {
            std::memcpy(dest_addr, src, nbytes);
        } else if (char *mapped = local_segment(dest)) {
            // PSHM: the payload is in place before the message that runs the handler is sent (the
            // transport publishes the message after these stores).
            std::memcpy(mapped + roff, src, nbytes);
        } else if (async && (nbytes > state->vol_max || nbytes > kZeroCopyMin)) {
            // LongAsync: the client keeps the source intact until the reply handler runs.
            reserve_events(1);
            check_ptl(PtlPut(state->md_send, reinterpret_cast<uint64_t>(src), nbytes, PTL_NO_ACK_REQ, proc(dest),
                             state->pt_seg, 0, roff, ignore_send_tag(), 0),
                      "PtlPut (Long payload)");
        } else {
            put_copy(dest, state->pt_seg, 0, roff, src, nbytes, PTL_NO_ACK_REQ, nullptr, 0, kZeroCopyMin);
        }
    }
    ThreadState &t = ts();
    if (t.staging.size() < kMaxFoot) t.staging.resize(kMaxFoot);
    char *m = t.staging.data();
    const size_t prefix = am_prefix(wire, nargs);
    size_t off = 0;
    if (wire == kLong || wire == kLongPacked) {
        std::memcpy(m, &dest_addr, sizeof dest_addr);
        off = sizeof dest_addr;
    }
    if (nargs) std::memcpy(m + off, args, sizeof(Arg) * nargs);
    off += sizeof(Arg) * nargs;
    std::memset(m + off, 0, prefix - off);
    size_t len = prefix;
    if ((wire == kMedium || wire == kLongPacked) && nbytes) {
        std::memcpy(m + prefix, src, nbytes);
        len = round16(prefix + nbytes);
        std::memset(m + prefix + nbytes, 0, len - prefix - nbytes);
    }
    // The staging buffer is reusable on return: put_copy runs no handler while it waits.
    put_copy(dest, state->zones[cls].pt, 0, 0, m, len, PTL_NO_ACK_REQ, nullptr,
             am_hdr(h, nargs, wire, nbytes) | hdr_flags);
}

uint32_t charge_of(unsigned cat, size_t nbytes, unsigned nargs, gasnet_node_t dest) {
    const unsigned wire = wire_category(cat, nbytes, nargs, dest);
    size_t len = am_prefix(wire, nargs);
    if (wire == kMedium || wire == kLongPacked) len = round16(len + nbytes);
    return uint32_t(len < kMinCharge ? kMinCharge : len);
}

// Sends a Medium too large for one message: its payload waits in an entry of the pull portal for
// the target to get it (one round trip, whatever the size; in parts, each taking its credit, a
// 16 KiB Medium among 1024 nodes took 16 credit round trips), then the handler runs there. The
// wait runs handlers as the caller's context allows (a node pulling from us may be waiting for
// our own pull in turn).
void send_medium_pulled(int cls, gasnet_node_t dest, gasnet_handler_t h, const void *src, size_t nbytes, unsigned nargs,
                        const Arg *args) {
    const uint64_t id = state->next_pull_id.fetch_add(1, std::memory_order_relaxed) & ((uint64_t{1} << 56) - 1);
    std::atomic<int> pulled{0};
    ptl_me_t me = ck::me_desc(const_cast<void *>(src), nbytes,
                              PTL_ME_OP_GET | PTL_ME_USE_ONCE | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE,
                              kMbPull | id);
    me.match_id.rank = dest;
    reserve_events(1); // the GET event
    append_me(state->pt_pull, me, "PtlMEAppend (Medium payload)", flag_tag(&pulled));
    // The message is a Medium whose payload is the pull header.
    const PullHeader ph{id, uint32_t(nbytes), 0};
    acquire_credit(cls, dest, charge_of(kMedium, sizeof ph, nargs, dest));
    send_message(cls, dest, h, kMedium, &ph, sizeof ph, nullptr, nargs, args, false, kHdrPulled);
    const ThreadState &t = ts();
    wait_until(ctx_of(t), [&] { return pulled.load(std::memory_order_acquire) != 0; });
}

// Argument checks shared by requests and replies (GASNET_ERR_BAD_ARG with a message).
int check_payload(const char *fn, unsigned cat, gasnet_node_t dest, const void *src, size_t nbytes, void *dest_addr,
                  bool reply) {
    if (cat == kMedium && nbytes > kMaxMedium) {
        report("%s: %zu bytes exceed gasnet_AMMaxMedium() = %zu", fn, nbytes, kMaxMedium);
        return GASNET_ERR_BAD_ARG;
    }
    if (cat == kLong && nbytes > kMaxLong) {
        report("%s: %zu bytes exceed gasnet_AMMaxLong%s() = %zu", fn, nbytes, reply ? "Reply" : "Request", kMaxLong);
        return GASNET_ERR_BAD_ARG;
    }
    if (nbytes && !src) {
        report("%s: NULL source for %zu bytes", fn, nbytes);
        return GASNET_ERR_BAD_ARG;
    }
    if (cat == kLong && nbytes && state->seg_mode != 2) {
        const gasnet_seginfo_t &s = state->segs[dest];
        const uintptr_t a = reinterpret_cast<uintptr_t>(dest_addr), base = reinterpret_cast<uintptr_t>(s.addr);
        if (a < base || a - base > s.size || nbytes > s.size - (a - base)) {
            report("%s: destination [%p, +%zu) is outside node %u's segment [%p, +%zu)", fn, dest_addr, nbytes, dest,
                   s.addr, size_t(s.size));
            return GASNET_ERR_BAD_ARG;
        }
    }
    return GASNET_OK;
}

} // namespace

void credits_setup_ctrl() {
    state->peers = new Peer[state->nodes];
    state->credit_slots = new uint64_t[2 * size_t(state->nodes)]();
    append_me(state->pt_ctrl,
              ck::me_desc(state->credit_slots, 2 * sizeof(uint64_t) * state->nodes,
                          PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE, kMbCredit),
              "PtlMEAppend (credits)");
}

void am_setup() {
    const uint64_t len = sizing::buffer_bytes(state->nodes, state->credit_bytes, settings::kGasnetAmBufferBytes.get());
    for (Zone &z : state->zones) {
        z.buf_len = len;
        std::lock_guard lk(z.mu);
        top_up(z, zone_floor());
    }
}

void handle_am_event(int cls, const ptl_event_t &ev) {
    if (ev.type != PTL_EVENT_PUT) {
        if (ev.type == PTL_EVENT_LINK || ev.type == PTL_EVENT_AUTO_UNLINK) return;
        fatal("unexpected event %d on an active-message queue", int(ev.type));
    }
    if (ev.ni_fail_type != PTL_NI_OK) fatal("an incoming message failed: %s", ck::fail_name(ev.ni_fail_type));
    if (ev.pt_index == state->pt_ctrl) {
        if ((ev.match_bits & (0xffull << 56)) == kMbBarrier) barrier_arrival(ev);
        return; // a credit report: the slot is already updated, the event only wakes waiters
    }
    Zone &z = state->zones[cls];
    Buffer *b = static_cast<Buffer *>(ev.user_ptr);
    const uint64_t off = uint64_t(static_cast<char *>(ev.start) - b->mem), len = ev.mlength;
    const uint32_t charge = uint32_t(len < kMinCharge ? kMinCharge : len);
    {
        std::lock_guard lk(z.mu);
        ++b->seen;
        b->used_known += len;
        if (b->spent) {
            z.slack += charge;
        } else {
            z.slack += int64_t(charge) - int64_t(len);
            if (off + len > b->len - state->eager_max) {
                // This message unlinked the buffer: it leaves the capacity sum E.
                b->spent = true;
                b->linked = false;
                b->spent_end = off + len;
                z.slack -= int64_t(b->len - b->used_known) - int64_t(state->eager_max);
            }
        }
    }
    dispatch(cls, ev);
    b->done.fetch_add(1, std::memory_order_release);
    credit_return(cls, ev.initiator.rank, charge);
}

int am_request(unsigned cat, gasnet_node_t dest, gasnet_handler_t handler, void *src, size_t nbytes, void *dest_addr,
               unsigned nargs, const gasnet_handlerarg_t *args, bool async) {
    if (!state || !state->attached.load(std::memory_order_acquire)) return GASNET_ERR_NOT_INIT;
    ThreadState &t = ts();
    if (t.in_handler) {
        report("AM requests may not be sent from inside a handler");
        return GASNET_ERR_BAD_ARG;
    }
    if (dest >= state->nodes) {
        report("AM request to node %u of %u", dest, state->nodes);
        return GASNET_ERR_BAD_ARG;
    }
    const int rc = check_payload("gasnet_AMRequest", cat, dest, src, nbytes, dest_addr, false);
    if (rc != GASNET_OK) return rc;
    // Like GASNet, serve the network on sends too (every 16th: a drain is three queue reads).
    if ((++t.sends & 15) == 0 && ctx_of(t) == Ctx::Normal) poll(Ctx::Normal);
    if (medium_pulled(cat, nbytes, nargs)) {
        send_medium_pulled(kReq, dest, handler, src, nbytes, nargs, args);
        return GASNET_OK;
    }
    acquire_credit(kReq, dest, charge_of(cat, nbytes, nargs, dest));
    send_message(kReq, dest, handler, cat, src, nbytes, dest_addr, nargs, args, async);
    return GASNET_OK;
}

int am_reply(unsigned cat, gasnet_token_t token, gasnet_handler_t handler, void *src, size_t nbytes, void *dest_addr,
             unsigned nargs, const gasnet_handlerarg_t *args) {
    if (!state || !state->attached.load(std::memory_order_acquire)) return GASNET_ERR_NOT_INIT;
    Token *tok = static_cast<Token *>(token);
    ThreadState &t = ts();
    if (!tok || tok != t.token || tok->magic != kTokenMagic) {
        report("AM reply with a token that is not the running handler's");
        return GASNET_ERR_BAD_ARG;
    }
    if (tok->cls != kReq) {
        report("AM replies may only be sent from request handlers");
        return GASNET_ERR_BAD_ARG;
    }
    if (tok->replied) {
        report("a request handler may reply at most once");
        return GASNET_ERR_BAD_ARG;
    }
    if (t.hsl_held || t.nis) {
        report("AM reply while holding a handler-safe lock or in a no-interrupt section");
        return GASNET_ERR_BAD_ARG;
    }
    const int rc = check_payload("gasnet_AMReply", cat, tok->src, src, nbytes, dest_addr, true);
    if (rc != GASNET_OK) return rc;
    tok->replied = true;
    t.replying = true; // waiting for reply credit may run reply handlers, nothing else
    if (medium_pulled(cat, nbytes, nargs)) {
        send_medium_pulled(kRep, tok->src, handler, src, nbytes, nargs, args);
    } else {
        acquire_credit(kRep, tok->src, charge_of(cat, nbytes, nargs, tok->src));
        send_message(kRep, tok->src, handler, cat, src, nbytes, dest_addr, nargs, args, false);
    }
    t.replying = false;
    return GASNET_OK;
}

} // namespace gasnetp

using namespace gasnetp;

GASNETP_EXPORT int gasnet_AMGetMsgSource(gasnet_token_t token, gasnet_node_t *srcindex) {
    const Token *tok = static_cast<const Token *>(token);
    if (!tok || !srcindex || tok->magic != kTokenMagic) return GASNET_ERR_BAD_ARG;
    *srcindex = tok->src;
    return GASNET_OK;
}

GASNETP_EXPORT size_t(gasnet_AMMaxArgs)(void) { return kMaxArgs; }
GASNETP_EXPORT size_t(gasnet_AMMaxMedium)(void) { return kMaxMedium; }
GASNETP_EXPORT size_t(gasnet_AMMaxLongRequest)(void) { return kMaxLong; }
GASNETP_EXPORT size_t(gasnet_AMMaxLongReply)(void) { return kMaxLong; }
