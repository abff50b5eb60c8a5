// SPDX-License-Identifier: BSD-3-Clause
// PSM2 matched queues on Portals (the message format is in internal.hpp).
#include <sched.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <cstring>

#include "clientkit.hpp"
#include "common/log.hpp"
#include "internal.hpp"

namespace ck = portico::clientkit;
using namespace portico::psm2;

namespace portico::psm2 {
namespace {

// Unexpected eager data absorbed before a PSM2 call replaces a full slab: 7.5 MiB. Slabs are not
// zeroed, so memory is only taken as messages land, but a busy endpoint cycles through all of them
// (eight of 8 MiB were 64 MiB per process). A slab unlinks once less than kSlabRoom is left, room
// for the default eager sizes (16000 bytes on shared memory, 64000 over the network); a larger
// eager message (thresholds go up to kMaxEagerBytes) that fits no slab leaves only its header in
// the catch-all, and the receiver gets the data from the sender's retain ring.
constexpr size_t kSlabBytes = size_t{1} << 20;
constexpr int kSlabsLinked = 8;
constexpr size_t kSlabRoom = size_t{64} << 10;
static_assert(kSlabRoom <= kSlabBytes / 4, "a slab holds several eager messages of the default sizes");
struct Tag96 {
    uint32_t w[3];
};
Tag96 tag_of(const psm2_mq_tag_t *t) { return {{t->tag[0], t->tag[1], t->tag[2]}}; }
Tag96 tag_of64(uint64_t t) { return {{static_cast<uint32_t>(t), static_cast<uint32_t>(t >> 32), 0}}; }
uint64_t low64(const Tag96 &t) { return t.w[0] | uint64_t{t.w[1]} << 32; }

void queue_completion(Ep &ep, Req *r) {
    r->complete = true;
    if (!r->user_released) ep.completed.push_back(r);
}

void maybe_free(Ep &ep, Req *r) {
    if (r->user_released && r->engine_refs == 0 && r->complete) {
        ep.requests.give_back(r);
    }
}

void finish_recv(Ep &ep, Req *r) {
    r->user.recv_msglen = r->got;
    r->user.error_code = r->msg_len > r->user.buf_len ? PSM2_MQ_TRUNCATION : PSM2_OK;
    ep.stats.rx_user_num++;
    ep.stats.rx_user_bytes += r->got;
    queue_completion(ep, r);
}

void finish_send(Ep &ep, Req *r, psm2_error_t err) {
    if (r->complete) return;
    r->user.error_code = err;
    queue_completion(ep, r);
}

// What a message's put said about it (see internal.hpp).
struct Arrival {
    Tag96 tag;
    uint32_t length;
    uint64_t flags;
    unsigned sender_ctx;
    uint64_t send_id;
    ptl_process_t from;
};
Arrival arrival_of(const ptl_event_t &ev) {
    Arrival a{};
    a.tag = {{static_cast<uint32_t>(ev.match_bits), static_cast<uint32_t>(ev.match_bits >> 32),
              static_cast<uint32_t>(ev.hdr_data)}};
    a.length = static_cast<uint32_t>(ev.hdr_data >> 32);
    a.flags = ev.remote_offset & 0xFF;
    a.sender_ctx = static_cast<unsigned>((ev.remote_offset >> 8) & 0xFF);
    a.send_id = ev.remote_offset >> 16;
    a.from = ev.initiator;
    return a;
}

void fill_from_arrival(Ep &ep, Req *r, const Arrival &a) {
    r->user.peer = peer_of(ep, make_epid(a.from.phys.nid, a.from.phys.pid, a.sender_ctx));
    std::memcpy(r->user.tag.tag, a.tag.w, sizeof a.tag.w);
    r->user.tag.tag[3] = 0;
    r->user.send_msglen = a.length;
    r->msg_len = a.length;
    r->msg_flags = a.flags;
    r->send_id = a.send_id;
}

// Over the network a rendezvous message is fetched in pieces, two under way per endpoint: a
// window of 64 messages of 4 MiB asked for at once queued 256 MiB of replies at the sender and
// stalled TCP (zero windows, retransmissions) for up to a second. Measured with psm2_bw at 4 MiB
// over TCP (docs/PERFORMANCE.md): 4 MiB x 2 gave 0.88-0.96 of put_bw, 1 MiB x 4 0.70-0.88,
// 256 KiB x 16 0.63-0.65, 4 MiB x 1 0.69-0.83.
constexpr uint32_t kPieceBytes = uint32_t{4} << 20;
constexpr int kNetGetsInFlight = 2;

bool get_piece(Ep &ep, Req *r, uint32_t from, uint32_t bytes, ptl_match_bits_t bits, ptl_size_t remote_offset) {
    const auto *peer = r->user.peer;
    const int rc = PtlGet(ep.md, reinterpret_cast<uintptr_t>(r->user.buf) + from, bytes, peer->proc, rndv_pt(peer->ctx),
                          bits, remote_offset, r);
    if (rc != PTL_OK) {
        r->user.error_code = report(&ep, PSM2_INTERNAL_ERR, "get from %s failed: %s",
                                    peer->label ? peer->label : "peer", ck::rc_name(rc));
        return false;
    }
    ++r->engine_refs;
    ++r->gets;
    return true;
}

// Asks network peers for the next pieces, in message order, while the window has room.
void pump_fetches(Ep &ep) {
    while (ep.net_gets < kNetGetsInFlight && !ep.fetches.empty()) {
        Req *r = ep.fetches.front();
        const uint32_t n = std::min(kPieceBytes, r->fetch_end - r->fetch_next);
        const bool last = r->fetch_next + n == r->fetch_end;
        if (!get_piece(ep, r, r->fetch_next, n, r->send_id | (last ? kLastPiece : 0), r->fetch_next)) {
            ep.fetches.pop_front();
            r->fetch_next = r->fetch_end; // the replies under way complete it, or now
            if (r->gets == 0) queue_completion(ep, r);
            continue;
        }
        ++ep.net_gets;
        r->fetch_next += n;
        if (last) ep.fetches.pop_front();
    }
}

// Fetches bytes [got, wanted) of a message from its sender: a rendezvous source, or an eager
// message's copy in the sender's retain ring (only its header landed here). A rendezvous fetch
// always ends with a get marked last, even of nothing: it releases the sender.
void fetch_rest(Ep &ep, Req *r) {
    const uint32_t wanted = std::min(r->msg_len, r->user.buf_len);
    r->fetch_next = r->got;
    r->fetch_end = wanted;
    if ((r->msg_flags & kMsgRendezvous) && !same_node(*r->user.peer)) {
        ep.fetches.push_back(r);
        pump_fetches(ep);
        return;
    }
    // One get: from the ring, or single copy from a source on this machine (nothing queues).
    const bool ok = r->msg_flags & kMsgRendezvous
                        ? get_piece(ep, r, r->got, wanted - r->got, r->send_id | kLastPiece, r->got)
                        : get_piece(ep, r, r->got, wanted - r->got, kRingMatchBits, r->send_id + r->got);
    r->fetch_next = r->fetch_end;
    if (!ok) queue_completion(ep, r);
}

// A receive that has its message: take the data the put delivered, fetch the rest if any.
void matched_recv(Ep &ep, Req *r, const ptl_event_t &ev, bool from_overflow) {
    const Arrival a = arrival_of(ev);
    fill_from_arrival(ep, r, a);
    r->matched = true;
    const uint32_t wanted = std::min(a.length, r->user.buf_len);
    if (from_overflow) {
        ep.stats.rx_sys_num++;
        ep.stats.rx_sys_bytes += a.length;
        overflow_header_taken(ep.mq_overflow);
    }
    if (!(a.flags & kMsgRendezvous)) {
        if (from_overflow) {
            if (ev.mlength < a.length) { // only the header landed: the data waits at the sender
                r->got = 0;
                fetch_rest(ep, r);
                return;
            }
            if (wanted) std::memcpy(r->user.buf, ev.start, wanted); // a 0-byte receive may have no buffer
            ep.stats.rx_sysbuf_num++;
            ep.stats.rx_sysbuf_bytes += wanted;
        }
        r->got = wanted;
        finish_recv(ep, r);
        return;
    }
    if (!from_overflow && (a.flags & kMsgCarriesData)) {
        r->got = static_cast<uint32_t>(ev.mlength); // all of it: the sender completes on its ack
        finish_recv(ep, r);
        return;
    }
    r->got = from_overflow ? 0 : static_cast<uint32_t>(ev.mlength);
    fetch_rest(ep, r); // also when nothing is left to fetch: the get releases the sender
}

// An eager send that completed when its put was issued, refused by its receiver (its unexpected
// headers at the NI's limit, or the endpoint gone). Nothing can resend it in order, so it is said
// loudly, once per endpoint, whatever the error handler.
void lost_eager(Ep &ep, ptl_ni_fail_t why) {
    if (ep.lost_eager++ == 0) log_error("a message did not reach its receiver (%s)", ck::fail_name(why));
    // A peer that is gone is a network error about that peer; a refusal (no header room) is not.
    report(&ep, why == PTL_NI_UNDELIVERABLE ? PSM2_EPID_NETWORK_ERROR : PSM2_INTERNAL_ERR,
           "a message was lost at its receiver: %s", ck::fail_name(why));
}

// The ack of a put from the retain ring.
void on_ring_ack(Ep &ep, Retained *s, const ptl_event_t &ev) {
    const uint64_t am_op = s->am_op; // ring_ack may free the slot
    if (ring_ack(ep.ring, s, ev)) return;
    lost_eager(ep, ev.ni_fail_type);
    if (am_op) am_undelivered(ep, am_op);
}

void on_send_event(Ep &ep, Req *r, const ptl_event_t &ev) {
    --r->engine_refs;
    const bool rndv = r->rndv_me != PTL_INVALID_HANDLE || (r->msg_flags & kMsgRendezvous);
    switch (ev.type) {
    case PTL_EVENT_SEND:
        if (ev.ni_fail_type != PTL_NI_OK)
            finish_send(ep, r, report(&ep, PSM2_EPID_NETWORK_ERROR, "send failed: %s", ck::fail_name(ev.ni_fail_type)));
        else if (!rndv)
            finish_send(ep, r, PSM2_OK); // the buffer is free again
        break;
    case PTL_EVENT_ACK:
        if (ev.ni_fail_type != PTL_NI_OK) {
            if (!r->complete)
                finish_send(
                    ep, r,
                    report(&ep, PSM2_EPID_NETWORK_ERROR, "message not delivered: %s", ck::fail_name(ev.ni_fail_type)));
            else
                lost_eager(ep, ev.ni_fail_type);
            if (r->rndv_me != PTL_INVALID_HANDLE && PtlMEUnlink(r->rndv_me) == PTL_OK) --r->engine_refs;
            r->rndv_me = PTL_INVALID_HANDLE;
        } else if (rndv && ev.ptl_list == PTL_PRIORITY_LIST && (r->msg_flags & kMsgCarriesData)) {
            // A posted receive took all of it: nobody will get from the exposed source.
            if (r->rndv_me != PTL_INVALID_HANDLE && PtlMEUnlink(r->rndv_me) == PTL_OK) --r->engine_refs;
            r->rndv_me = PTL_INVALID_HANDLE;
            finish_send(ep, r, PSM2_OK);
        }
        break;
    case PTL_EVENT_REPLY: { // a piece of a receive's data (r is a receive)
        --r->gets;
        const bool net = (r->msg_flags & kMsgRendezvous) && !same_node(*r->user.peer);
        if (net) --ep.net_gets;
        if (ev.ni_fail_type != PTL_NI_OK && r->user.error_code == PSM2_OK) {
            r->user.error_code =
                report(&ep, PSM2_EPID_NETWORK_ERROR, "rendezvous data lost: %s", ck::fail_name(ev.ni_fail_type));
            if (r->fetch_next < r->fetch_end) { // ask for no more of it
                std::erase(ep.fetches, r);
                r->fetch_next = r->fetch_end;
            }
        }
        r->got += static_cast<uint32_t>(ev.mlength);
        if (r->gets == 0 && r->fetch_next == r->fetch_end && !r->complete) {
            if (r->user.error_code == PSM2_OK)
                finish_recv(ep, r);
            else
                queue_completion(ep, r);
        }
        if (net) pump_fetches(ep);
        break;
    }
    default: break;
    }
    maybe_free(ep, r);
}

void on_event(Ep &ep, const ptl_event_t &ev) {
    switch (ev.type) {
    case PTL_EVENT_ACK:
        if (Retained *s = slot_of(ev.user_ptr)) {
            on_ring_ack(ep, s, ev);
            return;
        }
        [[fallthrough]];
    case PTL_EVENT_SEND:
    case PTL_EVENT_REPLY: on_send_event(ep, static_cast<Req *>(ev.user_ptr), ev); return;
    default: break;
    }
    if (ev.pt_index == rndv_pt(ep.ctx)) {
        if (ev.type == PTL_EVENT_GET && ev.user_ptr == &ep.ring) {
            ring_fetched(ep.ring, ev);
        } else if (ev.type == PTL_EVENT_GET && (ev.match_bits & kLastPiece)) { // the send is done
            auto *r = static_cast<Req *>(ev.user_ptr);
            if (r->rndv_me != PTL_INVALID_HANDLE) {
                // The last piece was asked for last, on the same ordered link: no get is under way.
                PtlMEUnlink(r->rndv_me);
                --r->engine_refs;
            }
            r->rndv_me = PTL_INVALID_HANDLE;
            finish_send(ep, r, PSM2_OK);
            maybe_free(ep, r);
        }
        return;
    }
    if (ev.pt_index != recv_pt(ep.ctx)) return;
    switch (ev.type) {
    case PTL_EVENT_PUT:
    case PTL_EVENT_PUT_OVERFLOW: {
        auto *r = static_cast<Req *>(ev.user_ptr);
        r->me = PTL_INVALID_HANDLE;
        --r->engine_refs; // the event post_recv counted on
        if (ev.ni_fail_type != PTL_NI_OK) {
            r->user.error_code = report(&ep, PSM2_INTERNAL_ERR, "receive failed: %s", ck::fail_name(ev.ni_fail_type));
            queue_completion(ep, r);
            return;
        }
        matched_recv(ep, r, ev, ev.type == PTL_EVENT_PUT_OVERFLOW);
        maybe_free(ep, r);
        return;
    }
    case PTL_EVENT_AUTO_UNLINK:
    case PTL_EVENT_AUTO_FREE: overflow_slab_event(ep.mq_overflow, ev, ep.closing); return;
    default: return;
    }
}

psm2_error_t check_mq(psm2_mq_t mq) { return mq && mq->ep && mq->ep->mq_open ? PSM2_OK : PSM2_PARAM_ERR; }

// What a receive or probe selects besides its low 64 bits: the sender (its process in match_id,
// its endpoint in the upper bits) and tag2 under the selector's third word.
portico_match_hi_t select(ptl_me_t &me, const psm2_epaddr *src, const Tag96 &tag, const Tag96 &sel) {
    me.match_id = src ? src->proc : ck::any_process();
    portico_match_hi_t hi{tag.w[2], ~uint64_t{sel.w[2]}};
    if (src) {
        hi.match_bits_hi |= uint64_t{src->ctx} << kHiContextShift;
        hi.ignore_bits_hi &= ~kHiContextMask;
    }
    return hi;
}

Req *new_req(Ep &ep, Req::Kind kind, void *buf, uint32_t len, void *context) {
    Req *r = ep.requests.take();
    r->kind = kind;
    r->ep = &ep;
    r->user.buf = static_cast<uint8_t *>(buf);
    r->user.buf_len = len;
    r->user.context = context;
    return r;
}

psm2_error_t post_recv(psm2_mq_t mq, psm2_epaddr_t src, const Tag96 &tag, const Tag96 &sel, void *buf, uint32_t len,
                       void *context, psm2_mq_req_t *req) {
    if (check_mq(mq) != PSM2_OK || !req || (len && !buf))
        return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "irecv: bad argument");
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    Req *r = new_req(ep, Req::Kind::Recv, buf, len, context);
    std::memcpy(r->user.tag.tag, tag.w, sizeof tag.w);
    std::memcpy(r->user.tagsel.tag, sel.w, sizeof sel.w);
    ptl_me_t me = ck::me_desc(buf, len,
                              PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_LINK_DISABLE |
                                  PTL_ME_EVENT_UNLINK_DISABLE,
                              low64(tag), ~low64(sel));
    const portico_match_hi_t hi = select(me, src, tag, sel);
    ++r->engine_refs; // its PUT or PUT_OVERFLOW
    const int rc = portico_me_append_wide(library().ni, recv_pt(ep.ctx), &me, &hi, PTL_PRIORITY_LIST, r, &r->me);
    if (rc != PTL_OK) {
        ep.requests.give_back(r);
        return report(&ep, PSM2_NO_MEMORY, "irecv: cannot post the receive: %s", ck::rc_name(rc));
    }
    *req = r;
    drain(ep); // an unexpected message it matched is already waiting
    return PSM2_OK;
}

psm2_error_t post_send(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, const Tag96 &tag, const void *buf,
                       uint32_t len, void *context, psm2_mq_req_t *req) {
    if (check_mq(mq) != PSM2_OK || !dest || !req || (len && !buf) || (flags & ~uint32_t{PSM2_MQ_FLAG_SENDSYNC}))
        return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "isend: bad argument");
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    if (!device_allows(ep, dest->epid))
        return report(&ep, PSM2_EPID_UNREACHABLE, "isend: PSM2_DEVICES has no path to that peer");
    Req *r = new_req(ep, Req::Kind::Send, const_cast<void *>(buf), len, context);
    std::memcpy(r->user.tag.tag, tag.w, sizeof tag.w);
    r->user.peer = dest;
    r->user.send_msglen = len;
    r->msg_len = len;
    r->id = ep.next_send_id++;
    const bool local = same_node(*dest);
    bool rndv = (flags & PSM2_MQ_FLAG_SENDSYNC) || len > (local ? ep.rndv_shm : ep.rndv_net);
    Retained *slot = nullptr;
    if (!rndv) {
        // A full ring waits for the acks under way (the receiving engine sends them whatever its
        // application does); full of messages whose receiver will get them, the data waits in
        // the caller's buffer instead, as rendezvous.
        slot = ring_take_waiting(ep, len);
        rndv = !slot;
    }
    uint64_t hi = tag.w[2] | uint64_t{ep.ctx} << kHiContextShift;
    uint64_t msg = 0;
    ptl_size_t carried = len;
    if (rndv) {
        // Not use-once: a network receiver gets it in pieces; the one marked last ends the send.
        ptl_me_t me =
            ck::me_desc(const_cast<void *>(buf), len,
                        PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE, r->id, kLastPiece);
        me.match_id = dest->proc;
        const int rc = PtlMEAppend(library().ni, rndv_pt(ep.ctx), &me, PTL_PRIORITY_LIST, r, &r->rndv_me);
        if (rc != PTL_OK) {
            ep.requests.give_back(r);
            return report(&ep, PSM2_NO_MEMORY, "isend: cannot expose the source: %s", ck::rc_name(rc));
        }
        ++r->engine_refs; // its GET (or the unlink after a full delivery)
        hi |= kHiRendezvous;
        msg = kMsgRendezvous | (flags & PSM2_MQ_FLAG_SENDSYNC ? kMsgSync : 0);
        if (local)
            msg |= kMsgCarriesData;
        else
            carried = 0;
        ep.stats.tx_rndv_num++;
        ep.stats.tx_rndv_bytes += len;
    } else {
        ep.stats.tx_eager_num++;
        ep.stats.tx_eager_bytes += len;
    }
    if (local) ep.stats.tx_shm_num++;
    ep.stats.tx_num++;
    r->msg_flags = msg;
    const ptl_hdr_data_t hdr = tag.w[2] | uint64_t{len} << 32;
    int rc = PTL_OK;
    if (slot) {
        // The ring's copy is the put's source and the receiver's if only the header lands: the
        // caller's buffer is free at once, and the request owes no event (the slot's ack frees it).
        if (len) std::memcpy(ep.ring.mem.get() + slot->offset, buf, len);
        slot->to = dest;
        rc = portico_put_wide(ep.ring.md, slot->offset, len, PTL_ACK_REQ, dest->proc, recv_pt(dest->ctx), low64(tag),
                              hi, msg | uint64_t{ep.ctx} << 8 | slot->offset << 16, slot_cookie(slot), hdr);
        if (rc != PTL_OK) ring_put_failed(ep.ring, slot);
    } else {
        r->engine_refs += 2; // SEND and ACK
        rc = portico_put_wide(ep.md, reinterpret_cast<uintptr_t>(buf), carried, PTL_ACK_REQ, dest->proc,
                              recv_pt(dest->ctx), low64(tag), hi, msg | uint64_t{ep.ctx} << 8 | r->id << 16, r, hdr);
        if (rc != PTL_OK) r->engine_refs -= 2;
    }
    if (rc != PTL_OK) {
        if (r->rndv_me != PTL_INVALID_HANDLE && PtlMEUnlink(r->rndv_me) == PTL_OK) --r->engine_refs;
        ep.requests.give_back(r);
        return report(&ep, PSM2_EPID_UNREACHABLE, "isend: %s", ck::rc_name(rc));
    }
    if (slot) finish_send(ep, r, PSM2_OK);
    *req = r;
    return PSM2_OK;
}

