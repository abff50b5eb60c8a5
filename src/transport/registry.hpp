// SPDX-License-Identifier: BSD-3-Clause
// The transports this build knows, and which of them an endpoint uses.
//
// A transport is one folder under src/transport/: it defines a TransportInfo (its name, its
// priority, which peers it reaches, how to open it), and its CMakeLists.txt calls
// portico_transport() (cmake/PorticoRecipes.cmake), which adds it to the generated list below.
// Nothing else in Portico knows which transports exist: the engine opens "the endpoint"
// (endpoint.hpp) and the router in there asks the registry.
//
// A transport reads its own settings (PORTICO_SHM_*, PORTICO_TCP_*) when it is opened;
// PORTICO_TRANSPORT (transport_settings.hpp) selects among the registered ones.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "transport/transport.hpp"

namespace portico::transport {

// What a transport is given to open an endpoint.
struct OpenRequest {
    uint32_t nid = 0;
    uint32_t pid = 0;
    // The job's secret, for transports that authenticate their peers. Asking may be a collective
    // over the job (under launchers other than portico-run), so only a transport that needs it asks,
    // and every process of a job that opens that transport asks at the same point.
    std::function<std::string()> job_secret;
    // The job's secret if this process shares one without a collective (PORTICO_JOB_SECRET, a
    // launcher's, a client's proposal, or one already agreed on); empty when it has none to share.
    // Shared memory proves it on every link. When a selected transport needs the job secret
    // (needs_job_secret) open_endpoint asks for it first, so that every transport of an endpoint
    // sees the same one.
    std::function<std::string()> shared_secret;
    // How many processes of the job share this machine, and which of them this is, as far as the
    // launcher said (0 and -1: not known). Transports size their per-peer memory by it.
    uint32_t local_processes = 0;
    int32_t local_rank = -1;
};

struct TransportInfo {
    const char *name;    // what PORTICO_TRANSPORT calls it: "shm"
    int priority;        // `auto` tries the transports from the highest priority down
    const char *summary; // one line, for portico-info
    // Whether an endpoint of this transport at `self` can reach `peer` at all (shared memory: the
    // same machine). The first selected transport that reaches a peer carries all traffic to it.
    bool (*reaches)(PeerId self, PeerId peer);
    // Opens endpoint (nid, pid). Throws std::system_error: EADDRINUSE when the pid is taken on this
    // transport (the caller tries another), anything else when the transport cannot run here.
    std::unique_ptr<Transport> (*open)(const OpenRequest &request);
    // Who holds the pids [first_pid, first_pid + count) of nid on this transport, for the message
    // of an endpoint that cannot have one (PTL_PID_IN_USE): the process of one pid, a summary of a
    // range; empty when it cannot tell. Optional.
    std::string (*holders)(uint32_t nid, uint32_t first_pid, uint32_t count) = nullptr;
    // Whether opening asks for OpenRequest::job_secret (which may be a collective).
    bool needs_job_secret = false;
};

// Every registered transport, highest priority first: the built-in ones and any added with add().
std::vector<const TransportInfo *> registered();
const TransportInfo *find_transport(std::string_view name);
// Registers a transport at run time (Portico's own tests: an in-memory loopback). Not thread-safe
// against a concurrent open_endpoint.
void add_transport(const TransportInfo *info);

// The transports a PORTICO_TRANSPORT value selects, in order of preference, and whether the user
// named them (a named transport that cannot open fails the endpoint; under `auto` it is skipped).
struct Selection {
    std::vector<const TransportInfo *> transports;
    bool named = false;
};
// "auto" or empty: every registered transport by priority; else a comma-separated list of names.
// Returns false with a message naming the registered transports on an unknown or repeated name.
bool select_transports(std::string_view text, Selection *out, std::string *error);

} // namespace portico::transport
