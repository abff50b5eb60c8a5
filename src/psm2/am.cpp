// PSM2 active messages on Portals: a request or reply is one put to the peer endpoint's control
// PT, landing in a slab (a locally managed entry), whose handler runs when the target drains its
// control queue. The payload is the arguments, then the data:
//   match_bits    = kCtlAmRequest or kCtlAmReply
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

constexpr uint32_t kMaxHandlers = 256;
constexpr uint32_t kMaxArgs = 8;
constexpr uint32_t kMaxShort = 16384; // payload bytes of a request or reply
constexpr size_t kAmSlabBytes = size_t{1} << 20;
constexpr int kAmSlabsLinked = 2;

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

bool link_am_slab(Ep &ep) {
    Slab *s = nullptr;
    for (Slab &x : ep.am_slabs)
        if (!x.linked) {
            s = &x;
            break;
        }
    if (!s) {
        ep.am_slabs.emplace_back();
        s = &ep.am_slabs.back();
        s->size = kAmSlabBytes;
        s->mem = std::make_unique_for_overwrite<std::byte[]>(kAmSlabBytes);
    }
    // Matches kCtlAmRequest (2) and kCtlAmReply (3).
    ptl_me_t me = ck::me_desc(s->mem.get(), s->size, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_LINK_DISABLE,
                              kCtlAmRequest, 1);
    me.match_id = ck::any_process();
    me.min_free = kMaxArgs * sizeof(psm2_amarg_t) + kMaxShort;
    if (PtlMEAppend(lib().ni, ctl_pt(ep.ctx), &me, PTL_PRIORITY_LIST, s, &s->me) != PTL_OK) return false;
    s->linked = true;
    return true;
}

// Sends one request or reply; the payload is copied unless `async` (then it must stay until SEND).
psm2_error_t send_am(Ep &ep, psm2_epaddr *to, ptl_match_bits_t kind, uint32_t handler, const psm2_amarg_t *args,
                     int nargs, const void *src, size_t len, uint64_t flags, uint64_t op_id, bool async,
                     psm2_am_completion_fn_t done, void *done_ctxt) {
    if (nargs < 0 || static_cast<uint32_t>(nargs) > kMaxArgs || len > kMaxShort || (nargs && !args) || (len && !src))
        return PSM2_PARAM_ERR;
    auto op = std::make_unique<AmOp>();
    const size_t arg_bytes = static_cast<size_t>(nargs) * sizeof(psm2_amarg_t);
    ptl_size_t where = 0;
    ptl_size_t bytes = arg_bytes + len;
    if (async && nargs == 0) {
        where = reinterpret_cast<uintptr_t>(src);
    } else {
        op->payload.resize(bytes);
        if (arg_bytes) std::memcpy(op->payload.data(), args, arg_bytes);
        if (len) std::memcpy(op->payload.data() + arg_bytes, src, len);
        where = reinterpret_cast<uintptr_t>(op->payload.data());
    }
    const uint64_t my_id = ep.next_am_id++;
    op->done = done;
    op->done_ctxt = done_ctxt;
    // A request waits for its handler (if anyone wants to know); a reply only for its send.
    op->handled = kind == kCtlAmReply || !done;
    if (kind == kCtlAmRequest) op_id = my_id;
    const ptl_hdr_data_t hdr =
        handler | uint64_t(static_cast<uint32_t>(nargs)) << 32 | flags << 40 | uint64_t{ep.ctx} << 48;
    ep.am_ops[my_id] = std::move(op);
    const int rc = PtlPut(ep.ctl_md, where, bytes, PTL_NO_ACK_REQ, to->proc, ctl_pt(to->ctx), kind, op_id,
                          reinterpret_cast<void *>(static_cast<uintptr_t>(my_id)), hdr);
    if (rc != PTL_OK) {
        ep.am_ops.erase(my_id);
        return report(&ep, PSM2_EPID_UNREACHABLE, "active message: %s", ck::rc_name(rc));
    }
    return PSM2_OK;
}

void finish_op(Ep &ep, std::map<uint64_t, std::unique_ptr<AmOp>>::iterator it) {
    AmOp &op = *it->second;
    if (!op.sent || !op.handled) return;
    const psm2_am_completion_fn_t done = op.done;
    void *ctxt = op.done_ctxt;
    ep.am_ops.erase(it);
    if (done) done(ctxt);
}

