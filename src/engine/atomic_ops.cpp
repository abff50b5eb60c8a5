// SPDX-License-Identifier: BSD-3-Clause
// Atomic operations (spec §3.15.4–3.15.8): the initiator side and the target side.
//
// Atomics are applied by the target's engine while it holds the engine lock, the same lock under
// which every incoming message is handled, so atomics from any number of initiators are atomic
// with respect to each other and to every other Portals operation on the process, per item and
// per operation. Host code that touches the same data must call PtlAtomicSync() first (Portico does
// not claim PTL_COHERENT_ATOMICS: the updates are plain loads and stores by another thread).
#include <atomic>
#include <cstring>

#include "common/fence.hpp"
#include "engine/atomics.hpp"
#include "engine/region.hpp"

namespace portico::engine {

int Engine::check_atomic(MD *get_md, ptl_size_t local_get_offset, MD *put_md, ptl_size_t local_put_offset,
                         ptl_size_t length, ptl_op_t op, ptl_datatype_t type, int call_i) {
    const auto call = static_cast<atomics::Call>(call_i);
    if (!put_md || !atomics::legal(op, type, call)) return PTL_ARG_INVALID;
    const size_t item = atomics::item_size(type);
    if (length % item != 0) return PTL_ARG_INVALID; // Portico's choice among the spec's three (§3.15.4)
    if (atomics::takes_operand(op) && length != item) return PTL_ARG_INVALID; // CSWAP*, MSWAP: one item
    NI *ni = put_md->ni;
    const ptl_size_t limit =
        call == atomics::Call::Atomic ? ni->limits.max_atomic_size : ni->limits.max_fetch_atomic_size;
    if (length > limit) return PTL_ARG_INVALID;
    if (local_put_offset > put_md->length || length > put_md->length - local_put_offset) return PTL_ARG_INVALID;
    if (get_md) {
        if (get_md->ni != ni) return PTL_ARG_INVALID; // both MDs on one NI (§3.15.6)
        if (local_get_offset > get_md->length || length > get_md->length - local_get_offset) return PTL_ARG_INVALID;
    }
    return PTL_OK;
}

int Engine::atomic(ptl_handle_md_t mdh, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                   ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                   void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t op, ptl_datatype_t type) {
    // As put: an atomic that nothing at this end observes takes no engine lock.
    if (const int rc = unlocked_if_untracked(mdh, length,
                                             [&](MD *md) {
                                                 return atomic_unlocked(md, local_offset, length, ack, target, pt, bits,
                                                                        remote_offset, hdr_data, op, type);
                                             });
        rc >= 0)
        return rc;
    std::lock_guard g(mutex_);
    MD *md = mds_.lookup(ObjType::MD, mdh);
    int rc = check_atomic(nullptr, 0, md, local_offset, length, op, type, static_cast<int>(atomics::Call::Atomic));
    if (rc != PTL_OK) return rc;
    return atomic_locked(nullptr, 0, md, local_offset, length, ack, target, pt, bits, remote_offset, user_ptr, hdr_data,
                         nullptr, op, type, md->ni->bundle_depth > 0);
}

int Engine::fetch_atomic(ptl_handle_md_t get_mdh, ptl_size_t local_get_offset, ptl_handle_md_t put_mdh,
                         ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
                         ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                         const void *operand, ptl_op_t op, ptl_datatype_t type, bool is_swap) {
    std::lock_guard g(mutex_);
    MD *get_md = mds_.lookup(ObjType::MD, get_mdh);
    MD *put_md = mds_.lookup(ObjType::MD, put_mdh);
    if (!get_md) return PTL_ARG_INVALID;
    const auto call = is_swap ? atomics::Call::Swap : atomics::Call::FetchAtomic;
    int rc = check_atomic(get_md, local_get_offset, put_md, local_put_offset, length, op, type, static_cast<int>(call));
    if (rc != PTL_OK) return rc;
    if (is_swap && atomics::takes_operand(op) && !operand) return PTL_ARG_INVALID;
    return atomic_locked(get_md, local_get_offset, put_md, local_put_offset, length, PTL_NO_ACK_REQ, target, pt, bits,
                         remote_offset, user_ptr, hdr_data, atomics::takes_operand(op) ? operand : nullptr, op, type,
                         put_md->ni->bundle_depth > 0);
}

int Engine::atomic_unlocked(MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack, ptl_process_t target,
                            ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
                            ptl_op_t op, ptl_datatype_t type) {
    int rc = check_atomic(nullptr, 0, md, local_offset, length, op, type, static_cast<int>(atomics::Call::Atomic));
    transport::PeerId peer;
    if (rc == PTL_OK) rc = check_put(md, local_offset, length, ack, target, &peer);
    if (rc != PTL_OK) return rc;
    wire::Header h = request_header(md->ni, wire::Kind::Atomic, pt, bits, remote_offset, length, 0);
    h.ack_req = static_cast<uint8_t>(ack); // no kFlagWantAck: nothing here could observe an ack
    h.atomic_op = static_cast<uint8_t>(op);
    h.atomic_type = static_cast<uint8_t>(type);
    h.hdr_data = hdr_data;
    iovec piece{static_cast<char *>(md->desc.start) + local_offset, length};
    send_untracked(md->ni, peer, h, {&piece, length ? 1 : 0, length}, false);
    return PTL_OK;
}

int Engine::atomic_locked(MD *get_md, ptl_size_t local_get_offset, MD *md, ptl_size_t local_offset, ptl_size_t length,
                          ptl_ack_req_t ack, ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
                          ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, const void *operand,
                          ptl_op_t op, ptl_datatype_t type, bool bundled) {
    transport::PeerId peer;
    if (const int rc = check_put(md, local_offset, length, ack, target, &peer); rc != PTL_OK) return rc;
    if ((md->desc.options & PTL_MD_UNRELIABLE) && get_md) return PTL_ARG_INVALID; // no reply could come
    NI *ni = md->ni;
    const bool fetch = get_md != nullptr;
    const bool want_ack = !fetch && ack != PTL_NO_ACK_REQ && (md->eq || md->ct);

    const transport::Hold hold = ni->ep->request_hold(); // before this operation counts
    const uint64_t cookie =
        start_op(fetch ? wire::Kind::FetchAtomic : wire::Kind::Atomic, md, user_ptr, local_offset, length, peer);
    Op &o = ops_[static_cast<uint32_t>(cookie)];
    o.get_md = get_md;
    o.local_get_offset = local_get_offset;
    o.ack_req = ack;
    o.await_send = true;
    o.await_ack = want_ack;
    o.await_reply = fetch;
    if (fetch) {
        ++get_md->pending;
        ++get_md->refs;
    }

    wire::Header h = request_header(ni, o.kind, pt, bits, remote_offset, length, cookie);
    h.flags = (want_ack ? wire::kFlagWantAck : 0) | (operand ? wire::kFlagOperand : 0);
    h.ack_req = static_cast<uint8_t>(ack);
    h.atomic_op = static_cast<uint8_t>(op);
    h.atomic_type = static_cast<uint8_t>(type);
    h.hdr_data = hdr_data;
    const size_t item = atomics::item_size(type);
    iov_scratch_.clear();
    if (operand) iov_scratch_.push_back({const_cast<void *>(operand), item});
    gather(region_of(*md), local_offset, length, iov_scratch_);
    const size_t total = length + (operand ? item : 0);
    // Always copied if it has to wait: the operand is the caller's and atomics are small.
    const auto st =
        send_message(*ni->ep->transport, peer, h, {iov_scratch_.data(), static_cast<int>(iov_scratch_.size()), total},
                     {.token = cookie, .copy_payload = true, .defer_wakeup = bundled, .hold = hold});
    switch (st) {
    case transport::SendStatus::Held: ni->ep->poll_soon(); [[fallthrough]];
    case transport::SendStatus::Sent: complete_send(cookie, PTL_NI_OK); break;
    case transport::SendStatus::Queued: break;
    case transport::SendStatus::SourceFault:
    case transport::SendStatus::Unreachable: {
        const ptl_ni_fail_t fail = st == transport::SendStatus::SourceFault ? PTL_NI_SEGV : PTL_NI_UNDELIVERABLE;
        if (want_ack) complete_ack(cookie, nullptr, fail);
        if (fetch) complete_reply(cookie, nullptr, fail);
        complete_send(cookie, fail);
        break;
    }
    }
    return PTL_OK;
}

int Engine::atomic_sync() {
    // Atomics are applied under the engine lock: taking it orders every atomic applied so far
    // before whatever the caller does next.
    std::lock_guard g(mutex_);
    full_fence();
    return PTL_OK;
}

void Engine::target_atomic(Endpoint &ep, const Arrival &a, NI *ni, PT &pt, Entry *e, ptl_size_t offset,
                           ptl_size_t mlength, bool spent) {
    const wire::Header &h = a.h;
    const std::byte *payload = a.payload;
    const auto op = static_cast<ptl_op_t>(h.atomic_op);
    const auto type = static_cast<ptl_datatype_t>(h.atomic_type);
    const bool fetch = h.kind == wire::Kind::FetchAtomic;
    const size_t item = atomics::item_size(type);
    const size_t operand_bytes = (h.flags & wire::kFlagOperand) ? item : 0;
    // A (fetch) atomic is one frame; anything else is a broken or hostile peer.
    if (item == 0 || a.total != a.frame_bytes || a.frame_bytes != operand_bytes + h.length) {
        ni->sr[PTL_SR_MALFORMED_MESSAGES].fetch_add(1);
        if (fetch)
            send_response(ep, h, wire::Kind::Reply, PTL_NI_DROPPED, 0, h.remote_offset, PTL_PRIORITY_LIST, {});
        else
            answer_put(ep, h, true, PTL_NI_DROPPED, 0, h.remote_offset, PTL_PRIORITY_LIST);
        if (spent) unlink_if_spent(e);
        return;
    }
    const std::byte *operand = operand_bytes ? payload : nullptr;
    const std::byte *data = payload + operand_bytes;
    mlength -= mlength % item; // whole items only
    const Region r = region_of(*e);
    ptl_ni_fail_t fail = PTL_NI_OK;
    atomic_old_.resize(mlength);
    if (!copy_from(r, offset, atomic_old_.data(), mlength)) fail = PTL_NI_SEGV;
    const bool overflow = e->list == PTL_OVERFLOW_LIST;
    if (fail == PTL_NI_OK) {
        if (overflow) {
            // Not applied in an overflow entry (§3.15.4): an atomic leaves its data there for the
            // host, which applies it from the event's op and type; a fetching atomic acts like a get.
            if (!fetch && !copy_into(r, offset, data, mlength)) fail = PTL_NI_SEGV;
        } else {
            atomic_new_.assign(atomic_old_.begin(), atomic_old_.end());
            atomics::apply(op, type, atomic_new_.data(), data, operand, mlength);
            // Every byte is written once, after the whole result is known.
            if (!copy_into(r, offset, atomic_new_.data(), mlength)) fail = PTL_NI_SEGV;
        }
    }
    if (fetch) {
        // The reply carries the target's data as it was before the operation.
        iovec old{atomic_old_.data(), mlength};
        const bool ok = fail == PTL_NI_OK;
        send_response(ep, h, wire::Kind::Reply, fail, ok ? mlength : 0, offset, e->list,
                      ok ? transport::Gather{&old, 1, mlength} : transport::Gather{});
    }
    complete_target(pt, e, h, offset, mlength, fail);
    if (!fetch) answer_put(ep, h, true, fail, mlength, offset, e->list);
    if (spent) unlink_if_spent(e);
}

} // namespace portico::engine