// Status of a finished request, in either form.
void status1(const Req *r, psm2_mq_status_t *st) {
    st->msg_tag = r->user.tag.tag[0] | uint64_t{r->user.tag.tag[1]} << 32;
    st->msg_length = r->user.send_msglen;
    st->nbytes = r->kind == Req::Kind::Send ? r->user.send_msglen : r->user.recv_msglen;
    st->error_code = static_cast<psm2_error_t>(r->user.error_code);
    st->context = r->user.context;
}
void status2(const Req *r, psm2_mq_status2_t *st) {
    st->msg_peer = r->user.peer;
    st->msg_tag = r->user.tag;
    st->msg_length = r->user.send_msglen;
    st->nbytes = r->kind == Req::Kind::Send ? r->user.send_msglen : r->user.recv_msglen;
    st->error_code = static_cast<psm2_error_t>(r->user.error_code);
    st->context = r->user.context;
}

// An improbe'd message left its slab (received, or its request freed).
void unprobe(Ep &ep, Req *r) {
    if (r->at_sender || (r->msg_flags & kMsgRendezvous) || !r->stash) return;
    if (Slab *s = overflow_slab_holding(ep.mq_overflow, r->stash); s && s->probed > 0) --s->probed;
    r->stash = nullptr;
}

// Hands a finished request back: it is freed now, or when the last event naming it comes.
void release(Ep &ep, Req *r) {
    if (r->kind == Req::Kind::Probed) unprobe(ep, r); // improbe'd, never received
    ep.completed.remove(r);
    r->user_released = true;
    maybe_free(ep, r);
}

