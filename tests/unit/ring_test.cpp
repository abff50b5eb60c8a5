// SPDX-License-Identifier: BSD-3-Clause
// The shared-memory ring on its own: order, wrap-around with padding, laps, batched head,
// fullness, the sleep/wake flags, corruption detection, and two threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "common/fence.hpp"
#include "transport/shm/ring.hpp"

using namespace portico::transport::shm;

namespace {
struct TestRing {
    explicit TestRing(size_t bytes) : mem(sizeof(RingControl) + bytes + kCacheLine) {
        // The ring's memory is a memfd's in the transport: zero, and line-aligned.
        auto *base = reinterpret_cast<std::byte *>(round_up(reinterpret_cast<uintptr_t>(mem.data()), kCacheLine));
        ctl = new (base) RingControl;
        ctl->head = 0;
        ctl->tail = 0;
        ctl->consumer_sleeping = 0;
        ctl->producer_waiting = 0;
        data = base + sizeof(RingControl);
        producer = RingView(ctl, data, bytes);
        consumer = RingView(ctl, data, bytes);
    }
    uint64_t &word(size_t offset) { return *reinterpret_cast<uint64_t *>(data + offset); }
    bool push(uint32_t value, size_t len) {
        std::byte *p = producer.reserve(len);
        if (!p) return false;
        std::memcpy(p, &value, 4);
        std::memset(p + 4, static_cast<int>(value & 0xff), len - 4);
        producer.commit();
        return true;
    }
    // The next record's first four bytes, or -1 if there is none.
    int64_t pop() {
        size_t bytes = 0;
        bool corrupt = false;
        const std::byte *p = consumer.peek(&bytes, &corrupt);
        EXPECT_FALSE(corrupt);
        if (!p) return -1;
        uint32_t v;
        std::memcpy(&v, p, 4);
        consumer.release();
        return v;
    }
    std::vector<std::byte> mem;
    RingControl *ctl;
    std::byte *data;
    RingView producer, consumer;
};
} // namespace

TEST(Ring, RecordsComeOutInOrderAcrossWrapAround) {
    TestRing r(4096);
    uint32_t next_in = 0, next_out = 0;
    for (int round = 0; round < 1000; ++round) {
        // Variable sizes so that records straddle the end and padding records are needed.
        for (int k = 0; k < 3; ++k) {
            const size_t len = 8 + (next_in * 37) % 700;
            std::byte *p = r.producer.reserve(len);
            if (!p) break;
            std::memcpy(p, &next_in, 4);
            std::memset(p + 4, static_cast<int>(next_in & 0xff), len - 4);
            r.producer.commit();
            ++next_in;
        }
        size_t bytes;
        bool corrupt = false;
        while (const std::byte *p = r.consumer.peek(&bytes, &corrupt)) {
            uint32_t v;
            std::memcpy(&v, p, 4);
            ASSERT_EQ(next_out, v);
            ASSERT_GE(bytes, 8 + (v * 37) % 700);
            ASSERT_EQ(static_cast<std::byte>(v & 0xff), p[bytes > 5 ? 5 : 4]);
            r.consumer.release();
            ++next_out;
        }
        ASSERT_FALSE(corrupt);
        r.consumer.publish_head();
    }
    EXPECT_EQ(next_in, next_out);
    EXPECT_GT(next_out, 2000u);
}

TEST(Ring, PaddingRecordIsSkippedAndTheRecordAfterItIsNotSeenEarly) {
    TestRing r(4096);
    // 60 lines of 64 bytes, leaving 4 lines at the end: a 5-line record pads to the end.
    for (uint32_t i = 0; i < 60; ++i) ASSERT_TRUE(r.push(i, 56));
    for (uint32_t i = 0; i < 60; ++i) ASSERT_EQ(i, r.pop());
    r.consumer.publish_head();
    std::byte *p = r.producer.reserve(5 * 64 - 8);
    ASSERT_NE(nullptr, p);
    EXPECT_EQ(r.data + 8, p); // the record went to the start of the ring
    // Reserved, not committed: neither the padding nor the record is visible.
    EXPECT_TRUE(r.consumer.empty());
    EXPECT_EQ(-1, r.pop());
    std::memset(p, 0, 5 * 64 - 8);
    const uint32_t v = 1234;
    std::memcpy(p, &v, 4);
    r.producer.commit();
    EXPECT_FALSE(r.consumer.empty());
    EXPECT_EQ(1234, r.pop());
    EXPECT_EQ(-1, r.pop());
    EXPECT_EQ(4096u + 5 * 64, r.ctl->tail.load());
}

