#include "common/netif.hpp"

#include <arpa/inet.h>
#include <cstdlib>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include "common/common_settings.hpp"

namespace portico {

uint32_t interface_ipv4(const std::string &iface) {
    uint32_t addr = INADDR_LOOPBACK;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return addr;
    for (ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        if (!iface.empty() ? iface != i->ifa_name : (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
        addr = ntohl(reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr);
        break;
    }
    freeifaddrs(list);
    return addr;
}

uint32_t local_nid() {
    // The nid names the machine, so that peers on other machines (TCP) and on this one (shared
    // memory) are told apart by nid alone.
    const std::string forced = settings::kNid.get();
    if (!forced.empty()) return static_cast<uint32_t>(std::strtoul(forced.c_str(), nullptr, 0));
    return interface_ipv4(settings::kIface.get());
}

} // namespace portico
