#include "net.hpp"

#include <arpa/inet.h>
#include <cstdlib>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include "bench.hpp"
#include "common/env.hpp"
#include "job.hpp"

namespace portico::bench {

namespace {

// The IPv4 address (host byte order) of interface `want`, or of the first non-loopback interface
// when `want` is empty; 127.0.0.1 when there is none.
uint32_t interface_address(const std::string &want) {
    uint32_t addr = INADDR_LOOPBACK;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return addr;
    for (ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        if (!want.empty() ? want != i->ifa_name : (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
        addr = ntohl(reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr);
        break;
    }
    freeifaddrs(list);
    return addr;
}

} // namespace

uint32_t local_nid() {
    const std::string forced = env_str("PORTICO_NID");
    if (!forced.empty()) return static_cast<uint32_t>(std::strtoul(forced.c_str(), nullptr, 0));
    return interface_address(env_str("PORTICO_IFACE"));
}

std::string listen_address() {
    in_addr a{};
    a.s_addr = htonl(interface_address(env_str("PORTICO_IFACE")));
    char buf[INET_ADDRSTRLEN] = "127.0.0.1";
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

std::string detect_transport(Job &job) {
    const std::string want = env_str("PORTICO_TRANSPORT", "auto");
    if (want != "auto" && want != "shm" && want != "tcp")
        throw Error("PORTICO_TRANSPORT must be auto, shm or tcp, not '" + want + "'");
    // Every rank takes part in the collective, whatever the setting, so that all agree.
    const auto nids = job.allgather(std::to_string(local_nid()));
    if (want != "auto") return want;
    for (const std::string &n : nids)
        if (n != nids[0]) return "tcp";
    return "shm";
}

} // namespace portico::bench
