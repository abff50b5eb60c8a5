// SPDX-License-Identifier: BSD-3-Clause
// The TCP transport's entry in the registry (transport/registry.hpp): it reaches every peer, and
// reads its own settings (tcp_settings.hpp) and the job's secret when it opens.
#include "transport/registry.hpp"
#include "transport/tcp/port_holder.hpp"
#include "transport/tcp/tcp_settings.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace portico::transport {

namespace {
bool anywhere(PeerId, PeerId) { return true; }

std::unique_ptr<Transport> open_tcp(const OpenRequest &req) {
    tcp::TcpConfig cfg;
    cfg.port_base = static_cast<uint32_t>(settings::kTcpPortBase.get());
    cfg.max_links = settings::kTcpMaxLinks.get();
    cfg.connect_timeout_ms = static_cast<int>(settings::kTcpConnectTimeoutMs.get());
    cfg.keepalive_idle_s = static_cast<int>(settings::kTcpKeepaliveS.get());
    cfg.coalesce_ns = settings::kTcpCoalesceUs.get() * 1000;
    if (req.job_secret) cfg.secret = req.job_secret();
    return std::make_unique<tcp::TcpTransport>(req.nid, req.pid, cfg);
}

std::string holders(uint32_t, uint32_t first_pid, uint32_t count) {
    const uint64_t first_port = settings::kTcpPortBase.get() + first_pid;
    if (first_port > 65535) return {};
    const auto first = static_cast<uint32_t>(first_port);
    if (count == 1) {
        const std::string who = tcp::port_holder(first);
        return who.empty() ? who : "TCP port " + std::to_string(first) + " held by " + who;
    }
    const std::string who = tcp::port_range_holders(first, count);
    return who.empty() ? who
                       : "TCP ports " + std::to_string(first) + ".." + std::to_string(first + count - 1) + ": " + who;
}
} // namespace

extern const TransportInfo tcp_transport_info{
    "tcp",   10,  "TCP/IPv4 to any peer (authenticated with the job's secret; port base + pid)", anywhere, open_tcp,
    holders, true};

} // namespace portico::transport
