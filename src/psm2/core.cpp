// SPDX-License-Identifier: BSD-3-Clause
// PSM2 core: library lifetime, error handling, endpoints, connections, options and queries.
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clientkit.hpp"
#include "common/log.hpp"
#include "internal.hpp"
#include "psm2_settings.hpp"

namespace ck = portico::clientkit;
using namespace portico::psm2;

#define PSM2_API extern "C" __attribute__((visibility("default")))

// The capabilities the library has, exported as data like the original library's.
extern "C" {
__attribute__((visibility("default"))) uint64_t psm2_capabilities_bitset = PSM2_MULTI_EP_CAP | PSM2_LIB_REFCOUNT_CAP;
}

// What psm2_error_defer receives: the error a handler was called for.
struct psm2_error_token {
    psm2_error_t error;
    char message[PSM2_ERRSTRING_MAXLEN];
};

namespace portico::psm2 {

Library &library() {
    static Library lib;
    return lib;
}

namespace {

uint64_t now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

[[noreturn]] void defer_exit(const psm2_error_token &t) {
    log_error("%s", t.message);
    if (t.error == PSM2_INTERNAL_ERR) std::abort();
    std::exit(-1);
}

// Errors that describe a caller's mistake or a peer it named, not a broken library: PSM's own
// handler reports them and lets the call return them.
bool recoverable(psm2_error_t e) {
    switch (e) {
    case PSM2_PARAM_ERR:
    case PSM2_OPT_READONLY:
    case PSM2_TIMEOUT:
    case PSM2_TOO_MANY_ENDPOINTS:
    case PSM2_EPID_UNKNOWN:
    case PSM2_EPID_UNREACHABLE:
    case PSM2_EPID_INVALID_UUID_KEY:
    case PSM2_MQ_TRUNCATION:
    case PSM2_EP_NO_RESOURCES:
    case PSM2_IQ_INVALID_QUERY: return true;
    default: return false;
    }
}

} // namespace

psm2_error_t report(Ep *ep, psm2_error_t err, const char *fmt, ...) {
    psm2_error_token token{};
    token.error = err;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(token.message, sizeof token.message, fmt, ap);
    va_end(ap);
    psm2_ep_errhandler_t h = ep ? ep->errhandler : library().global_handler;
    if (h == PSM2_ERRHANDLER_NO_HANDLER || h == nullptr) return err;
    if (h == PSM2_ERRHANDLER_PSM_HANDLER) {
        if (!recoverable(err)) defer_exit(token);
        log_error("%s", token.message);
        return err;
    }
    return h(ep, err, token.message, &token);
}

psm2_epaddr *peer_of(Ep &ep, psm2_epid_t epid) {
    auto &slot = ep.peers[epid];
    if (!slot) {
        slot = std::make_unique<psm2_epaddr>();
        slot->epid = epid;
        slot->proc = ck::phys_id(epid_nid_of(epid), epid_pid_of(epid));
        slot->ctx = epid_ctx_of(epid);
        slot->ep = &ep;
    }
    return slot.get();
}

bool same_node(psm2_epid_t epid) {
    int shares = 0;
    return library().ni != PTL_INVALID_HANDLE &&
           portico_peer_shares_memory(library().ni, ck::phys_id(epid_nid_of(epid), epid_pid_of(epid)), &shares) ==
               PTL_OK &&
           shares;
}

bool device_allows(const Ep &ep, psm2_epid_t epid) {
    if (epid == ep.epid) return ep.devices & kDeviceSelf;
    return ep.devices & (same_node(epid) ? kDeviceShm : kDeviceHfi);
}

} // namespace portico::psm2

