// SPDX-License-Identifier: BSD-3-Clause
// Memory descriptors (spec §3.10).
#include "engine/engine.hpp"

namespace portico::engine {

namespace {
constexpr unsigned kMdOptions = PTL_IOVEC | PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_SEND_DISABLE |
                                PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_ACK |
                                PTL_MD_EVENT_CT_BYTES | PTL_MD_UNORDERED | PTL_MD_VOLATILE | PTL_MD_UNRELIABLE;
}

int Engine::md_bind(ptl_handle_ni_t h, const ptl_md_t *d, ptl_handle_md_t *out) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !d || !out || (d->options & ~kMdOptions)) return PTL_ARG_INVALID;
    EQ *eq = nullptr;
    CT *ct = nullptr;
    if (d->eq_handle != PTL_EQ_NONE && (!(eq = eq_of(d->eq_handle)) || eq->ni != ni)) return PTL_ARG_INVALID;
    if (d->ct_handle != PTL_CT_NONE && (!(ct = ct_of(d->ct_handle)) || ct->ni != ni)) return PTL_ARG_INVALID;
    if (ni->n_mds >= ni->limits.max_mds) return PTL_NO_SPACE;
    if ((d->options & PTL_IOVEC) &&
        (d->length > static_cast<ptl_size_t>(ni->limits.max_iovecs) || (d->length && !d->start)))
        return PTL_ARG_INVALID;
    MD *md = reuse_or_new(spare_mds_);
    md->ni = ni;
    md->desc = *d;
    md->eq = eq;
    md->ct = ct;
    if (d->options & PTL_IOVEC) {
        const auto *v = static_cast<const ptl_iovec_t *>(d->start);
        md->iov.assign(v, v + d->length);
        for (const ptl_iovec_t &e : md->iov) md->length += e.iov_len;
    } else {
        md->length = d->length;
    }
    md->handle = mds_.insert(ObjType::MD, md);
    ++ni->n_mds;
    *out = md->handle;
    return PTL_OK;
}

int Engine::md_release(ptl_handle_md_t h) {
    std::lock_guard g(mutex_);
    MD *md = mds_.lookup(ObjType::MD, h);
    if (!md) return PTL_ARG_INVALID;
    // Portico's reading of §3.10.4: an MD whose SEND or REPLY is still due cannot be released.
    if (md->pending > 0) return PTL_IN_USE;
    mds_.remove(h);
    --md->ni->n_mds;
    md->released = true;
    if (md->refs == 0) retire_md(md); // otherwise the last late ACK retires it
    return PTL_OK;
}

void Engine::md_release_ref(MD *md) {
    if (--md->refs == 0 && md->released) retire_md(md);
}

void Engine::retire_md(MD *md) {
    // A put that found the MD without the lock (put_unlocked) may still be sending from it; it
    // only reads it, and the handle is gone, so nothing new can start: keep it until PtlFini.
    if (md->users.load(std::memory_order_seq_cst) > 0) {
        dead_mds_.emplace_back(md);
        return;
    }
    // Never deleted while the engine lives: a thread that found it without the lock may still
    // touch its users count (Engine::pin), as for EQs and CTs.
    md->ni = nullptr;
    md->handle = 0;
    md->iov.clear();
    md->length = 0;
    md->eq = nullptr;
    md->ct = nullptr;
    md->pending = 0;
    md->refs = 0;
    md->released = false;
    spare_mds_.emplace_back(md);
}

} // namespace portico::engine
