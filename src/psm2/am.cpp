// SPDX-License-Identifier: BSD-3-Clause
// PSM2 active messages on Portals: a request or reply is one put to the peer endpoint's control
// PT from the sender's retain ring, landing in a slab on the control PT's overflow list (or, with
// the slabs full, only its header in the catch-all behind them: the target then gets the data
// from the ring). Arrivals raise no event: the target, in a PSM2 call, sees the counter move and
// takes them with searches of the unexpected headers, in arrival order, so a flood of requests
// while it is away from PSM2 is neither dropped nor able to overflow its event queue. The payload
// is the arguments, then the data:
//   match_bits    = kCtlAmRequest or kCtlAmReply | ring offset << 8
//   hdr_data      = handler index | nargs << 32 | flags << 40 | sender's context << 48
//   remote_offset = the requester's operation id (a reply names the request it answers)
// A request with a completion callback learns that its handler ran from the reply, or from an
// empty "done" reply the target sends when the handler did not reply.
#include <algorithm>
#include <cstring>

#include "clientkit.hpp"
#include "internal.hpp"

namespace ck = portico::clientkit;
using namespace portico::psm2;

#define PSM2_API extern "C" __attribute__((visibility("default")))

namespace {

// The limits opa-psm2 reports with its shared-memory device enabled (the default device list):
// PSMI_AM_NUM_HANDLERS handlers, PSMI_AM_MAX_ARGS arguments, and AMLONG_MTU payload bytes (an
// 8192-byte bulk packet less its 64-byte header). Clients size their messages from these:
// GASNet's psm-conduit refuses a payload limit above 8192 and sends up to 10 arguments.
constexpr uint32_t kMaxHandlers = 256;
constexpr uint32_t kMaxArgs = 10;
constexpr uint32_t kMaxShort = 8192 - 64; // payload bytes of a request or reply
constexpr size_t kAmSlabBytes = size_t{1} << 20;
constexpr int kAmSlabsLinked = 2;
constexpr ptl_match_bits_t kKindMask = 0xFF;
constexpr unsigned kRingOffsetShift = 8;

constexpr uint64_t kWantDone = 1; // the requester has a completion callback
constexpr uint64_t kNoReply = 2;
constexpr uint64_t kDoneOnly = 4; // a reply that runs no handler: "your handler ran"

// What a handler's token stands for.
struct Token {
    Ep *ep;
    psm2_epaddr *source;
    uint64_t op_id;
    bool is_reply;
    bool no_reply;
    bool replied;
};

// Sends one request or reply. The ring keeps a copy until the target has it, so the caller's
// buffers are free at once whatever the flags; a ring full of messages that targets have yet to
// fetch is waited for.
psm2_error_t send_am(Ep &ep, psm2_epaddr *to, ptl_match_bits_t kind, uint32_t handler, const psm2_amarg_t *args,
                     int nargs, const void *src, size_t len, uint64_t flags, uint64_t op_id,
                     psm2_am_completion_fn_t done, void *done_ctxt) {
    if (nargs < 0 || static_cast<uint32_t>(nargs) > kMaxArgs || len > kMaxShort || (nargs && !args) || (len && !src))
        return PSM2_PARAM_ERR;
    if (!device_allows(ep, to->epid))
        return report(&ep, PSM2_EPID_UNREACHABLE, "active message: PSM2_DEVICES has no path to that peer");
    const size_t arg_bytes = static_cast<size_t>(nargs) * sizeof(psm2_amarg_t);
    const auto bytes = static_cast<uint32_t>(arg_bytes + len);
    Retained *slot = nullptr;
    for (unsigned n = 0; !(slot = ring_take_waiting(ep, bytes)); ++n) {
        if (n % 1000 == 0) forget_dead_receivers(ep); // a receiver that is gone never fetches
        wait_event(ep, 1);
    }
    slot->to = to;
    std::byte *at = ep.ring.mem.get() + slot->offset;
    if (arg_bytes) std::memcpy(at, args, arg_bytes);
    if (len) std::memcpy(at + arg_bytes, src, len);
    const uint64_t my_id = ep.next_am_id++;
    if (kind == kCtlAmRequest) op_id = my_id;
    // A request with a completion callback waits for its handler to have run.
    if (kind == kCtlAmRequest && done) {
        auto op = std::make_unique<AmOp>();
        op->done = done;
        op->done_ctxt = done_ctxt;
        ep.am_ops[my_id] = std::move(op);
        slot->am_op = my_id;
    }
    const ptl_hdr_data_t hdr =
        handler | uint64_t(static_cast<uint32_t>(nargs)) << 32 | flags << 40 | uint64_t{ep.ctx} << 48;
    const int rc = PtlPut(ep.ring.md, slot->offset, bytes, PTL_ACK_REQ, to->proc, ctl_pt(to->ctx),
                          kind | slot->offset << kRingOffsetShift, op_id, slot_cookie(slot), hdr);
    if (rc != PTL_OK) {
        ring_put_failed(ep.ring, slot);
        ep.am_ops.erase(my_id);
        return report(&ep, PSM2_EPID_UNREACHABLE, "active message: %s", ck::rc_name(rc));
    }
    return PSM2_OK;
}

void run_handler(Ep &ep, const ptl_event_t &ev) {
    const uint32_t handler = static_cast<uint32_t>(ev.hdr_data);
    const int nargs = static_cast<int>((ev.hdr_data >> 32) & 0xFF);
    const uint64_t flags = (ev.hdr_data >> 40) & 0xFF;
    const unsigned sender_ctx = static_cast<unsigned>((ev.hdr_data >> 48) & 0xFF);
    const bool is_reply = (ev.match_bits & kKindMask) == kCtlAmReply;
    const size_t arg_bytes = static_cast<size_t>(nargs) * sizeof(psm2_amarg_t);
    if (static_cast<uint32_t>(nargs) > kMaxArgs || ev.mlength < arg_bytes || ev.mlength != ev.rlength) {
        report(&ep, PSM2_INTERNAL_ERR, "a malformed active message was dropped");
        return;
    }
    Token t{&ep,
            peer_of(ep, make_epid(ev.initiator.phys.nid, ev.initiator.phys.pid, sender_ctx)),
            ev.remote_offset,
            is_reply,
            is_reply || (flags & kNoReply) != 0, // a reply handler may not reply
            false};
    // Runs the handler the message names on its arguments (copied: the slab need not be aligned
    // for them) and payload.
    auto call = [&]() {
        psm2_amarg_t args[kMaxArgs];
        std::memcpy(args, ev.start, arg_bytes);
        const AmHandler &h = ep.am_handlers[handler];
        auto *data = static_cast<std::byte *>(ev.start) + arg_bytes;
        const auto len = static_cast<uint32_t>(ev.mlength - arg_bytes);
        if (h.fn2)
            h.fn2(&t, args, nargs, data, len, h.hctx);
        else if (h.fn)
            h.fn(&t, args, nargs, data, len);
    };
    if (is_reply) {
        if (!(flags & kDoneOnly) && handler < ep.am_handlers.size()) call();
        auto it = ep.am_ops.find(ev.remote_offset);
        if (it != ep.am_ops.end()) { // the request's handler ran
            const AmOp op = *it->second;
            ep.am_ops.erase(it);
            op.done(op.done_ctxt);
        }
        return;
    }
    if (handler < ep.am_handlers.size()) {
        call();
    } else {
        report(&ep, PSM2_PARAM_ERR, "an active message named handler %u, which is not registered", handler);
    }
    if ((flags & kWantDone) && !t.replied)
        send_am(ep, t.source, kCtlAmReply, 0, nullptr, 0, nullptr, 0, kDoneOnly, t.op_id, nullptr, nullptr);
}

// Waits on the control queue for the event of the search or get named by marker, acting on the
// others meanwhile (they come in order: the ones queued before it).
ptl_event_t ctl_wait_for(Ep &ep, const void *marker) {
    for (;;) {
        ptl_event_t ev{};
        unsigned which = 0;
        const int rc = PtlEQPoll(&ep.ctl_eq, 1, PTL_TIME_FOREVER, &ev, &which);
        if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
            ev = ptl_event_t{};
            ev.ni_fail_type = PTL_NI_NO_MATCH;
            return ev;
        }
        if (ev.user_ptr == marker) return ev;
        ctl_event(ep, ev);
    }
}