namespace {

// PSM2_DEVICES (comma-separated; unset: all). "ips" is upstream's name for the adapter path.
unsigned devices_from_env() {
    const std::string list = portico::settings::kPsm2Devices.get();
    if (list.empty()) return kDeviceSelf | kDeviceShm | kDeviceHfi;
    unsigned mask = 0;
    for (size_t at = 0; at <= list.size();) {
        const size_t end = std::min(list.find(',', at), list.size());
        const std::string name = list.substr(at, end - at);
        if (name == "self") mask |= kDeviceSelf;
        if (name == "shm" || name == "shmem") mask |= kDeviceShm;
        if (name == "hfi" || name == "ips") mask |= kDeviceHfi;
        at = end + 1;
    }
    return mask;
}

bool initialized() {
    Library &lib = library();
    return lib.init_count > 0;
}

Ep *checked_ep(psm2_ep_t ep) {
    if (!ep) return nullptr;
    Library &lib = library();
    for (Ep *e : lib.eps)
        if (e == ep) return e;
    return nullptr;
}

// Releases what an endpoint holds in Portals and frees it. The library lock is held.
void destroy_ep(Ep *ep) {
    {
        std::lock_guard g(ep->lock);
        ep->closing = true;
        // Nothing may land in the endpoint's memory once it is freed: an entry that cannot be
        // unlinked (a message streaming in, unexpected headers pointing into a slab) stays on
        // its PT, and peers still sending at exit would write into a freed slab (GASNet's
        // psm-conduit died of that SIGSEGV at 4 processes). PtlPTDisable returns once messages
        // under way are done; later ones are dropped.
        const ptl_pt_index_t pts[] = {recv_pt(ep->ctx), rndv_pt(ep->ctx), ctl_pt(ep->ctx)};
        for (ptl_pt_index_t pt : pts) PtlPTDisable(library().ni, pt);
        drop_requests(*ep);
        mq_stop(*ep);
        ctl_stop(*ep);
        if (ep->identity_me != PTL_INVALID_HANDLE) PtlMEUnlink(ep->identity_me);
        // Events still queued may name requests drop_requests has freed (a forced close with a
        // send under way, a receive's late event): discard them, acting on them frees twice.
        ptl_event_t ev;
        for (ptl_handle_eq_t eq : {ep->eq, ep->ctl_eq}) {
            int rc = PTL_OK;
            while (eq != PTL_INVALID_HANDLE && (rc = PtlEQGet(eq, &ev)) != PTL_EQ_EMPTY)
                if (rc != PTL_OK && rc != PTL_EQ_DROPPED) break;
        }
        for (ptl_pt_index_t pt : pts) PtlPTFree(library().ni, pt);
        overflow_free_ct(ep->mq_overflow);
        overflow_free_ct(ep->am_overflow);
        // An MD with operations still under way is left to PtlNIFini (a forced close may do that).
        // The retain ring's memory outlives an MD the engine still reads from (a forced close).
        bool ring_released = true;
        if (ep->ring.md != PTL_INVALID_HANDLE && PtlMDRelease(ep->ring.md) != PTL_OK) {
            ring_released = false;
            static_cast<void>(ep->ring.mem.release());
        }
        if (PtlMDRelease(ep->md) == PTL_OK && ring_released && ep->eq != PTL_INVALID_HANDLE) PtlEQFree(ep->eq);
        if (PtlMDRelease(ep->ctl_md) == PTL_OK && ep->ctl_eq != PTL_INVALID_HANDLE) PtlEQFree(ep->ctl_eq);
    }
    Library &lib = library();
    lib.eps[ep->ctx] = nullptr;
    --lib.open_eps;
    delete ep;
}

// The Portals NI every endpoint of the process shares, opened by the first endpoint.
psm2_error_t open_ni(const psm2_uuid_t job_key) {
    Library &lib = library();
    if (lib.ni != PTL_INVALID_HANDLE) return PSM2_OK;
    // Processes that PSM2 clients start on their own (fi_pingpong, a job under another launcher)
    // share the job key and nothing else: it becomes the secret that Portico's TCP peers
    // authenticate each other with, unless the user or a launcher chose one.
    char secret[64] = "psm2-";
    static const char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) {
        secret[5 + 2 * i] = kHex[job_key[i] >> 4];
        secret[6 + 2 * i] = kHex[job_key[i] & 15];
    }
    secret[5 + 32] = '\0';
    portico_set_job_secret(secret); // PTL_IGNORED when the user or a launcher chose one
    if (PtlInit() != PTL_OK) return PSM2_EP_DEVICE_FAILURE;
    ptl_ni_limits_t want{};
    want.max_entries = 1 << 20;
    want.max_unexpected_headers = 1 << 20;
    want.max_mds = 1 << 16;
    want.max_cts = 1 << 16;
    want.max_eqs = 1 << 16;
    want.max_pt_index = static_cast<int>(ctl_pt(kMaxEndpoints - 1));
    want.max_iovecs = 1024;
    want.max_list_size = 1 << 20;
    want.max_triggered_ops = 1 << 16;
    want.max_msg_size = PTL_SIZE_MAX;
    want.max_atomic_size = 512;
    want.max_fetch_atomic_size = 512;
    want.max_waw_ordered_size = 512;
    want.max_war_ordered_size = 512;
    want.max_volatile_size = 4096; // eager sends up to this complete when their put returns
    ptl_ni_limits_t got{};
    int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, &want, &got, &lib.ni);
    if (rc != PTL_OK) {
        PtlFini();
        return PSM2_EP_DEVICE_FAILURE;
    }
    if (got.max_pt_index < static_cast<int>(ctl_pt(0)) || PtlGetPhysId(lib.ni, &lib.self) != PTL_OK) {
        PtlNIFini(lib.ni);
        PtlFini();
        lib.ni = PTL_INVALID_HANDLE;
        return PSM2_EP_DEVICE_FAILURE;
    }
    lib.max_volatile = got.max_volatile_size;
    return PSM2_OK;
}

void close_ni() {
    Library &lib = library();
    if (lib.ni == PTL_INVALID_HANDLE) return;
    PtlNIFini(lib.ni);
    PtlFini();
    lib.ni = PTL_INVALID_HANDLE;
}

psm2_error_t setup_ep(Ep &ep) {
    const ptl_handle_ni_t ni = library().ni;
    if (PtlEQAlloc(ni, 1 << 16, &ep.eq) != PTL_OK || PtlEQAlloc(ni, 1 << 12, &ep.ctl_eq) != PTL_OK)
        return PSM2_NO_MEMORY;
    ptl_pt_index_t got = 0;
    if (PtlPTAlloc(ni, 0, ep.eq, recv_pt(ep.ctx), &got) != PTL_OK ||
        PtlPTAlloc(ni, 0, ep.eq, rndv_pt(ep.ctx), &got) != PTL_OK ||
        PtlPTAlloc(ni, 0, ep.ctl_eq, ctl_pt(ep.ctx), &got) != PTL_OK)
        return PSM2_EP_NO_RESOURCES;
    // Volatile: a put of up to max_volatile_size has taken its data when PtlPut returns, so a
    // small eager send is complete then, without waiting for its SEND event (mq.cpp).
    ptl_md_t md = ck::whole_memory_md(PTL_MD_VOLATILE, ep.eq);
    if (PtlMDBind(ni, &md, &ep.md) != PTL_OK) return PSM2_NO_MEMORY;
    md = ck::whole_memory_md(0, ep.ctl_eq);
    if (PtlMDBind(ni, &md, &ep.ctl_md) != PTL_OK) return PSM2_NO_MEMORY;
    ep.identity.epid = ep.epid;
    std::memcpy(ep.identity.uuid, ep.uuid, sizeof ep.uuid);
    ptl_me_t me = ck::me_desc(&ep.identity, sizeof ep.identity,
                              PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE, kCtlIdentity, 0);
    me.match_id = ck::any_process();
    if (PtlMEAppend(ni, ctl_pt(ep.ctx), &me, PTL_PRIORITY_LIST, nullptr, &ep.identity_me) != PTL_OK)
        return PSM2_NO_MEMORY;
    // The MQ's unexpected-message entries from the start, not from psm2_mq_init: a peer may send
    // as soon as it knows the epid (psm2-demo's server publishes it before mq_init), and a message
    // that found no entry would be dropped.
    if (const psm2_error_t err = mq_start(ep); err != PSM2_OK) return err;
    return ctl_start(ep);
}

} // namespace

