// The physical baselines of the latency tests: how fast ranks 0 and 1 can signal each other
// without Portico. On shared memory a raw flag ping-pong (shm_pingpong.hpp); when the transport is
// TCP a raw TCP socket ping-pong (tcp_baseline.hpp). Portals latencies are reported as a ratio to it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace portico::bench {

class Job;

class LatencyBaseline {
public:
    virtual ~LatencyBaseline() = default;
    // `iters` round trips between ranks 0 and 1; every rank calls it (ranks >= 2 return at once).
    // Rank 0 returns the one-way latency in microseconds (round trip / 2), the others 0.
    virtual double run(uint64_t iters) = 0;
    virtual std::string kind() const = 0;        // JSON baseline_kind, e.g. "shm_flag_pingpong"
    virtual std::string description() const = 0; // for table titles
};

// Collective over the job (which needs at least 2 ranks). `transport` is "shm" or "tcp".
std::unique_ptr<LatencyBaseline> make_latency_baseline(Job &job, const std::string &transport);

} // namespace portico::bench
