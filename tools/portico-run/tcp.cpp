// SPDX-License-Identifier: BSD-3-Clause
// PMI over TCP: listener, advertised address, allowed peers (see tcp.hpp).
#include "tcp.hpp"

#include "common/netif.hpp"

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

namespace portico::run {
namespace {

std::string ntop4(const in_addr &a) {
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

// Resolves `host` to its IPv4 addresses (numeric or by name).
std::vector<in_addr> resolve_ipv4(const std::string &host, std::string &why) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    std::vector<in_addr> out;
    if (rc != 0) {
        why = rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : ::gai_strerror(rc);
        return out;
    }
    for (addrinfo *a = res; a != nullptr; a = a->ai_next)
        if (a->ai_family == AF_INET) out.push_back(reinterpret_cast<const sockaddr_in *>(a->ai_addr)->sin_addr);
    ::freeaddrinfo(res);
    if (out.empty()) why = "no IPv4 address";
    return out;
}

} // namespace

std::string interface_ipv4(const std::string &name, std::string &why) {
    const std::optional<std::uint32_t> a = named_interface_ipv4(name, &why);
    return a ? ipv4_text(*a) : std::string();
}

PmiListener open_pmi_listener(const std::string &bind_addr, const std::string &iface, int backlog,
                              std::vector<std::string> &warnings) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    std::string advertised;
    if (!bind_addr.empty()) {
        std::string why;
        std::vector<in_addr> addrs = resolve_ipv4(bind_addr, why);
        if (addrs.empty()) throw NetError("PMI address '" + bind_addr + "': " + why);
        sa.sin_addr = addrs.front();
        advertised = ntop4(sa.sin_addr);
    } else if (!iface.empty()) {
        std::string why;
        advertised = interface_ipv4(iface, why);
        if (advertised.empty()) throw NetError("PORTICO_IFACE=" + iface + ": " + why);
        ::inet_pton(AF_INET, advertised.c_str(), &sa.sin_addr);
    }

    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw NetError(std::string("socket: ") + std::strerror(errno));
    auto fail = [&](const std::string &what) {
        int e = errno;
        ::close(fd);
        return NetError(what + ": " + std::strerror(e));
    };
    if (::bind(fd, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) != 0)
        throw fail("cannot bind the PMI socket to " + ntop4(sa.sin_addr));
    if (::listen(fd, backlog) != 0) throw fail("listen");
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &len) != 0) throw fail("getsockname");

    if (advertised.empty()) {
        if (const std::optional<std::uint32_t> a = first_external_ipv4()) advertised = ipv4_text(*a);
        if (advertised.empty()) {
            advertised = "127.0.0.1";
            warnings.push_back("no non-loopback IPv4 interface is up; advertising the PMI port "
                               "on 127.0.0.1, which only ranks on this machine can reach "
                               "(use --pmi-addr or PORTICO_IFACE)");
        }
    }
    PmiListener l;
    l.fd = fd;
    l.address = advertised;
    l.port = ntohs(bound.sin_port);
    return l;
}

void PeerAllowList::add_local_addresses() {
    for (std::uint32_t a : local_ipv4_addresses()) v4_.insert(a);
}

bool PeerAllowList::add_host(const std::string &host, std::string &why) {
    std::string name = host.substr(host.find('@') == std::string::npos ? 0 : host.find('@') + 1);
    std::vector<in_addr> addrs = resolve_ipv4(name, why);
    for (const in_addr &a : addrs) v4_.insert(ntohl(a.s_addr));
    return !addrs.empty();
}

bool PeerAllowList::allowed(const sockaddr_storage &peer) const {
    std::uint32_t a;
    if (peer.ss_family == AF_INET) {
        a = ntohl(reinterpret_cast<const sockaddr_in *>(&peer)->sin_addr.s_addr);
    } else if (peer.ss_family == AF_INET6) {
        const in6_addr &a6 = reinterpret_cast<const sockaddr_in6 *>(&peer)->sin6_addr;
        if (!IN6_IS_ADDR_V4MAPPED(&a6)) return false;
        std::memcpy(&a, &a6.s6_addr[12], 4);
        a = ntohl(a);
    } else {
        return false;
    }
    if ((a >> 24) == 127) return true;
    return v4_.count(a) != 0;
}

std::string format_peer(const sockaddr_storage &peer) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (peer.ss_family == AF_INET) {
        const auto *s = reinterpret_cast<const sockaddr_in *>(&peer);
        ::inet_ntop(AF_INET, &s->sin_addr, buf, sizeof buf);
        return std::string(buf) + ":" + std::to_string(ntohs(s->sin_port));
    }
    if (peer.ss_family == AF_INET6) {
        const auto *s = reinterpret_cast<const sockaddr_in6 *>(&peer);
        ::inet_ntop(AF_INET6, &s->sin6_addr, buf, sizeof buf);
        return "[" + std::string(buf) + "]:" + std::to_string(ntohs(s->sin6_port));
    }
    return "(unknown address family " + std::to_string(peer.ss_family) + ")";
}

} // namespace portico::run
