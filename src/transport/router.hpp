// The transports of one endpoint, chosen per peer: shared memory for peers on this machine (same
// nid), TCP for the others. PORTICO_TRANSPORT=tcp sends everything over TCP (to test TCP on one
// machine), =shm keeps to shared memory (peers elsewhere are unreachable).
#pragma once

#include <memory>

#include "transport/shm/shm_transport.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace portico::transport {

enum class TransportMode { Auto, Shm, Tcp };

struct EndpointConfig {
    uint32_t nid = 0;
    uint32_t pid = UINT32_MAX; // UINT32_MAX: any free pid
    TransportMode mode = TransportMode::Auto;
    shm::ShmConfig shm;
    tcp::TcpConfig tcp;
};

// Opens the endpoint (nid, pid) on the transports the mode asks for. The pid is reserved on each
// of them (the shared-memory name and the TCP port); a free one is searched for when pid is
// UINT32_MAX. Throws std::system_error (EADDRINUSE: the pid is taken) or std::invalid_argument.
std::unique_ptr<Transport> open_endpoint(const EndpointConfig &cfg);

// Where PTL_PID_ANY searches: below the TCP port range the kernel hands out to outgoing
// connections (32768 and up by default), so that a listening port rarely collides with one.
inline constexpr uint32_t kFirstAnyPid = 1024;
inline constexpr uint32_t kAnyPidCount = 15360;

} // namespace portico::transport
