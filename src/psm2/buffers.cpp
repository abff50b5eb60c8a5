// SPDX-License-Identifier: BSD-3-Clause
// The buffers behind "nothing is dropped for want of room" (docs/PSM2.md, Settled question 3),
// shared by the matched queue and active messages: a portal table entry's overflow slabs with
// the catch-all behind them, and the sender's retain ring.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>

#include "clientkit.hpp"
#include "internal.hpp"

namespace ck = portico::clientkit;

namespace portico::psm2 {
namespace {

// The retain ring: data kept until acknowledged (untouched pages cost nothing). Its slots are
// bounded too, so that their events (an ack, and a get when only the header landed) stay well
// inside the event queue.
constexpr size_t kRingBytes = size_t{16} << 20;
constexpr size_t kRingSlots = 8192;
constexpr size_t kRingAlign = 64;
// Allocation goes back to the start of the ring once this much before the oldest live slot is
// free, rather than on to the end: a busy endpoint then touches about this plus what is in flight,
// not all 16 MiB (a stream that never lets the ring empty walked through every page of it).
constexpr uint64_t kRingRewind = uint64_t{1} << 20;

ptl_me_t overflow_desc(const Overflow &o, void *start, ptl_size_t length, unsigned options) {
    ptl_me_t me = ck::me_desc(start, length,
                              options | PTL_ME_OP_PUT | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                                  PTL_ME_EVENT_CT_COMM,
                              o.match_bits, o.ignore_bits);
    me.match_id = ck::any_process();
    me.ct_handle = o.arrivals;
    return me;
}

// Appends a catch-all behind everything on the overflow list, then unlinks the older ones no
// header points into any more (overflow_trim_catch_alls).
bool link_catch_all(Overflow &o) {
    const ptl_me_t me = overflow_desc(o, nullptr, 0, PTL_ME_EVENT_UNLINK_DISABLE);
    const portico_match_hi_t hi{0, ~uint64_t{0}};
    ptl_handle_me_t h = PTL_INVALID_HANDLE;
    if (portico_me_append_wide(library().ni, o.pt, &me, &hi, PTL_OVERFLOW_LIST, nullptr, &h) != PTL_OK) return false;
    o.catch_alls.push_back(h);
    overflow_trim_catch_alls(o);
    return true;
}

bool link_slab(Overflow &o) {
    Slab *s = nullptr;
    for (Slab &x : o.slabs)
        if (!x.linked && x.freed && x.probed == 0) {
            s = &x;
            break;
        }
    if (!s) {
        o.slabs.emplace_back();
        s = &o.slabs.back();
        s->size = o.slab_bytes;
        s->mem = std::make_unique_for_overwrite<std::byte[]>(o.slab_bytes);
    }
    ptl_me_t me = overflow_desc(o, s->mem.get(), s->size, PTL_ME_MANAGE_LOCAL | PTL_ME_NO_TRUNCATE);
    me.min_free = o.min_free;
    if (portico_me_append_wide(library().ni, o.pt, &me, &o.slab_hi, PTL_OVERFLOW_LIST, s, &s->me) != PTL_OK)
        return false;
    s->linked = true;
    s->freed = false;
    return true;
}

} // namespace

void overflow_trim_catch_alls(Overflow &o) {
    // One that still holds headers keeps catching until it is empty (a message must not pass
    // headers that arrived before it); empty, it must go at once: it sits in front of the slabs
    // linked after it, and every message would leave only its header there.
    for (size_t i = 0; i + 1 < o.catch_alls.size();)
        if (PtlMEUnlink(o.catch_alls[i]) == PTL_OK)
            o.catch_alls.erase(o.catch_alls.begin() + static_cast<std::ptrdiff_t>(i));
        else
            ++i;
}

psm2_error_t overflow_start(Overflow &o) {
    if (PtlCTAlloc(library().ni, &o.arrivals) != PTL_OK) return PSM2_NO_MEMORY;
    for (int i = 0; i < o.slabs_linked; ++i)
        if (!link_slab(o)) return PSM2_NO_MEMORY;
    return link_catch_all(o) ? PSM2_OK : PSM2_NO_MEMORY;
}

void overflow_stop(Overflow &o) {
    for (Slab &s : o.slabs)
        if (s.linked) PtlMEUnlink(s.me);
    for (ptl_handle_me_t h : o.catch_alls) PtlMEUnlink(h);
    o.catch_alls.clear();
}

void overflow_free_ct(Overflow &o) {
    if (o.arrivals != PTL_INVALID_HANDLE) PtlCTFree(o.arrivals);
    o.arrivals = PTL_INVALID_HANDLE;
}

void overflow_slab_event(Overflow &o, const ptl_event_t &ev, bool closing) {
    auto *s = static_cast<Slab *>(ev.user_ptr);
    if (ev.type == PTL_EVENT_AUTO_FREE) { // every message in it has been taken
        s->freed = true;
    } else if (ev.type == PTL_EVENT_AUTO_UNLINK) { // full: the replacement goes behind the catch-all
        s->linked = false;
        s->me = PTL_INVALID_HANDLE;
        if (!closing && link_slab(o)) link_catch_all(o);
    }
}

Slab *overflow_slab_holding(Overflow &o, const void *p) {
    for (Slab &s : o.slabs)
        if (p >= s.mem.get() && p < s.mem.get() + s.size) return &s;
    return nullptr;
}

bool overflow_new_arrivals(Overflow &o) {
    ptl_ct_event_t c{};
    if (o.arrivals == PTL_INVALID_HANDLE || PtlCTGet(o.arrivals, &c) != PTL_OK || c.success == o.arrivals_seen)
        return false;
    o.arrivals_seen = c.success;
    return true;
}

// ---- the retain ring ----------------------------------------------------------------------------

psm2_error_t ring_start(Ep &ep) {
    RetainRing &g = ep.ring;
    g.size = kRingBytes;
    g.mem = std::make_unique_for_overwrite<std::byte[]>(kRingBytes);
    ptl_md_t md{};
    md.start = g.mem.get();
    md.length = g.size;
    md.options = PTL_MD_EVENT_SEND_DISABLE; // its puts complete on the ack alone
    md.eq_handle = ep.eq;
    md.ct_handle = PTL_CT_NONE;
    if (PtlMDBind(library().ni, &md, &g.md) != PTL_OK) return PSM2_NO_MEMORY;
    // Gets from any peer at the offset a message named; the event frees that slot.
    ptl_me_t me =
        ck::me_desc(g.mem.get(), g.size, PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE,
                    kRingMatchBits, 0);
    me.match_id = ck::any_process();
    if (PtlMEAppend(library().ni, rndv_pt(ep.ctx), &me, PTL_PRIORITY_LIST, &g, &g.me) != PTL_OK) return PSM2_NO_MEMORY;
    return PSM2_OK;
}

void ring_stop(Ep &ep) {
    if (ep.ring.me != PTL_INVALID_HANDLE) PtlMEUnlink(ep.ring.me);
    ep.ring.me = PTL_INVALID_HANDLE;
}

void *slot_cookie(Retained *s) { return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(s) | 1); }
Retained *slot_of(void *cookie) {
    const auto v = reinterpret_cast<uintptr_t>(cookie);
    return v & 1 ? reinterpret_cast<Retained *>(v & ~uintptr_t{1}) : nullptr;
}