// One message taken from the unexpected headers: its data from the slab, or from the sender's
// ring when only the header landed; then its handler.
void deliver(Ep &ep, ptl_event_t ev) {
    std::vector<std::byte> fetched;
    if (ev.mlength < ev.rlength) {
        fetched.resize(ev.rlength);
        const char marker = 0;
        const unsigned sender_ctx = static_cast<unsigned>((ev.hdr_data >> 48) & 0xFF);
        if (PtlGet(ep.ctl_md, reinterpret_cast<uintptr_t>(fetched.data()), ev.rlength, ev.initiator,
                   rndv_pt(sender_ctx), kRingMatchBits, ev.match_bits >> kRingOffsetShift,
                   const_cast<char *>(&marker)) != PTL_OK) {
            report(&ep, PSM2_INTERNAL_ERR, "an active message's data could not be fetched");
            return;
        }
        const ptl_event_t reply = ctl_wait_for(ep, &marker);
        if (reply.ni_fail_type != PTL_NI_OK || reply.mlength != ev.rlength) {
            report(&ep, PSM2_EPID_NETWORK_ERROR, "an active message's data was lost: %s",
                   ck::fail_name(reply.ni_fail_type));
            return;
        }
        ev.start = fetched.data();
        ev.mlength = ev.rlength;
        run_handler(ep, ev);
        return;
    }
    // The slab is not reused while the handler reads from it (a reply it sends may progress).
    Slab *slab = overflow_slab_holding(ep.am_overflow, ev.start);
    if (slab) ++slab->probed;
    run_handler(ep, ev);
    if (slab) --slab->probed;
}

} // namespace