template <class Status> psm2_error_t test_impl(psm2_mq_req_t *req, Status *st, bool progress) {
    if (!req) return PSM2_PARAM_ERR;
    Req *r = *req;
    if (!r) return PSM2_OK;
    Ep &ep = *r->ep;
    std::lock_guard g(ep.lock);
    if (progress) {
        // Other threads of the process get the endpoint while this one waits (internal.hpp, EpLock):
        // whenever nothing came, and every so often when events keep coming for others.
        for (unsigned n = 1; !r->complete; ++n)
            if (!wait_event(ep, 1) || n % 64 == 0) ep.lock.hand_over();
    } else if (!r->complete) {
        return PSM2_MQ_NO_COMPLETIONS;
    }
    const auto err = static_cast<psm2_error_t>(r->user.error_code);
    if (st) {
        if constexpr (std::is_same_v<Status, psm2_mq_status2_t>)
            status2(r, st);
        else
            status1(r, st);
    }
    release(ep, r);
    *req = PSM2_MQ_REQINVALID;
    return err == PSM2_MQ_TRUNCATION ? PSM2_OK : err; // truncation is reported in the status
}

// The search's own event, acting on every event queued before it.
ptl_event_t search_event(Ep &ep, const void *marker) {
    ptl_event_t ev{};
    for (;;) {
        unsigned which = 0;
        if (PtlEQPoll(&ep.eq, 1, PTL_TIME_FOREVER, &ev, &which) != PTL_OK) {
            ev.ni_fail_type = PTL_NI_NO_MATCH;
            return ev;
        }
        // A use-once search ends with one event: SEARCH (found, or NO_MATCH), or for a deleting
        // search the overflow event of the header it took.
        if (ev.user_ptr == marker) return ev;
        on_event(ep, ev);
    }
}

