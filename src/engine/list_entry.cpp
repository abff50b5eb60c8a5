// SPDX-License-Identifier: BSD-3-Clause
// List entries and match list entries: append, unlink, search, matching and the unexpected-header
// list (spec §2.5, §3.11, §3.12). An LE is kept as an ME that matches every message, so one path
// serves both kinds of NI.
#include <thread>

#include "engine/engine.hpp"
#include "engine/trace.hpp"

namespace portico::engine {

namespace {

constexpr unsigned kLeOptions = PTL_IOVEC | PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_USE_ONCE |
                                PTL_LE_EVENT_LINK_DISABLE | PTL_LE_EVENT_COMM_DISABLE | PTL_LE_EVENT_FLOWCTRL_DISABLE |
                                PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_OVER_DISABLE | PTL_LE_EVENT_UNLINK_DISABLE |
                                PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_CT_OVERFLOW | PTL_LE_EVENT_CT_BYTES |
                                PTL_LE_UNEXPECTED_HDR_DISABLE | PTL_LE_IS_ACCESSIBLE;
constexpr unsigned kMeOptions =
    kLeOptions | PTL_ME_MANAGE_LOCAL | PTL_ME_NO_TRUNCATE | PTL_ME_MAY_ALIGN | PTL_ME_LOCAL_INC_UH_RLENGTH;

bool is_comm(ptl_event_kind_t t) {
    return t == PTL_EVENT_GET || t == PTL_EVENT_PUT || t == PTL_EVENT_ATOMIC || t == PTL_EVENT_FETCH_ATOMIC ||
           t == PTL_EVENT_SEARCH;
}
bool is_overflow(ptl_event_kind_t t) {
    return t == PTL_EVENT_GET_OVERFLOW || t == PTL_EVENT_PUT_OVERFLOW || t == PTL_EVENT_ATOMIC_OVERFLOW ||
           t == PTL_EVENT_FETCH_ATOMIC_OVERFLOW;
}

ptl_event_kind_t overflow_kind(wire::Kind k) {
    switch (k) {
    case wire::Kind::Get: return PTL_EVENT_GET_OVERFLOW;
    case wire::Kind::Atomic: return PTL_EVENT_ATOMIC_OVERFLOW;
    case wire::Kind::FetchAtomic: return PTL_EVENT_FETCH_ATOMIC_OVERFLOW;
    default: return PTL_EVENT_PUT_OVERFLOW;
    }
}

ptl_event_t event_from_header(const Unexpected &u) {
    ptl_event_t ev{};
    ev.start = u.start;
    ev.hdr_data = u.kind == wire::Kind::Get ? 0 : u.hdr_data;
    ev.match_bits = u.match_bits;
    ev.rlength = u.rlength;
    ev.mlength = u.mlength;
    ev.remote_offset = u.remote_offset;
    ev.uid = u.uid;
    ev.initiator = u.initiator;
    ev.ptl_list = PTL_OVERFLOW_LIST;
    ev.ni_fail_type = u.fail;
    if (u.kind == wire::Kind::Atomic || u.kind == wire::Kind::FetchAtomic) {
        ev.atomic_operation = u.atomic_op;
        ev.atomic_type = u.atomic_type;
    }
    return ev;
}

} // namespace

bool Engine::entry_matches(const NI &ni, const Entry &e, ptl_match_bits_t bits, uint64_t bits_hi,
                           ptl_process_t initiator, uint32_t src_rank, ptl_size_t rlength,
                           ptl_size_t remote_offset) const {
    if (!ni.matching()) return true; // a non-matching NI delivers into the first LE
    if (((bits ^ e.d.match_bits) & ~e.d.ignore_bits) != 0) return false;
    if (((bits_hi ^ e.hi.match_bits_hi) & ~e.hi.ignore_bits_hi) != 0) return false;
    if (ni.logical()) {
        if (e.d.match_id.rank != PTL_RANK_ANY && e.d.match_id.rank != src_rank) return false;
    } else {
        if (e.d.match_id.phys.nid != PTL_NID_ANY && e.d.match_id.phys.nid != initiator.phys.nid) return false;
        if (e.d.match_id.phys.pid != PTL_PID_ANY && e.d.match_id.phys.pid != initiator.phys.pid) return false;
    }
    if ((e.d.options & PTL_ME_NO_TRUNCATE) && rlength > 0) { // zero-byte messages always fit
        const ptl_size_t off = (e.d.options & PTL_ME_MANAGE_LOCAL) ? e.local_offset : remote_offset;
        if (off > e.length || rlength > e.length - off) return false;
    }
    return true;
}

bool Engine::entry_wants_event(const Entry &e, ptl_event_kind_t type, ptl_ni_fail_t fail) {
    if (!e.ni->pts[e.pt_index].eq) return false;
    const unsigned o = e.d.options;
    if (is_comm(type) && (o & PTL_LE_EVENT_COMM_DISABLE)) return false;
    if (is_overflow(type) && (o & PTL_LE_EVENT_OVER_DISABLE)) return false;
    if ((is_comm(type) || is_overflow(type)) && fail == PTL_NI_OK && (o & PTL_LE_EVENT_SUCCESS_DISABLE)) return false;
    if (type == PTL_EVENT_LINK && (o & PTL_LE_EVENT_LINK_DISABLE)) return false;
    if ((type == PTL_EVENT_AUTO_UNLINK || type == PTL_EVENT_AUTO_FREE) && (o & PTL_LE_EVENT_UNLINK_DISABLE))
        return false;
    return true;
}

void Engine::entry_event(Entry *e, ptl_event_kind_t type, const ptl_event_t &base) {
    if (!entry_wants_event(*e, type, base.ni_fail_type)) return;
    EQ *eq = e->ni->pts[e->pt_index].eq;
    ptl_event_t ev = base;
    ev.type = type;
    ev.pt_index = e->pt_index;
    ev.user_ptr = e->user_ptr;
    if (!e->ni->matching()) ev.match_bits = 0;
    push_event(eq, ev);
}

void Engine::entry_count(Entry *e, bool overflow_kind, ptl_ni_fail_t fail, ptl_size_t mlength) {
    if (!e->ct) return;
    const unsigned o = e->d.options;
    if (!(o & (overflow_kind ? PTL_LE_EVENT_CT_OVERFLOW : PTL_LE_EVENT_CT_COMM))) return;
    if (fail != PTL_NI_OK)
        ct_add(e->ct, 0, 1); // failures always count one
    else
        ct_add(e->ct, (o & PTL_LE_EVENT_CT_BYTES) ? mlength : 1, 0);
}

void Engine::auto_unlink(Entry *e) {
    PT &pt = e->ni->pts[e->pt_index];
    if (e->linked) {
        pt.lists[e->list].erase(e);
        pt.lists_changed();
        e->linked = false;
    }
    e->auto_unlinked = true;
    e->ni->retired.push_back(e);
    entry_event(e, PTL_EVENT_AUTO_UNLINK, ptl_event_t{});
    if (e->list == PTL_OVERFLOW_LIST && !(e->d.options & PTL_LE_UNEXPECTED_HDR_DISABLE)) {
        // The buffer is free for reuse once no unexpected header points into it.
        if (e->uh_refs == 0)
            entry_event(e, PTL_EVENT_AUTO_FREE, ptl_event_t{});
        else
            e->free_pending = true;
    }
    if (e->uh_refs == 0) retire_handle(e);
}

void Engine::retire_handle(Entry *e) {
    // Nothing more will happen to the entry: its handle goes stale now (PtlMEUnlink answers
    // ARG_INVALID), not at the next append, so that a program retrying on IN_USE ends (README
    // decision 21). The object itself is freed at the next append: callers may still hold it.
    entries_.remove(e->handle);
    e->handle_live = false;
}

void Engine::release_header(Unexpected &u) {
    Entry *e = u.entry;
    if (--e->uh_refs == 0 && e->free_pending) {
        e->free_pending = false;
        entry_event(e, PTL_EVENT_AUTO_FREE, ptl_event_t{});
        retire_handle(e);
    }
}

void Engine::destroy_entry(Entry *e) {
    if (e->handle_live) entries_.remove(e->handle);
    --e->ni->n_entries;
    if (spare_entries_.size() < kSpareEntries)
        spare_entries_.emplace_back(e);
    else
        delete e;
}

void Engine::retire_entries(NI *ni) {
    // Auto-unlinked entries are freed at the next append once nothing points into them.
    auto &r = ni->retired;
    for (size_t i = 0; i < r.size();) {
        if (r[i]->uh_refs == 0 && r[i]->busy == 0) {
            destroy_entry(r[i]);
            r[i] = r.back();
            r.pop_back();
        } else {
            ++i;
        }
    }
}

int Engine::append(ptl_handle_ni_t h, ptl_pt_index_t pt_index, const ptl_me_t &me, bool is_me, ptl_list_t list,
                   void *user_ptr, ptl_handle_any_t *out, WideMatch hi) {
    std::unique_lock g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !out || is_me != ni->matching()) return PTL_ARG_INVALID;
    if (list == PTL_PRIORITY_LIST && pt_index < ni->pts.size() && ni->pts[pt_index].streams > 0) {
        // A message this entry matches may be streaming into the overflow list: it arrived before
        // the append, so the append must find it, but its header is only kept once it is whole.
        // Let it finish first (a transfer in progress, or a peer's failure, ends it).
        Entry probe;
        probe.ni = ni;
        probe.d = me;
        probe.hi = hi;
        probe.length = (me.options & PTL_IOVEC) ? ~ptl_size_t{0} : me.length;
        Endpoint *ep = ni->ep;
        while (overflow_stream_matches(*ni, pt_index, probe)) {
            g.unlock();
            poll_once(ep);
            std::this_thread::yield();
            g.lock();
            if (!(ni = ni_of(h))) return PTL_ARG_INVALID; // finalized meanwhile
        }
    }
    if (list != PTL_PRIORITY_LIST && list != PTL_OVERFLOW_LIST) return PTL_ARG_INVALID;
    if (me.options & ~(is_me ? kMeOptions : kLeOptions)) return PTL_ARG_INVALID;
    if (pt_index >= ni->pts.size() || !ni->pts[pt_index].allocated) return PTL_ARG_INVALID;
    CT *ct = nullptr;
    if (me.ct_handle != PTL_CT_NONE && (!(ct = ct_of(me.ct_handle)) || ct->ni != ni)) return PTL_ARG_INVALID;
    if ((me.options & PTL_IOVEC) &&
        (me.length > static_cast<ptl_size_t>(ni->limits.max_iovecs) || (me.length && !me.start)))
        return PTL_ARG_INVALID;
    retire_entries(ni);
    PT &pt = ni->pts[pt_index];
    pt.lists_changed(); // an entry joins a list (retire_entries frees only entries unlinked before)
    if (ni->n_entries >= ni->limits.max_entries) return PTL_NO_SPACE;
    if (pt.lists[list].size() >= static_cast<size_t>(ni->limits.max_list_size)) return PTL_LIST_TOO_LONG;

