// SPDX-License-Identifier: BSD-3-Clause
#include "watchdog.hpp"

#include <chrono>
#include <cstdio>

#include "job.hpp"

namespace portico::bench {

Watchdog::Watchdog(Job &job, int limit_s, std::function<std::string()> describe)
    : job_(job), limit_s_(limit_s), describe_(std::move(describe)) {
    thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
    {
        std::lock_guard g(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void Watchdog::watch() {
    uint64_t last = beats_.load(std::memory_order_relaxed);
    int idle_s = 0;
    std::unique_lock g(mutex_);
    while (!stop_) {
        if (cv_.wait_for(g, std::chrono::seconds(1), [this] { return stop_; })) break;
        const uint64_t now = beats_.load(std::memory_order_relaxed);
        if (now != last) {
            last = now;
            idle_s = 0;
            continue;
        }
        if (++idle_s < limit_s_.load(std::memory_order_relaxed)) continue;
        // A rank waiting for its peer (a raw baseline, a barrier) is not stuck in Portals itself.
        const bool peer = limit_s_.load(std::memory_order_relaxed) == kWatchdogPeerS;
        const std::string msg =
            "no progress for " + std::to_string(idle_s) +
            " s: " + (peer ? "waiting for the peer in a raw baseline or a barrier, after " : "") + describe_() +
            (peer ? " (the peer is stuck, or starved of CPU)" : " (an event lost or a hang in the engine)");
        std::fprintf(stderr, "portico-bench: rank %d: %s\n", job_.rank(), msg.c_str());
        job_.abort(1, msg); // ends the whole job; does not return
    }
}

} // namespace portico::bench
