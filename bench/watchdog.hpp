// SPDX-License-Identifier: BSD-3-Clause
// A watchdog for measurement loops: a Portals wait that never returns (a lost event, a lost
// wakeup) must end the job with a message saying where it stopped, not hang until the launcher's
// timeout (or forever without one).
//
// The measuring thread calls beat() once per iteration (one relaxed store); a helper thread looks
// every second and, after `limit_s` seconds without a beat, prints describe() and ends the job.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace portico::bench {

class Job;

// No Portals operation of a benchmark takes seconds: kWatchdogS without progress means a lost
// event or a hang. A rank that only waits for its peer (baselines, barriers) allows
// kWatchdogPeerS, so that the rank that is really stuck reports first.
constexpr int kWatchdogS = 30;
constexpr int kWatchdogPeerS = kWatchdogS + 10;

class Watchdog {
public:
    Watchdog(Job &job, int limit_s, std::function<std::string()> describe);
    ~Watchdog();
    Watchdog(const Watchdog &) = delete;
    Watchdog &operator=(const Watchdog &) = delete;

    void beat() { beats_.store(beats_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
    // Waiting for the peer (not for Portals) deserves more patience: the rank that is really stuck
    // should be the one that reports.
    void set_limit(int limit_s) { limit_s_.store(limit_s, std::memory_order_relaxed); }
    void peer_phase() { set_limit(kWatchdogPeerS); }
    void portals_phase() {
        beat();
        set_limit(kWatchdogS);
    }

private:
    void watch();

    Job &job_;
    std::atomic<int> limit_s_;
    std::function<std::string()> describe_;
    std::atomic<uint64_t> beats_{0};
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

} // namespace portico::bench
