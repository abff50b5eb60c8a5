// SPDX-License-Identifier: BSD-3-Clause
// portico-info: what this Portals implementation provides, as Appendix B of the Portals 4.3
// specification asks an implementation to state: limits (and how desired limits are negotiated),
// memory use as a function of the limits, status registers, interface ids, the portal table size,
// alignment and atomics; plus the version, the transports, this process's id and every PORTICO_*
// environment variable, and the client libraries' own (from their declarations: every layer
// registers its table, common/settings.hpp).
//
//   portico-info [--json | --markdown]
//
// --markdown prints only the settings table, which is the README's "Environment variables"
// section (the settings.readme test keeps the two equal); it needs no NI.
//
// It uses the public API (portals4.h), and the transport registry for the list of transports this
// build has (the same static library libportals is made of): it opens a physical matching and a physical
// non-matching NI on the default interface and reports what they answer. The facts it cannot ask
// the API for (memory formulas, sizes of the engine's objects) are stated here and must be kept in
// step with the engine (engine.hpp, src/transport/shm); the settings come from the code itself.
// Works without a launcher (logical NIs, which need one, are not opened).
#include "clientkit.hpp"
#include "common/settings.hpp"
#include "transport/shm/shm_settings.hpp"
#include "transport/tcp/tcp_settings.hpp"
#include "transport/transport_settings.hpp"
#include "transport/endpoint.hpp"
#include "transport/registry.hpp"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <portals4.h>

#include "json.hpp"

#ifndef PORTICO_VERSION
#define PORTICO_VERSION "0.0.0"
#endif

