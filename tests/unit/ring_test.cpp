// The shared-memory ring on its own: order, wrap-around, fullness, corruption detection.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "transport/shm/ring.hpp"

using namespace portico::transport::shm;

namespace {
struct TestRing {
    explicit TestRing(size_t bytes) : mem(sizeof(RingControl) + bytes) {
        ctl = new (mem.data()) RingControl;
        ctl->head = 0;
        ctl->tail = 0;
        producer = RingView(ctl, mem.data() + sizeof(RingControl), bytes);
        consumer = RingView(ctl, mem.data() + sizeof(RingControl), bytes);
    }
    std::vector<std::byte> mem;
    RingControl *ctl;
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
    }
    EXPECT_EQ(next_in, next_out);
    EXPECT_GT(next_out, 2000u);
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
    EXPECT_NE(nullptr, r.producer.reserve(200));
}

TEST(Ring, ImplausibleRecordIsReportedNotFollowed) {
    TestRing r(4096);
    std::byte *p = r.producer.reserve(16);
    ASSERT_NE(nullptr, p);
    r.producer.commit();
    // A hostile peer rewrites the record prefix with a size past the end of the ring.
    auto *prefix = reinterpret_cast<RecordPrefix *>(r.mem.data() + sizeof(RingControl));
    prefix->bytes = 1u << 30;
    size_t bytes;
    bool corrupt = false;
    EXPECT_EQ(nullptr, r.consumer.peek(&bytes, &corrupt));
    EXPECT_TRUE(corrupt);
}

TEST(Ring, ProducerAndConsumerThreads) {
    TestRing r(1 << 16);
    constexpr uint32_t kCount = 200000;
    std::thread producer([&] {
        for (uint32_t i = 0; i < kCount;) {
            std::byte *p = r.producer.reserve(4 + i % 100);
            if (!p) continue;
            std::memcpy(p, &i, 4);
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
        if (!p) continue;
        uint32_t v;
        std::memcpy(&v, p, 4);
        ASSERT_EQ(expect, v);
        r.consumer.release();
        ++expect;
    }
    producer.join();
}
