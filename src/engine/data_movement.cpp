// SPDX-License-Identifier: BSD-3-Clause
// Put and get: the initiator side (operations, SEND/ACK/REPLY) and the target side (matching,
// permissions, flow control, delivery, target events, acks and replies) — spec §2.5, §2.8, §3.15.
#include <unistd.h>

#include "common/guarded_copy.hpp"
#include "common/log.hpp"
#include "common/shared_segment.hpp"
#include "engine/engine.hpp"
#include "engine/trace.hpp"
#include "engine/region.hpp"

namespace portico::engine {

namespace {

// From this size on, a put that nothing observes is still tracked as an operation, so that a
// message that has to wait for room is not copied.
constexpr ptl_size_t kTrackFromBytes = 32 * 1024;

// Who sent a request, as the target's NI names peers: a rank on a logical NI, else nid/pid.
ptl_process_t initiator_of(const NI &ni, const wire::Header &h) {
    ptl_process_t p{};
    if (ni.logical())
        p.rank = h.src_rank;
    else
        p.phys = {h.src_nid, h.src_pid};
    return p;
}

ptl_event_kind_t target_event_kind(wire::Kind k) {
    switch (k) {
    case wire::Kind::Get: return PTL_EVENT_GET;
    case wire::Kind::Atomic: return PTL_EVENT_ATOMIC;
    case wire::Kind::FetchAtomic: return PTL_EVENT_FETCH_ATOMIC;
    default: return PTL_EVENT_PUT;
    }
}

bool valid_ack(ptl_ack_req_t a) {
    return a == PTL_ACK_REQ || a == PTL_NO_ACK_REQ || a == PTL_CT_ACK_REQ || a == PTL_OC_ACK_REQ;
}

// max_unexpected_headers bounds the headers the NI buffers, over all its portal table entries.
size_t unexpected_headers(const NI &ni) {
    size_t n = 0;
    for (const PT &pt : ni.pts) n += pt.unexpected.size(); // list::size() is O(1); overflow path only
    return n;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Operations (initiator side)

uint64_t Engine::alloc_op() {
    uint32_t idx;
    if (!free_ops_.empty()) {
        idx = free_ops_.back();
        free_ops_.pop_back();
    } else {
        idx = static_cast<uint32_t>(ops_.size());
        ops_.emplace_back();
    }
    Op &op = ops_[idx];
    const uint32_t gen = op.gen;
    op = Op{};
    op.gen = gen;
    op.in_use = true;
    return (uint64_t(gen) << 32) | idx;
}

uint64_t Engine::start_op(wire::Kind kind, MD *md, void *user_ptr, ptl_size_t local_offset, ptl_size_t length,
                          transport::PeerId peer) {
    const uint64_t cookie = alloc_op();
    Op &op = ops_[static_cast<uint32_t>(cookie)];
    op.kind = kind;
    op.md = md;
    op.ni = md->ni;
    op.user_ptr = user_ptr;
    op.local_offset = local_offset;
    op.length = length;
    op.peer = peer;
    ++md->pending;
    ++md->refs;
    md->ni->ep->count_op(1);
    return cookie;
}

wire::Header Engine::request_header(NI *ni, wire::Kind kind, ptl_pt_index_t pt, ptl_match_bits_t bits,
                                    ptl_size_t remote_offset, ptl_size_t length, uint64_t cookie) const {
    wire::Header h{};
    h.kind = kind;
    h.ni_kind = static_cast<uint8_t>(ni->kind);
    h.pt_index = pt;
    h.uid = my_uid();
    h.src_rank = ni->logical() ? ni->rank : 0; // a physical NI's target names us by the link's nid/pid
    h.match_bits = ni->matching() ? bits : 0;  // non-matching NIs carry no match bits
    h.remote_offset = remote_offset;
    h.length = length;
    h.cookie = cookie;
    return h;
}

Op *Engine::op_of(uint64_t cookie) {
    const uint32_t idx = static_cast<uint32_t>(cookie);
    if (idx >= ops_.size()) return nullptr;
    Op &op = ops_[idx];
    return op.in_use && op.gen == static_cast<uint32_t>(cookie >> 32) ? &op : nullptr;
}

void Engine::free_op_if_done(uint64_t cookie) {
    Op *op = op_of(cookie);
    if (!op || op->await_send || op->await_ack || op->await_reply) return;
    op->ni->ep->count_op(-1);
    md_release_ref(op->md);
    if (op->get_md) md_release_ref(op->get_md);
    op->in_use = false;
    if (++op->gen == 0) op->gen = 1; // cookie 0 never names an operation
    free_ops_.push_back(static_cast<uint32_t>(cookie));
}

void Engine::md_event(MD *md, ptl_event_kind_t type, void *user_ptr, ptl_ni_fail_t fail, ptl_size_t mlength,
                      ptl_size_t remote_offset, ptl_list_t list) {
    const unsigned o = md->desc.options;
    if (md->eq && !(type == PTL_EVENT_SEND && (o & PTL_MD_EVENT_SEND_DISABLE)) &&
        !(fail == PTL_NI_OK && (o & PTL_MD_EVENT_SUCCESS_DISABLE))) {
        ptl_event_t ev{};
        ev.type = type;
        ev.user_ptr = user_ptr;
        ev.ni_fail_type = fail;
        ev.mlength = mlength;
        ev.remote_offset = remote_offset;
        ev.ptl_list = list;
        push_event(md->eq, ev);
    }
}

void Engine::complete_send(uint64_t cookie, ptl_ni_fail_t fail) {
    Op *op = op_of(cookie);
    if (!op || !op->await_send) return;
    op->await_send = false;
    MD *md = op->md;
    const CompletionWindow window(*this);
    md_event(md, PTL_EVENT_SEND, op->user_ptr, fail, op->length, 0, PTL_PRIORITY_LIST);
    if (md->ct && (md->desc.options & PTL_MD_EVENT_CT_SEND))
        fail != PTL_NI_OK ? ct_add(md->ct, 0, 1)
                          : ct_add(md->ct, (md->desc.options & PTL_MD_EVENT_CT_BYTES) ? op->length : 1, 0);
    --md->pending;
    free_op_if_done(cookie);
}

void Engine::complete_ack(uint64_t cookie, const wire::Header *h, ptl_ni_fail_t fail) {
    Op *op = op_of(cookie);
    if (!op || !op->await_ack) {
        log_debug("dropped an ack for an unknown operation");
        return;
    }
    op->await_ack = false;
    MD *md = op->md;
    const CompletionWindow window(*this);
    if (md->released) {
        // The MD was released before its ack came back: the ack is discarded (§3.10.4).
        md->ni->sr[PTL_SR_DROP_COUNT].fetch_add(1);
    } else {
        const ptl_size_t mlength = h ? h->length : 0;
        if (op->ack_req == PTL_ACK_REQ)
            md_event(md, PTL_EVENT_ACK, op->user_ptr, fail, mlength, h ? h->remote_offset : 0,
                     h ? static_cast<ptl_list_t>(h->list) : PTL_PRIORITY_LIST);
        if (md->ct && (md->desc.options & PTL_MD_EVENT_CT_ACK)) {
            const bool bytes = (md->desc.options & PTL_MD_EVENT_CT_BYTES) && op->ack_req != PTL_OC_ACK_REQ;
            fail != PTL_NI_OK ? ct_add(md->ct, 0, 1) : ct_add(md->ct, bytes ? mlength : 1, 0);
        }
    }
    free_op_if_done(cookie);
}

void Engine::complete_reply(uint64_t cookie, const wire::Header *h, ptl_ni_fail_t fail) {
    Op *op = op_of(cookie);
    if (!op || !op->await_reply) return;
    op->await_reply = false;
    MD *md = op->get_md ? op->get_md : op->md;
    const ptl_size_t mlength = h && fail == PTL_NI_OK ? h->length : 0;
    const CompletionWindow window(*this);
    md_event(md, PTL_EVENT_REPLY, op->user_ptr, fail, mlength, h ? h->remote_offset : 0,
             h ? static_cast<ptl_list_t>(h->list) : PTL_PRIORITY_LIST);
    if (md->ct && (md->desc.options & PTL_MD_EVENT_CT_REPLY))
        fail != PTL_NI_OK ? ct_add(md->ct, 0, 1)
                          : ct_add(md->ct, (md->desc.options & PTL_MD_EVENT_CT_BYTES) ? mlength : 1, 0);
    --md->pending;
    free_op_if_done(cookie);
}

int Engine::put(ptl_handle_md_t mdh, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                void *user_ptr, ptl_hdr_data_t hdr_data, uint64_t bits_hi) {
    // A put that nothing at this end observes needs no engine state: it is checked, built and
    // handed to the transport (whose links have locks of their own) without the engine lock, so
    // that threads sending at once do not queue behind each other or behind the progress thread.
    if (const int rc = unlocked_if_untracked(mdh, length,
                                             [&](MD *md) {
                                                 return put_unlocked(md, local_offset, length, ack, target, pt, bits,
                                                                     remote_offset, hdr_data, bits_hi);
                                             });
        rc >= 0)
        return rc;
    std::lock_guard g(mutex_);
    MD *md = mds_.lookup(ObjType::MD, mdh);
    if (!md) return PTL_ARG_INVALID;
    return put_locked(md, local_offset, length, ack, target, pt, bits, remote_offset, user_ptr, hdr_data,
                      md->ni->bundle_depth > 0, bits_hi);
}

// Nothing can observe the SEND or ACK of a put from an MD without EQ or CT; such a put tracks no
// operation unless it goes single copy or is large (a message that has to wait is then copied,
// which costs more than tracking from kTrackFromBytes on). Small contiguous ones are decided
// here, without the lock: everything read is fixed while the MD is bound.
bool Engine::untracked(const MD *md, ptl_size_t length) {
    return !md->eq && !md->ct && !(md->desc.options & PTL_IOVEC) && length < kTrackFromBytes && length < kSegmentFrom &&
           length < md->ni->ep->direct_from && md->ni->bundle_depth.load() == 0;
}

int Engine::check_put(const MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
                      transport::PeerId *peer) {
    if (!valid_ack(ack)) return PTL_ARG_INVALID;
    if (local_offset > md->length || length > md->length - local_offset) return PTL_ARG_INVALID;
    if ((md->desc.options & PTL_MD_UNRELIABLE) && ack != PTL_NO_ACK_REQ) return PTL_ARG_INVALID;
    if (!resolve_target(md->ni, target, peer) || length > md->ni->limits.max_msg_size) return PTL_ARG_INVALID;
    return PTL_OK;
}

wire::Header Engine::put_header(const MD *md, ptl_size_t length, ptl_ack_req_t ack, ptl_pt_index_t pt,
                                ptl_match_bits_t bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
                                uint64_t cookie, uint64_t bits_hi) const {
    // No ack is asked for when nothing could observe it (no EQ and no CT on the MD).
    const bool want_ack = ack != PTL_NO_ACK_REQ && (md->eq || md->ct);
    wire::Header h = request_header(md->ni, wire::Kind::Put, pt, bits, remote_offset, length, cookie);
    h.flags = (want_ack ? wire::kFlagWantAck : 0) | ((md->desc.options & PTL_MD_UNORDERED) ? wire::kFlagUnordered : 0);
    h.ack_req = static_cast<uint8_t>(ack);
    h.hdr_data = hdr_data;
    if (md->ni->matching()) h.match_bits_hi = bits_hi;
    return h;
}

void Engine::send_untracked(NI *ni, transport::PeerId peer, const wire::Header &h, const transport::Gather &payload,
                            bool bundled) {
    const auto st = send_message(*ni->ep->transport, peer, h, payload,
                                 {.copy_payload = true, .defer_wakeup = bundled, .hold = ni->ep->request_hold()});
    if (st == transport::SendStatus::Held) ni->ep->poll_soon();
    if (st == transport::SendStatus::SourceFault || st == transport::SendStatus::Unreachable)
        log_debug("put to %08x/%u: %s", peer.nid, peer.pid,
                  st == transport::SendStatus::SourceFault ? "source fault" : "unreachable");
}

int Engine::put_unlocked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
                         ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
                         uint64_t bits_hi) {
    transport::PeerId peer;
    if (const int rc = check_put(md, local_offset, length, ack, target, &peer); rc != PTL_OK) return rc;
    iovec piece{static_cast<char *>(md->desc.start) + local_offset, length};
    send_untracked(md->ni, peer, put_header(md, length, ack, pt, bits, remote_offset, hdr_data, 0, bits_hi),
                   {&piece, length ? 1 : 0, length}, false);
    return PTL_OK;
}

int Engine::put_locked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
                       ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                       ptl_hdr_data_t hdr_data, bool bundled, uint64_t bits_hi) {
    transport::PeerId peer;
    if (const int rc = check_put(md, local_offset, length, ack, target, &peer); rc != PTL_OK) return rc;
    NI *ni = md->ni;
    const bool want_ack = ack != PTL_NO_ACK_REQ && (md->eq || md->ct);
    transport::Transport &tr = *ni->ep->transport;
    const bool copy = (md->desc.options & PTL_MD_VOLATILE) && length <= ni->limits.max_volatile_size;
    // Large contiguous puts go single copy where the transport can: the target reads our buffer
    // itself once it has matched, and tells us when it is done (the SEND event waits for that).
    wire::SegmentRef ref;
    const bool contiguous = !copy && !(md->desc.options & PTL_IOVEC);
    const SingleCopy how =
        contiguous ? single_copy(*ni->ep, peer, static_cast<const char *>(md->desc.start) + local_offset, length, &ref)
                   : SingleCopy::None;
    const bool rendezvous = how != SingleCopy::None;
    const bool tracked = md->eq || md->ct || rendezvous || length >= kTrackFromBytes;
    const transport::Hold hold = ni->ep->request_hold(); // before this operation counts
    const uint64_t cookie = tracked ? start_op(wire::Kind::Put, md, user_ptr, local_offset, length, peer) : 0;

    wire::Header h = put_header(md, length, ack, pt, bits, remote_offset, hdr_data, cookie, bits_hi);
    iov_scratch_.clear();
    if (!tracked) {
        gather(region_of(*md), local_offset, length, iov_scratch_);
        send_untracked(ni, peer, h, {iov_scratch_.data(), static_cast<int>(iov_scratch_.size()), length}, bundled);
        return PTL_OK;
    }
    Op &op = ops_[static_cast<uint32_t>(cookie)];
    op.ack_req = ack;
    op.await_send = true;
    op.await_ack = want_ack;
    iovec ref_iov{&ref, sizeof ref};
    transport::Gather payload{iov_scratch_.data(), 0, length};
    if (rendezvous) {
        op.rendezvous = true;
        h.flags |= wire::kFlagRendezvous;
        h.rdv_addr = reinterpret_cast<uintptr_t>(md->desc.start) + local_offset;
        if (how == SingleCopy::Segment) {
            h.flags |= wire::kFlagSegment;
            payload = {&ref_iov, 1, sizeof ref};
        } else {
            payload = {};
        }
    } else {
        gather(region_of(*md), local_offset, length, iov_scratch_);
        payload = {iov_scratch_.data(), static_cast<int>(iov_scratch_.size()), length};
    }
    const auto st = send_message(
        tr, peer, h, payload,
        {.token = cookie, .copy_payload = copy || payload.iov == &ref_iov, .defer_wakeup = bundled, .hold = hold});
    switch (st) {
    case transport::SendStatus::Held: ni->ep->poll_soon(); [[fallthrough]];
    case transport::SendStatus::Sent:
        if (!rendezvous) complete_send(cookie, PTL_NI_OK);
        break;
    case transport::SendStatus::Queued:
        break; // the SEND event comes when the last byte has left (handle_send_complete)
    case transport::SendStatus::SourceFault:
    case transport::SendStatus::Unreachable: {
        log_debug("put to %08x/%u: %s", peer.nid, peer.pid,
                  st == transport::SendStatus::SourceFault ? "source fault" : "unreachable");
        const ptl_ni_fail_t fail = st == transport::SendStatus::SourceFault ? PTL_NI_SEGV : PTL_NI_UNDELIVERABLE;
        if (want_ack) complete_ack(cookie, nullptr, fail);
        complete_send(cookie, fail);
        break;
    }
    }
    return PTL_OK;
}

int Engine::get(ptl_handle_md_t mdh, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target,
                ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr) {
    std::lock_guard g(mutex_);
    MD *md = mds_.lookup(ObjType::MD, mdh);
    if (!md) return PTL_ARG_INVALID;
    return get_locked(md, local_offset, length, target, pt, bits, remote_offset, user_ptr, md->ni->bundle_depth > 0);
}

int Engine::get_locked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
                       ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, bool bundled) {
    if (local_offset > md->length || length > md->length - local_offset) return PTL_ARG_INVALID;
    if (md->desc.options & PTL_MD_UNRELIABLE) return PTL_ARG_INVALID; // unreliable MDs only put without acks
    NI *ni = md->ni;
    transport::PeerId peer;
    if (!resolve_target(ni, target, &peer) || length > ni->limits.max_msg_size) return PTL_ARG_INVALID;

    const transport::Hold hold = ni->ep->request_hold(); // before this operation counts
    const uint64_t cookie = start_op(wire::Kind::Get, md, user_ptr, local_offset, length, peer);
    ops_[static_cast<uint32_t>(cookie)].await_reply = true;
    wire::Header h = request_header(ni, wire::Kind::Get, pt, bits, remote_offset, length, cookie);
    wire::SegmentRef ref;
    iovec ref_iov{&ref, sizeof ref};
    transport::Gather payload{};
    const SingleCopy how =
        (md->desc.options & PTL_IOVEC)
            ? SingleCopy::None
            : single_copy(*ni->ep, peer, static_cast<const char *>(md->desc.start) + local_offset, length, &ref);
    if (how != SingleCopy::None) {
        h.flags |= wire::kFlagRendezvous;
        h.rdv_addr = reinterpret_cast<uintptr_t>(md->desc.start) + local_offset;
    }
    if (how == SingleCopy::Segment) {
        h.flags |= wire::kFlagSegment;
        payload = {&ref_iov, 1, sizeof ref};
    }
    const auto st = send_message(
        *ni->ep->transport, peer, h, payload,
        {.token = cookie, .copy_payload = how == SingleCopy::Segment, .defer_wakeup = bundled, .hold = hold});
    if (st == transport::SendStatus::Held) ni->ep->poll_soon();
    if (st == transport::SendStatus::Unreachable) complete_reply(cookie, nullptr, PTL_NI_UNDELIVERABLE);
    return PTL_OK;
}