namespace {

using portico::info::JsonWriter;

// ---- facts about the engine that the API does not expose ----------------------------------

// Read by the engine for logical NIs (the job's rank map) and portico_runtime.h; set by a PMI-1 launcher.
struct EnvVar {
    const char *name;
    const char *def;
    const char *meaning;
};
const EnvVar kLauncherEnv[] = {
    {"PMI_FD", "(unset)",
     "PMI-1 connection to the launcher (portico-run, mpiexec/hydra); logical NIs and portico_runtime.h need it"},
    {"PMI_RANK", "(unset)", "this process's rank in the job"},
    {"PMI_SIZE", "(unset)", "number of processes in the job"},
};

// Sizes of the engine's bookkeeping, x86-64 / g++ 12 (sizeof in src/engine/engine.hpp and
// src/transport/shm); they change with the code, so they are "roughly".
constexpr uint64_t kLinkFixedBytes = 576; // segment header (64) + 2 ring control blocks (4 cache lines each)
constexpr uint64_t kLinkRxStateBytes = 160;
constexpr uint64_t kNiBytes = 264;
constexpr uint64_t kPtEntryBytes = 96;
constexpr uint64_t kMdBytes = 120;
constexpr uint64_t kEntryBytes = 184 + 24; // Entry + its list node
constexpr uint64_t kUnexpectedBytes = 96 + 16;
constexpr uint64_t kEqBytes = 112;
constexpr uint64_t kCtBytes = 96;
constexpr uint64_t kOpBytes = 88;
constexpr uint64_t kTriggerBytes = 168 + 40; // Trigger + its multimap node
constexpr uint64_t kHandleSlotBytes = 16;
constexpr uint64_t kIovecBytes = sizeof(ptl_iovec_t);

// ---- helpers ---------------------------------------------------------------------------------

using portico::clientkit::rc_name;

std::string dotted(ptl_nid_t nid) {
    in_addr a;
    a.s_addr = htonl(nid);
    char buf[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

std::string hex32(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

std::string human_bytes(uint64_t b) {
    char buf[64];
    if (b >= (1ull << 30) && b % (1ull << 30) == 0)
        std::snprintf(buf, sizeof buf, "%" PRIu64 " GiB", b >> 30);
    else if (b >= (1ull << 20) && b % (1ull << 20) == 0)
        std::snprintf(buf, sizeof buf, "%" PRIu64 " MiB", b >> 20);
    else if (b >= (1ull << 10) && b % (1ull << 10) == 0)
        std::snprintf(buf, sizeof buf, "%" PRIu64 " KiB", b >> 10);
    else if (b >= 10 * 1024)
        std::snprintf(buf, sizeof buf, "%" PRIu64 " B (%.1f KiB)", b, static_cast<double>(b) / 1024);
    else
        std::snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
    return buf;
}

struct Feature {
    unsigned bit;
    const char *name;
    const char *meaning;
};
const Feature kFeatures[] = {
    {PTL_TARGET_BIND_INACCESSIBLE, "PTL_TARGET_BIND_INACCESSIBLE",
     "LEs/MEs may describe memory that is not (yet) accessible; faults become PTL_NI_SEGV"},
    {PTL_TOTAL_DATA_ORDERING, "PTL_TOTAL_DATA_ORDERING", "data of successive messages is placed in order"},
    {PTL_COHERENT_ATOMICS, "PTL_COHERENT_ATOMICS",
     "Portals atomics coherent with host accesses; not claimed: call PtlAtomicSync() before the host touches "
     "data that Portals atomics update"},
};

struct Register {
    ptl_sr_index_t index;
    const char *name;
    const char *meaning;
};
const Register kRegisters[] = {
    {PTL_SR_DROP_COUNT, "PTL_SR_DROP_COUNT",
     "messages dropped at this NI (PT not allocated or disabled, no matching entry, unexpected headers "
     "exhausted, an ack for a released MD, a reply nobody waits for)"},
    {PTL_SR_PERMISSION_VIOLATIONS, "PTL_SR_PERMISSION_VIOLATIONS", "messages refused by an entry's uid check"},
    {PTL_SR_OPERATION_VIOLATIONS, "PTL_SR_OPERATION_VIOLATIONS",
     "messages refused because the matched entry does not allow the operation (OP_PUT/OP_GET)"},
    {PTL_SR_MALFORMED_MESSAGES, "PTL_SR_MALFORMED_MESSAGES",
     "Portico extension: frames from the network dropped as malformed (bad headers, corrupt rings, "
     "stray continuation frames); a bad header or a corrupt ring also closes the link to that peer"},
    {PTL_SR_REFUSED_CONNECTIONS, "PTL_SR_REFUSED_CONNECTIONS",
     "Portico extension: connections refused (another user's process on shared memory; on TCP a peer "
     "without the job secret, one addressed to another endpoint, or one that never finished its handshake)"},
};

struct LimitRow {
    const char *field;
    uint64_t matching, non_matching;
    const char *note;
};

struct Ni {
    ptl_handle_ni_t handle = PTL_INVALID_HANDLE;
    ptl_ni_limits_t limits{};
    bool open = false;
};

int open_ni(unsigned options, Ni *out) {
    int rc = PtlNIInit(PTL_IFACE_DEFAULT, options | PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr, &out->limits, &out->handle);
    out->open = rc == PTL_OK;
    return rc;
}

std::vector<LimitRow> limit_rows(const ptl_ni_limits_t &m, const ptl_ni_limits_t &n) {
    auto u = [](int v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); };
    return {
        {"max_entries", u(m.max_entries), u(n.max_entries), "LEs/MEs per NI; desired 1..default lowers it"},
        {"max_unexpected_headers", u(m.max_unexpected_headers), u(n.max_unexpected_headers),
         "checked per portal table entry; desired 1..default lowers it"},
        {"max_mds", u(m.max_mds), u(n.max_mds), "desired 1..default lowers it"},
        {"max_cts", u(m.max_cts), u(n.max_cts), "desired 1..default lowers it"},
        {"max_eqs", u(m.max_eqs), u(n.max_eqs), "desired 1..default lowers it"},
        {"max_pt_index", u(m.max_pt_index), u(n.max_pt_index),
         "desired 249..default lowers it (never below the spec's 250 entries)"},
        {"max_iovecs", u(m.max_iovecs), u(n.max_iovecs), "desired 1..default lowers it"},
        {"max_list_size", u(m.max_list_size), u(n.max_list_size),
         "per list of one portal table entry; desired 1..default lowers it"},
        {"max_triggered_ops", u(m.max_triggered_ops), u(n.max_triggered_ops),
         "pending triggered operations per NI; desired 1..default lowers it"},
        {"max_msg_size", m.max_msg_size, n.max_msg_size, "PTL_SIZE_MAX; desired 1..default lowers it"},
        {"max_atomic_size", m.max_atomic_size, n.max_atomic_size,
         "desired 32..default lowers it; never above one transport frame (minus a 32-byte operand)"},
        {"max_fetch_atomic_size", m.max_fetch_atomic_size, n.max_fetch_atomic_size, "as max_atomic_size"},
        {"max_waw_ordered_size", m.max_waw_ordered_size, n.max_waw_ordered_size,
         "messages are applied whole and in order per link; fixed"},
        {"max_war_ordered_size", m.max_war_ordered_size, n.max_war_ordered_size, "as above; fixed"},
        {"max_volatile_size", m.max_volatile_size, n.max_volatile_size, "desired 1..default lowers it"},
        {"features", m.features, n.features, "bit mask, see below; fixed"},
    };
}

std::string features_string(unsigned f) {
    std::string s;
    for (const Feature &x : kFeatures)
        if (f & x.bit) s += (s.empty() ? "" : " | ") + std::string(x.name);
    return s.empty() ? "0" : s;
}

std::string limit_value(const char *field, uint64_t v) {
    if (v == PTL_SIZE_MAX) return "PTL_SIZE_MAX";
    char buf[32];
    if (std::strcmp(field, "features") == 0)
        std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    else
        std::snprintf(buf, sizeof buf, "%" PRIu64, v);
    return buf;
}

// ---- the report ------------------------------------------------------------------------------

struct Memory {
    const char *what;
    std::string formula;
    uint64_t bytes; // with the current limits/settings, 0 if it depends on use only
};

struct Report {
    ptl_process_t id{};
    Ni matching, non_matching;
    std::vector<LimitRow> limits;
    uint64_t pt_entries = 0;
    ptl_sr_value_t sr[PTL_SR_LAST] = {};
    uint64_t ring_bytes = 0;
    std::vector<Memory> memory;
    // Interface ids, as probed: 0 must give the same NI as PTL_IFACE_DEFAULT, 1 must be refused.
    bool zero_is_default = false;
    int rc_iface_one = PTL_OK;
};

const char *kInterfaceNote =
    "one interface: PTL_IFACE_DEFAULT and 0 name the same, single software interface (shared memory on "
    "this machine); any other interface id is PTL_ARG_INVALID. The four NIs (matching/non-matching x "
    "logical/physical) of a process share one endpoint and therefore one nid/pid";
// What transport/endpoint.cpp and the TCP transport do with pids, for this process's port base.
std::string pid_note() {
    const uint64_t first = portico::transport::kFirstAnyPid;
    const uint64_t last = first + portico::transport::kAnyPidCount - 1;
    const uint64_t base = portico::settings::kTcpPortBase.resolve().value; // reported by the transport
    return "PTL_PID_ANY picks a free pid in " + std::to_string(first) + ".." + std::to_string(last) +
           " (probing from " + std::to_string(first) + " + OS pid mod " +
           std::to_string(portico::transport::kAnyPidCount) +
           "); a requested pid must be free on this machine (else PTL_PID_IN_USE) and at most " +
           std::to_string(65535 - base) + " when TCP is selected (its port, PORTICO_TCP_PORT_BASE " +
           std::to_string(base) + " + pid, must exist), below PTL_PID_MAX (65535) on shared memory alone";
}
const char *kAlignmentNote =
    "no alignment requirement for MD, LE or ME buffers, offsets or lengths. Payloads are copied with "
    "memcpy through the shared-memory rings, or once with process_vm_readv/writev for contiguous "
    "puts/gets of at least PORTICO_SHM_SINGLE_COPY_BYTES; unaligned buffers are as fast as aligned ones "
    "(beyond what memcpy itself does with alignment)";
const char *kAtomicsNote =
    "all PtlAtomic/PtlFetchAtomic/PtlSwap operations and datatypes of the spec; applied by the target's "
    "engine under its lock (atomic with respect to each other and to every other Portals operation on that "
    "process). Unaligned atomics are supported at the same speed: items are loaded and stored with memcpy. "
    "PTL_COHERENT_ATOMICS is not claimed: call PtlAtomicSync() before host code reads or writes data that "
    "Portals atomics update";

void build_memory(Report &r) {
    const ptl_ni_limits_t &l = r.matching.limits;
    const uint64_t link = 2 * r.ring_bytes + kLinkFixedBytes;
    r.memory = {
        {"per shared-memory link",
         "2 x PORTICO_SHM_RING_BYTES + " + std::to_string(kLinkFixedBytes) + " B (memfd) + " +
             std::to_string(kLinkRxStateBytes) +
             " B receive state per side. One link per pair of processes "
             "that talk (mapped by both); two if both start talking at the same moment",
         link},
        {"per interface (endpoint)",
         "1 progress thread, 1 listening Unix socket, 1 epoll fd, 1 eventfd; per link 1 socket", 0},
        {"per NI",
         std::to_string(kNiBytes) + " B + (max_pt_index+1) x " + std::to_string(kPtEntryBytes) + " B portal table",
         kNiBytes + (static_cast<uint64_t>(l.max_pt_index) + 1) * kPtEntryBytes},
        {"per EQ",
         "up to count x " + std::to_string(sizeof(ptl_event_t) + sizeof(uint64_t)) +
             " B (an event and its sequence word; 256 at first, grown as events are pending at once) + " +
             std::to_string(kEqBytes + kHandleSlotBytes) + " B",
         0},
        {"per CT", std::to_string(kCtBytes + kHandleSlotBytes) + " B", kCtBytes + kHandleSlotBytes},
        {"per MD",
         "~" + std::to_string(kMdBytes + kHandleSlotBytes) + " B + " + std::to_string(kIovecBytes) +
             " B per iovec (PTL_IOVEC lists are copied)",
         kMdBytes + kHandleSlotBytes},
        {"per LE/ME",
         "~" + std::to_string(kEntryBytes + kHandleSlotBytes) + " B + " + std::to_string(kIovecBytes) + " B per iovec",
         kEntryBytes + kHandleSlotBytes},
        {"per unexpected header", "~" + std::to_string(kUnexpectedBytes) + " B (the data stays in the overflow entry)",
         kUnexpectedBytes},
        {"per operation in flight",
         "~" + std::to_string(kOpBytes) + " B (until its SEND/ACK/REPLY; the table keeps its high-water mark)",
         kOpBytes},
        {"per pending triggered operation", "~" + std::to_string(kTriggerBytes) + " B (up to max_triggered_ops)",
         kTriggerBytes},
        {"messages waiting for ring room",
         "acks, replies and PTL_MD_VOLATILE puts (<= max_volatile_size) are copied to the heap; other puts "
         "wait without a copy",
         0},
    };
}

using portico::settings::Setting;
using portico::settings::type_name;

template <typename F> void for_each_setting(F f) {
    for (auto table : portico::settings::tables())
        for (const Setting *x : table) f(*x);
}

std::string markdown_cell(std::string s) {
    // A '|' would end the cell (the choices are written "auto|shm|tcp").
    for (size_t i; (i = s.find('|')) != std::string::npos;) s.replace(i, 1, ", ");
    return s;
}

// The README's settings section: printed without opening an NI, so that it is the same on every
// machine and with any environment (no current values).
void print_markdown() {
    std::printf("<!-- generated by `portico-info --markdown` from the settings' declarations; do not edit -->\n\n"
                "Numbers are decimal, `0x` hex or `0` octal, optionally with a `K`, `M`, `G` or `T` suffix (x 1024), "
                "which may be followed by `B` or `iB`; "
                "booleans are `0`/`1`, `yes`/`no`, `true`/`false` or `on`/`off`; unset and empty mean the "
                "default. A bad value is reported on stderr (once per variable) and replaced by the default "
                "(not a value of the type) or the nearest valid value (out of range); `PORTICO_NID` that is not "
                "an address and `PORTICO_IFACE` that names no interface with an IPv4 address are reported and "
                "ignored (the nid then comes from the first non-loopback interface); a bad `PORTICO_TRANSPORT` "
                "fails `PtlNIInit`. `portico-info` shows the values set and whether they are valid.\n\n"
                "| variable | layer | type | default | range | meaning |\n"
                "| --- | --- | --- | --- | --- | --- |\n");
    for_each_setting([](const Setting &x) {
        const std::string def = x.default_text(), range = x.range_text();
        std::printf("| `%s` | %s | %s | %s | %s | %s |\n", x.name, x.layer, type_name(x.type),
                    def.empty() ? "—" : markdown_cell(def).c_str(), markdown_cell(range).c_str(),
                    markdown_cell(x.description).c_str());
    });
}

void print_text(const Report &r) {
    std::printf("Portico %s, an implementation of the Portals %d.%d network API\n", PORTICO_VERSION, PTL_MAJOR_VERSION,
                PTL_MINOR_VERSION);
    std::printf("  API version: PTL_MAJOR_VERSION %d, PTL_MINOR_VERSION %d\n\n", PTL_MAJOR_VERSION, PTL_MINOR_VERSION);

    std::printf("Transports (registered, by priority; PORTICO_TRANSPORT selects: %s)\n",
                portico::settings::kTransport.get().c_str());
    for (const portico::transport::TransportInfo *t : portico::transport::registered())
        std::printf("  %-5s priority %-4d %s\n", t->name, t->priority, t->summary);
    std::printf("  shm sends single copy (process_vm_readv/writev) from %s\n\n",
                human_bytes(portico::settings::kShmSingleCopyBytes.get()).c_str());

    std::printf("Network interface\n");
    std::printf("  interface ids: PTL_IFACE_DEFAULT (0x%08x) and 0\n", PTL_IFACE_DEFAULT);
    std::printf("    probed: interface 0 %s PTL_IFACE_DEFAULT; interface 1 answers %s\n",
                r.zero_is_default ? "is the same NI as" : "is NOT the same NI as", rc_name(r.rc_iface_one));
    std::printf("    %s\n", kInterfaceNote);
    std::printf("  this process: nid %s (%s), pid %u\n", dotted(r.id.phys.nid).c_str(), hex32(r.id.phys.nid).c_str(),
                r.id.phys.pid);
    std::printf("    nid: the machine's IPv4 address (PORTICO_IFACE, PORTICO_NID); pid: %s\n\n", pid_note().c_str());

    std::printf("Limits (PtlNIInit with desired = NULL; a desired value lowers a limit, never raises it)\n");
    std::printf("  %-24s %-22s %-22s %s\n", "field", "matching", "non-matching", "notes");
    for (const LimitRow &row : r.limits)
        std::printf("  %-24s %-22s %-22s %s\n", row.field, limit_value(row.field, row.matching).c_str(),
                    limit_value(row.field, row.non_matching).c_str(), row.note);
    std::printf("  Desired values of 0 or below, or above the default, are ignored (the default is kept). The\n"
                "  defaults come from PORTICO_MAX_* (see Environment).\n");
    std::printf("  features (matching): %s\n", features_string(r.matching.limits.features).c_str());
    for (const Feature &f : kFeatures)
        std::printf("    %-30s %-3s %s\n", f.name, (r.matching.limits.features & f.bit) ? "yes" : "no", f.meaning);
    std::printf("\nPortal table: %" PRIu64
                " entries (indexes 0..%d = max_pt_index+1; the spec asks for at least 250)\n\n",
                r.pt_entries, r.matching.limits.max_pt_index);

    std::printf("Status registers (PtlNIStatus; value now, on this process's matching NI)\n");
    for (const Register &reg : kRegisters)
        std::printf("  %d %-30s %" PRId64 "  %s\n", static_cast<int>(reg.index), reg.name, r.sr[reg.index],
                    reg.meaning);
    std::printf("  indexes 0..%d are valid (PTL_SR_LAST = %d); others: PTL_ARG_INVALID\n\n", PTL_SR_LAST - 1,
                PTL_SR_LAST);

    std::printf("Alignment\n  %s\n", kAlignmentNote);
    std::printf("Atomics\n  %s\n\n", kAtomicsNote);

    std::printf("Memory use (PORTICO_SHM_RING_BYTES = %s now)\n", human_bytes(r.ring_bytes).c_str());
    for (const Memory &m : r.memory) {
        std::printf("  %-32s %s", m.what, m.formula.c_str());
        if (m.bytes) std::printf("  [now: %s]", human_bytes(m.bytes).c_str());
        std::printf("\n");
    }
    std::printf("  Nothing scales with the max_* limits until it is used: they only cap counts. EQ rings are\n"
                "  allocated whole at PtlEQAlloc, the portal table at PtlNIInit.\n\n");

    std::printf("Environment (every PORTICO_* variable; numbers: decimal, 0x hex, K/M/G suffixes)\n");
    for_each_setting([](const Setting &x) {
        const std::string def = x.default_text(), range = x.range_text();
        std::printf("  %-31s %-13s %-7s default %s%s%s\n", x.name, x.layer, type_name(x.type),
                    def.empty() ? "(unset)" : def.c_str(), range.empty() ? "" : "; ", range.c_str());
        std::printf("      %s\n", x.description);
        if (const char *v = x.raw()) {
            const std::string error = x.check(v);
            std::printf("      set: %s%s%s\n", v, error.empty() ? "" : "  ERROR: ", error.c_str());
        }
    });
    std::printf("Set by a PMI-1 launcher (portico-run), read for logical NIs\n");
    for (const EnvVar &e : kLauncherEnv) {
        const char *v = std::getenv(e.name);
        std::printf("  %-31s default %-9s %s%s%s%s\n", e.name, e.def, e.meaning, v ? " [set: " : "", v ? v : "",
                    v ? "]" : "");
    }
}

// Which Portico and Portals API this is, its transports, this process and its interfaces.
void json_identity(JsonWriter &j, const Report &r) {
    j.kv("portico_version", PORTICO_VERSION);
    j.key("api_version");
    j.begin_object();
    j.kv("major", PTL_MAJOR_VERSION);
    j.kv("minor", PTL_MINOR_VERSION);
    j.end_object();

    j.key("transports");
    j.begin_array();
    for (const portico::transport::TransportInfo *t : portico::transport::registered()) {
        j.begin_object();
        j.kv("name", t->name);
        j.kv("priority", static_cast<int64_t>(t->priority));
        j.kv("summary", t->summary);
        if (std::strcmp(t->name, "shm") == 0) j.kv("single_copy_bytes", portico::settings::kShmSingleCopyBytes.get());
        j.end_object();
    }
    j.end_array();
    j.kv("transport_selection", portico::settings::kTransport.get());

    j.key("process");
    j.begin_object();
    j.kv("nid", dotted(r.id.phys.nid));
    j.kv("nid_hex", hex32(r.id.phys.nid));
    j.kv("nid_value", static_cast<uint64_t>(r.id.phys.nid));
    j.kv("pid", static_cast<uint64_t>(r.id.phys.pid));
    j.kv("pid_note", pid_note());
    j.end_object();

    j.key("interfaces");
    j.begin_object();
    j.key("accepted_ids");
    j.begin_array();
    j.value(static_cast<uint64_t>(PTL_IFACE_DEFAULT));
    j.value(static_cast<uint64_t>(0));
    j.end_array();
    j.kv("count", static_cast<uint64_t>(1));
    j.kv("probed_zero_is_default", r.zero_is_default);
    j.kv("probed_iface_1", rc_name(r.rc_iface_one));
    j.kv("note", kInterfaceNote);
    j.end_object();
}

// The NI limits of both matching kinds, with what each limit means and how it is negotiated.
void json_limits(JsonWriter &j, const Report &r) {
    j.key("limits");
    j.begin_object();
    for (int which = 0; which < 2; ++which) {
        j.key(which == 0 ? "matching" : "non_matching");
        j.begin_object();
        for (const LimitRow &row : r.limits) j.kv(row.field, which == 0 ? row.matching : row.non_matching);
        j.key("features_names");
        j.begin_array();
        const unsigned f = which == 0 ? r.matching.limits.features : r.non_matching.limits.features;
        for (const Feature &x : kFeatures)
            if (f & x.bit) j.value(x.name);
        j.end_array();
        j.end_object();
    }
    j.key("notes");
    j.begin_object();
    for (const LimitRow &row : r.limits) j.kv(row.field, row.note);
    j.end_object();
    j.kv("negotiation", "a desired value lowers a limit (within the ranges in notes); 0, negative or larger "
                        "values keep the default; defaults come from PORTICO_MAX_*");
    j.end_object();
}

// Features, portal table size, status registers, and the alignment and atomics notes.
void json_features_and_registers(JsonWriter &j, const Report &r) {
    j.key("features");
    j.begin_array();
    for (const Feature &x : kFeatures) {
        j.begin_object();
        j.kv("name", x.name);
        j.kv("bit", static_cast<uint64_t>(x.bit));
        j.kv("supported", (r.matching.limits.features & x.bit) != 0);
        j.kv("meaning", x.meaning);
        j.end_object();
    }
    j.end_array();

    j.kv("portal_table_entries", r.pt_entries);

    j.key("status_registers");
    j.begin_array();
    for (const Register &reg : kRegisters) {
        j.begin_object();
        j.kv("index", static_cast<uint64_t>(reg.index));
        j.kv("name", reg.name);
        j.kv("extension", reg.index > PTL_SR_OPERATION_VIOLATIONS);
        j.kv("value", static_cast<int64_t>(r.sr[reg.index]));
        j.kv("meaning", reg.meaning);
        j.end_object();
    }
    j.end_array();

    j.kv("alignment", kAlignmentNote);
    j.kv("atomics", kAtomicsNote);
}

// What Portico allocates, per object, with the sizes of this configuration.
void json_memory(JsonWriter &j, const Report &r) {
    j.key("memory");
    j.begin_object();
    j.kv("shm_ring_bytes", r.ring_bytes);
    j.key("items");
    j.begin_array();
    for (const Memory &m : r.memory) {
        j.begin_object();
        j.kv("what", m.what);
        j.kv("formula", m.formula);
        if (m.bytes) j.kv("bytes_now", m.bytes);
        j.end_object();
    }
    j.end_array();
    j.end_object();
}

// Every setting Portico reads (declared, with its value here) and the launcher's variables.
void json_environment(JsonWriter &j) {
    j.key("environment");
    j.begin_array();
    for_each_setting([&j](const Setting &x) {
        j.begin_object();
        j.kv("name", x.name);
        j.kv("type", type_name(x.type));
        j.kv("default", x.default_text());
        j.kv("range", x.range_text());
        j.kv("description", x.description);
        j.kv("layer", x.layer);
        if (const char *v = x.raw()) {
            j.kv("value", v);
            const std::string error = x.check(v);
            if (!error.empty()) j.kv("error", error);
        } else {
            j.kv_null("value");
        }
        j.end_object();
    });
    j.end_array();
    j.key("launcher_environment");
    j.begin_array();
    for (const EnvVar &e : kLauncherEnv) {
        j.begin_object();
        j.kv("name", e.name);
        j.kv("meaning", e.meaning);
        const char *v = std::getenv(e.name);
        if (v)
            j.kv("value", v);
        else
            j.kv_null("value");
        j.end_object();
    }
    j.end_array();
}

// The report as one JSON object (--json): the same content as the text form, one key per part.
void print_json(const Report &r) {
    JsonWriter j;
    j.begin_object();
    json_identity(j, r);
    json_limits(j, r);
    json_features_and_registers(j, r);
    json_memory(j, r);
    json_environment(j);
    j.end_object();
    std::printf("%s\n", j.str().c_str());
}

} // namespace

int main(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (std::strcmp(argv[i], "--markdown") == 0) {
            print_markdown();
            return 0;
        } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf("usage: portico-info [--json | --markdown]\n\n"
                        "Prints what this Portals implementation provides: version, transports, this process's\n"
                        "nid/pid, NI limits, features, status registers, interface ids, portal table size,\n"
                        "alignment, memory use and every PORTICO_* environment variable. --markdown prints only\n"
                        "the variables, as the README's table.\n");
            return 0;
        } else if (std::strcmp(argv[i], "--version") == 0) {
            std::printf("portico-info (Portico) %s\n", PORTICO_VERSION);
            return 0;
        } else {
            std::fprintf(stderr, "portico-info: unknown argument '%s'\nusage: portico-info [--json | --markdown]\n",
                         argv[i]);
            return 2;
        }
    }