// iprobe/improbe: a search of the unexpected headers (improbe takes the one it finds).
template <class Status>
psm2_error_t probe_impl(psm2_mq_t mq, psm2_epaddr_t src, const Tag96 &tag, const Tag96 &sel, bool take,
                        psm2_mq_req_t *req, Status *st) {
    if (check_mq(mq) != PSM2_OK || (take && !req))
        return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "probe: bad argument");
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    drain(ep);
    ptl_me_t me = ck::me_desc(nullptr, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, low64(tag), ~low64(sel));
    const portico_match_hi_t hi = select(me, src, tag, sel);
    const char marker = 0;
    if (portico_me_search_wide(library().ni, recv_pt(ep.ctx), &me, &hi, take ? PTL_SEARCH_DELETE : PTL_SEARCH_ONLY,
                               const_cast<char *>(&marker)) != PTL_OK)
        return report(&ep, PSM2_INTERNAL_ERR, "probe: the search failed");
    const ptl_event_t ev = search_event(ep, &marker);
    if (ev.ni_fail_type != PTL_NI_OK) return PSM2_MQ_NO_COMPLETIONS;
    Req *r = new_req(ep, Req::Kind::Probed, nullptr, 0, nullptr);
    fill_from_arrival(ep, r, arrival_of(ev));
    r->user.recv_msglen = r->msg_len;
    r->stash = ev.start;
    r->at_sender = !(r->msg_flags & kMsgRendezvous) && ev.mlength < r->msg_len;
    Slab *slab = take && !r->at_sender && !(r->msg_flags & kMsgRendezvous)
                     ? overflow_slab_holding(ep.mq_overflow, ev.start)
                     : nullptr;
    if (slab) ++slab->probed; // the slab is not reused before imrecv copies it out
    if (st) {
        if constexpr (std::is_same_v<Status, psm2_mq_status2_t>)
            status2(r, st);
        else
            status1(r, st);
        st->nbytes = r->msg_len;
        st->error_code = PSM2_OK;
    }
    if (take) {
        *req = r;
    } else {
        r->user_released = true;
        r->complete = true;
        maybe_free(ep, r);
    }
    return PSM2_OK;
}