TEST(Ring, AbandonedReservationLeavesNoRecord) {
    TestRing r(4096);
    for (uint32_t i = 0; i < 60; ++i) ASSERT_TRUE(r.push(i, 56));
    for (uint32_t i = 0; i < 60; ++i) ASSERT_EQ(i, r.pop());
    r.consumer.publish_head();
    // A reservation that would pad to the end is given up (a source fault), then a smaller record
    // that fits before the end is sent instead: it must come out, and nothing else.
    ASSERT_NE(nullptr, r.producer.reserve(5 * 64 - 8));
    ASSERT_TRUE(r.push(77, 56));
    EXPECT_EQ(77, r.pop());
    EXPECT_EQ(-1, r.pop());
    ASSERT_TRUE(r.push(78, 56));
    EXPECT_EQ(78, r.pop());
}

TEST(Ring, StaleRecordOfThePreviousLapIsNotTaken) {
    TestRing r(4096);
    // Fill one whole lap with one-line records and consume them all.
    for (uint32_t i = 0; i < 64; ++i) ASSERT_TRUE(r.push(i, 56));
    for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(i, r.pop());
    r.consumer.publish_head();
    // Every slot now holds a committed record of lap 0; the consumer waits at lap 1's first slot.
    EXPECT_TRUE(r.consumer.empty());
    EXPECT_EQ(-1, r.pop());
    // Lap 1: a two-line record whose body holds, at its line boundary (ring offset 64), the
    // prefix the consumer will expect at that offset in lap 2; then the rest of the lap.
    std::byte *p = r.producer.reserve(2 * 64 - 8);
    ASSERT_NE(nullptr, p);
    const uint64_t fake = record_prefix(2 * 4096 + 64, 64, kRecordFrame);
    std::memset(p, 0, 2 * 64 - 8);
    const uint32_t first = 1000;
    std::memcpy(p, &first, 4);
    std::memcpy(p + 56, &fake, 8);
    r.producer.commit();
    EXPECT_EQ(1000, r.pop());
    for (uint32_t i = 0; i < 62; ++i) {
        ASSERT_TRUE(r.push(2000 + i, 56));
        ASSERT_EQ(2000 + i, r.pop());
    }
    r.consumer.publish_head();
    EXPECT_EQ(-1, r.pop()); // offset 0 holds lap 1's record, not lap 2's
    // Lap 2: a one-line record at offset 0. The slot after it (offset 64) holds the payload word
    // that looks like its prefix; the producer cleared it before publishing, so it is not taken.
    ASSERT_TRUE(r.push(5, 56));
    EXPECT_EQ(5, r.pop());
    EXPECT_EQ(-1, r.pop());
    ASSERT_TRUE(r.push(6, 56));
    EXPECT_EQ(6, r.pop());
}

TEST(Ring, FullRingRefusesUntilConsumed) {
    TestRing r(4096);
    int pushed = 0;
    while (r.producer.reserve(200)) {
        r.producer.commit();
        ++pushed;
    }
    EXPECT_EQ(4096 / RingView::record_bytes(200), static_cast<size_t>(pushed));
    size_t bytes;
    bool corrupt = false;
    ASSERT_NE(nullptr, r.consumer.peek(&bytes, &corrupt));
    r.consumer.release();
    // Released but not published: the producer still sees a full ring.
    EXPECT_EQ(nullptr, r.producer.reserve(200));
    r.consumer.publish_head();
    EXPECT_NE(nullptr, r.producer.reserve(200));
}

TEST(Ring, ExactlyFullRingKeepsTheOldestRecord) {
    TestRing r(4096);
    // The last record of a full ring cannot clear the slot after it: that is the oldest record,
    // not yet consumed. It must still come out whole, and only once.
    for (uint32_t i = 0; i < 64; ++i) ASSERT_TRUE(r.push(i, 56));
    EXPECT_FALSE(r.push(64, 56));
    for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(i, r.pop());
    EXPECT_EQ(-1, r.pop());
}