// ---------------------------------------------------------------------------------------------
// Frames from the transport

namespace {
// The initiator's memory that a kFlagSegment request names, through our mapping of its shared
// segment, checked to hold length bytes; nullptr when the request names none or it cannot be
// mapped here (the caller then reads or writes the initiator's memory as before).
char *segment_memory(const Arrival &a, uint64_t length) {
    if (!(a.h.flags & wire::kFlagSegment) || a.frame_bytes < sizeof(wire::SegmentRef) || length == 0) return nullptr;
    wire::SegmentRef ref;
    std::memcpy(&ref, a.payload, sizeof ref);
    SharedSegmentId id;
    static_assert(sizeof id == sizeof ref.id);
    std::memcpy(static_cast<void *>(&id), ref.id, sizeof id);
    uint64_t mapped = 0;
    char *base = shared_segment_mapping(id, &mapped);
    if (!base || ref.offset > mapped || length > mapped - ref.offset) return nullptr;
    return base + ref.offset;
}
} // namespace

// How a contiguous transfer of the initiator's [addr, addr + length) with peer moves: in frames,
// single copy by the target reading or writing our memory (from the transport's threshold on), or
// single copy through a shared segment the memory lies in (*ref names it; from kSegmentFrom on,
// far below that threshold: the target's one memcpy beats the rings' two).
Engine::SingleCopy Engine::single_copy(Endpoint &ep, transport::PeerId peer, const void *addr, size_t length,
                                       wire::SegmentRef *ref) {
    if (length < kSegmentFrom && length < ep.direct_from) return SingleCopy::None;
    transport::Transport &tr = *ep.transport;
    SharedSegmentId id;
    uint64_t offset = 0;
    if (shared_segment_find(addr, length, &id, &offset) && tr.direct_access(peer, std::max(length, ep.direct_from))) {
        std::memcpy(ref->id, static_cast<const void *>(&id), sizeof ref->id);
        ref->offset = offset;
        return SingleCopy::Segment;
    }
    return length >= ep.direct_from && tr.direct_access(peer, length) ? SingleCopy::Direct : SingleCopy::None;
}

