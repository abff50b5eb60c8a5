// SPDX-License-Identifier: BSD-3-Clause
// The TCP side of portico-run's PMI server for ranks on other machines: the listening socket,
// the address advertised to the ranks (PMI_PORT=addr:port), and the list of peer addresses
// allowed to connect. IPv4 only (MPICH's simple PMI client splits PMI_PORT at the first colon).
#pragma once

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/socket.h>

namespace portico::run {

class NetError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct PmiListener {
    int fd = -1;            // non-blocking, close-on-exec, listening
    std::string address;    // advertised IPv4 address (dotted quad)
    std::uint16_t port = 0; // the ephemeral port
};

// Listens on `bind_addr` (a host name or IPv4 address; "" = the IPv4 address of interface
// `iface` when that is non-empty, else INADDR_ANY), ephemeral port. With INADDR_ANY the
// advertised address is that of the first non-loopback IPv4 interface that is up (127.0.0.1,
// with a warning, when there is none). Warnings are appended to `warnings`. Throws NetError.
PmiListener open_pmi_listener(const std::string &bind_addr, const std::string &iface, int backlog,
                              std::vector<std::string> &warnings);

// IPv4 address of interface `name`, or "" (and the reason in `why`).
std::string interface_ipv4(const std::string &name, std::string &why);

// Peers allowed to connect to the PMI port: every address of this machine (127.0.0.0/8 and the
// addresses of all interfaces) plus the addresses the job's hosts resolve to.
class PeerAllowList {
public:
    void add_local_addresses();
    // Adds the IPv4 addresses of `host` ("user@" is stripped). False (reason in `why`) when it
    // does not resolve to any.
    bool add_host(const std::string &host, std::string &why);
    bool allowed(const sockaddr_storage &peer) const;

private:
    std::set<std::uint32_t> v4_; // host byte order
};

// "1.2.3.4:567" (or the IPv6 form) for messages.
std::string format_peer(const sockaddr_storage &peer);

} // namespace portico::run