    Entry *e = reuse_or_new(spare_entries_);
    *e = Entry{};
    e->ni = ni;
    e->is_me = is_me;
    e->pt_index = pt_index;
    e->list = list;
    e->d = me;
    e->hi = hi;
    e->ct = ct;
    e->user_ptr = user_ptr;
    if (me.options & PTL_IOVEC) {
        const auto *v = static_cast<const ptl_iovec_t *>(me.start);
        e->iov.assign(v, v + me.length);
        for (const ptl_iovec_t &x : e->iov) e->length += x.iov_len;
    } else {
        e->length = me.length;
    }
    e->handle = entries_.insert(is_me ? ObjType::ME : ObjType::LE, e);
    ++ni->n_entries;
    *out = e->handle;
    if (trace::enabled())
        trace::line("append %#lx pt=%u %s bits=%#lx ignore=%#lx options=%#x length=%lu ct=%#lx",
                    static_cast<unsigned long>(e->handle), pt_index,
                    list == PTL_PRIORITY_LIST ? "priority" : "overflow", static_cast<unsigned long>(me.match_bits),
                    static_cast<unsigned long>(me.ignore_bits), me.options, static_cast<unsigned long>(e->length),
                    static_cast<unsigned long>(ct ? ct->handle : 0));

    bool link = true;
    if (list == PTL_PRIORITY_LIST) {
        // A priority append first takes the messages that arrived before it (in arrival order).
        const unsigned o = me.options;
        const bool inc_rlength =
            is_me && (o & PTL_ME_MANAGE_LOCAL) && (o & PTL_ME_LOCAL_INC_UH_RLENGTH) && !(o & PTL_ME_USE_ONCE);
        for (auto it = pt.unexpected.begin(); it != pt.unexpected.end();) {
            Unexpected &u = *it;
            if (!entry_matches(*ni, *e, u.match_bits, u.match_bits_hi, u.initiator, u.src_rank, u.rlength,
                               u.remote_offset)) {
                ++it;
                continue;
            }
            const ptl_event_t base = event_from_header(u);
            if (trace::enabled())
                trace::line("append %#lx takes unexpected bits=%#lx len=%lu from=%x/%u",
                            static_cast<unsigned long>(e->handle), static_cast<unsigned long>(u.match_bits),
                            static_cast<unsigned long>(u.rlength), u.initiator.phys.nid, u.initiator.phys.pid);
            {
                const CompletionWindow window(*this);
                entry_event(e, overflow_kind(u.kind), base);
                entry_count(e, true, u.fail, u.mlength);
            }
            const ptl_size_t rlength = u.rlength;
            release_header(u);
            it = pt.unexpected.erase(it);
            if (o & PTL_ME_USE_ONCE) {
                link = false;
                break;
            }
            if (inc_rlength) {
                e->local_offset += rlength;
                if (me.min_free && (e->local_offset > e->length || e->length - e->local_offset < me.min_free)) {
                    link = false;
                    break;
                }
            }
        }
    }
    if (link) {
        pt.lists[list].push_back(e);
        e->linked = true;
        entry_event(e, PTL_EVENT_LINK, ptl_event_t{});
    } else {
        // Satisfied from the unexpected list: never linked, so no LINK, but AUTO_UNLINK.
        auto_unlink(e);
    }
    return PTL_OK;
}