namespace {
RxState &rx_of(Endpoint &ep, transport::Link &link) {
    if (!link.rx_state) {
        ep.rx_states.push_back(std::make_unique<RxState>());
        link.rx_state = ep.rx_states.back().get();
    }
    return *static_cast<RxState *>(link.rx_state);
}
} // namespace

void Engine::handle_frame(Endpoint &ep, transport::Link &link, const transport::FrameHeader &f,
                          const std::byte *payload) {
    std::lock_guard g(mutex_);
    handle_frame_locked(ep, link, f, payload);
}

void Engine::handle_frame_locked(Endpoint &ep, transport::Link &link, const transport::FrameHeader &f,
                                 const std::byte *payload) {
    // The link's state of a message that streams over several frames: made by the first message
    // that needs one (a one-frame request never does).
    auto *streaming = static_cast<RxState *>(link.rx_state);
    const bool fault = f.t.flags & transport::kFrameSourceFault;
    auto malformed = [&] {
        if (NI *ni = ep.nis[0] ? ep.nis[0] : ep.nis[1]) ni->sr[PTL_SR_MALFORMED_MESSAGES].fetch_add(1);
    };
    if (!(f.t.flags & transport::kFrameFirst)) {
        if (!streaming || !streaming->active) return malformed();
        if (streaming->h.kind == wire::Kind::Reply)
            initiator_reply_data(*streaming, payload, f.t.frame_payload, fault);
        else
            target_data(ep, *streaming, payload, f.t.frame_payload, fault);
        return;
    }
    Arrival a; // not zeroed first: decode writes the whole header, or it is not read
    a.payload = payload;
    a.frame_bytes = f.t.frame_payload;
    a.total = f.t.payload_total;
    a.fault = fault;
    const bool decoded = wire::decode(f.protocol, f.t.protocol_bytes, &a.h);
    // The sender is who the transport says the link is with, whatever the peer might claim.
    a.h.src_nid = link.peer.nid;
    a.h.src_pid = link.peer.pid;
    const wire::Header &h = a.h;
    if (streaming && streaming->active) {
        // A new message before the previous one's payload ended: the peer broke the protocol.
        RxState &rx = *streaming;
        log_error("protocol error from %08x/%u: message interrupted; dropping it", link.peer.nid, link.peer.pid);
        if (rx.entry) {
            --rx.entry->busy;
            unlink_if_spent(rx.entry);
            stream_ended(rx.ni->pts[rx.entry->pt_index]);
        }
        rx = RxState{};
    }
    if (f.t.protocol != transport::Protocol::Portals || !decoded || !wire::header_is_sane(h)) {
        // Not ours to read: its continuation frames, if any, find no message and are dropped too.
        log_error("malformed message from %08x/%u; dropped", link.peer.nid, link.peer.pid);
        malformed();
        return;
    }
    switch (h.kind) {
    case wire::Kind::Put:
    case wire::Kind::Get:
    case wire::Kind::Atomic:
    case wire::Kind::FetchAtomic: target_request(ep, link, a); break;
    case wire::Kind::Ack: {
        Op *op = op_of(h.cookie);
        if (!op || !(op->peer == link.peer) || (op->kind != wire::Kind::Put && op->kind != wire::Kind::Atomic)) break;
        if (h.flags & wire::kFlagAckValid) complete_ack(h.cookie, &h, static_cast<ptl_ni_fail_t>(h.ni_fail));
        if (h.flags & wire::kFlagSendDone) complete_send(h.cookie, PTL_NI_OK);
        break;
    }
    case wire::Kind::Reply: {
        Op *op = op_of(h.cookie);
        const bool placed = h.flags & wire::kFlagDataPlaced;
        const bool ours = op && op->peer == link.peer &&
                          (op->kind == wire::Kind::Get || op->kind == wire::Kind::FetchAtomic) && op->await_reply &&
                          h.length <= op->length && a.total == (h.ni_fail == PTL_NI_OK && !placed ? h.length : 0);
        RxState &rx = rx_of(ep, link);
        rx = RxState{};
        rx.h = h;
        rx.total = a.total;
        rx.cookie = ours ? h.cookie : 0;
        if (!ours) {
            // A reply nobody waits for (its MD went with its NI, or a confused peer): dropped.
            if (NI *ni = ep.nis[h.ni_kind & 3]) ni->sr[PTL_SR_DROP_COUNT].fetch_add(1);
        }
        rx.active = true;
        initiator_reply_data(rx, payload, a.frame_bytes, fault);
        break;
    }
    }
}

