// SPDX-License-Identifier: BSD-3-Clause
// Who holds a TCP port of this machine, for the message of an endpoint that cannot have its pid
// (PTL_PID_IN_USE). Read from /proc/net/tcp and tcp6 (every socket's local port, owner uid and
// inode) and, where this user may look, /proc/<pid>/fd (which process has that socket).
#pragma once

#include <cstdint>
#include <string>

namespace portico::transport::tcp {

// "uid 65534 (nobody), process 1234 (python3)"; just the uid when the process is not visible to
// this user; empty when no socket of this machine uses the port.
std::string port_holder(uint32_t port);

// Who holds the ports [first, first + count): "uid 65534 (nobody) holds 15360 of them"; empty
// when none is held.
std::string port_range_holders(uint32_t first, uint32_t count);

} // namespace portico::transport::tcp