psm2_error_t imrecv_impl(psm2_mq_t mq, void *buf, uint32_t len, void *context, psm2_mq_req_t *req) {
    if (check_mq(mq) != PSM2_OK || !req || !*req || (*req)->kind != Req::Kind::Probed || (len && !buf))
        return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "imrecv: bad argument");
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    Req *r = *req;
    r->kind = Req::Kind::Recv;
    r->user.buf = static_cast<uint8_t *>(buf);
    r->user.buf_len = len;
    r->user.context = context;
    r->matched = true;
    const uint32_t wanted = std::min(r->msg_len, len);
    ep.stats.rx_sys_num++;
    ep.stats.rx_sys_bytes += r->msg_len;
    overflow_header_taken(ep.mq_overflow);
    if (!(r->msg_flags & kMsgRendezvous) && !r->at_sender) {
        if (wanted) std::memcpy(buf, r->stash, wanted); // a 0-byte receive may have no buffer
        unprobe(ep, r);
        ep.stats.rx_sysbuf_num++;
        ep.stats.rx_sysbuf_bytes += wanted;
        r->got = wanted;
        finish_recv(ep, r);
    } else {
        r->got = 0;
        fetch_rest(ep, r);
    }
    return PSM2_OK;
}

} // namespace

// ---- the event loop -----------------------------------------------------------------------------

