// SPDX-License-Identifier: BSD-3-Clause
// Network interfaces, ids, the rank map and the portal table (spec §3.6–3.9).
#include <algorithm>
#include <cerrno>
#include <system_error>
#include <unistd.h>

#include "bootstrap/local_hint.hpp"
#include "common/guarded_copy.hpp"
#include "common/netif.hpp"
#include "common/log.hpp"
#include "engine/engine_settings.hpp"
#include "engine/wait.hpp"
#include "transport/endpoint.hpp"

namespace portico::engine {

namespace {

// A desired value of 0 (or less) states no wish: a zeroed ptl_ni_limits_t keeps every default.
template <class T> void take_smaller(T &ours, T desired, T floor = 1) {
    if (desired > 0) ours = std::min(ours, std::max(desired, floor));
}

} // namespace

std::unique_ptr<transport::Transport> Engine::open_transport(ptl_pid_t pid) {
    // Caller holds the engine lock. The transports read their own settings; the engine only says
    // who we are and where the job's secret comes from.
    transport::EndpointRequest req;
    req.nid = local_nid();
    req.pid = pid == PTL_PID_ANY ? UINT32_MAX : pid;
    req.job_secret = [this] { return job_secret(); };
    req.shared_secret = [this] { return shared_job_secret(); };
    const bootstrap::LocalHint local = bootstrap::local_hint();
    req.local_processes = local.processes;
    req.local_rank = local.rank;
    return transport::open_endpoint(req);
}

namespace {

// The transports may serve the job's peers before strangers (TCP under a flood of connections).
void tell_peers(Endpoint &ep, const std::vector<ptl_process_t> &map) {
    std::vector<transport::PeerId> peers;
    peers.reserve(map.size());
    for (const ptl_process_t &p : map) peers.push_back({p.phys.nid, p.phys.pid});
    ep.transport->know_peers(peers.data(), peers.size());
}

// The NI kind (wire::kNi*) the options name, or -1 if the arguments are invalid.
int ni_kind_of(ptl_interface_t iface, unsigned options, ptl_pid_t pid) {
    const unsigned match = options & (PTL_NI_MATCHING | PTL_NI_NO_MATCHING);
    const unsigned addr = options & (PTL_NI_LOGICAL | PTL_NI_PHYSICAL);
    if ((options & ~(PTL_NI_MATCHING | PTL_NI_NO_MATCHING | PTL_NI_LOGICAL | PTL_NI_PHYSICAL)) ||
        (match != PTL_NI_MATCHING && match != PTL_NI_NO_MATCHING) ||
        (addr != PTL_NI_LOGICAL && addr != PTL_NI_PHYSICAL))
        return -1;
    if (iface != PTL_IFACE_DEFAULT && iface != 0) return -1;
    if (pid != PTL_PID_ANY && pid >= PTL_PID_MAX) return -1;
    return (match == PTL_NI_MATCHING ? wire::kNiMatching : 0) | (addr == PTL_NI_LOGICAL ? wire::kNiLogical : 0);
}

// The limits of a new NI: the defaults, lowered by the application's wishes, and the atomic sizes
// bounded by what one frame of the transport holds.
ptl_ni_limits_t ni_limits(const ptl_ni_limits_t *desired, size_t max_frame_payload) {
    ptl_ni_limits_t lim = default_limits();
    if (desired) {
        take_smaller(lim.max_entries, desired->max_entries);
        take_smaller(lim.max_unexpected_headers, desired->max_unexpected_headers);
        take_smaller(lim.max_mds, desired->max_mds);
        take_smaller(lim.max_cts, desired->max_cts);
        take_smaller(lim.max_eqs, desired->max_eqs);
        take_smaller(lim.max_iovecs, desired->max_iovecs);
        take_smaller(lim.max_list_size, desired->max_list_size);
        take_smaller(lim.max_msg_size, desired->max_msg_size);
        take_smaller(lim.max_volatile_size, desired->max_volatile_size);
        take_smaller(lim.max_triggered_ops, desired->max_triggered_ops);
        // Smaller wishes are honoured down to a floor: the spec's minimums for the portal table
        // (250 entries) and the ordering sizes, and for atomics one long double complex (32 bytes),
        // so that every datatype has a legal atomic.
        take_smaller(lim.max_pt_index, desired->max_pt_index, 249);
        take_smaller<ptl_size_t>(lim.max_atomic_size, desired->max_atomic_size, 32);
        take_smaller<ptl_size_t>(lim.max_fetch_atomic_size, desired->max_fetch_atomic_size, 32);
        take_smaller<ptl_size_t>(lim.max_waw_ordered_size, desired->max_waw_ordered_size, 64);
        take_smaller<ptl_size_t>(lim.max_war_ordered_size, desired->max_war_ordered_size, 8);
    }
    // One atomic (plus its operand, at most 32 bytes) must fit in one frame of the transport.
    const ptl_size_t frame_atomic = (max_frame_payload - 32) & ~ptl_size_t{31};
    lim.max_atomic_size = std::max<ptl_size_t>(32, std::min(lim.max_atomic_size, frame_atomic));
    lim.max_fetch_atomic_size = std::max<ptl_size_t>(32, std::min(lim.max_fetch_atomic_size, frame_atomic));
    return lim;
}

} // namespace

int Engine::ni_init(ptl_interface_t iface, unsigned options, ptl_pid_t pid, const ptl_ni_limits_t *desired,
                    ptl_ni_limits_t *actual, ptl_handle_ni_t *out) {
    const int kind = ni_kind_of(iface, options, pid);
    if (!out || kind < 0) return PTL_ARG_INVALID;

    std::unique_lock g(mutex_);
    Endpoint *ep = endpoints_.empty() ? nullptr : endpoints_.front().get();
    if (ep && ep->nis[kind]) {
        NI *ni = ep->nis[kind];
        ++ni->refs; // repeated PtlNIInit: same handle and limits, pid ignored
        if (actual) *actual = ni->limits;
        *out = ni->handle;
        return PTL_OK;
    }
    if (ep && pid != PTL_PID_ANY && pid != ep->transport->self().pid) return PTL_PID_IN_USE;
    // Guarded copies start with the first NI; until then the application's SIGSEGV/SIGBUS
    // dispositions stay untouched.
    install_fault_guard();
    const bool new_endpoint = !ep;
    if (new_endpoint) {
        const int rc = open_endpoint_locked(pid, &ep);
        if (rc != PTL_OK) return rc;
    }

    auto ni = std::make_unique<NI>();
    ni->ep = ep;
    ni->options = options;
    ni->kind = kind;
    ni->refs = 1;
    ni->limits = ni_limits(desired, ep->transport->max_frame_payload());
    ni->pts.resize(static_cast<size_t>(ni->limits.max_pt_index) + 1);

    if (ni->logical()) {
        ptl_process_t self{};
        self.phys.nid = ep->transport->self().nid;
        self.phys.pid = ep->transport->self().pid;
        int rc = fetch_job_map(&ni->map, &ni->rank, self);
        if (rc == PTL_OK) {
            ni->map_static = true;
            tell_peers(*ep, ni->map);
        } else if (rc != PTL_IGNORED) {
            if (new_endpoint && ep->open_nis == 0) endpoints_.clear();
            return PTL_FAIL;
        }
    }

    NI *raw = ni.release();
    raw->handle = nis_.insert(ObjType::NI, raw);
    ep->nis[kind] = raw;
    ++ep->open_nis;
    if (actual) *actual = raw->limits;
    *out = raw->handle;
    if (new_endpoint) start_progress(*ep);
    return PTL_OK;
}

int Engine::open_endpoint_locked(ptl_pid_t pid, Endpoint **out) {
    auto e = std::make_unique<Endpoint>();
    try {
        e->transport = open_transport(pid);
    } catch (const std::system_error &err) {
        if (err.code().value() == EADDRINUSE) {
            log_error("PtlNIInit: %s", err.what()); // who holds the pid: another user may be denying us
            return PTL_PID_IN_USE;
        }
        log_error("cannot open the network interface: %s", err.what());
        return err.code().value() == EINVAL ? PTL_ARG_INVALID : PTL_NO_SPACE;
    } catch (const std::exception &err) {
        log_error("cannot open the network interface: %s", err.what());
        return PTL_ARG_INVALID;
    }
    e->direct_from = e->transport->direct_access_from();
    e->receiver = std::make_unique<EndpointReceiver>(*this, *e);
    *out = e.get();
    endpoints_.push_back(std::move(e));
    return PTL_OK;
}

void Engine::destroy_ni(NI *ni) {
    // Caller holds the engine lock. Everything allocated on the NI goes with it.
    for (PT &pt : ni->pts) {
        for (auto &l : pt.lists)
            for (auto it = l.begin(); it != l.end();) {
                Entry *e = *it;
                ++it; // before the entry goes: the list runs through it
                entries_.remove(e->handle);
                delete e;
            }
        pt.unexpected.clear();
    }
    for (Entry *e : ni->retired) {
        if (e->handle_live) entries_.remove(e->handle);
        delete e;
    }
    std::vector<Entry *> orphans;
    entries_.for_each([&](Entry *e) {
        if (e->ni == ni) orphans.push_back(e);
    });
    for (Entry *e : orphans) {
        entries_.remove(e->handle);
        delete e;
    }
    for (Op &op : ops_)
        if (op.in_use && op.ni == ni) {
            ni->ep->count_op(-1);
            op.in_use = false;
            op.gen++;
            free_ops_.push_back(static_cast<uint32_t>(&op - ops_.data()));
        }
    std::vector<MD *> mds;
    mds_.for_each([&](MD *m) {
        if (m->ni == ni) mds.push_back(m);
    });
    for (MD *m : mds) {
        mds_.remove(m->handle);
        retire_md(m);
    }
    std::vector<EQ *> eqs;
    eqs_.for_each([&](EQ *q) {
        if (q->ni == ni) eqs.push_back(q);
    });
    for (EQ *q : eqs) {
        eqs_.remove(q->handle);
        retire_eq(q); // a thread may still be inside PtlEQWait on it
    }
    std::vector<CT *> cts;
    cts_.for_each([&](CT *c) {
        if (c->ni == ni) cts.push_back(c);
    });
    for (CT *c : cts) {
        cts_.remove(c->handle);
        retire_ct(c);
    }
    nis_.remove(ni->handle);
    ni->ep->nis[ni->kind] = nullptr;
    --ni->ep->open_nis;
    delete ni;
}

int Engine::ni_fini(ptl_handle_ni_t h) {
    std::unique_lock g(mutex_);
    NI *ni = ni_of(h);
    if (!ni) return PTL_ARG_INVALID;
    if (--ni->refs > 0) return PTL_OK;
    Endpoint *ep = ni->ep;
    destroy_ni(ni);
    notify_waiters();
    if (ep->open_nis > 0) return PTL_OK;
    // Last NI on the interface: deliver what is still queued, then close the endpoint.
    std::unique_ptr<Endpoint> owned;
    for (auto it = endpoints_.begin(); it != endpoints_.end(); ++it)
        if (it->get() == ep) {
            owned = std::move(*it);
            endpoints_.erase(it);
            break;
        }
    g.unlock();
    stop_progress(*owned);
    owned->transport->flush(*owned->receiver, 10000);
    owned.reset();
    return PTL_OK;
}

int Engine::ni_status(ptl_handle_ni_t h, ptl_sr_index_t reg, ptl_sr_value_t *status) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !status || reg < 0 || reg >= PTL_SR_LAST) return PTL_ARG_INVALID;
    if (reg == PTL_SR_MALFORMED_MESSAGES)
        *status = static_cast<ptl_sr_value_t>(ni->ep->transport->malformed_frames()) + ni->sr[reg].load();
    else if (reg == PTL_SR_REFUSED_CONNECTIONS)
        *status = static_cast<ptl_sr_value_t>(ni->ep->transport->refused_connections());
    else
        *status = ni->sr[reg].load();
    return PTL_OK;
}