void Engine::initiator_reply_data(RxState &rx, const std::byte *payload, size_t n, bool fault) {
    Op *op = rx.cookie ? op_of(rx.cookie) : nullptr;
    if (op && n > 0) {
        const ptl_size_t room = rx.h.length > rx.received ? rx.h.length - rx.received : 0;
        const size_t take = std::min<size_t>(n, room);
        MD *into = op->get_md ? op->get_md : op->md;
        const ptl_size_t at = op->get_md ? op->local_get_offset : op->local_offset;
        if (!copy_into(region_of(*into), at + rx.received, payload, take)) rx.fail = PTL_NI_SEGV;
    }
    if (fault) rx.fail = PTL_NI_SEGV;
    rx.received += n;
    if (rx.received >= rx.total) {
        rx.active = false;
        if (op) {
            const ptl_ni_fail_t fail = rx.fail != PTL_NI_OK ? rx.fail : static_cast<ptl_ni_fail_t>(rx.h.ni_fail);
            complete_reply(rx.cookie, &rx.h, fail);
        }
        rx = RxState{};
    }
}

void Engine::answer_put(Endpoint &ep, const wire::Header &req, bool is_ack, ptl_ni_fail_t fail, ptl_size_t mlength,
                        ptl_size_t offset, ptl_list_t list) {
    uint8_t flags = 0;
    if (is_ack && (req.flags & wire::kFlagWantAck)) flags |= wire::kFlagAckValid;
    if (req.flags & wire::kFlagRendezvous) flags |= wire::kFlagSendDone; // whatever happened, we are done reading
    if (flags) send_response(ep, req, wire::Kind::Ack, fail, mlength, offset, list, {}, flags, true);
}

