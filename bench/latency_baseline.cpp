#include "latency_baseline.hpp"

#include "shm_pingpong.hpp"
#include "tcp_baseline.hpp"

namespace portico::bench {

std::unique_ptr<LatencyBaseline> make_latency_baseline(Job &job, const std::string &transport) {
    if (transport == "tcp") return std::make_unique<TcpPingPong>(job);
    return std::make_unique<ShmPingPong>(job);
}

} // namespace portico::bench
