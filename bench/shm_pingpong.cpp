// SPDX-License-Identifier: BSD-3-Clause
#include "shm_pingpong.hpp"

#include <atomic>
#include <new>

#include "bench.hpp"
#include "job.hpp"
#include "shm_region.hpp"
#include "timing.hpp"

namespace portico::bench {

struct ShmPingPong::Region {
    alignas(128) std::atomic<uint64_t> ping; // written by rank 0
    alignas(128) std::atomic<uint64_t> pong; // written by rank 1
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(ShmPingPong::Region) == 256);

ShmPingPong::ShmPingPong(Job &job) : rank_(job.rank()) {
    if (job.size() < 2) throw Error("the shared-memory ping-pong needs at least 2 processes");
    shm_ = std::make_unique<SharedRegion>(job, "pp", sizeof(Region), 2);
    // Rank 0 constructs the counters; rank 1 uses them only after the barrier.
    if (rank_ == 0) region_ = new (shm_->data()) Region{};
    job.barrier();
    if (rank_ == 1) region_ = std::launder(static_cast<Region *>(shm_->data()));
}

ShmPingPong::~ShmPingPong() = default;

double ShmPingPong::run(uint64_t iters) {
    if (rank_ >= 2) return 0;
    const uint64_t base = seq_;
    seq_ += iters;
    const char *what = "baseline ping-pong";
    if (rank_ == 0) {
        const uint64_t t0 = now_ns();
        for (uint64_t i = 1; i <= iters; ++i) {
            region_->ping.store(base + i, std::memory_order_release);
            spin_until([&] { return region_->pong.load(std::memory_order_acquire) == base + i; }, what);
        }
        const uint64_t t1 = now_ns();
        return iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }
    for (uint64_t i = 1; i <= iters; ++i) {
        spin_until([&] { return region_->ping.load(std::memory_order_acquire) == base + i; }, what);
        region_->pong.store(base + i, std::memory_order_release);
    }
    return 0;
}

} // namespace portico::bench