ptl_ni_fail_t Engine::send_response(Endpoint &ep, const wire::Header &req, wire::Kind kind, ptl_ni_fail_t fail,
                                    ptl_size_t mlength, ptl_size_t offset, ptl_list_t list,
                                    const transport::Gather &payload, uint8_t flags, bool may_hold) {
    wire::Header h{};
    h.kind = kind;
    h.ni_kind = req.ni_kind;
    h.ni_fail = static_cast<uint8_t>(fail);
    h.list = static_cast<uint8_t>(list);
    // No pt_index or uid: nothing at the initiator reads them, and a zero costs no bytes on the wire.
    h.length = mlength;
    h.remote_offset = offset;
    h.cookie = req.cookie;
    h.flags = flags;
    // Replies to a burst of gets coalesce like requests (the first one answers what came in and
    // leaves at once, the rest of the batch waits for the poll that follows).
    const transport::Hold hold =
        may_hold ? transport::Hold::Ack : (kind == wire::Kind::Reply ? transport::Hold::Burst : transport::Hold::No);
    const transport::PeerId initiator{req.src_nid, req.src_pid};
    auto st = send_message(*ep.transport, initiator, h, payload, {.copy_payload = true, .hold = hold});
    if (st == transport::SendStatus::Held) ep.poll_soon();
    if (st == transport::SendStatus::SourceFault) {
        // The entry's memory could not be read: the reply says so instead of carrying data.
        h.ni_fail = PTL_NI_SEGV;
        h.length = 0;
        send_message(*ep.transport, initiator, h, {}, {});
        return PTL_NI_SEGV;
    }
    return fail;
}

void Engine::target_request(Endpoint &ep, transport::Link &link, const Arrival &a) {
    Landing at;
    const ptl_ni_fail_t fail = match_request(ep, a.h, &at);
    if (trace::enabled()) trace_request(a.h, at, fail);
    if (fail != PTL_NI_OK) {
        reject_request(ep, link, a, fail);
        return;
    }
    claim_entry(a.h, &at);
    switch (a.h.kind) {
    case wire::Kind::Atomic:
    case wire::Kind::FetchAtomic: target_atomic(ep, a, at.ni, *at.pt, at.e, at.offset, at.mlength, at.spent); break;
    case wire::Kind::Put:
        if (whole_in_frame(a))
            put_in_one_frame(ep, a, at);
        else
            start_put(ep, link, a, at);
        break;
    default: answer_get(ep, link, a, at); break;
    }
}

void Engine::trace_request(const wire::Header &h, const Landing &at, ptl_ni_fail_t fail) const {
    const char *name = h.kind == wire::Kind::Put      ? "put"
                       : h.kind == wire::Kind::Get    ? "get"
                       : h.kind == wire::Kind::Atomic ? "atomic"
                                                      : "fetch-atomic";
    const ptl_process_t from = at.ni ? initiator_of(*at.ni, h) : ptl_process_t{};
    if (fail != PTL_NI_OK || !at.e) {
        trace::line("rx %s pt=%u bits=%#lx len=%lu from=%x/%u dropped fail=%d", name, h.pt_index,
                    static_cast<unsigned long>(h.match_bits), static_cast<unsigned long>(h.length), from.phys.nid,
                    from.phys.pid, fail);
        return;
    }
    trace::line("rx %s pt=%u bits=%#lx len=%lu from=%x/%u -> %s %#lx ct=%#lx", name, h.pt_index,
                static_cast<unsigned long>(h.match_bits), static_cast<unsigned long>(h.length), from.phys.nid,
                from.phys.pid, at.e->list == PTL_PRIORITY_LIST ? "priority" : "overflow",
                static_cast<unsigned long>(at.e->handle), static_cast<unsigned long>(at.e->ct ? at.e->ct->handle : 0));
}

