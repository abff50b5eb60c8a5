// The physical baseline: a raw shared-memory flag ping-pong between ranks 0 and 1, the fastest
// way two processes of this machine can tell each other something. Portals latencies are reported
// as a ratio to it.
//
// The region is created by rank 0 with shm_open("/portico-bench-<job>-<random>", O_CREAT|O_EXCL,
// 0600), its name goes to rank 1 over PMI, and both unlink it as soon as rank 1 has mapped it, so
// nothing is left behind (also on errors: rank 0 unlinks in its destructor, ENOENT ignored). An
// anonymous MAP_SHARED mapping would not do: the launcher fork/execs the ranks.
//
// Two std::atomic<uint64_t> counters, each on its own 128-byte block (no false sharing, also not
// with the adjacent-line prefetcher): rank 0 writes `ping` and spins (pause) until `pong` shows the
// same value; rank 1 spins on `ping` and echoes it into `pong`. One-way latency = round trip / 2.
#pragma once

#include <cstdint>
#include <string>

namespace portico::bench {

class Job;

class ShmPingPong {
public:
    explicit ShmPingPong(Job &job); // collective over the job (which must have 2 ranks)
    ~ShmPingPong();
    ShmPingPong(const ShmPingPong &) = delete;
    ShmPingPong &operator=(const ShmPingPong &) = delete;

    // `iters` round trips; both ranks call it. Rank 0 returns the one-way latency in
    // microseconds, rank 1 returns 0.
    double run(uint64_t iters);

    struct Region; // the shared page (defined in the .cpp)

private:
    Region *region_ = nullptr;
    std::string name_;
    bool unlinked_ = true;
    int rank_ = 0;
    uint64_t seq_ = 0; // last value exchanged; both ranks advance it alike
};

} // namespace portico::bench