int Engine::ni_handle(ptl_handle_any_t h, ptl_handle_ni_t *out) {
    std::lock_guard g(mutex_);
    if (!out) return PTL_ARG_INVALID;
    NI *ni = nullptr;
    switch (handle_type(h)) {
    case ObjType::NI: ni = ni_of(h); break;
    case ObjType::MD:
        if (MD *m = mds_.lookup(ObjType::MD, h)) ni = m->ni;
        break;
    case ObjType::LE:
        if (Entry *e = entries_.lookup(ObjType::LE, h)) ni = e->ni;
        break;
    case ObjType::ME:
        if (Entry *e = entries_.lookup(ObjType::ME, h)) ni = e->ni;
        break;
    case ObjType::EQ:
        if (EQ *q = eq_of(h)) ni = q->ni;
        break;
    case ObjType::CT:
        if (CT *c = ct_of(h)) ni = c->ni;
        break;
    }
    if (!ni) return PTL_ARG_INVALID;
    *out = ni->handle;
    return PTL_OK;
}

int Engine::set_map(ptl_handle_ni_t h, ptl_size_t n, const ptl_process_t *map) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !ni->logical() || n == 0 || !map) return PTL_ARG_INVALID;
    if (ni->map_static) return PTL_IGNORED;
    if (n > (1u << 24)) return PTL_NO_SPACE;
    const transport::PeerId self = ni->ep->transport->self();
    auto apply = [&](NI *target) {
        target->map.assign(map, map + n);
        target->rank = PTL_RANK_ANY;
        for (ptl_size_t r = 0; r < n; ++r)
            if (map[r].phys.nid == self.nid && map[r].phys.pid == self.pid) {
                target->rank = static_cast<ptl_rank_t>(r);
                break;
            }
    };
    apply(ni);
    tell_peers(*ni->ep, ni->map);
    // The sibling logical NI (other matching mode) shares the physical interface and so the map.
    NI *sibling = ni->ep->nis[ni->kind ^ wire::kNiMatching];
    if (sibling && sibling->map.empty()) apply(sibling);
    return PTL_OK;
}

