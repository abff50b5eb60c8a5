// SPDX-License-Identifier: BSD-3-Clause
// Settings of the TCP transport (see common/settings.hpp).
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

// At most 65535 - 16383: every pid PTL_PID_ANY may pick (1024..16383, transport/endpoint.hpp)
// must have its port; at least 1: pid 0 must not ask for port 0 (any port).
inline constexpr Number kTcpPortBase{
    "PORTICO_TCP_PORT_BASE", "transport.tcp", 16384, 1, 49152, "a process listens on TCP port base + pid"};
inline constexpr Number kTcpMaxLinks{
    "PORTICO_TCP_MAX_LINKS", "transport.tcp", 4096, 1, UINT64_MAX, "most TCP connections (peers) one interface keeps"};
inline constexpr Number kTcpConnectTimeoutMs{"PORTICO_TCP_CONNECT_TIMEOUT_MS",
                                             "transport.tcp",
                                             30000,
                                             100,
                                             3600000,
                                             "milliseconds to open a connection: connect plus handshake, "
                                             "connecting again while the peer drops it before it is up (busy or "
                                             "slow); a peer not reached in time gets PTL_NI_UNDELIVERABLE"};
inline constexpr Number kTcpKeepaliveS{"PORTICO_TCP_KEEPALIVE_S",
                                       "transport.tcp",
                                       10,
                                       1,
                                       86400,
                                       "seconds of silence before a connection is probed (a vanished machine is "
                                       "found about 25 s later)"};

inline constexpr Number kTcpCoalesceUs{"PORTICO_TCP_COALESCE_US",
                                       "transport.tcp",
                                       10,
                                       0,
                                       1000000,
                                       "a small request sent to a peer less than this many microseconds after the "
                                       "previous one waits to share its system call with the next ones, until the "
                                       "application polls or waits or for at most this long (a lone message, or one "
                                       "answering the peer, never waits); 0: one system call per message"};

inline constexpr const Setting *kTcpSettings[] = {&kTcpPortBase, &kTcpMaxLinks, &kTcpConnectTimeoutMs, &kTcpKeepaliveS,
                                                  &kTcpCoalesceUs};

} // namespace portico::settings