void run_handler(Ep &ep, const ptl_event_t &ev) {
    const uint32_t handler = static_cast<uint32_t>(ev.hdr_data);
    const int nargs = static_cast<int>((ev.hdr_data >> 32) & 0xFF);
    const uint64_t flags = (ev.hdr_data >> 40) & 0xFF;
    const unsigned sender_ctx = static_cast<unsigned>((ev.hdr_data >> 48) & 0xFF);
    const bool is_reply = ev.match_bits == kCtlAmReply;
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
        auto it = ep.am_ops.find(ev.remote_offset);
        if (!(flags & kDoneOnly) && handler < ep.am_handlers.size()) call();
        if (it != ep.am_ops.end()) {
            it->second->handled = true;
            finish_op(ep, it);
        }
        return;
    }
    if (handler < ep.am_handlers.size()) {
        call();
    } else {
        report(&ep, PSM2_PARAM_ERR, "an active message named handler %u, which is not registered", handler);
    }
    if ((flags & kWantDone) && !t.replied)
        send_am(ep, t.source, kCtlAmReply, 0, nullptr, 0, nullptr, 0, kDoneOnly, t.op_id, false, nullptr, nullptr);
}

} // namespace

namespace portico::psm2 {

psm2_error_t ctl_start(Ep &ep) {
    for (int i = 0; i < kAmSlabsLinked; ++i)
        if (!link_am_slab(ep)) return PSM2_NO_MEMORY;
    return PSM2_OK;
}

void ctl_stop(Ep &ep) {
    for (Slab &s : ep.am_slabs)
        if (s.linked) PtlMEUnlink(s.me);
    ep.am_slabs.clear();
    ep.am_ops.clear();
}

void ctl_event(Ep &ep, const ptl_event_t &ev) {
    switch (ev.type) {
    case PTL_EVENT_SEND: {
        auto it = ep.am_ops.find(reinterpret_cast<uintptr_t>(ev.user_ptr));
        if (it == ep.am_ops.end()) return;
        if (ev.ni_fail_type != PTL_NI_OK) {
            report(&ep, PSM2_EPID_NETWORK_ERROR, "an active message was not delivered: %s",
                   ck::fail_name(ev.ni_fail_type));
            it->second->handled = true; // its handler will never run
        }
        it->second->sent = true;
        it->second->payload.clear();
        finish_op(ep, it);
        return;
    }
    case PTL_EVENT_PUT:
        if (ev.pt_index == ctl_pt(ep.ctx)) run_handler(ep, ev);
        return;
    case PTL_EVENT_AUTO_UNLINK: {
        // Every message in the slab has been handled (events come in order): it is free again.
        auto *s = static_cast<Slab *>(ev.user_ptr);
        s->linked = false;
        if (!ep.closing) link_am_slab(ep);
        return;
    }
    default: return; // a stale connect reply, or events nobody asked for
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
                                     (flags & PSM2_AM_FLAG_ASYNC) != 0, completion_fn, completion_ctxt);
    if (err == PSM2_PARAM_ERR) return report(&ep, err, "am_request_short: bad argument or beyond the limits");
    drain(ep);
    return err;
}

PSM2_API psm2_error_t psm2_am_reply_short(psm2_am_token_t token, psm2_handler_t handler, psm2_amarg_t *args, int nargs,
                                          void *src, size_t len, int flags, psm2_am_completion_fn_t completion_fn,
                                          void *completion_ctxt) {
    auto *t = static_cast<Token *>(token);
    if (!t || !t->ep) return PSM2_PARAM_ERR;
    if (t->is_reply || t->no_reply || t->replied)
        return report(t->ep, PSM2_AM_INVALID_REPLY, "am_reply_short: this message may not be replied to (again)");
    t->replied = true;
    const psm2_error_t err = send_am(*t->ep, t->source, kCtlAmReply, handler, args, nargs, src, len, 0, t->op_id,
                                     (flags & PSM2_AM_FLAG_ASYNC) != 0, completion_fn, completion_ctxt);
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
    std::memcpy(parameters, &p, n);
    *sizeof_parameters_out = n;
    return PSM2_OK;
}