// Slots are freed out of order (a slot whose receiver has yet to fetch it may stay for long while
// later ones are acked), so the ring is an allocator over RetainRing::live: a slot goes after the
// previous one when it fits, else into the first gap large enough. The start is preferred once
// nothing lives in its first kRingRewind bytes (pages already touched), so that a busy endpoint
// keeps to about that much plus what is in flight rather than walking all 16 MiB.
Retained *ring_take(RetainRing &g, uint32_t len) {
    if (g.slots.size() >= kRingSlots) return nullptr;
    const uint64_t need = std::max<uint64_t>((uint64_t{len} + kRingAlign - 1) / kRingAlign * kRingAlign, kRingAlign);
    if (need >= g.size) return nullptr;
    // Does [at, at + need) hold no live slot?
    auto fits = [&](uint64_t at) {
        if (at + need > g.size) return false;
        auto next = g.live.lower_bound(at);
        if (next != g.live.end() && next->first < at + need) return false;
        if (next == g.live.begin()) return true;
        const auto before = std::prev(next);
        return before->first + before->second <= at;
    };
    const bool start_free = g.live.empty() || g.live.begin()->first >= std::max<uint64_t>(kRingRewind, need);
    const bool prefer_start = start_free && (g.head >= kRingRewind || g.live.empty());
    std::optional<uint64_t> at;
    if (!prefer_start && fits(g.head))
        at = g.head;
    else if (fits(0))
        at = 0;
    else
        for (const auto &[offset, bytes] : g.live)
            if (fits(offset + bytes)) {
                at = offset + bytes;
                break;
            }
    if (!at) return nullptr;
    g.head = *at + need;
    ++g.unacked;
    Retained &s = g.slots.emplace_back();
    s.offset = *at;
    s.reserved = static_cast<uint32_t>(need);
    s.length = len;
    g.live.emplace(*at, s.reserved);
    return &s;
}

void ring_release(RetainRing &g, Retained *s) {
    if (s->released || !s->done()) return;
    s->released = true;
    g.live.erase(s->offset);
}

Retained *ring_take_waiting(Ep &ep, uint32_t len) {
    Retained *s = nullptr;
    while (!(s = ring_take(ep.ring, len)) && ep.ring.unacked > 0) wait_event(ep, 1);
    return s;
}

void ring_put_failed(RetainRing &g, Retained *s) {
    s->acked = true;
    --g.unacked;
    ring_release(g, s);
    ring_trim(g);
}

void ring_trim(RetainRing &g) {
    while (!g.slots.empty() && g.slots.front().done()) g.slots.pop_front();
}

bool ring_ack(RetainRing &g, Retained *s, const ptl_event_t &ev) {
    s->acked = true;
    --g.unacked;
    if (ev.ni_fail_type == PTL_NI_OK && ev.ptl_list == PTL_OVERFLOW_LIST && ev.mlength < s->length && !s->fetched) {
        s->awaited = true;
        g.awaited.emplace(s->offset, s);
    }
    ring_release(g, s);
    ring_trim(g);
    return ev.ni_fail_type == PTL_NI_OK;
}

void ring_fetched(RetainRing &g, const ptl_event_t &ev) {
    const auto it = g.awaited.find(ev.remote_offset);
    if (it != g.awaited.end()) {
        it->second->fetched = true;
        ring_release(g, it->second);
        g.awaited.erase(it);
        ring_trim(g);
        return;
    }
    // The receiver's engine acks before the header can be matched and the get comes on the same
    // ordered link, so the ack is always seen first; should a get ever overtake it, the ack must
    // not leave the slot waiting for a get that came.
    for (Retained &s : g.slots)
        if (s.offset == ev.remote_offset && !s.acked) s.fetched = true;
}

} // namespace portico::psm2