int Engine::get_map(ptl_handle_ni_t h, ptl_size_t n, ptl_process_t *map, ptl_size_t *actual) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    // A physically addressed NI has no map: asking for one is erroneous (§3.6.7).
    if (!ni || !ni->logical() || !actual || (n > 0 && !map)) return PTL_ARG_INVALID;
    if (ni->map.empty()) return PTL_IGNORED;
    *actual = ni->map.size();
    std::copy_n(ni->map.begin(), std::min<size_t>(n, ni->map.size()), map);
    return PTL_OK;
}

int Engine::get_uid(ptl_handle_ni_t h, ptl_uid_t *uid) {
    std::lock_guard g(mutex_);
    if (!ni_of(h) || !uid) return PTL_ARG_INVALID;
    *uid = static_cast<ptl_uid_t>(getuid());
    return PTL_OK;
}

int Engine::get_id(ptl_handle_ni_t h, ptl_process_t *id) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !id) return PTL_ARG_INVALID;
    if (ni->logical()) {
        if (ni->map.empty()) return PTL_ARG_INVALID; // no rank until a map is set
        id->rank = ni->rank;
    } else {
        id->phys.nid = ni->ep->transport->self().nid;
        id->phys.pid = ni->ep->transport->self().pid;
    }
    return PTL_OK;
}

