// SPDX-License-Identifier: BSD-3-Clause
// Which IPv4 address names this machine: the engine's nid, what TCP listens on, and what
// portico-run advertises to remote ranks. One rule for all of them: an interface named by the
// user is taken as named; otherwise the first interface that is up and not loopback.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace portico {

// The IPv4 address (host byte order) of interface `name`, whatever its state; nullopt, with
// the reason in *why, when there is no such interface or it has no IPv4 address.
std::optional<uint32_t> named_interface_ipv4(const std::string &name, std::string *why);

// The IPv4 address of the first interface that is up and not loopback; nullopt when none is.
std::optional<uint32_t> first_external_ipv4();

// `name`'s address when name is non-empty, else the first external one; 127.0.0.1 when that
// finds nothing (a machine without a network still runs jobs on itself).
uint32_t interface_ipv4(const std::string &name);

// The nid of this process: PORTICO_NID if set (any strtoul base), else the address of
// PORTICO_IFACE, else of the first external interface.
uint32_t local_nid();

// Every IPv4 address of this machine's interfaces, whatever their state.
std::vector<uint32_t> local_ipv4_addresses();

// "a.b.c.d" for a host-order address.
std::string ipv4_text(uint32_t addr);

} // namespace portico