ptl_ni_fail_t Engine::match_request(Endpoint &ep, const wire::Header &h, Landing *at) {
    NI *ni = at->ni = ep.nis[h.ni_kind & 3];
    // Dropped at the target (no PT, no match, unexpected-header list full): the initiator's ACK or
    // REPLY says PTL_NI_DROPPED (§3.13.3), so that no get waits for ever (README decision 11).
    auto drop = [&] {
        if (ni) ni->sr[PTL_SR_DROP_COUNT].fetch_add(1);
        return PTL_NI_DROPPED;
    };
    if (!ni) {
        log_debug("message for an NI kind %u that is not open; dropped", h.ni_kind);
        return drop();
    }
    if (h.pt_index >= ni->pts.size() || !ni->pts[h.pt_index].allocated) return drop();
    PT &pt = *(at->pt = &ni->pts[h.pt_index]);
    auto flow_control = [&](Entry *culprit) {
        // Disable the PT and tell the target application (reserved slot).
        pt.enabled = false;
        if (pt.eq && !(culprit && (culprit->d.options & PTL_LE_EVENT_FLOWCTRL_DISABLE))) {
            ptl_event_t ev{};
            ev.type = PTL_EVENT_PT_DISABLED;
            ev.pt_index = h.pt_index;
            ev.ni_fail_type = PTL_NI_PT_DISABLED;
            push_event(pt.eq, ev);
        }
        ni->sr[PTL_SR_DROP_COUNT].fetch_add(1);
        return PTL_NI_PT_DISABLED;
    };
    if (!pt.enabled) {
        ni->sr[PTL_SR_DROP_COUNT].fetch_add(1);
        return PTL_NI_PT_DISABLED;
    }

    Entry *e = find_entry(*ni, pt, h, initiator_of(*ni, h));
    if (!e) return (pt.options & PTL_PT_FLOWCTRL) ? flow_control(nullptr) : drop();
    // A matched entry that refuses the message ends the search (§3.12): no fall-through.
    if (e->d.uid != PTL_UID_ANY && e->d.uid != h.uid) {
        ni->sr[PTL_SR_PERMISSION_VIOLATIONS].fetch_add(1);
        return PTL_NI_PERM_VIOLATION;
    }
    // Put and Atomic need OP_PUT, Get needs OP_GET, a fetching atomic needs both (§3.12.1).
    const unsigned needed = h.kind == wire::Kind::Get           ? PTL_LE_OP_GET
                            : h.kind == wire::Kind::FetchAtomic ? (PTL_LE_OP_PUT | PTL_LE_OP_GET)
                                                                : PTL_LE_OP_PUT;
    if ((e->d.options & needed) != needed) {
        ni->sr[PTL_SR_OPERATION_VIOLATIONS].fetch_add(1);
        return PTL_NI_OP_VIOLATION;
    }
    const bool keeps_header = e->list == PTL_OVERFLOW_LIST && !(e->d.options & PTL_LE_UNEXPECTED_HDR_DISABLE);
    if (keeps_header && unexpected_headers(*ni) >= static_cast<size_t>(ni->limits.max_unexpected_headers))
        return (pt.options & PTL_PT_FLOWCTRL) ? flow_control(e) : drop();
    const bool full_event = pt.eq && !(e->d.options & (PTL_LE_EVENT_COMM_DISABLE | PTL_LE_EVENT_SUCCESS_DISABLE));
    if ((pt.options & PTL_PT_FLOWCTRL) && full_event && !pt.eq->events.has_room()) return flow_control(e);
    at->e = e;
    return PTL_NI_OK;
}

// The cached entry C of a PT stands for a walk of its lists only if the walk would find C: C
// matches the message, and no entry before C in the priority list does. The cache is filled by a
// walk that found C in the priority list, having rejected every entry before it for message M,
// and it is used only while the PT's list generation is the one of that walk (no append, unlink
// or search since, so the list holds the same entries in the same order). Then:
//   - C first in the list: no entry comes before it, so any message C matches now may take it;
//   - otherwise only a message alike to M in all that entry_matches reads of it (match bits,
//     source, length, offset) may take C: what entry_matches reads of an entry is fixed once it
//     is appended, except a locally managed entry's local_offset, which only grows (claim_entry),
//     so an earlier entry that had no room for M still has none; each earlier entry rejects the
//     new message as it rejected M. A message with other bits or another source might match an
//     earlier entry, so it walks.
// C is then checked with entry_matches as the walk would (room, truncation), and everything the
// matcher does after finding the entry (uid and operation permissions, flow control) is the same
// code whichever way it was found. Use-once entries are not cached: matching them unlinks them.
Entry *Engine::find_entry(const NI &ni, PT &pt, const wire::Header &h, ptl_process_t initiator) {
    auto matches = [&](const Entry &e) {
        return entry_matches(ni, e, h.match_bits, h.match_bits_hi, initiator, h.src_rank, h.length, h.remote_offset);
    };
    MatchCache &c = pt.cache;
    if (fast_path_ && c.entry && c.gen == pt.list_gen &&
        (c.first ||
         (c.bits == h.match_bits && c.bits_hi == h.match_bits_hi && c.src_nid == h.src_nid && c.src_pid == h.src_pid &&
          c.src_rank == h.src_rank && c.rlength == h.length && c.remote_offset == h.remote_offset)) &&
        matches(*c.entry))
        return c.entry;
    bool first = true;
    for (Entry *cand : pt.lists[PTL_PRIORITY_LIST]) {
        if (matches(*cand)) {
            if (fast_path_ && !(cand->d.options & PTL_ME_USE_ONCE))
                c = {cand,      pt.list_gen, first,      h.match_bits, h.match_bits_hi,
                     h.src_nid, h.src_pid,   h.src_rank, h.length,     h.remote_offset};
            return cand;
        }
        first = false;
    }
    for (Entry *cand : pt.lists[PTL_OVERFLOW_LIST])
        if (matches(*cand)) return cand;
    return nullptr;
}

bool Engine::overflow_stream_matches(const NI &ni, ptl_pt_index_t pt, const Entry &probe) const {
    for (const auto &rx : ni.ep->rx_states) {
        if (!rx->active || rx->ni != &ni || !rx->entry || rx->entry->list != PTL_OVERFLOW_LIST ||
            rx->entry->pt_index != pt)
            continue;
        const wire::Header &h = rx->h;
        if (entry_matches(ni, probe, h.match_bits, h.match_bits_hi, initiator_of(ni, h), h.src_rank, h.length,
                          h.remote_offset))
            return true;
    }
    return false;
}