bool drain(Ep &ep, bool with_control) {
    // One poll of both queues per event, and one look at the transports when both are empty
    // (each empty PtlEQGet would look again).
    const ptl_handle_eq_t eqs[2] = {ep.eq, ep.ctl_eq};
    bool any = false;
    for (;;) {
        ptl_event_t ev;
        unsigned which = 0;
        const int rc = PtlEQPoll(eqs, with_control ? 2 : 1, 0, &ev, &which);
        if (rc == PTL_EQ_DROPPED) report(&ep, PSM2_INTERNAL_ERR, "the endpoint's event queue overflowed");
        if (rc != PTL_OK && rc != PTL_EQ_DROPPED) break;
        any = true;
        which == 1 ? ctl_event(ep, ev) : on_event(ep, ev);
    }
    // Active messages raise no event on arrival: a counter says that some wait.
    if (with_control && overflow_new_arrivals(ep.am_overflow) && take_active_messages(ep)) any = true;
    return any;
}

bool wait_event(Ep &ep, ptl_time_t timeout_ms) {
    if (drain(ep)) return true;
    const ptl_handle_eq_t eqs[2] = {ep.eq, ep.ctl_eq};
    ptl_event_t ev;
    unsigned which = 0;
    const int rc = PtlEQPoll(eqs, 2, timeout_ms, &ev, &which);
    if (rc != PTL_OK && rc != PTL_EQ_DROPPED) return false;
    which == 1 ? ctl_event(ep, ev) : on_event(ep, ev);
    return true;
}

psm2_error_t mq_start(Ep &ep) {
    Overflow &o = ep.mq_overflow;
    o.pt = recv_pt(ep.ctx);
    o.slab_bytes = kSlabBytes;
    o.slabs_linked = kSlabsLinked;
    // A message never lands cut short (the slabs are PTL_ME_NO_TRUNCATE): one larger than a slab's
    // room goes on to the next slab, or the catch-all.
    o.min_free = kSlabRoom;
    o.match_bits = 0;
    o.ignore_bits = ~ptl_match_bits_t{0};
    o.slab_hi = {0, ~kHiRendezvous}; // rendezvous messages leave their data at the sender
    if (const psm2_error_t err = overflow_start(o); err != PSM2_OK) return err;
    return ring_start(ep);
}

void mq_stop(Ep &ep) {
    ep.closing = true;
    overflow_stop(ep.mq_overflow);
    ring_stop(ep);
}

} // namespace portico::psm2

// ---- the PSM2 MQ calls ----------------------------------------------------------------------------
using portico::psm2::Ep;

#define PSM2_API extern "C" __attribute__((visibility("default")))

PSM2_API psm2_error_t psm2_mq_init(psm2_ep_t ep, uint64_t /*ignored: PSM2 keeps every order*/,
                                   const struct psm2_optkey *opts, int numopts, psm2_mq_t *mq) {
    if (!ep || !mq || numopts < 0 || (numopts > 0 && !opts))
        return report(nullptr, PSM2_PARAM_ERR, "mq_init: bad argument");
    Ep &e = *reinterpret_cast<Ep *>(ep);
    std::lock_guard g(e.lock);
    if (!e.mq_open) {
        for (int i = 0; i < numopts; ++i) {
            const psm2_error_t err = psm2_mq_setopt(&e.mq_obj, static_cast<int>(opts[i].key), opts[i].value);
            if (err != PSM2_OK) return err;
        }
        e.mq_open = true; // its unexpected-message entries are linked since psm2_ep_open
    }
    *mq = &e.mq_obj;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_mq_finalize(psm2_mq_t mq) {
    if (check_mq(mq) != PSM2_OK) return PSM2_PARAM_ERR;
    return PSM2_OK; // the queue lives as long as its endpoint (psm2_ep_close ends it)
}

PSM2_API psm2_error_t psm2_mq_getopt(psm2_mq_t mq, int option, void *value) {
    if (!mq || !mq->ep || !value) return PSM2_PARAM_ERR;
    Ep &e = *mq->ep;
    std::lock_guard g(e.lock);
    uint32_t v = 0;
    switch (option) {
    case PSM2_MQ_RNDV_HFI_SZ: v = e.rndv_net; break;
    case PSM2_MQ_RNDV_SHM_SZ: v = e.rndv_shm; break;
    case PSM2_MQ_MAX_SYSBUF_MBYTES: return PSM2_OK; // deprecated: opa-psm2 accepts it and writes nothing
    default: return report(&e, PSM2_PARAM_ERR, "mq_getopt: unknown option 0x%x", option);
    }
    std::memcpy(value, &v, sizeof v);
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_mq_setopt(psm2_mq_t mq, int option, const void *value) {
    if (!mq || !mq->ep || !value) return PSM2_PARAM_ERR;
    Ep &e = *mq->ep;
    std::lock_guard g(e.lock);
    uint32_t v = 0;
    std::memcpy(&v, value, sizeof v);
    switch (option) {
    // Eager messages must fit a slab with room to spare: larger thresholds are capped.
    case PSM2_MQ_RNDV_HFI_SZ: e.rndv_net = std::min(v, kMaxEagerBytes); break;
    case PSM2_MQ_RNDV_SHM_SZ: e.rndv_shm = std::min(v, kMaxEagerBytes); break;
    case PSM2_MQ_MAX_SYSBUF_MBYTES: break; // accepted, no effect (as the header says)
    default: return report(&e, PSM2_PARAM_ERR, "mq_setopt: unknown option 0x%x", option);
    }
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_mq_irecv(psm2_mq_t mq, uint64_t rtag, uint64_t rtagsel, uint32_t flags, void *buf,
                                    uint32_t len, void *context, psm2_mq_req_t *req) {
    if (flags != 0) return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "irecv: flags must be 0");
    return post_recv(mq, nullptr, tag_of64(rtag), tag_of64(rtagsel), buf, len, context, req);
}
PSM2_API psm2_error_t psm2_mq_irecv2(psm2_mq_t mq, psm2_epaddr_t src, psm2_mq_tag_t *rtag, psm2_mq_tag_t *rtagsel,
                                     uint32_t flags, void *buf, uint32_t len, void *context, psm2_mq_req_t *req) {
    if (flags != 0 || !rtag || !rtagsel) return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "irecv2: bad argument");
    return post_recv(mq, src, tag_of(rtag), tag_of(rtagsel), buf, len, context, req);
}

PSM2_API psm2_error_t psm2_mq_isend(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, uint64_t stag, const void *buf,
                                    uint32_t len, void *context, psm2_mq_req_t *req) {
    return post_send(mq, dest, flags, tag_of64(stag), buf, len, context, req);
}
PSM2_API psm2_error_t psm2_mq_isend2(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, psm2_mq_tag_t *stag,
                                     const void *buf, uint32_t len, void *context, psm2_mq_req_t *req) {
    if (!stag) return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "isend2: no tag");
    return post_send(mq, dest, flags, tag_of(stag), buf, len, context, req);
}