int Engine::peer_shares_memory(ptl_handle_ni_t h, ptl_process_t peer, int *shares) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    transport::PeerId to;
    if (!ni || !shares || !resolve_target(ni, peer, &to)) return PTL_ARG_INVALID;
    *shares = ni->ep->transport->shares_memory(to) ? 1 : 0;
    return PTL_OK;
}

int Engine::get_phys_id(ptl_handle_ni_t h, ptl_process_t *id) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !id) return PTL_ARG_INVALID;
    id->phys.nid = ni->ep->transport->self().nid;
    id->phys.pid = ni->ep->transport->self().pid;
    return PTL_OK;
}

bool Engine::resolve_target(const NI *ni, ptl_process_t target, transport::PeerId *peer) {
    if (ni->logical()) {
        if (target.rank >= ni->map.size()) return false;
        const ptl_process_t &p = ni->map[target.rank];
        *peer = {p.phys.nid, p.phys.pid};
    } else {
        if (target.phys.nid == PTL_NID_ANY || target.phys.pid == PTL_PID_ANY) return false;
        *peer = {target.phys.nid, target.phys.pid};
    }
    return true;
}

int Engine::pt_alloc(ptl_handle_ni_t h, unsigned options, ptl_handle_eq_t eqh, ptl_pt_index_t req,
                     ptl_pt_index_t *out) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || !out ||
        (options & ~(PTL_PT_ONLY_USE_ONCE | PTL_PT_ONLY_TRUNCATE | PTL_PT_FLOWCTRL | PTL_PT_ALLOC_DISABLED)))
        return PTL_ARG_INVALID;
    EQ *eq = nullptr;
    if (eqh != PTL_EQ_NONE) {
        eq = eq_of(eqh);
        if (!eq || eq->ni != ni) return PTL_ARG_INVALID;
    }
    if ((options & PTL_PT_FLOWCTRL) && !eq) return PTL_PT_EQ_NEEDED;
    ptl_pt_index_t idx;
    if (req == PTL_PT_ANY) {
        auto it = std::find_if(ni->pts.begin(), ni->pts.end(), [](const PT &p) { return !p.allocated; });
        if (it == ni->pts.end()) return PTL_PT_FULL;
        idx = static_cast<ptl_pt_index_t>(it - ni->pts.begin());
    } else {
        if (req >= ni->pts.size()) return PTL_ARG_INVALID;
        if (ni->pts[req].allocated) return PTL_PT_IN_USE;
        idx = req;
    }
    PT &pt = ni->pts[idx];
    pt.allocated = true;
    pt.options = options;
    pt.eq = eq;
    pt.enabled = !(options & PTL_PT_ALLOC_DISABLED);
    if ((options & PTL_PT_FLOWCTRL) && eq) {
        // One slot per flow-controlled PT stays free for its PT_DISABLED event.
        eq->events.reserve_one();
    }
    *out = idx;
    return PTL_OK;
}