void Engine::reject_request(Endpoint &ep, transport::Link &link, const Arrival &a, ptl_ni_fail_t fail) {
    const wire::Header &h = a.h;
    // Tell the initiator. OC acks count processing, not delivery (§3.15.1).
    if (h.kind == wire::Kind::Get || h.kind == wire::Kind::FetchAtomic)
        send_response(ep, h, wire::Kind::Reply, fail, 0, h.remote_offset, PTL_PRIORITY_LIST, {});
    else
        answer_put(ep, h, true, h.ack_req == PTL_OC_ACK_REQ ? PTL_NI_OK : fail, 0, h.remote_offset, PTL_PRIORITY_LIST);
    // And consume the whole message: its payload, here and in the frames still to come, is discarded.
    RxState &rx = rx_of(ep, link);
    rx = RxState{};
    rx.h = h;
    rx.total = a.total;
    rx.active = true;
    target_data(ep, rx, a.payload, a.frame_bytes, false);
}

void Engine::claim_entry(const wire::Header &h, Landing *at) {
    Entry *e = at->e;
    const bool local = e->d.options & PTL_ME_MANAGE_LOCAL;
    at->offset = local ? e->local_offset : h.remote_offset;
    at->mlength = at->offset >= e->length ? 0 : std::min<ptl_size_t>(h.length, e->length - at->offset);
    if (local) e->local_offset += at->mlength;
    // Unlink conditions are decided now, so no later message matches a spent entry; the
    // AUTO_UNLINK event follows the operation's own event.
    at->spent =
        (e->d.options & PTL_LE_USE_ONCE) ||
        (local && e->d.min_free && (e->local_offset > e->length || e->length - e->local_offset < e->d.min_free));
    if (at->spent && e->linked) {
        at->pt->lists[e->list].erase(e);
        at->pt->lists_changed();
        e->linked = false;
    }
}

void Engine::start_put(Endpoint &ep, transport::Link &link, const Arrival &a, const Landing &at) {
    RxState &rx = rx_of(ep, link);
    rx = RxState{};
    rx.active = true;
    rx.h = a.h;
    rx.total = a.total;
    rx.ni = at.ni;
    rx.entry = at.e;
    rx.offset = at.offset;
    rx.mlength = at.mlength;
    ++at.e->busy;
    ++at.pt->streams;
    if (a.h.flags & wire::kFlagRendezvous) {
        // Single copy: read the initiator's buffer straight into the entry, through our mapping
        // of its shared segment when it lies in one.
        // The entry may cover unmapped memory: copies into it are guarded (PTL_NI_SEGV).
        if (const char *src = segment_memory(a, at.mlength)) {
            if (!copy_into(region_of(*at.e), at.offset, reinterpret_cast<const std::byte *>(src), at.mlength))
                rx.fail = PTL_NI_SEGV;
        } else {
            iov_scratch_.clear();
            gather(region_of(*at.e), at.offset, at.mlength, iov_scratch_);
            if (at.mlength &&
                link.read_peer(iov_scratch_.data(), static_cast<int>(iov_scratch_.size()), a.h.rdv_addr, at.mlength))
                rx.fail = PTL_NI_SEGV;
        }
        rx.received = rx.total; // no payload frames follow
        rx.active = false;
        finish_put(ep, rx);
        rx = RxState{};
        return;
    }
    target_data(ep, rx, a.payload, a.frame_bytes, a.fault);
}

// Everything else (single copy, a shared segment, payload in later frames, a source that could
// not be read) streams through the link's RxState.
bool Engine::whole_in_frame(const Arrival &a) const {
    return fast_path_ && a.total == a.frame_bytes && !a.fault &&
           !(a.h.flags & (wire::kFlagRendezvous | wire::kFlagSegment));
}

void Engine::put_in_one_frame(Endpoint &ep, const Arrival &a, const Landing &at) {
    // target_data's copy, straight from the frame; guarded, as the entry may cover unmapped memory.
    const size_t take = std::min<size_t>(a.frame_bytes, at.mlength);
    const bool copied = take == 0 || copy_into(region_of(*at.e), at.offset, a.payload, take);
    deliver_put(ep, *at.pt, at.e, a.h, at.offset, at.mlength, copied ? PTL_NI_OK : PTL_NI_SEGV);
}

void Engine::answer_get(Endpoint &ep, transport::Link &link, const Arrival &a, const Landing &at) {
    // The reply carries the entry's bytes, or they go straight into the initiator's MD (through
    // our mapping of its shared segment when the MD lies in one).
    const wire::Header &h = a.h;
    iov_scratch_.clear();
    gather(region_of(*at.e), at.offset, at.mlength, iov_scratch_);
    ptl_ni_fail_t fail;
    if (h.flags & wire::kFlagRendezvous) {
        if (char *dst = segment_memory(a, at.mlength)) {
            fail = copy_from(region_of(*at.e), at.offset, reinterpret_cast<std::byte *>(dst), at.mlength) ? PTL_NI_OK
                                                                                                          : PTL_NI_SEGV;
        } else {
            fail = at.mlength && link.write_peer(iov_scratch_.data(), static_cast<int>(iov_scratch_.size()), h.rdv_addr,
                                                 at.mlength)
                       ? PTL_NI_SEGV
                       : PTL_NI_OK;
        }
        send_response(ep, h, wire::Kind::Reply, fail, fail == PTL_NI_OK ? at.mlength : 0, at.offset, at.e->list, {},
                      wire::kFlagDataPlaced);
    } else {
        fail = send_response(ep, h, wire::Kind::Reply, PTL_NI_OK, at.mlength, at.offset, at.e->list,
                             {iov_scratch_.data(), static_cast<int>(iov_scratch_.size()), at.mlength});
    }
    complete_target(*at.pt, at.e, h, at.offset, at.mlength, fail);
    if (at.spent) unlink_if_spent(at.e);
}