namespace portico::psm2 {

psm2_error_t ctl_start(Ep &ep) {
    Overflow &o = ep.am_overflow;
    o.pt = ctl_pt(ep.ctx);
    o.slab_bytes = kAmSlabBytes;
    o.slabs_linked = kAmSlabsLinked;
    o.min_free = kMaxArgs * sizeof(psm2_amarg_t) + kMaxShort;
    o.match_bits = kCtlAmRequest; // requests and replies (kCtlAmReply differs in bit 0), any ring offset
    o.ignore_bits = ~ptl_match_bits_t{kCtlAmRequest};
    return overflow_start(o);
}

void ctl_stop(Ep &ep) {
    overflow_stop(ep.am_overflow);
    ep.am_ops.clear();
}

void am_undelivered(Ep &ep, uint64_t op_id) {
    auto it = ep.am_ops.find(op_id);
    if (it == ep.am_ops.end()) return;
    const AmOp op = *it->second;
    ep.am_ops.erase(it);
    op.done(op.done_ctxt); // the loss itself was reported with the ack
}

void forget_dead_receivers(Ep &ep) {
    std::vector<psm2_epaddr *> receivers;
    for (const auto &[offset, slot] : ep.ring.awaited)
        if (std::find(receivers.begin(), receivers.end(), slot->to) == receivers.end()) receivers.push_back(slot->to);
    for (psm2_epaddr *peer : receivers) {
        Identity id{};
        const char marker = 0;
        if (PtlGet(ep.ctl_md, reinterpret_cast<uintptr_t>(&id), sizeof id, peer->proc, ctl_pt(peer->ctx), kCtlIdentity,
                   0, const_cast<char *>(&marker)) != PTL_OK)
            continue;
        const ptl_event_t reply = ctl_wait_for(ep, &marker);
        if (reply.ni_fail_type == PTL_NI_OK && id.epid == peer->epid) continue; // there: it may still fetch
        for (auto it = ep.ring.awaited.begin(); it != ep.ring.awaited.end();) {
            if (it->second->to == peer) {
                it->second->fetched = true;
                ring_release(ep.ring, it->second);
                it = ep.ring.awaited.erase(it);
            } else {
                ++it;
            }
        }
    }
    ring_trim(ep.ring);
}

bool take_active_messages(Ep &ep) {
    bool any = false;
    for (;;) {
        ptl_me_t me =
            ck::me_desc(nullptr, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, kCtlAmRequest, ~ptl_match_bits_t{kCtlAmRequest});
        me.match_id = ck::any_process();
        const char marker = 0;
        if (PtlMESearch(library().ni, ctl_pt(ep.ctx), &me, PTL_SEARCH_DELETE, const_cast<char *>(&marker)) != PTL_OK)
            break;
        const ptl_event_t ev = ctl_wait_for(ep, &marker);
        if (ev.type != PTL_EVENT_PUT_OVERFLOW || ev.ni_fail_type != PTL_NI_OK) break; // none left
        any = true;
        deliver(ep, ev);
    }
    if (any) overflow_header_taken(ep.am_overflow);
    return any;
}

void ctl_event(Ep &ep, const ptl_event_t &ev) {
    switch (ev.type) {
    case PTL_EVENT_AUTO_UNLINK:
    case PTL_EVENT_AUTO_FREE: overflow_slab_event(ep.am_overflow, ev, ep.closing); return;
    default: return; // a stale connect reply
    }
}

} // namespace portico::psm2

// ---- the PSM2 AM calls --------------------------------------------------------------------------

