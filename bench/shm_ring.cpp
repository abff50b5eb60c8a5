// SPDX-License-Identifier: BSD-3-Clause
#include "shm_ring.hpp"

#include <atomic>
#include <new>

#include "bench.hpp"
#include "job.hpp"
#include "shm_region.hpp"
#include "timing.hpp"

namespace portico::bench {

struct ShmRing::Region {
    alignas(128) std::atomic<uint64_t> tail; // written by the producer (rank 0)
    alignas(128) std::atomic<uint64_t> head; // written by the consumer (rank 1)
    alignas(128) std::atomic<uint64_t> slots[kCapacity];
};

ShmRing::ShmRing(Job &job) : rank_(job.rank()) {
    if (job.size() < 2) throw Error("the shared-memory ring needs at least 2 processes");
    shm_ = std::make_unique<SharedRegion>(job, "ring", sizeof(Region), 2);
    if (rank_ == 0) region_ = new (shm_->data()) Region{};
    job.barrier();
    if (rank_ == 1) region_ = std::launder(static_cast<Region *>(shm_->data()));
}

ShmRing::~ShmRing() = default;

double ShmRing::run(uint64_t msgs, uint64_t window) {
    if (rank_ >= 2) return 0;
    if (window == 0 || window > kCapacity) throw Error("ring baseline: window must be 1.." + std::to_string(kCapacity));
    const uint64_t base = sent_;
    const uint64_t end = base + msgs;
    sent_ = end;
    Region &r = *region_;
    constexpr uint64_t mask = kCapacity - 1;
    const char *what = "ring baseline";
    if (rank_ == 0) {
        const uint64_t t0 = now_ns();
        uint64_t head = r.head.load(std::memory_order_acquire); // the consumer's position, as last seen
        for (uint64_t t = base; t < end;) {
            const uint64_t stop = std::min(end, t + window);
            for (; t < stop; ++t) {
                if (t - head >= kCapacity) // full: see how far the consumer got
                    spin_until([&] { return t - (head = r.head.load(std::memory_order_acquire)) < kCapacity; }, what);
                r.slots[t & mask].store(t + 1, std::memory_order_relaxed);
                r.tail.store(t + 1, std::memory_order_release);
            }
            // End of the window: wait until the consumer has taken every message.
            spin_until([&] { return (head = r.head.load(std::memory_order_acquire)) == stop; }, what);
        }
        const uint64_t t1 = now_ns();
        return msgs ? static_cast<double>(msgs) * 1000.0 / static_cast<double>(t1 - t0) : 0;
    }
    uint64_t h = base;
    while (h < end) {
        uint64_t tail = 0;
        spin_until([&] { return (tail = r.tail.load(std::memory_order_acquire)) > h; }, what);
        for (; h < tail; ++h) {
            const uint64_t v = r.slots[h & mask].load(std::memory_order_relaxed);
            if (v != h + 1) throw Error("ring baseline: message " + std::to_string(h) + " holds " + std::to_string(v));
        }
        r.head.store(h, std::memory_order_release);
    }
    return 0;
}

} // namespace portico::bench