void Engine::complete_target(PT &pt, Entry *e, const wire::Header &h, ptl_size_t offset, ptl_size_t mlength,
                             ptl_ni_fail_t fail) {
    const bool unexpected = e->list == PTL_OVERFLOW_LIST && !(e->d.options & PTL_LE_UNEXPECTED_HDR_DISABLE);
    if (!unexpected && !entry_wants_event(*e, target_event_kind(h.kind), fail)) {
        // Counted only (a persistent landing entry without events, the usual target of small
        // puts): no event to build.
        const CompletionWindow window(*this);
        entry_count(e, false, fail, mlength);
        return;
    }
    const bool atomic = h.kind == wire::Kind::Atomic || h.kind == wire::Kind::FetchAtomic;
    ptl_event_t ev{};
    ev.start = address_at(region_of(*e), offset);
    ev.hdr_data = h.kind == wire::Kind::Get ? 0 : h.hdr_data; // a get carries no header data
    ev.match_bits = h.match_bits;
    ev.rlength = h.length;
    ev.mlength = mlength;
    ev.remote_offset = h.remote_offset;
    ev.uid = h.uid;
    ev.initiator = initiator_of(*e->ni, h);
    ev.ptl_list = e->list;
    ev.ni_fail_type = fail;
    if (atomic) {
        ev.atomic_operation = static_cast<ptl_op_t>(h.atomic_op);
        ev.atomic_type = static_cast<ptl_datatype_t>(h.atomic_type);
    }
    {
        const CompletionWindow window(*this);
        entry_event(e, target_event_kind(h.kind), ev);
        entry_count(e, false, fail, mlength);
    }
    if (unexpected) {
        // Its data stays in the overflow buffer for a later append or search to claim.
        pt.unexpected.push_back({h.kind, ev.atomic_operation, ev.atomic_type, ev.initiator, h.src_rank, h.uid,
                                 h.match_bits, h.match_bits_hi, ev.hdr_data, h.length, mlength, h.remote_offset,
                                 ev.start, e, fail});
        ++e->uh_refs;
    }
}

void Engine::target_data(Endpoint &ep, RxState &rx, const std::byte *payload, size_t n, bool fault) {
    if (rx.entry && n > 0 && rx.received < rx.mlength) {
        const size_t take = std::min<size_t>(n, rx.mlength - rx.received);
        if (!copy_into(region_of(*rx.entry), rx.offset + rx.received, payload, take)) rx.fail = PTL_NI_SEGV;
    }
    if (fault && rx.entry) rx.fail = PTL_NI_SEGV; // the initiator could not read its own buffer
    rx.received += n;
    if (rx.received >= rx.total) {
        rx.active = false;
        if (rx.entry) finish_put(ep, rx);
        rx = RxState{};
    }
}

void Engine::finish_put(Endpoint &ep, RxState &rx) {
    Entry *e = rx.entry;
    NI *ni = rx.ni;
    PT &pt = ni->pts[e->pt_index];
    --e->busy;
    deliver_put(ep, pt, e, rx.h, rx.offset, rx.mlength, rx.fail);
    stream_ended(pt);
}

void Engine::deliver_put(Endpoint &ep, PT &pt, Entry *e, const wire::Header &h, ptl_size_t offset, ptl_size_t mlength,
                         ptl_ni_fail_t fail) {
    complete_target(pt, e, h, offset, mlength, fail);
    answer_put(ep, h, true, fail, mlength, offset, e->list);
    // The entry was spent when this or another message matched it; AUTO_UNLINK comes after the
    // last of them has its event (§3.13.1).
    unlink_if_spent(e);
}

void Engine::unlink_if_spent(Entry *e) {
    if (!e->linked && !e->auto_unlinked && e->busy == 0) auto_unlink(e);
}

void Engine::stream_ended(PT &pt) {
    if (--pt.streams == 0 && pt_disable_waiters_.load(std::memory_order_relaxed) > 0) notify_waiters();
}

void Engine::handle_link_failed(Endpoint &ep, transport::Link &link, bool last) {
    std::lock_guard g(mutex_);
    if (link.rx_state) {
        RxState &rx = *static_cast<RxState *>(link.rx_state);
        if (rx.active && rx.entry) {
            --rx.entry->busy;
            unlink_if_spent(rx.entry);
            stream_ended(rx.ni->pts[rx.entry->pt_index]);
        }
        rx = RxState{};
    }
    // The peer may still answer on another link (it answers on the connection it opened itself,
    // not necessarily on the one our request took): its operations end when its last link does.
    // Those whose request was still queued on this link have already ended (on_send_complete).
    if (!last) {
        log_debug("a link to %08x/%u closed; another is still up", link.peer.nid, link.peer.pid);
        return;
    }
    // A member of the job whose last link closed without a goodbye has died, or ends without
    // leaving the job: the job service decides what that means for the job.
    if (!link.said_goodbye) report_lost_peer(link.peer);
    // Every operation still waiting on that peer ends now, with the failure reported.
    for (size_t i = 0; i < ops_.size(); ++i) {
        Op &op = ops_[i];
        if (!op.in_use || !(op.peer == link.peer) || op.ni->ep != &ep) continue;
        const uint64_t cookie = (uint64_t(op.gen) << 32) | i;
        if (op.await_ack) complete_ack(cookie, nullptr, PTL_NI_UNDELIVERABLE);
        if (op_of(cookie) && ops_[i].await_send) complete_send(cookie, PTL_NI_UNDELIVERABLE);
        if (op_of(cookie) && ops_[i].await_reply) complete_reply(cookie, nullptr, PTL_NI_UNDELIVERABLE);
    }
    log_debug("link to %08x/%u closed", link.peer.nid, link.peer.pid);
}

void Engine::handle_send_complete(uint64_t token, bool ok, bool source_fault) {
    if (token == 0) return;
    std::lock_guard g(mutex_);
    Op *op = op_of(token);
    if (!op) return;
    if (op->kind == wire::Kind::Get) {
        if (!ok) complete_reply(token, nullptr, PTL_NI_UNDELIVERABLE);
        return;
    }
    if (op->kind == wire::Kind::FetchAtomic && !ok) complete_reply(token, nullptr, PTL_NI_UNDELIVERABLE);
    // A rendezvous put's buffer is free only when the target says it has read it.
    if (ok && op->rendezvous) return;
    const ptl_ni_fail_t fail = !ok ? PTL_NI_UNDELIVERABLE : source_fault ? PTL_NI_SEGV : PTL_NI_OK;
    if (!ok) log_debug("queued message abandoned");
    if (!ok && op->await_ack) complete_ack(token, nullptr, fail);
    complete_send(token, fail);
}

} // namespace portico::engine