TEST(Ring, HeadIsPublishedInBatches) {
    TestRing r(4096);
    for (uint32_t i = 0; i < 64; ++i) ASSERT_TRUE(r.push(i, 56));
    // A quarter of the ring (16 lines) released publishes head by itself; less does not.
    for (uint32_t i = 0; i < 15; ++i) ASSERT_EQ(i, r.pop());
    EXPECT_EQ(0u, r.ctl->head.load());
    EXPECT_FALSE(r.push(100, 56));
    ASSERT_EQ(15, r.pop());
    EXPECT_EQ(16u * 64, r.ctl->head.load());
    // The producer finds the room of the consumer's batch, reading head once for it.
    for (uint32_t i = 0; i < 16; ++i) ASSERT_TRUE(r.push(100 + i, 56));
    EXPECT_FALSE(r.push(200, 56));
    EXPECT_EQ(16u * 64, r.producer.head_seen_by_producer());
    // The end of a run publishes whatever was released.
    ASSERT_EQ(16, r.pop());
    r.consumer.publish_head();
    EXPECT_EQ(17u * 64, r.ctl->head.load());
    EXPECT_TRUE(r.push(200, 56));
    for (uint32_t i = 17; i < 64; ++i) ASSERT_EQ(i, r.pop());
    for (uint32_t i = 0; i < 16; ++i) ASSERT_EQ(100 + i, r.pop());
    EXPECT_EQ(200, r.pop());
}

TEST(Ring, SleepingConsumerSeesTheRecordOrIsWoken) {
    // The Dekker pair of the transport, in two threads: a consumer sets consumer_sleeping, fences
    // and looks at the ring once more; a producer commits, fences and clears the flag if set (the
    // doorbell). Every record is either seen by that last look or announced by the doorbell.
    TestRing r(1 << 12);
    constexpr uint32_t kCount = 20000;
    std::atomic<uint32_t> doorbells{0};
    std::atomic<bool> stop{false};
    std::thread producer([&] {
        for (uint32_t i = 0; i < kCount;) {
            if (!r.push(i, 8)) continue;
            ++i;
            portico::full_fence();
            if (r.ctl->consumer_sleeping.load(std::memory_order_relaxed) && r.ctl->consumer_sleeping.exchange(0))
                doorbells.fetch_add(1);
        }
        stop.store(true);
    });
    uint32_t expect = 0;
    uint32_t rung = 0;
    while (expect < kCount) {
        int64_t v;
        while ((v = r.pop()) >= 0) ASSERT_EQ(expect++, static_cast<uint32_t>(v));
        r.consumer.publish_head();
        r.ctl->consumer_sleeping.store(1, std::memory_order_relaxed);
        portico::full_fence();
        if (!r.consumer.empty()) {
            r.ctl->consumer_sleeping.store(0, std::memory_order_relaxed);
            continue;
        }
        // "Asleep": nothing was there, so the producer must ring for the next record, or be done.
        while (doorbells.load() == rung && !stop.load()) std::this_thread::yield();
        if (doorbells.load() == rung) {
            ASSERT_EQ(kCount, expect) << "a record came without a doorbell";
            break;
        }
        rung = doorbells.load(); // may be an early one, rung while we were not asleep: harmless
    }
    producer.join();
    EXPECT_EQ(kCount, expect);
}