PSM2_API psm2_error_t psm2_mq_send(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, uint64_t stag, const void *buf,
                                   uint32_t len) {
    psm2_mq_req_t r = nullptr;
    const psm2_error_t err = post_send(mq, dest, flags, tag_of64(stag), buf, len, nullptr, &r);
    if (err != PSM2_OK) return err;
    return test_impl<psm2_mq_status_t>(&r, nullptr, true);
}
PSM2_API psm2_error_t psm2_mq_send2(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, psm2_mq_tag_t *stag,
                                    const void *buf, uint32_t len) {
    if (!stag) return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "send2: no tag");
    psm2_mq_req_t r = nullptr;
    const psm2_error_t err = post_send(mq, dest, flags, tag_of(stag), buf, len, nullptr, &r);
    if (err != PSM2_OK) return err;
    return test_impl<psm2_mq_status_t>(&r, nullptr, true);
}

PSM2_API psm2_error_t psm2_mq_iprobe(psm2_mq_t mq, uint64_t rtag, uint64_t rtagsel, psm2_mq_status_t *status) {
    return probe_impl(mq, nullptr, tag_of64(rtag), tag_of64(rtagsel), false, nullptr, status);
}
PSM2_API psm2_error_t psm2_mq_iprobe2(psm2_mq_t mq, psm2_epaddr_t src, psm2_mq_tag_t *rtag, psm2_mq_tag_t *rtagsel,
                                      psm2_mq_status2_t *status) {
    if (!rtag || !rtagsel) return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "iprobe2: bad argument");
    return probe_impl(mq, src, tag_of(rtag), tag_of(rtagsel), false, nullptr, status);
}
PSM2_API psm2_error_t psm2_mq_improbe(psm2_mq_t mq, uint64_t rtag, uint64_t rtagsel, psm2_mq_req_t *req,
                                      psm2_mq_status_t *status) {
    return probe_impl(mq, nullptr, tag_of64(rtag), tag_of64(rtagsel), true, req, status);
}
PSM2_API psm2_error_t psm2_mq_improbe2(psm2_mq_t mq, psm2_epaddr_t src, psm2_mq_tag_t *rtag, psm2_mq_tag_t *rtagsel,
                                       psm2_mq_req_t *req, psm2_mq_status2_t *status) {
    if (!rtag || !rtagsel) return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "improbe2: bad argument");
    return probe_impl(mq, src, tag_of(rtag), tag_of(rtagsel), true, req, status);
}
PSM2_API psm2_error_t psm2_mq_imrecv(psm2_mq_t mq, uint32_t flags, void *buf, uint32_t len, void *context,
                                     psm2_mq_req_t *req) {
    if (flags != 0) return report(mq ? mq->ep : nullptr, PSM2_PARAM_ERR, "imrecv: flags must be 0");
    return imrecv_impl(mq, buf, len, context, req);
}

PSM2_API psm2_error_t psm2_mq_wait(psm2_mq_req_t *req, psm2_mq_status_t *status) {
    return test_impl(req, status, true);
}
PSM2_API psm2_error_t psm2_mq_wait2(psm2_mq_req_t *req, psm2_mq_status2_t *status) {
    return test_impl(req, status, true);
}
PSM2_API psm2_error_t psm2_mq_test(psm2_mq_req_t *req, psm2_mq_status_t *status) {
    return test_impl(req, status, false);
}
PSM2_API psm2_error_t psm2_mq_test2(psm2_mq_req_t *req, psm2_mq_status2_t *status) {
    return test_impl(req, status, false);
}

