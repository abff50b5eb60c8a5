// SPDX-License-Identifier: BSD-3-Clause
// The message-rate baseline: a raw shared-memory SPSC ring from rank 0 to rank 1.
//
// 8-byte messages in a ring of 4096 slots in a SharedRegion; the producer's `tail` and the
// consumer's `head` live on their own 128-byte blocks. The producer writes a slot and publishes
// `tail` (release) for every message, as a NIC would; the consumer reads everything published,
// checks each message (they count up by one) and publishes `head` once per batch. Windowed like
// put_rate: after every `window` messages the producer waits until the consumer has taken them
// all. Rate = messages / time on rank 0, in millions of messages per second.
#pragma once

#include <cstdint>
#include <memory>

namespace portico::bench {

class Job;
class SharedRegion;

class ShmRing {
public:
    explicit ShmRing(Job &job); // collective (at least 2 ranks; ranks >= 2 do not take part)
    ~ShmRing();
    ShmRing(const ShmRing &) = delete;
    ShmRing &operator=(const ShmRing &) = delete;

    // `msgs` messages in windows of `window` (<= capacity); ranks 0 and 1 call it with the same
    // arguments. Rank 0 returns Mmsg/s, the others 0.
    double run(uint64_t msgs, uint64_t window);
    static constexpr uint64_t kCapacity = 4096;

    struct Region;

private:
    std::unique_ptr<SharedRegion> shm_;
    Region *region_ = nullptr;
    int rank_;
    uint64_t sent_ = 0; // messages so far (both ranks advance it alike)
};

} // namespace portico::bench
