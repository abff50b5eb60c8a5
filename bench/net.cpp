// SPDX-License-Identifier: BSD-3-Clause
#include "net.hpp"

#include <arpa/inet.h>
#include <cstdlib>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include "bench.hpp"
#include "common/common_settings.hpp"
#include "transport/transport_settings.hpp"
#include "common/netif.hpp"
#include "job.hpp"

namespace portico::bench {

std::string listen_address() {
    in_addr a{};
    a.s_addr = htonl(interface_ipv4(settings::kIface.get()));
    char buf[INET_ADDRSTRLEN] = "127.0.0.1";
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

std::string detect_transport(Job &job) {
    std::string want = settings::kTransport.get();
    // Every rank takes part in the collective, whatever the setting, so that all agree.
    const auto nids = job.allgather(std::to_string(local_nid()));
    if (want != "auto" && want.find(',') == std::string::npos) return want; // one transport named
    for (const std::string &n : nids)
        if (n != nids[0]) return "tcp";
    return "shm";
}

} // namespace portico::bench
