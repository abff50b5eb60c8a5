// SPDX-License-Identifier: BSD-3-Clause
#include "common/netif.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ifaddrs.h>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <net/if.h>
#include <netinet/in.h>

#include "common/common_settings.hpp"

namespace portico {

namespace {

struct IfaddrsDeleter {
    void operator()(ifaddrs *p) const { ::freeifaddrs(p); }
};
using IfaddrsList = std::unique_ptr<ifaddrs, IfaddrsDeleter>;

IfaddrsList interfaces() {
    ifaddrs *list = nullptr;
    if (::getifaddrs(&list) != 0) return nullptr;
    return IfaddrsList(list);
}

uint32_t address_of(const ifaddrs *i) {
    return ntohl(reinterpret_cast<const sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr);
}

bool has_ipv4(const ifaddrs *i) { return i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET; }

} // namespace

std::optional<uint32_t> named_interface_ipv4(const std::string &name, std::string *why) {
    IfaddrsList list = interfaces();
    if (!list) {
        if (why) *why = std::string("getifaddrs: ") + std::strerror(errno);
        return std::nullopt;
    }
    bool seen = false;
    for (const ifaddrs *i = list.get(); i != nullptr; i = i->ifa_next) {
        if (i->ifa_name == nullptr || name != i->ifa_name) continue;
        seen = true;
        if (has_ipv4(i)) return address_of(i);
    }
    if (why) *why = seen ? "the interface has no IPv4 address" : "no such interface";
    return std::nullopt;
}

std::optional<uint32_t> first_external_ipv4() {
    IfaddrsList list = interfaces();
    for (const ifaddrs *i = list.get(); i != nullptr; i = i->ifa_next) {
        // A down interface's address reaches nobody; loopback reaches only this machine.
        if (!has_ipv4(i) || (i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
        return address_of(i);
    }
    return std::nullopt;
}

std::vector<uint32_t> local_ipv4_addresses() {
    std::vector<uint32_t> out;
    IfaddrsList list = interfaces();
    for (const ifaddrs *i = list.get(); i != nullptr; i = i->ifa_next)
        if (has_ipv4(i)) out.push_back(address_of(i));
    return out;
}

uint32_t interface_ipv4(const std::string &name) {
    const std::optional<uint32_t> a = name.empty() ? first_external_ipv4() : named_interface_ipv4(name, nullptr);
    return a.value_or(INADDR_LOOPBACK);
}

namespace {

std::optional<uint32_t> parse_nid(const char *text) {
    in_addr a{};
    if (::inet_pton(AF_INET, text, &a) == 1) return ntohl(a.s_addr);
    std::string why;
    const std::optional<uint64_t> n = settings::parse_number(text, &why);
    if (!n || *n > UINT32_MAX) return std::nullopt;
    return static_cast<uint32_t>(*n);
}

} // namespace

namespace settings {

std::string nid_problem(const char *text) {
    return parse_nid(text) ? "" : "not an IPv4 address (a.b.c.d) or a number below 2^32";
}

std::string iface_problem(const char *text) {
    std::string why;
    if (named_interface_ipv4(text, &why)) return "";
    return why + " (the nid is then taken from the first non-loopback interface)";
}

} // namespace settings

uint32_t local_nid() {
    // The nid names the machine, so that peers on other machines (TCP) and on this one (shared
    // memory) are told apart by nid alone.
    const std::string forced = settings::kNid.get();
    if (!forced.empty()) return *parse_nid(forced.c_str());
    // Asked by the job service, the engine and TCP at start-up: one netlink dump of the
    // interfaces, not three (a few percent of a thousand-rank start-up). Cached per interface name.
    const std::string iface = settings::kIface.get();
    static std::mutex mutex;
    static std::string cached_for;
    static std::optional<uint32_t> cached;
    std::lock_guard g(mutex);
    if (!cached || cached_for != iface) {
        cached = interface_ipv4(iface);
        cached_for = iface;
    }
    return *cached;
}

std::string ipv4_text(uint32_t addr) {
    in_addr a{};
    a.s_addr = htonl(addr);
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

} // namespace portico
