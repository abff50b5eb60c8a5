// SPDX-License-Identifier: BSD-3-Clause
// The physical baselines of the latency tests: how fast ranks 0 and 1 can signal each other
// without Portico. On shared memory a raw flag ping-pong (shm_pingpong.hpp); when the transport is
// TCP a raw TCP socket ping-pong (tcp_baseline.hpp). Portals latencies are reported as a ratio to it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace portico::bench {

class Job;
class Watchdog;
struct Context;
struct Plan;

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

// The measurement of a ping-pong latency test, reported as test `name` ("<name>: <what>, transport
// ..." titles the table): for each size a warm-up of the baseline and of `portals`, then p.reps
// repetitions of each, interleaved, so that both see the same machine. portals(size, rounds,
// dog) runs the Portals ping-pong and returns rank 0's one-way latency in µs (others 0);
// `waiting` (optional) is called before each baseline run (a test's watchdog description).
using LatencyRun = std::function<double(size_t size, uint64_t rounds, Watchdog &dog)>;
void measure_latency(Context &ctx, const char *name, const std::string &what, LatencyBaseline &base, Watchdog &dog,
                     const std::vector<size_t> &sizes, const Plan &p, const LatencyRun &portals,
                     const std::function<void()> &waiting = {});

} // namespace portico::bench