    int rc = PtlInit();
    if (rc != PTL_OK) {
        std::fprintf(stderr, "portico-info: PtlInit failed: %s (%d)\n", rc_name(rc), rc);
        return 1;
    }
    Report r;
    int status = 0;
    if ((rc = open_ni(PTL_NI_MATCHING, &r.matching)) != PTL_OK) {
        std::fprintf(stderr, "portico-info: PtlNIInit(matching, physical) failed: %s (%d)\n", rc_name(rc), rc);
        status = 1;
    } else if ((rc = open_ni(PTL_NI_NO_MATCHING, &r.non_matching)) != PTL_OK) {
        std::fprintf(stderr, "portico-info: PtlNIInit(non-matching, physical) failed: %s (%d)\n", rc_name(rc), rc);
        status = 1;
    } else if ((rc = PtlGetPhysId(r.matching.handle, &r.id)) != PTL_OK) {
        std::fprintf(stderr, "portico-info: PtlGetPhysId failed: %s (%d)\n", rc_name(rc), rc);
        status = 1;
    }
    if (status == 0) {
        ptl_handle_ni_t h;
        if (PtlNIInit(0, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr, nullptr, &h) == PTL_OK) {
            r.zero_is_default = PtlHandleIsEqual(h, r.matching.handle) != 0;
            PtlNIFini(h);
        }
        r.rc_iface_one = PtlNIInit(1, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr, nullptr, &h);
        if (r.rc_iface_one == PTL_OK) PtlNIFini(h);
        for (int i = 0; i < PTL_SR_LAST; ++i) {
            rc = PtlNIStatus(r.matching.handle, static_cast<ptl_sr_index_t>(i), &r.sr[i]);
            if (rc != PTL_OK) {
                std::fprintf(stderr, "portico-info: PtlNIStatus(%d) failed: %s (%d)\n", i, rc_name(rc), rc);
                status = 1;
            }
        }
    }
    if (status == 0) {
        r.limits = limit_rows(r.matching.limits, r.non_matching.limits);
        r.pt_entries = static_cast<uint64_t>(r.matching.limits.max_pt_index) + 1;
        r.ring_bytes = portico::settings::kShmRingBytes.get();
        build_memory(r);
        if (json)
            print_json(r);
        else
            print_text(r);
    }
    if (r.non_matching.open) PtlNIFini(r.non_matching.handle);
    if (r.matching.open) PtlNIFini(r.matching.handle);
    PtlFini();
    return status;
}
