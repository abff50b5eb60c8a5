// Which IPv4 address names this machine: the engine's nid, and what TCP listens on.
#pragma once

#include <cstdint>
#include <string>

namespace portico {

// The IPv4 address (host byte order) of interface `iface`, or of the first non-loopback
// interface when `iface` is empty; 127.0.0.1 when there is none.
uint32_t interface_ipv4(const std::string &iface);

// The nid of this process: PORTICO_NID if set (any strtoul base), else the address of
// PORTICO_IFACE, else of the first non-loopback interface.
uint32_t local_nid();

} // namespace portico