PSM2_API psm2_error_t psm2_mq_cancel(psm2_mq_req_t *req) {
    if (!req || !*req) return report(nullptr, PSM2_PARAM_ERR, "cancel: no request");
    Req *r = *req;
    Ep &ep = *r->ep;
    std::lock_guard g(ep.lock);
    if (r->kind != Req::Kind::Recv) return report(&ep, PSM2_PARAM_ERR, "cancel: only receives can be cancelled");
    drain(ep);
    if (r->matched || r->complete || r->me == PTL_INVALID_HANDLE) return PSM2_MQ_NO_COMPLETIONS;
    if (PtlMEUnlink(r->me) != PTL_OK) return PSM2_MQ_NO_COMPLETIONS; // a message took it meanwhile
    r->me = PTL_INVALID_HANDLE;
    --r->engine_refs;
    r->cancelled = true;
    r->user.error_code = PSM2_OK;
    r->user.recv_msglen = 0;
    queue_completion(ep, r); // still to be completed with test or wait
    return PSM2_OK;
}

template <class Status> static psm2_error_t ipeek_impl(psm2_mq_t mq, psm2_mq_req_t *req, Status *status) {
    if (check_mq(mq) != PSM2_OK || !req) return PSM2_PARAM_ERR;
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    if (ep.completed.empty()) drain(ep);
    if (ep.completed.empty()) return PSM2_MQ_NO_COMPLETIONS;
    Req *r = ep.completed.front();
    *req = r;
    if (status) {
        if constexpr (std::is_same_v<Status, psm2_mq_status2_t>)
            status2(r, status);
        else
            status1(r, status);
    }
    return PSM2_OK;
}
PSM2_API psm2_error_t psm2_mq_ipeek(psm2_mq_t mq, psm2_mq_req_t *req, psm2_mq_status_t *status) {
    return ipeek_impl(mq, req, status);
}
PSM2_API psm2_error_t psm2_mq_ipeek2(psm2_mq_t mq, psm2_mq_req_t *req, psm2_mq_status2_t *status) {
    return ipeek_impl(mq, req, status);
}

PSM2_API psm2_error_t psm2_mq_ipeek_dequeue(psm2_mq_t mq, psm2_mq_req_t *req) {
    if (check_mq(mq) != PSM2_OK || !req) return PSM2_PARAM_ERR;
    std::lock_guard g(mq->ep->lock);
    const psm2_error_t err = ipeek_impl<psm2_mq_status_t>(mq, req, nullptr); // the same head
    if (err != PSM2_OK) return err;
    Ep &ep = *mq->ep;
    ep.completed.pop_front();
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_mq_ipeek_dequeue_multi(psm2_mq_t mq, void *status_array,
                                                  psmi_mq_status_copy_user_t status_copy, int *count) {
    if (check_mq(mq) != PSM2_OK || !status_copy || !count || *count < 0) return PSM2_PARAM_ERR;
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    const int room = *count;
    int stored = 0;
    if (ep.completed.empty()) drain(ep);
    while (stored < room && !ep.completed.empty()) {
        Req *r = ep.completed.front();
        const int rc = status_copy(&r->user, status_array, stored);
        if (rc < 0) {
            *count = stored;
            return PSM2_INTERNAL_ERR;
        }
        ep.completed.pop_front();
        release(ep, r);
        if (rc == 0) continue; // skipped: freed, not stored
        ++stored;
        if (rc > 1) break;
    }
    *count = stored;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_mq_req_free(psm2_mq_t mq, psm2_mq_req_t req) {
    if (!req) return PSM2_OK;
    if (check_mq(mq) != PSM2_OK) return PSM2_PARAM_ERR;
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    release(ep, req);
    return PSM2_OK;
}

PSM2_API void psm2_mq_get_stats(psm2_mq_t mq, psm2_mq_stats_t *stats) {
    if (check_mq(mq) != PSM2_OK || !stats) return;
    Ep &ep = *mq->ep;
    std::lock_guard g(ep.lock);
    *stats = ep.stats;
}

PSM2_API psm2_error_t psm2_mq_fp_msg(psm2_ep_t ep, psm2_mq_t mq, psm2_epaddr_t addr, psm2_mq_tag_t *tag,
                                     psm2_mq_tag_t *tagsel, uint32_t flags, void *buf, uint32_t len, void *context,
                                     enum psm2_mq_fp_op fp_type, psm2_mq_req_t *req) {
    if (!ep || check_mq(mq) != PSM2_OK || !tag || !req) return PSM2_PARAM_ERR;
    switch (fp_type) {
    case PSM2_MQ_ISEND_FP: return post_send(mq, addr, flags, tag_of(tag), buf, len, context, req);
    case PSM2_MQ_IRECV_FP:
        if (!tagsel || flags != 0) return PSM2_PARAM_ERR;
        return post_recv(mq, addr, tag_of(tag), tag_of(tagsel), buf, len, context, req);
    default: return PSM2_PARAM_ERR;
    }
}

bool portico::psm2::sends_pending(const Ep &ep) {
    if (!ep.ring.slots.empty()) return true; // eager data not known to be delivered yet
    bool pending = false;
    ep.requests.for_each([&](const Req *r) {
        if (r->kind == Req::Kind::Send && (!r->complete || r->engine_refs > 0)) pending = true;
    });
    return pending;
}

void portico::psm2::drop_requests(Ep &ep) {
    ep.requests.for_each([](const Req *r) {
        if (r->me != PTL_INVALID_HANDLE) PtlMEUnlink(r->me);
        if (r->rndv_me != PTL_INVALID_HANDLE) PtlMEUnlink(r->rndv_me);
    });
    ep.completed.clear(); // before the requests it links go
    ep.requests.clear();
    ep.fetches.clear();
}
