// SPDX-License-Identifier: BSD-3-Clause
// Triggered operations (spec §3.16) and bundles (§3.17).
//
// Each counter keeps its pending operations in a multimap ordered by threshold (equal thresholds
// in posting order), so raising a counter looks only at the front: no walk over every pending
// operation. They fire from whatever raises the counter — an API call or the engine handling an
// incoming message — with the engine lock held, and read their buffers when they fire.
#include <cstring>

#include "common/log.hpp"
#include "engine/atomics.hpp"
#include "engine/engine.hpp"
#include "engine/trace.hpp"

namespace portico::engine {

namespace {
// Holds the MDs a trigger will use, so that PtlMDRelease answers PTL_IN_USE until it fires.
void hold(const Trigger &t) {
    if (t.md) ++t.md->pending;
    if (t.get_md) ++t.get_md->pending;
}
void unhold(const Trigger &t) {
    if (t.md) --t.md->pending;
    if (t.get_md) --t.get_md->pending;
}
// The immediate calls' checks of the range and size (PtlPut/PtlGet answer PTL_ARG_INVALID).
bool offsets_ok(const MD *md, ptl_size_t off, ptl_size_t len) {
    return off <= md->length && len <= md->length - off && len <= md->ni->limits.max_msg_size;
}
bool valid_ack(ptl_ack_req_t ack) { return ack >= PTL_ACK_REQ && ack <= PTL_OC_ACK_REQ; }

// One trace line about a trigger on counter ct: "post" or "fire".
void trace_trigger(const char *step, const CT *ct, uint64_t threshold, const Trigger &t) {
    static constexpr const char *kKinds[] = {"put", "get", "atomic", "fetch-atomic", "ct-inc", "ct-set"};
    const char *kind = kKinds[static_cast<int>(t.kind)];
    const auto count = [](const CT *c) {
        return std::pair{static_cast<unsigned long>(c->success.load()), static_cast<unsigned long>(c->failure.load())};
    };
    const auto [s, f] = count(ct);
    if (t.kind == Trigger::Kind::CTInc || t.kind == Trigger::Kind::CTSet)
        trace::line("%s ct=%#lx thr=%lu at (%lu,%lu) %s ct=%#lx (%lu,%lu)", step,
                    static_cast<unsigned long>(ct->handle), static_cast<unsigned long>(threshold), s, f, kind,
                    static_cast<unsigned long>(t.ct->handle), static_cast<unsigned long>(t.value.success),
                    static_cast<unsigned long>(t.value.failure));
    else
        trace::line("%s ct=%#lx thr=%lu at (%lu,%lu) %s to=%x/%u pt=%u bits=%#lx len=%lu off=%lu", step,
                    static_cast<unsigned long>(ct->handle), static_cast<unsigned long>(threshold), s, f, kind,
                    t.target.phys.nid, t.target.phys.pid, t.pt_index, static_cast<unsigned long>(t.match_bits),
                    static_cast<unsigned long>(t.length), static_cast<unsigned long>(t.remote_offset));
}

// The fields every data-movement trigger has: where from, where to, and what the events carry.
Trigger data_trigger(Trigger::Kind kind, MD *md, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target,
                     ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                     ptl_hdr_data_t hdr_data) {
    Trigger t{kind};
    t.md = md;
    t.local_offset = local_offset;
    t.length = length;
    t.target = target;
    t.pt_index = pt;
    t.match_bits = bits;
    t.remote_offset = remote_offset;
    t.user_ptr = user_ptr;
    t.hdr_data = hdr_data;
    return t;
}
} // namespace

CT *Engine::trigger_counter(ptl_handle_ct_t trig_ct, MD *md, ptl_process_t target) {
    // The counter, the MD and the target must all belong to the MD's NI.
    CT *ct = ct_of(trig_ct);
    transport::PeerId peer;
    return md && ct && ct->ni == md->ni && resolve_target(md->ni, target, &peer) ? ct : nullptr;
}

int Engine::trigger_put(ptl_handle_md_t mdh, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                        ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                        void *user_ptr, ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    std::lock_guard g(mutex_);
    MD *md = mds_.lookup(ObjType::MD, mdh);
    CT *ct = trigger_counter(trig_ct, md, target);
    if (!ct || !offsets_ok(md, local_offset, length) || !valid_ack(ack) ||
        ((md->desc.options & PTL_MD_UNRELIABLE) && ack != PTL_NO_ACK_REQ))
        return PTL_ARG_INVALID;
    Trigger t =
        data_trigger(Trigger::Kind::Put, md, local_offset, length, target, pt, bits, remote_offset, user_ptr, hdr_data);
    t.ack_req = ack;
    return post_trigger(ct, t, threshold);
}

int Engine::trigger_get(ptl_handle_md_t mdh, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target,
                        ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                        ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    std::lock_guard g(mutex_);
    MD *md = mds_.lookup(ObjType::MD, mdh);
    CT *ct = trigger_counter(trig_ct, md, target);
    if (!ct || !offsets_ok(md, local_offset, length) || (md->desc.options & PTL_MD_UNRELIABLE)) return PTL_ARG_INVALID;
    return post_trigger(
        ct, data_trigger(Trigger::Kind::Get, md, local_offset, length, target, pt, bits, remote_offset, user_ptr, 0),
        threshold);
}

int Engine::trigger_atomic(ptl_handle_md_t mdh, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                           ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                           void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t op, ptl_datatype_t type,
                           ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    std::lock_guard g(mutex_);
    MD *md = mds_.lookup(ObjType::MD, mdh);
    CT *ct = trigger_counter(trig_ct, md, target);
    if (!ct || !valid_ack(ack)) return PTL_ARG_INVALID;
    int rc = check_atomic(nullptr, 0, md, local_offset, length, op, type, static_cast<int>(atomics::Call::Atomic));
    if (rc != PTL_OK) return rc;
    Trigger t = data_trigger(Trigger::Kind::Atomic, md, local_offset, length, target, pt, bits, remote_offset, user_ptr,
                             hdr_data);
    t.ack_req = ack;
    t.op = op;
    t.type = type;
    return post_trigger(ct, t, threshold);
}

int Engine::trigger_fetch_atomic(ptl_handle_md_t get_mdh, ptl_size_t local_get_offset, ptl_handle_md_t put_mdh,
                                 ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target,
                                 ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                                 ptl_hdr_data_t hdr_data, const void *operand, ptl_op_t op, ptl_datatype_t type,
                                 bool is_swap, ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    std::lock_guard g(mutex_);
    MD *get_md = mds_.lookup(ObjType::MD, get_mdh);
    MD *put_md = mds_.lookup(ObjType::MD, put_mdh);
    CT *ct = trigger_counter(trig_ct, put_md, target);
    if (!get_md || !ct) return PTL_ARG_INVALID;
    const auto call = is_swap ? atomics::Call::Swap : atomics::Call::FetchAtomic;
    int rc = check_atomic(get_md, local_get_offset, put_md, local_put_offset, length, op, type, static_cast<int>(call));
    if (rc != PTL_OK) return rc;
    const bool needs_operand = atomics::takes_operand(op);
    if (needs_operand && !operand) return PTL_ARG_INVALID;
    Trigger t = data_trigger(Trigger::Kind::FetchAtomic, put_md, local_put_offset, length, target, pt, bits,
                             remote_offset, user_ptr, hdr_data);
    t.get_md = get_md;
    t.local_get_offset = local_get_offset;
    t.op = op;
    t.type = type;
    if (needs_operand) {
        t.has_operand = true;
        std::memcpy(t.operand.data(), operand, atomics::item_size(type));
    }
    return post_trigger(ct, t, threshold);
}

int Engine::trigger_ct(ptl_handle_ct_t cth, ptl_ct_event_t value, bool set, ptl_handle_ct_t trig_ct,
                       ptl_size_t threshold) {
    std::lock_guard g(mutex_);
    CT *target = ct_of(cth);
    CT *ct = ct_of(trig_ct);
    if (!target || !ct || ct->ni != target->ni) return PTL_ARG_INVALID;
    if (!set && value.success != 0 && value.failure != 0) return PTL_ARG_INVALID; // one field, as PtlCTInc
    Trigger t{set ? Trigger::Kind::CTSet : Trigger::Kind::CTInc};
    t.ct = target;
    t.value = value;
    return post_trigger(ct, t, threshold);
}

int Engine::post_trigger(CT *ct, const Trigger &t, ptl_size_t threshold) {
    NI *ni = ct->ni;
    if (ni->n_triggered >= ni->limits.max_triggered_ops) return PTL_NO_SPACE;
    hold(t);
    ++ni->n_triggered;
    ct->triggers.emplace(threshold, t); // after any equal thresholds: posting order
    if (trace::enabled()) trace_trigger("post", ct, threshold, t);
    fire_triggers(ct); // at once if the count is already there
    return PTL_OK;
}

// Recursive by design (NOLINT below): a fired operation may raise a counter whose triggers fire
// in turn (chains of TriggeredCTInc, §3.16.6); the depth is bounded by the triggers posted.
void Engine::fire_triggers(CT *ct) { // NOLINT(misc-no-recursion)
    // Re-entrant calls (a fired operation raising this same counter) leave the work to the loop
    // below, which looks at the count again after every operation: strict threshold order.
    if (ct->firing) return;
    ct->firing = true;
    while (!ct->triggers.empty()) {
        auto it = ct->triggers.begin();
        if (it->first > ct->success.load(std::memory_order_acquire)) break;
        Trigger t = it->second;
        if (trace::enabled()) trace_trigger("fire", ct, it->first, t);
        ct->triggers.erase(it);
        --ct->ni->n_triggered;
        unhold(t);
        execute(t);
    }
    ct->firing = false;
}

void Engine::execute(Trigger &t) { // NOLINT(misc-no-recursion): see fire_triggers
    int rc = PTL_OK;
    switch (t.kind) {
    case Trigger::Kind::Put:
        rc = put_locked(t.md, t.local_offset, t.length, t.ack_req, t.target, t.pt_index, t.match_bits, t.remote_offset,
                        t.user_ptr, t.hdr_data);
        break;
    case Trigger::Kind::Get:
        rc =
            get_locked(t.md, t.local_offset, t.length, t.target, t.pt_index, t.match_bits, t.remote_offset, t.user_ptr);
        break;
    case Trigger::Kind::Atomic:
        rc = atomic_locked(nullptr, 0, t.md, t.local_offset, t.length, t.ack_req, t.target, t.pt_index, t.match_bits,
                           t.remote_offset, t.user_ptr, t.hdr_data, nullptr, t.op, t.type);
        break;
    case Trigger::Kind::FetchAtomic:
        rc = atomic_locked(t.get_md, t.local_get_offset, t.md, t.local_offset, t.length, PTL_NO_ACK_REQ, t.target,
                           t.pt_index, t.match_bits, t.remote_offset, t.user_ptr, t.hdr_data,
                           t.has_operand ? t.operand.data() : nullptr, t.op, t.type);
        break;
    case Trigger::Kind::CTInc: ct_add(t.ct, t.value.success, t.value.failure); break;
    case Trigger::Kind::CTSet:
        t.ct->success.store(t.value.success, std::memory_order_release);
        t.ct->failure.store(t.value.failure, std::memory_order_release);
        notify_waiters(t.ct);
        fire_triggers(t.ct);
        break;
    }
    // Arguments were checked when the operation was posted, but a logical target may have left
    // the map since (PtlSetMap): nobody sees a return code now, so the operation ends with the
    // events it would have ended with had its target been unreachable, instead of vanishing.
    if (rc != PTL_OK) {
        log_debug("a triggered operation could not start (error %d); reported as undeliverable", rc);
        fail_fired(t);
    }
}

void Engine::fail_fired(const Trigger &t) {
    wire::Kind kind = wire::Kind::Put;
    switch (t.kind) {
    case Trigger::Kind::Put: kind = wire::Kind::Put; break;
    case Trigger::Kind::Get: kind = wire::Kind::Get; break;
    case Trigger::Kind::Atomic: kind = wire::Kind::Atomic; break;
    case Trigger::Kind::FetchAtomic: kind = wire::Kind::FetchAtomic; break;
    case Trigger::Kind::CTInc:
    case Trigger::Kind::CTSet: return; // these cannot fail
    }
    // An operation that ends at once, through the same completions as one whose peer is gone.
    const uint64_t cookie = start_op(kind, t.md, t.user_ptr, t.local_offset, t.length, transport::PeerId{});
    Op &op = ops_[static_cast<uint32_t>(cookie)];
    op.ack_req = t.ack_req;
    op.get_md = t.get_md;
    op.local_get_offset = t.local_get_offset;
    op.await_send = kind != wire::Kind::Get;
    op.await_ack = (kind == wire::Kind::Put || kind == wire::Kind::Atomic) && t.ack_req != PTL_NO_ACK_REQ &&
                   (t.md->eq || t.md->ct);
    op.await_reply = kind == wire::Kind::Get || kind == wire::Kind::FetchAtomic;
    if (t.get_md) {
        ++t.get_md->pending;
        ++t.get_md->refs;
    }
    // op is not used below: a completion may fire triggers, which may grow ops_.
    const bool ack = op.await_ack, reply = op.await_reply, send = op.await_send;
    if (ack) complete_ack(cookie, nullptr, PTL_NI_UNDELIVERABLE);
    if (reply) complete_reply(cookie, nullptr, PTL_NI_UNDELIVERABLE);
    if (send) complete_send(cookie, PTL_NI_UNDELIVERABLE);
}

void Engine::drop_triggers(CT *ct) {
    for (auto &[threshold, t] : ct->triggers) {
        (void)threshold;
        unhold(t);
        --ct->ni->n_triggered;
    }
    ct->triggers.clear();
}

int Engine::ct_cancel_triggered(ptl_handle_ct_t h) {
    std::lock_guard g(mutex_);
    CT *ct = ct_of(h);
    if (!ct) return PTL_ARG_INVALID;
    drop_triggers(ct); // the counts themselves stay as they are
    return PTL_OK;
}

int Engine::start_bundle(ptl_handle_ni_t h) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni) return PTL_ARG_INVALID;
    ++ni->bundle_depth; // requests this NI's application starts from now on may defer wakeups
    return PTL_OK;
}

int Engine::end_bundle(ptl_handle_ni_t h) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || ni->bundle_depth == 0) return PTL_ARG_INVALID;
    --ni->bundle_depth;
    ni->ep->transport->flush_wakeups(); // every PtlEndBundle starts what was deferred (§3.17.2)
    return PTL_OK;
}

} // namespace portico::engine