int Engine::unlink(ptl_handle_any_t h, bool is_me) {
    std::lock_guard g(mutex_);
    Entry *e = entries_.lookup(is_me ? ObjType::ME : ObjType::LE, h);
    if (!e) return PTL_ARG_INVALID;
    // In use: a message streams into it, unexpected headers point into it, or it unlinked itself
    // and still owes its AUTO_FREE (its handle goes stale with that event).
    if (e->auto_unlinked || e->busy > 0 || e->uh_refs > 0) return PTL_IN_USE;
    if (trace::enabled()) trace::line("unlink %#lx", static_cast<unsigned long>(h));
    PT &pt = e->ni->pts[e->pt_index];
    if (e->linked) pt.lists[e->list].erase(e);
    pt.lists_changed();
    destroy_entry(e); // an explicit unlink raises no event
    return PTL_OK;
}

int Engine::search(ptl_handle_ni_t h, ptl_pt_index_t pt_index, const ptl_me_t &me, bool is_me, ptl_search_op_t op,
                   void *user_ptr, WideMatch hi) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || is_me != ni->matching()) return PTL_ARG_INVALID;
    if (op != PTL_SEARCH_ONLY && op != PTL_SEARCH_DELETE) return PTL_ARG_INVALID;
    if (me.options & ~(is_me ? kMeOptions : kLeOptions)) return PTL_ARG_INVALID;
    if (pt_index >= ni->pts.size() || !ni->pts[pt_index].allocated) return PTL_ARG_INVALID;
    CT *ct = nullptr;
    if (me.ct_handle != PTL_CT_NONE && (!(ct = ct_of(me.ct_handle)) || ct->ni != ni)) return PTL_ARG_INVALID;
    PT &pt = ni->pts[pt_index];
    pt.lists_changed();

    Entry probe; // never linked; carries the search's options, user_ptr and CT
    probe.ni = ni;
    probe.pt_index = pt_index;
    probe.d = me;
    probe.hi = hi;
    probe.d.options &= ~PTL_ME_LOCAL_INC_UH_RLENGTH; // PtlMESearch ignores it
    probe.ct = ct;
    probe.user_ptr = user_ptr;
    if (me.options & PTL_IOVEC) {
        const auto *v = static_cast<const ptl_iovec_t *>(me.start);
        for (ptl_size_t i = 0; v && i < me.length; ++i) probe.length += v[i].iov_len;
    } else {
        probe.length = me.length;
    }
    const bool once = me.options & PTL_ME_USE_ONCE;
    int hits = 0;
    for (auto it = pt.unexpected.begin(); it != pt.unexpected.end();) {
        Unexpected &u = *it;
        if (!entry_matches(*ni, probe, u.match_bits, u.match_bits_hi, u.initiator, u.src_rank, u.rlength,
                           u.remote_offset)) {
            ++it;
            continue;
        }
        ++hits;
        ptl_event_t base = event_from_header(u);
        if (op == PTL_SEARCH_ONLY) {
            entry_event(&probe, PTL_EVENT_SEARCH, base); // the header stays (a probe)
            ++it;
        } else {
            entry_event(&probe, overflow_kind(u.kind), base);
            release_header(u);
            it = pt.unexpected.erase(it);
        }
        ct_add(ct, 1, 0);
        if (once) break;
    }
    // Use-once: NO_MATCH only when nothing matched. Persistent: NO_MATCH always closes the search.
    if (!once || hits == 0) {
        ptl_event_t done{};
        done.ni_fail_type = PTL_NI_NO_MATCH;
        entry_event(&probe, PTL_EVENT_SEARCH, done);
        ct_add(ct, 0, 1);
    }
    return PTL_OK;
}

} // namespace portico::engine