int Engine::pt_free(ptl_handle_ni_t h, ptl_pt_index_t idx) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || idx >= ni->pts.size() || !ni->pts[idx].allocated) return PTL_ARG_INVALID;
    PT &pt = ni->pts[idx];
    if (!pt.lists[0].empty() || !pt.lists[1].empty() || !pt.unexpected.empty() || pt.streams > 0) return PTL_PT_IN_USE;
    if ((pt.options & PTL_PT_FLOWCTRL) && pt.eq) {
        pt.eq->events.unreserve_one(); // the ring keeps its size; the slot becomes ordinary room
    }
    pt = PT{};
    return PTL_OK;
}

int Engine::pt_disable(ptl_handle_ni_t h, ptl_pt_index_t idx) {
    Endpoint *ep;
    {
        std::lock_guard g(mutex_);
        NI *ni = ni_of(h);
        if (!ni || idx >= ni->pts.size() || !ni->pts[idx].allocated) return PTL_ARG_INVALID;
        ni->pts[idx].enabled = false;
        ep = ni->ep;
    }
    // Messages already partly received into this PT finish first (spec: PtlPTDisable blocks).
    pt_disable_waiters_.fetch_add(1);
    wait_for(ep, PTL_TIME_FOREVER, PTL_OK, [&] {
        std::lock_guard g(mutex_);
        NI *ni = ni_of(h);
        return !ni || ni->pts[idx].streams == 0;
    });
    pt_disable_waiters_.fetch_sub(1);
    return PTL_OK;
}

int Engine::pt_enable(ptl_handle_ni_t h, ptl_pt_index_t idx) {
    std::lock_guard g(mutex_);
    NI *ni = ni_of(h);
    if (!ni || idx >= ni->pts.size() || !ni->pts[idx].allocated) return PTL_ARG_INVALID;
    ni->pts[idx].enabled = true;
    return PTL_OK;
}

} // namespace portico::engine
