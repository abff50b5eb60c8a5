// SPDX-License-Identifier: BSD-3-Clause
// The shared-memory latency baseline: a raw flag ping-pong between ranks 0 and 1, the fastest way
// two processes of this machine can tell each other something.
//
// Two std::atomic<uint64_t> counters in a SharedRegion, each on its own 128-byte block (no false
// sharing, also not with the adjacent-line prefetcher): rank 0 writes `ping` and spins (pause)
// until `pong` shows the same value; rank 1 spins on `ping` and echoes it into `pong`. One-way
// latency = round trip / 2. Ranks >= 2 (put_ring) do not take part.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "latency_baseline.hpp"

namespace portico::bench {

class Job;
class SharedRegion;

class ShmPingPong : public LatencyBaseline {
public:
    explicit ShmPingPong(Job &job); // collective over the job (at least 2 ranks)
    ~ShmPingPong() override;

    double run(uint64_t iters) override;
    std::string kind() const override { return "shm_flag_pingpong"; }
    std::string description() const override { return "raw shared-memory flag ping-pong"; }

    struct Region; // the shared page (defined in the .cpp)

private:
    std::unique_ptr<SharedRegion> shm_;
    Region *region_ = nullptr;
    int rank_ = 0;
    uint64_t seq_ = 0; // last value exchanged; both ranks advance it alike
};

} // namespace portico::bench