// ---- library lifetime ---------------------------------------------------------------------------

PSM2_API psm2_error_t psm2_init(int *major, int *minor) {
    if (!major || !minor) return report(nullptr, PSM2_PARAM_ERR, "psm2_init: NULL version pointer");
    Library &lib = library();
    std::lock_guard g(lib.lock);
    if (lib.finalized) return report(nullptr, PSM2_IS_FINALIZED, "psm2_init after the final psm2_finalize");
    if (*major != PSM2_VERNO_MAJOR && *major != PSM2_VERNO_COMPAT_MAJOR)
        return report(nullptr, PSM2_INIT_BAD_API_VERSION, "psm2_init: API major version %d is not supported (%d)",
                      *major, PSM2_VERNO_MAJOR);
    if (lib.init_count++ == 0) lib.multi_ep = portico::settings::kPsm2MultiEp.get();
    *major = PSM2_VERNO_MAJOR;
    *minor = PSM2_VERNO_MINOR;
    return PSM2_OK;
}

PSM2_API uint64_t psm2_get_capability_mask(uint64_t req_cap_mask) { return req_cap_mask & psm2_capabilities_bitset; }

PSM2_API psm2_error_t psm2_finalize(void) {
    Library &lib = library();
    std::lock_guard g(lib.lock);
    if (lib.init_count == 0) return lib.finalized ? PSM2_OK : PSM2_INIT_NOT_INIT;
    if (--lib.init_count > 0) return PSM2_OK;
    for (Ep *ep : lib.eps)
        if (ep) destroy_ep(ep);
    close_ni();
    lib.finalized = true;
    return PSM2_OK;
}

// ---- errors -------------------------------------------------------------------------------------