TEST(Ring, WaitingProducerSeesHeadMoveOrIsWoken) {
    // The other pair: a producer without room sets producer_waiting, fences and looks at head
    // once more; the consumer publishes head, fences and clears the flag if set.
    TestRing r(1 << 12);
    constexpr uint32_t kCount = 20000;
    std::atomic<uint32_t> doorbells{0};
    std::atomic<bool> done{false};
    std::thread consumer([&] {
        uint32_t expect = 0;
        while (expect < kCount) {
            int64_t v;
            bool any = false;
            while ((v = r.pop()) >= 0) {
                if (static_cast<uint32_t>(v) != expect) ADD_FAILURE() << "out of order";
                ++expect;
                any = true;
            }
            if (!any) continue;
            r.consumer.publish_head();
            portico::full_fence();
            if (r.ctl->producer_waiting.load(std::memory_order_relaxed) && r.ctl->producer_waiting.exchange(0))
                doorbells.fetch_add(1);
        }
        done.store(true);
    });
    uint32_t rung = 0;
    for (uint32_t i = 0; i < kCount;) {
        if (r.push(i, 300)) {
            ++i;
            continue;
        }
        const uint64_t seen = r.producer.head_seen_by_producer();
        r.ctl->producer_waiting.store(1, std::memory_order_relaxed);
        portico::full_fence();
        if (r.ctl->head.load(std::memory_order_acquire) != seen) {
            r.ctl->producer_waiting.store(0, std::memory_order_relaxed);
            continue;
        }
        while (doorbells.load() == rung) std::this_thread::yield(); // a lost wake-up hangs here
        rung = doorbells.load();
    }
    consumer.join();
    EXPECT_TRUE(done.load());
}

TEST(Ring, ImplausibleRecordIsReportedNotFollowed) {
    TestRing r(4096);
    ASSERT_TRUE(r.push(1, 16));
    // A hostile peer rewrites the record's prefix with a size past the end of the ring.
    r.word(0) = record_prefix(0, 0, kRecordFrame) | uint64_t{0xffffff} << 32;
    size_t bytes;
    bool corrupt = false;
    EXPECT_EQ(nullptr, r.consumer.peek(&bytes, &corrupt));
    EXPECT_TRUE(corrupt);
}

TEST(Ring, ZeroSizeUnknownTypeAndShortPaddingAreCorrupt) {
    const uint64_t bad[] = {
        record_prefix(0, 0, kRecordFrame),        // no size at all
        record_prefix(0, 64, 7),                  // no such type
        record_prefix(0, 64, kRecordPad),         // padding that does not reach the end
        record_prefix(0, 4096 + 64, kRecordFrame) // past the end
    };
    for (uint64_t w : bad) {
        TestRing r(4096);
        r.word(0) = w;
        size_t bytes;
        bool corrupt = false;
        EXPECT_EQ(nullptr, r.consumer.peek(&bytes, &corrupt));
        EXPECT_TRUE(corrupt) << std::hex << w;
    }
}

TEST(Ring, WrongSequenceIsNotARecord) {
    TestRing r(4096);
    ASSERT_TRUE(r.push(1, 16));
    // A record with the sequence of another position (a lap behind, or garbage) is not taken:
    // the consumer waits for the right one, it never reads the body.
    r.word(0) = record_prefix(4096, 64, kRecordFrame);
    EXPECT_TRUE(r.consumer.empty());
    EXPECT_EQ(-1, r.pop());
    r.word(0) = record_prefix(0, 64, kRecordFrame);
    EXPECT_EQ(1, r.pop());
}

TEST(Ring, ProducerAndConsumerThreads) {
    // Millions of records of varied sizes through a small ring (many laps, padding, batched
    // head), each checked for order and content.
    TestRing r(1 << 14);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    constexpr uint32_t kCount = 300000; // ten times slower, and the interleavings are what count
#else
    constexpr uint32_t kCount = 3000000;
#endif
    std::thread producer([&] {
        for (uint32_t i = 0; i < kCount;) {
            const size_t len = 4 + (i * 7) % 200;
            std::byte *p = r.producer.reserve(len);
            if (!p) continue;
            std::memcpy(p, &i, 4);
            std::memset(p + 4, static_cast<int>(i & 0xff), len - 4);
            r.producer.commit();
            ++i;
        }
    });
    uint32_t expect = 0;
    while (expect < kCount) {
        size_t bytes;
        bool corrupt = false;
        const std::byte *p = r.consumer.peek(&bytes, &corrupt);
        ASSERT_FALSE(corrupt);
        if (!p) {
            r.consumer.publish_head();
            continue;
        }
        uint32_t v;
        std::memcpy(&v, p, 4);
        ASSERT_EQ(expect, v);
        const size_t len = 4 + (v * 7) % 200;
        ASSERT_GE(bytes, len);
        for (size_t k = 4; k < len; ++k)
            if (p[k] != static_cast<std::byte>(v & 0xff)) FAIL() << "record " << v << " byte " << k;
        r.consumer.release();
        ++expect;
    }
    producer.join();
}