PSM2_API psm2_error_t psm2_am_register_handlers(psm2_ep_t ep, const psm2_am_handler_fn_t *handlers, int num_handlers,
                                                int *handlers_idx) {
    if (!ep || num_handlers < 0 || (num_handlers > 0 && (!handlers || !handlers_idx))) return PSM2_PARAM_ERR;
    std::lock_guard g(ep->lock);
    if (ep->am_handlers.size() + static_cast<size_t>(num_handlers) > kMaxHandlers)
        return report(ep, PSM2_EP_NO_RESOURCES, "am_register_handlers: the table holds %u handlers", kMaxHandlers);
    for (int i = 0; i < num_handlers; ++i) {
        handlers_idx[i] = static_cast<int>(ep->am_handlers.size());
        ep->am_handlers.push_back(AmHandler{handlers[i], nullptr, nullptr});
    }
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_am_register_handlers_2(psm2_ep_t ep, const psm2_am_handler_2_fn_t *handlers,
                                                  int num_handlers, void **hctx, int *handlers_idx) {
    if (!ep || num_handlers < 0 || (num_handlers > 0 && (!handlers || !handlers_idx))) return PSM2_PARAM_ERR;
    std::lock_guard g(ep->lock);
    if (ep->am_handlers.size() + static_cast<size_t>(num_handlers) > kMaxHandlers)
        return report(ep, PSM2_EP_NO_RESOURCES, "am_register_handlers_2: the table holds %u handlers", kMaxHandlers);
    for (int i = 0; i < num_handlers; ++i) {
        handlers_idx[i] = static_cast<int>(ep->am_handlers.size());
        ep->am_handlers.push_back(AmHandler{nullptr, handlers[i], hctx ? hctx[i] : nullptr});
    }
    return PSM2_OK;
}

PSM2_API void psm2_am_unregister_handlers(psm2_ep_t ep) {
    if (!ep) return;
    std::lock_guard g(ep->lock);
    ep->am_handlers.clear();
}

PSM2_API psm2_error_t psm2_am_request_short(psm2_epaddr_t epaddr, psm2_handler_t handler, psm2_amarg_t *args, int nargs,
                                            void *src, size_t len, int flags, psm2_am_completion_fn_t completion_fn,
                                            void *completion_ctxt) {
    if (!epaddr || !epaddr->ep) return PSM2_PARAM_ERR;
    Ep &ep = *epaddr->ep;
    std::lock_guard g(ep.lock);
    const uint64_t wire_flags = (completion_fn ? kWantDone : 0) | ((flags & PSM2_AM_FLAG_NOREPLY) ? kNoReply : 0);
    const psm2_error_t err = send_am(ep, epaddr, kCtlAmRequest, handler, args, nargs, src, len, wire_flags, 0,
                                     completion_fn, completion_ctxt);
    if (err == PSM2_PARAM_ERR) return report(&ep, err, "am_request_short: bad argument or beyond the limits");
    drain(ep);
    return err;
}

PSM2_API psm2_error_t psm2_am_reply_short(psm2_am_token_t token, psm2_handler_t handler, psm2_amarg_t *args, int nargs,
                                          void *src, size_t len, int /*flags: ASYNC needs nothing, the ring copies*/,
                                          psm2_am_completion_fn_t completion_fn, void *completion_ctxt) {
    auto *t = static_cast<Token *>(token);
    if (!t || !t->ep) return PSM2_PARAM_ERR;
    if (t->is_reply || t->no_reply || t->replied)
        return report(t->ep, PSM2_AM_INVALID_REPLY, "am_reply_short: this message may not be replied to (again)");
    // A reply refused for its arguments uses up nothing: the handler may still reply within the limits.
    if (nargs < 0 || static_cast<uint32_t>(nargs) > kMaxArgs || len > kMaxShort || (nargs && !args) || (len && !src))
        return report(t->ep, PSM2_PARAM_ERR, "am_reply_short: bad argument or beyond the limits");
    t->replied = true;
    // A reply's completion callback runs once it is sent: the ring's copy makes that at once.
    const psm2_error_t err =
        send_am(*t->ep, t->source, kCtlAmReply, handler, args, nargs, src, len, 0, t->op_id, nullptr, nullptr);
    if (err == PSM2_OK && completion_fn) completion_fn(completion_ctxt);
    if (err == PSM2_PARAM_ERR) return report(t->ep, err, "am_reply_short: bad argument or beyond the limits");
    return err;
}

PSM2_API psm2_error_t psm2_am_get_source(psm2_am_token_t token, psm2_epaddr_t *epaddr_out) {
    auto *t = static_cast<Token *>(token);
    if (!t || !epaddr_out || !t->source) return PSM2_PARAM_ERR;
    *epaddr_out = t->source;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_am_get_parameters(psm2_ep_t ep, struct psm2_am_parameters *parameters,
                                             size_t sizeof_parameters_in, size_t *sizeof_parameters_out) {
    if (!ep || !parameters || !sizeof_parameters_out) return PSM2_PARAM_ERR;
    const psm2_am_parameters p{kMaxHandlers, kMaxArgs, kMaxShort, kMaxShort};
    const size_t n = std::min(sizeof_parameters_in, sizeof p);
    std::memset(parameters, 0, sizeof_parameters_in); // as opa-psm2: a larger struct's tail is zeroed
    std::memcpy(parameters, &p, n);
    *sizeof_parameters_out = n;
    return PSM2_OK;
}