PSM2_API psm2_error_t psm2_error_register_handler(psm2_ep_t ep, const psm2_ep_errhandler_t errhandler) {
    if (!ep) {
        library().global_handler = errhandler; // allowed before psm2_init
        return PSM2_OK;
    }
    std::lock_guard g(library().lock);
    Ep *e = checked_ep(ep);
    if (!e) return PSM2_PARAM_ERR;
    e->errhandler = errhandler;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_error_defer(psm2_error_token_t token) {
    if (!token) return PSM2_PARAM_ERR;
    defer_exit(*token);
}

PSM2_API const char *psm2_error_get_string(psm2_error_t error) {
    switch (error) {
    case PSM2_OK: return "Success";
    case PSM2_OK_NO_PROGRESS: return "Success, no progress was made";
    case PSM2_PARAM_ERR: return "Invalid parameter";
    case PSM2_NO_MEMORY: return "Out of memory";
    case PSM2_INIT_NOT_INIT: return "PSM2 has not been initialized";
    case PSM2_INIT_BAD_API_VERSION: return "Incompatible PSM2 API version";
    case PSM2_NO_AFFINITY: return "No CPU affinity could be set";
    case PSM2_INTERNAL_ERR: return "Internal PSM2 error";
    case PSM2_SHMEM_SEGMENT_ERR: return "Shared memory segment error";
    case PSM2_OPT_READONLY: return "The option is read-only";
    case PSM2_TIMEOUT: return "Operation timed out";
    case PSM2_TOO_MANY_ENDPOINTS: return "Too many endpoints";
    case PSM2_IS_FINALIZED: return "PSM2 has been finalized";
    case PSM2_EP_WAS_CLOSED: return "The endpoint was closed";
    case PSM2_EP_NO_DEVICE: return "No network device";
    case PSM2_EP_UNIT_NOT_FOUND: return "No such unit";
    case PSM2_EP_DEVICE_FAILURE: return "The network device failed";
    case PSM2_EP_CLOSE_TIMEOUT: return "Closing the endpoint timed out";
    case PSM2_EP_NO_PORTS_AVAIL: return "No free port";
    case PSM2_EP_NO_NETWORK: return "No network";
    case PSM2_EP_INVALID_UUID_KEY: return "Invalid job key";
    case PSM2_EP_NO_RESOURCES: return "Out of endpoint resources";
    case PSM2_EPID_UNKNOWN: return "Unknown or unreachable endpoint id";
    case PSM2_EPID_UNREACHABLE: return "The endpoint cannot be reached";
    case PSM2_EPID_INVALID_NODE: return "Invalid node in the endpoint id";
    case PSM2_EPID_INVALID_MTU: return "Incompatible MTU";
    case PSM2_EPID_INVALID_UUID_KEY: return "The peer has another job key";
    case PSM2_EPID_INVALID_VERSION: return "The peer runs an incompatible version";
    case PSM2_EPID_INVALID_CONNECT: return "Invalid connection";
    case PSM2_EPID_ALREADY_CONNECTED: return "Already connected";
    case PSM2_EPID_NETWORK_ERROR: return "Network error";
    case PSM2_EPID_INVALID_PKEY: return "Invalid partition key";
    case PSM2_EPID_PATH_RESOLUTION: return "Path resolution failed";
    case PSM2_MQ_NO_COMPLETIONS: return "No completions yet";
    case PSM2_MQ_TRUNCATION: return "The message was truncated";
    case PSM2_AM_INVALID_REPLY: return "Invalid active message reply";
    case PSM2_IQ_INVALID_QUERY: return "Invalid info query";
    default: return "Unknown error";
    }
}

// ---- endpoint ids and units ---------------------------------------------------------------------

PSM2_API uint64_t psm2_epid_nid(psm2_epid_t epid) { return epid_nid_of(epid); }
PSM2_API uint64_t psm2_epid_context(psm2_epid_t epid) { return epid_ctx_of(epid); }
PSM2_API uint64_t psm2_epid_port(psm2_epid_t epid) { return epid_pid_of(epid); }

PSM2_API psm2_error_t psm2_ep_num_devunits(uint32_t *num_units) {
    if (!initialized()) return PSM2_INIT_NOT_INIT;
    if (!num_units) return PSM2_PARAM_ERR;
    *num_units = 1; // one virtual unit: the Portico engine (shared memory and the network)
    return PSM2_OK;
}

PSM2_API void psm2_uuid_generate(psm2_uuid_t uuid_out) {
    if (!uuid_out) return;
    size_t got = 0;
    while (got < 16) {
        const ssize_t n = getrandom(uuid_out + got, 16 - got, 0);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    uuid_out[6] = static_cast<uint8_t>((uuid_out[6] & 0x0F) | 0x40); // RFC 4122 version 4
    uuid_out[8] = static_cast<uint8_t>((uuid_out[8] & 0x3F) | 0x80);
}

PSM2_API psm2_error_t psm2_ep_open_opts_get_defaults(struct psm2_ep_open_opts *opts) {
    if (!initialized()) return PSM2_INIT_NOT_INIT;
    if (!opts) return PSM2_PARAM_ERR;
    *opts = psm2_ep_open_opts{};
    opts->timeout = 30000000000LL;
    opts->unit = -1;
    opts->affinity = PSM2_EP_OPEN_AFFINITY_SET;
    opts->shm_mbytes = 10;
    opts->sendbufs_num = 512;
    opts->network_pkey = PSM2_EP_OPEN_PKEY_DEFAULT;
    opts->port = 0;
    opts->outsl = 0;
    opts->service_id = 0x1000117500000000ULL;
    opts->path_res_type = PSM2_PATH_RES_NONE;
    opts->senddesc_num = 1048576;
    opts->imm_size = 128;
    return PSM2_OK;
}

// ---- endpoints ----------------------------------------------------------------------------------

PSM2_API psm2_error_t psm2_ep_open(const psm2_uuid_t unique_job_key, const struct psm2_ep_open_opts *opts,
                                   psm2_ep_t *ep, psm2_epid_t *epid) {
    Library &lib = library();
    std::lock_guard g(lib.lock);
    if (!initialized()) return report(nullptr, PSM2_INIT_NOT_INIT, "psm2_ep_open before psm2_init");
    if (!unique_job_key || !ep || !epid) return report(nullptr, PSM2_PARAM_ERR, "psm2_ep_open: NULL argument");
    if (opts && opts->unit > 0) return report(nullptr, PSM2_EP_UNIT_NOT_FOUND, "psm2_ep_open: no unit %d", opts->unit);
    if (lib.open_eps > 0 && !lib.multi_ep)
        return report(nullptr, PSM2_TOO_MANY_ENDPOINTS, "psm2_ep_open: a second endpoint needs PSM2_MULTI_EP=1");
    unsigned ctx = 0;
    while (ctx < kMaxEndpoints && lib.eps[ctx]) ++ctx;
    if (ctx == kMaxEndpoints)
        return report(nullptr, PSM2_TOO_MANY_ENDPOINTS, "psm2_ep_open: %d endpoints open", kMaxEndpoints);
    const unsigned devices = devices_from_env();
    if (!(devices & (kDeviceShm | kDeviceHfi)))
        return report(nullptr, PSM2_PARAM_ERR, "psm2_ep_open: PSM2_DEVICES names neither shm nor hfi");
    // Without shm every peer goes through the network transport, this machine's too (as
    // upstream's adapter loopback): asked of the engine before it starts, unless the user chose
    // (PORTICO_TRANSPORT wins: PTL_IGNORED).
    if (!(devices & kDeviceShm) && lib.ni == PTL_INVALID_HANDLE) portico_set_transport("tcp");
    if (const psm2_error_t err = open_ni(unique_job_key); err != PSM2_OK)
        return report(nullptr, err, "psm2_ep_open: the Portico engine did not start");
    auto *e = new Ep;
    e->ctx = ctx;
    e->epid = make_epid(lib.self.phys.nid, lib.self.phys.pid, ctx);
    std::memcpy(e->uuid, unique_job_key, sizeof e->uuid);
    e->errhandler = lib.global_handler;
    e->devices = devices;
    e->mq_obj.ep = e;
    // Capped like psm2_mq_setopt's: a larger eager message would never fit a receiver's slab.
    e->rndv_net = static_cast<uint32_t>(portico::settings::kPsm2RndvHfiThresh.get());
    e->rndv_shm = static_cast<uint32_t>(portico::settings::kPsm2RndvShmThresh.get());
    lib.eps[ctx] = e;
    ++lib.open_eps;
    if (const psm2_error_t err = setup_ep(*e); err != PSM2_OK) {
        destroy_ep(e);
        return report(nullptr, err, "psm2_ep_open: cannot set the endpoint up in Portals");
    }
    *ep = e;
    *epid = e->epid;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_ep_close(psm2_ep_t ep, int mode, int64_t timeout) {
    Library &lib = library();
    Ep *e = nullptr;
    {
        std::lock_guard g(lib.lock);
        e = checked_ep(ep);
    }
    if (!e) return PSM2_PARAM_ERR;
    if (mode != PSM2_EP_CLOSE_GRACEFUL && mode != PSM2_EP_CLOSE_FORCE)
        return report(e, PSM2_PARAM_ERR, "psm2_ep_close: bad mode %d", mode);
    if (mode == PSM2_EP_CLOSE_GRACEFUL) {
        // Sends still owed to peers finish first; at the timeout (0: none) the close is forced.
        const uint64_t deadline = timeout > 0 ? now_ns() + static_cast<uint64_t>(timeout) : 0;
        std::lock_guard g(e->lock);
        // Data a receiver has yet to fetch is waited for only while the receiver is there.
        for (unsigned n = 0; sends_pending(*e) && (deadline == 0 || now_ns() < deadline); ++n) {
            if (n % 1000 == 0) forget_dead_receivers(*e);
            if (!wait_event(*e, 1)) e->lock.hand_over();
        }
    }
    std::lock_guard g(lib.lock);
    destroy_ep(e);
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_ep_epid_share_memory(psm2_ep_t ep, psm2_epid_t epid, int *result) {
    if (!ep || !result) return PSM2_PARAM_ERR;
    if (epid_pid_of(epid) == 0 || epid_ctx_of(epid) >= kMaxEndpoints)
        return report(ep, PSM2_EPID_UNKNOWN, "unknown epid 0x%llx", static_cast<unsigned long long>(epid));
    *result = same_node(epid) ? 1 : 0;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_map_nid_hostname(int num, const uint64_t *nids, const char **hostnames) {
    if (num < 0 || (num > 0 && (!nids || !hostnames))) return PSM2_PARAM_ERR;
    return PSM2_OK; // labels are diagnostics; Portico's peers name themselves by epid
}

// ---- connections --------------------------------------------------------------------------------

namespace {

// One connect attempt in flight: an identity read into `id`.
struct Probe {
    int index;
    portico::psm2::Identity id;
    bool in_flight = false;
    bool done = false;
    psm2_error_t err = PSM2_EPID_UNKNOWN;
    uint64_t retry_at = 0;
};

} // namespace

PSM2_API psm2_error_t psm2_ep_connect(psm2_ep_t ep, int num_of_epid, const psm2_epid_t *array_of_epid,
                                      const int *array_of_epid_mask, psm2_error_t *array_of_errors,
                                      psm2_epaddr_t *array_of_epaddr, int64_t timeout) {
    if (!ep || num_of_epid < 0 || (num_of_epid > 0 && (!array_of_epid || !array_of_errors || !array_of_epaddr)))
        return report(ep, PSM2_PARAM_ERR, "psm2_ep_connect: bad argument");
    Ep &e = *ep;
    std::lock_guard g(e.lock);
    // Upstream's floor of 2 s keeps a short timeout from failing a peer that is merely slow.
    const int64_t floor_ns = 2000000000LL;
    const int64_t env_ns = static_cast<int64_t>(portico::settings::kPsm2ConnectTimeout.get()) * 1000000000LL;
    const int64_t limit = timeout > 0 ? std::max(timeout, floor_ns) : env_ns;
    const uint64_t deadline = limit > 0 ? now_ns() + static_cast<uint64_t>(limit) : 0;
    std::vector<Probe> probes;
    for (int i = 0; i < num_of_epid; ++i) {
        if (array_of_epid_mask && !array_of_epid_mask[i]) continue;
        probes.push_back(Probe{i, {}, false, false, PSM2_EPID_UNKNOWN, 0});
    }
    size_t left = probes.size();
    while (left > 0) {
        const uint64_t now = now_ns();
        for (Probe &p : probes) {
            if (p.done || p.in_flight || now < p.retry_at) continue;
            const psm2_epid_t epid = array_of_epid[p.index];
            if (epid_pid_of(epid) == 0 || epid_ctx_of(epid) >= kMaxEndpoints) {
                p.done = true;
                --left;
                continue;
            }
            if (!device_allows(e, epid)) { // PSM2_DEVICES has no path to it
                p.done = true;
                p.err = PSM2_EPID_UNREACHABLE;
                --left;
                continue;
            }
            const int rc = PtlGet(e.ctl_md, reinterpret_cast<uintptr_t>(&p.id), sizeof p.id,
                                  ck::phys_id(epid_nid_of(epid), epid_pid_of(epid)), ctl_pt(epid_ctx_of(epid)),
                                  kCtlIdentity, 0, &p);
            if (rc == PTL_OK) {
                p.in_flight = true;
            } else {
                p.retry_at = now + 1000000;
            }
        }
        // Replies come to the control queue, where they are told from AM traffic by user_ptr.
        ptl_event_t ev;
        unsigned which = 0;
        const int rc = PtlEQPoll(&e.ctl_eq, 1, 1, &ev, &which);
        if (rc == PTL_OK || rc == PTL_EQ_DROPPED) {
            auto it = std::find_if(probes.begin(), probes.end(), [&](const Probe &p) { return &p == ev.user_ptr; });
            if (ev.type == PTL_EVENT_REPLY && it != probes.end()) {
                Probe &p = *it;
                p.in_flight = false;
                const psm2_epid_t epid = array_of_epid[p.index];
                if (ev.ni_fail_type != PTL_NI_OK || ev.mlength != sizeof p.id || p.id.epid != epid) {
                    p.retry_at = now_ns() + 1000000; // not there (yet): ask again until the deadline
                } else {
                    p.done = true;
                    --left;
                    p.err = std::memcmp(p.id.uuid, e.uuid, sizeof e.uuid) == 0 ? PSM2_OK : PSM2_EPID_INVALID_UUID_KEY;
                }
            } else {
                ctl_event(e, ev);
            }
        }
        drain(e, false);
        if (deadline && now_ns() >= deadline) {
            bool waiting = false;
            for (const Probe &p : probes) waiting = waiting || p.in_flight;
            if (!waiting) break; // an identity read in flight still answers (or fails) promptly
        }
    }
    psm2_error_t overall = PSM2_OK;
    for (const Probe &p : probes) {
        const psm2_error_t err = p.done ? p.err : PSM2_TIMEOUT;
        array_of_errors[p.index] = err == PSM2_TIMEOUT ? PSM2_EPID_UNKNOWN : err;
        if (err == PSM2_OK) {
            psm2_epaddr *a = peer_of(e, array_of_epid[p.index]);
            a->connected = true;
            array_of_epaddr[p.index] = a;
        } else if (overall == PSM2_OK || err == PSM2_TIMEOUT) {
            overall = err;
        }
    }
    if (overall != PSM2_OK) return report(&e, overall, "psm2_ep_connect: not every endpoint could be reached");
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_ep_disconnect2(psm2_ep_t ep, int num_of_epaddr, psm2_epaddr_t *array_of_epaddr,
                                          const int *array_of_epaddr_mask, psm2_error_t *array_of_errors, int mode,
                                          int64_t /*timeout: nothing to tear down on the wire*/) {
    if (!ep || num_of_epaddr < 0 || (num_of_epaddr > 0 && (!array_of_epaddr || !array_of_errors)) ||
        (mode != PSM2_EP_DISCONNECT_GRACEFUL && mode != PSM2_EP_DISCONNECT_FORCE))
        return report(ep, PSM2_PARAM_ERR, "psm2_ep_disconnect: bad argument");
    std::lock_guard g(ep->lock);
    for (int i = 0; i < num_of_epaddr; ++i) {
        if (array_of_epaddr_mask && !array_of_epaddr_mask[i]) continue;
        if (array_of_epaddr[i]) array_of_epaddr[i]->connected = false; // the record stays for messages
        array_of_epaddr[i] = nullptr;
        array_of_errors[i] = PSM2_OK;
    }
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_ep_disconnect(psm2_ep_t ep, int num_of_epaddr, psm2_epaddr_t *array_of_epaddr,
                                         const int *array_of_epaddr_mask, psm2_error_t *array_of_errors,
                                         int64_t timeout) {
    return psm2_ep_disconnect2(ep, num_of_epaddr, array_of_epaddr, array_of_epaddr_mask, array_of_errors,
                               PSM2_EP_DISCONNECT_GRACEFUL, timeout);
}

PSM2_API psm2_error_t psm2_poll(psm2_ep_t ep) {
    if (!ep) return PSM2_PARAM_ERR;
    std::lock_guard g(ep->lock);
    const bool events = drain(*ep);
    return overflow_new_arrivals(ep->mq_overflow) || events ? PSM2_OK : PSM2_OK_NO_PROGRESS;
}

// ---- endpoint addresses -------------------------------------------------------------------------

PSM2_API void psm2_epaddr_setlabel(psm2_epaddr_t epaddr, const char *epaddr_label_string) {
    if (epaddr) epaddr->label = epaddr_label_string;
}
PSM2_API void psm2_epaddr_setctxt(psm2_epaddr_t epaddr, void *ctxt) {
    if (epaddr) epaddr->user_ctxt = ctxt;
}
PSM2_API void *psm2_epaddr_getctxt(psm2_epaddr_t epaddr) { return epaddr ? epaddr->user_ctxt : nullptr; }
PSM2_API psm2_error_t psm2_epaddr_to_epid(psm2_epaddr_t epaddr, psm2_epid_t *epid) {
    if (!epaddr || !epid) return PSM2_PARAM_ERR;
    *epid = epaddr->epid;
    return PSM2_OK;
}

// ---- queries ------------------------------------------------------------------------------------

PSM2_API psm2_error_t psm2_ep_query(int *num_of_epinfo, psm2_epinfo_t *array_of_epinfo) {
    if (!num_of_epinfo || *num_of_epinfo <= 0 || !array_of_epinfo) return PSM2_PARAM_ERR;
    Library &lib = library();
    std::lock_guard g(lib.lock);
    if (lib.open_eps == 0) return PSM2_EP_WAS_CLOSED;
    int n = 0;
    for (Ep *e : lib.eps) {
        if (!e || n >= *num_of_epinfo) continue;
        psm2_epinfo_t &info = array_of_epinfo[n++];
        info = psm2_epinfo_t{};
        info.ep = e;
        info.epid = e->epid;
        std::memcpy(info.uuid, e->uuid, sizeof info.uuid);
        info.jkey = static_cast<uint16_t>(e->uuid[0] | e->uuid[1] << 8);
        char *s = info.uuid_str;
        for (int i = 0; i < 16; ++i)
            s += std::snprintf(s, 4, "%02x%s", e->uuid[i], (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
    }
    *num_of_epinfo = n;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_ep_epid_lookup2(psm2_ep_t ep, psm2_epid_t epid, psm2_epconn_t *epconn) {
    if (!ep || !epconn) return PSM2_PARAM_ERR;
    std::lock_guard g(ep->lock);
    auto it = ep->peers.find(epid);
    if (it == ep->peers.end()) return PSM2_EPID_UNKNOWN;
    epconn->addr = it->second.get();
    epconn->ep = ep;
    epconn->mq = ep->mq_open ? &ep->mq_obj : nullptr;
    return PSM2_OK;
}

PSM2_API psm2_error_t psm2_ep_epid_lookup(psm2_epid_t epid, psm2_epconn_t *epconn) {
    if (!epconn) return PSM2_PARAM_ERR;
    Library &lib = library();
    std::lock_guard g(lib.lock);
    if (lib.open_eps == 0) return PSM2_EP_WAS_CLOSED;
    for (Ep *e : lib.eps)
        if (e && psm2_ep_epid_lookup2(e, epid, epconn) == PSM2_OK) return PSM2_OK;
    return PSM2_EPID_UNKNOWN;
}

// psm2_info_query as opa-psm2 answers it (psm.c): each query takes exactly the number of arguments
// psm2.h lists (else PSM2_PARAM_ERR); the per-connection ones describe the path to that peer.
// Where Portico's values differ from an Omni-Path card's, docs/PSM2.md (Limits and reported
// values) says so.
PSM2_API psm2_error_t psm2_info_query(psm2_info_query_t q, void *out, size_t nargs, psm2_info_query_arg_t args[]) {
    static constexpr size_t kArgs[PSM2_INFO_QUERY_LAST] = {0, 0, 1, 2, 1, 1, 2, 3, 3, 2, 2, 1, 0};
    if (q < 0 || q >= PSM2_INFO_QUERY_LAST) return PSM2_IQ_INVALID_QUERY;
    if (!out || nargs != kArgs[q] || (nargs && !args)) return PSM2_PARAM_ERR;
    auto put_u32 = [&](uint32_t v) {
        std::memcpy(out, &v, sizeof v);
        return PSM2_OK;
    };
    // The path to a connection's peer, as the PSM2_INFO_QUERY_CONFIG bits name it: SELF, AMSH (a
    // peer on this machine), or IPS with PIO and DMA (the network); 0 for a bad connection.
    auto path_of = [&]() -> uint32_t {
        psm2_mq_t mq = args[0].mq;
        psm2_epaddr_t peer = args[1].epaddr;
        if (!mq || !mq->ep || !peer || peer->ep != mq->ep) return 0;
        if (peer->epid == mq->ep->epid) return PSM2_INFO_QUERY_CONFIG_SELF;
        if (same_node(*peer)) return PSM2_INFO_QUERY_CONFIG_AMSH;
        return PSM2_INFO_QUERY_CONFIG_IPS | PSM2_INFO_QUERY_CONFIG_PIO | PSM2_INFO_QUERY_CONFIG_DMA;
    };
    switch (q) {
    case PSM2_INFO_QUERY_NUM_UNITS:
    case PSM2_INFO_QUERY_NUM_PORTS: return put_u32(1);
    case PSM2_INFO_QUERY_UNIT_STATUS:
    case PSM2_INFO_QUERY_UNIT_PORT_STATUS: // ports are numbered from 1, as on the cards
        return put_u32(args[0].unit == 0 && (q == PSM2_INFO_QUERY_UNIT_STATUS || args[1].port == 1) ? 1 : 0);
    case PSM2_INFO_QUERY_NUM_FREE_CONTEXTS:
    case PSM2_INFO_QUERY_NUM_CONTEXTS: {
        if (args[0].unit != 0) return put_u32(0);
        Library &lib = library();
        std::lock_guard g(lib.lock);
        const uint32_t total = kMaxEndpoints;
        return put_u32(q == PSM2_INFO_QUERY_NUM_CONTEXTS ? total : total - static_cast<uint32_t>(lib.open_eps));
    }
    case PSM2_INFO_QUERY_CONFIG: {
        const uint32_t path = path_of();
        return path ? put_u32(path) : PSM2_INTERNAL_ERR;
    }
    case PSM2_INFO_QUERY_THRESH: {
        // opa-psm2 answers threshold queries for network peers only.
        const uint32_t path = path_of();
        if (!(path & PSM2_INFO_QUERY_CONFIG_IPS)) return PSM2_INTERNAL_ERR;
        std::lock_guard g(args[0].mq->ep->lock);
        switch (args[2].mstq) {
        case PSM2_INFO_QUERY_THRESH_IPS_PIO_DMA: return put_u32(16384); // MQ_HFI_THRESH_EGR_SDMA_SQ_XEON
        case PSM2_INFO_QUERY_THRESH_IPS_TINY: return put_u32(8);        // MQ_HFI_THRESH_TINY
        case PSM2_INFO_QUERY_THRESH_IPS_PIO_FRAG_SIZE:
        case PSM2_INFO_QUERY_THRESH_IPS_DMA_FRAG_SIZE: return put_u32(8192); // the MTU
        case PSM2_INFO_QUERY_THRESH_IPS_RNDV: return put_u32(args[0].mq->ep->rndv_net);
        default: return PSM2_INTERNAL_ERR;
        }
    }
    case PSM2_INFO_QUERY_DEVICE_NAME: {
        if (!path_of()) return PSM2_INTERNAL_ERR;
        if (args[2].length == 0) return PSM2_PARAM_ERR;
        std::snprintf(static_cast<char *>(out), args[2].length, "portico_0"); // opa-psm2: "hfi1_0"
        return PSM2_OK;
    }
    case PSM2_INFO_QUERY_MTU: return path_of() ? put_u32(8192) : PSM2_INTERNAL_ERR;
    case PSM2_INFO_QUERY_LINK_SPEED: return path_of() ? put_u32(0) : PSM2_INTERNAL_ERR; // no link to rate
    case PSM2_INFO_QUERY_NETWORK_TYPE: {
        static constexpr char kType[] = "Portico"; // opa-psm2: "Cornelis(TM) OPX"
        if (args[0].length < sizeof kType) return PSM2_INTERNAL_ERR;
        std::memcpy(out, kType, sizeof kType);
        return PSM2_OK;
    }
    case PSM2_INFO_QUERY_FEATURE_MASK: return put_u32(0); // no CUDA
    default: return PSM2_IQ_INVALID_QUERY;
    }
}

// ---- options ------------------------------------------------------------------------------------

PSM2_API psm2_error_t psm2_setopt(psm2_component_t component, const void *component_obj, int optname,
                                  const void *optval, uint64_t optlen) {
    if (!optval) return PSM2_PARAM_ERR;
    switch (component) {
    case PSM2_COMPONENT_CORE:
        if (optname == PSM2_CORE_OPT_DEBUG) return optlen >= sizeof(unsigned) ? PSM2_OK : PSM2_PARAM_ERR;
        if (optname == PSM2_CORE_OPT_EP_CTXT) {
            if (!component_obj || optlen < sizeof(void *)) return PSM2_PARAM_ERR;
            void *ctxt = nullptr;
            std::memcpy(&ctxt, optval, sizeof ctxt);
            psm2_epaddr_setctxt(static_cast<psm2_epaddr_t>(const_cast<void *>(component_obj)), ctxt);
            return PSM2_OK;
        }
        return PSM2_PARAM_ERR;
    case PSM2_COMPONENT_MQ:
        if (!component_obj || optlen < sizeof(uint32_t)) return PSM2_PARAM_ERR;
        return psm2_mq_setopt(static_cast<psm2_mq_t>(const_cast<void *>(component_obj)), optname, optval);
    case PSM2_COMPONENT_AM:
        return optname >= PSM2_AM_OPT_FRAG_SZ && optname <= PSM2_AM_OPT_HANDLERS ? PSM2_OPT_READONLY : PSM2_PARAM_ERR;
    case PSM2_COMPONENT_IB:
        // Service levels are a fabric's; accepted and ignored.
        return optname == PSM2_IB_OPT_DF_SL || optname == PSM2_IB_OPT_EP_SL ? PSM2_OK : PSM2_PARAM_ERR;
    default: return PSM2_PARAM_ERR;
    }
}

PSM2_API psm2_error_t psm2_getopt(psm2_component_t component, const void *component_obj, int optname, void *optval,
                                  uint64_t *optlen) {
    if (!optval || !optlen) return PSM2_PARAM_ERR;
    auto give = [&](const void *v, uint64_t size) {
        if (*optlen < size) {
            *optlen = size;
            return PSM2_NO_MEMORY;
        }
        std::memcpy(optval, v, size);
        *optlen = size;
        return PSM2_OK;
    };
    switch (component) {
    case PSM2_COMPONENT_CORE:
        if (optname == PSM2_CORE_OPT_DEBUG) {
            const auto mask = static_cast<unsigned>(portico::settings::kPsm2TraceMask.get());
            return give(&mask, sizeof mask);
        }
        if (optname == PSM2_CORE_OPT_EP_CTXT) {
            if (!component_obj) return PSM2_PARAM_ERR;
            void *ctxt = psm2_epaddr_getctxt(static_cast<psm2_epaddr_t>(const_cast<void *>(component_obj)));
            return give(&ctxt, sizeof ctxt);
        }
        return PSM2_PARAM_ERR;
    case PSM2_COMPONENT_MQ: {
        if (!component_obj) return PSM2_PARAM_ERR;
        if (*optlen < sizeof(uint32_t)) {
            *optlen = sizeof(uint32_t);
            return PSM2_NO_MEMORY;
        }
        uint32_t v = 0;
        const psm2_error_t err = psm2_mq_getopt(static_cast<psm2_mq_t>(const_cast<void *>(component_obj)), optname, &v);
        if (err != PSM2_OK) return err;
        return give(&v, sizeof v);
    }
    case PSM2_COMPONENT_AM: {
        psm2_am_parameters p{};
        size_t out = 0;
        psm2_am_get_parameters(static_cast<psm2_ep_t>(const_cast<void *>(component_obj)), &p, sizeof p, &out);
        uint32_t v = 0;
        switch (optname) {
        case PSM2_AM_OPT_FRAG_SZ: v = p.max_request_short; break;
        case PSM2_AM_OPT_NARGS: v = p.max_nargs; break;
        case PSM2_AM_OPT_HANDLERS: v = p.max_handlers; break;
        default: return PSM2_PARAM_ERR;
        }
        return give(&v, sizeof v);
    }
    case PSM2_COMPONENT_IB: {
        if (optname != PSM2_IB_OPT_DF_SL && optname != PSM2_IB_OPT_EP_SL) return PSM2_PARAM_ERR;
        const uint8_t sl = 0;
        return give(&sl, sizeof sl);
    }
    default: return PSM2_PARAM_ERR;
    }
}
