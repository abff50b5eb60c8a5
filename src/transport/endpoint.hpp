// SPDX-License-Identifier: BSD-3-Clause
// An endpoint's transports: PORTICO_TRANSPORT selects among the registered ones (registry.hpp),
// and every peer is served by the first selected transport that reaches it (shared memory for the
// peers on this machine, TCP for the others, by default).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "transport/transport.hpp"

namespace portico::transport {

struct EndpointRequest {
    uint32_t nid = 0;
    uint32_t pid = UINT32_MAX; // UINT32_MAX: any free pid
    // "auto", or a comma-separated list of transport names; empty: PORTICO_TRANSPORT's value, or
    // else choose_transports's.
    std::string selection;
    std::function<std::string()> job_secret;    // see OpenRequest
    std::function<std::string()> shared_secret; // see OpenRequest
    uint32_t local_processes = 0;               // see OpenRequest
    int32_t local_rank = -1;
};

// Opens the endpoint (nid, pid) on the selected transports. The pid is reserved on each of them (the
// shared-memory name and the TCP port, say); a free one is searched for when pid is UINT32_MAX.
// Throws std::system_error (EADDRINUSE: the pid is taken) or std::invalid_argument (a selection
// naming no registered transport).
std::unique_ptr<Transport> open_endpoint(const EndpointRequest &request);

// A client library's choice of transports (portico_set_transport), for the endpoints opened
// after it whose request names none: PORTICO_TRANSPORT, when set, wins over it. Kept here, not
// written to the environment, where it would reach every other client of the process and its
// children.
enum class Choice : uint8_t { taken, environment_wins, invalid };
Choice choose_transports(std::string_view selection, std::string *error);

// Where PTL_PID_ANY searches: below the TCP port range the kernel hands out to outgoing
// connections (32768 and up by default), so that a listening port rarely collides with one.
inline constexpr uint32_t kFirstAnyPid = 1024;
inline constexpr uint32_t kAnyPidCount = 15360;

} // namespace portico::transport
