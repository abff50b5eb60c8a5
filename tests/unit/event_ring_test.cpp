// SPDX-License-Identifier: BSD-3-Clause
// The event queue's ring (engine/event_ring.hpp): one producer, consumers without a lock. What
// must hold whatever the interleaving: every event is taken at most once, each consumer sees
// events in the order they were pushed, an event is lost only by being dropped as the oldest of a
// full ring, and a loss is reported (PTL_EQ_DROPPED) on the next event taken. Under TSan this is
// the race detector's case for the ring.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/event_ring.hpp"

namespace {

using portico::engine::EventRing;

ptl_event_t event(uint64_t id) {
    ptl_event_t ev{};
    ev.hdr_data = id;
    ev.type = PTL_EVENT_PUT;
    ev.mlength = id * 3;
    return ev;
}

TEST(EventRing, TakesInOrderAndReportsTheOldestDropped) {
    EventRing r;
    r.reset(4);
    ptl_event_t ev{};
    EXPECT_EQ(EventRing::Take::Empty, r.take(&ev));
    for (uint64_t i = 1; i <= 6; ++i) r.push(event(i), false); // 1 and 2 are overwritten
    EXPECT_EQ(4u, r.size());
    ASSERT_EQ(EventRing::Take::Dropped, r.take(&ev));
    EXPECT_EQ(3u, ev.hdr_data);
    EXPECT_EQ(9u, ev.mlength);
    for (uint64_t i = 4; i <= 6; ++i) {
        ASSERT_EQ(EventRing::Take::Ok, r.take(&ev));
        EXPECT_EQ(i, ev.hdr_data);
    }
    EXPECT_EQ(EventRing::Take::Empty, r.take(&ev));
}

TEST(EventRing, ReservedSlotsAreKeptForTheEventsThatMayUseThem) {
    EventRing r;
    r.reset(2);
    r.reserve_one(); // capacity 3, one reserved
    EXPECT_EQ(3u, r.capacity());
    r.push(event(1), false);
    EXPECT_TRUE(r.has_room());
    r.push(event(2), false);
    EXPECT_FALSE(r.has_room());
    r.push(event(3), true); // PT_DISABLED takes the reserved slot, nothing is dropped
    ptl_event_t ev{};
    for (uint64_t i = 1; i <= 3; ++i) {
        ASSERT_EQ(EventRing::Take::Ok, r.take(&ev));
        EXPECT_EQ(i, ev.hdr_data);
    }
}

TEST(EventRing, GrowingKeepsThePendingEvents) {
    EventRing r;
    r.reset(3);
    ptl_event_t ev{};
    for (uint64_t i = 1; i <= 5; ++i) r.push(event(i), false); // 3, 4, 5 pending; wrapped
    r.reserve_one();
    r.push(event(6), true);
    ASSERT_EQ(EventRing::Take::Dropped, r.take(&ev));
    EXPECT_EQ(3u, ev.hdr_data);
    for (uint64_t i = 4; i <= 6; ++i) {
        ASSERT_EQ(EventRing::Take::Ok, r.take(&ev));
        EXPECT_EQ(i, ev.hdr_data);
    }
}

TEST(EventRing, AQueueHoldsWhatIsPendingNotWhatItWasAskedFor) {
    // GASNet asks for a queue of every event its credits allow (millions with many peers); the
    // storage follows the events pending at once, and the count still holds.
    EventRing r;
    r.reset(size_t{1} << 20);
    EXPECT_EQ(size_t{1} << 20, r.capacity());
    const size_t first = r.storage_slots();
    EXPECT_LE(first, 256u);
    ptl_event_t ev{};
    for (uint64_t i = 1; i <= 10000; ++i) { // one at a time: never more than one pending
        r.push(event(i), false);
        ASSERT_EQ(EventRing::Take::Ok, r.take(&ev));
        ASSERT_EQ(i, ev.hdr_data);
    }
    EXPECT_EQ(first, r.storage_slots());
    for (uint64_t i = 1; i <= 3000; ++i) r.push(event(i), false); // 3000 pending: it grows, drops nothing
    EXPECT_GE(r.storage_slots(), 3000u);
    EXPECT_LE(r.storage_slots(), 2 * 3000u);
    for (uint64_t i = 1; i <= 3000; ++i) {
        ASSERT_EQ(EventRing::Take::Ok, r.take(&ev));
        ASSERT_EQ(i, ev.hdr_data);
        ASSERT_EQ(3 * i, ev.mlength);
    }
    EXPECT_EQ(EventRing::Take::Empty, r.take(&ev));
}

TEST(EventRing, GrowsUpToItsCountThenDropsTheOldest) {
    EventRing r;
    r.reset(600);
    for (uint64_t i = 1; i <= 700; ++i) r.push(event(i), false); // 1..100 are overwritten
    EXPECT_EQ(1024u, r.storage_slots());                         // the power of two above 600
    EXPECT_EQ(600u, r.size());
    ptl_event_t ev{};
    ASSERT_EQ(EventRing::Take::Dropped, r.take(&ev));
    EXPECT_EQ(101u, ev.hdr_data);
    for (uint64_t i = 102; i <= 700; ++i) {
        ASSERT_EQ(EventRing::Take::Ok, r.take(&ev));
        ASSERT_EQ(i, ev.hdr_data);
    }
    EXPECT_EQ(EventRing::Take::Empty, r.take(&ev));
}

// A producer pushing kEvents while three consumers take: the invariants of the header, for a ring
// of `count` events, the producer yielding every `burst` events.
void race_consumers_against_the_producer(size_t count, uint64_t burst) {
    constexpr uint64_t kEvents = 200000;
    constexpr int kConsumers = 3;
    EventRing r;
    r.reset(count);
    std::atomic<bool> done{false};
    std::vector<std::vector<uint64_t>> seen(kConsumers);
    std::atomic<uint64_t> drops_reported{0};
    std::vector<std::thread> consumers;
    for (int c = 0; c < kConsumers; ++c) {
        consumers.emplace_back([&, c] {
            ptl_event_t ev{};
            for (;;) {
                const EventRing::Take t = r.take(&ev);
                if (t == EventRing::Take::Empty) {
                    if (done.load(std::memory_order_acquire) && r.empty()) return;
                    std::this_thread::yield();
                    continue;
                }
                if (t == EventRing::Take::Dropped) ++drops_reported;
                EXPECT_EQ(ev.hdr_data * 3, ev.mlength) << "a torn event";
                seen[c].push_back(ev.hdr_data);
            }
        });
    }
    for (uint64_t i = 1; i <= kEvents; ++i) {
        r.push(event(i), false);
        if (i % burst == 0) std::this_thread::yield();
    }
    done.store(true, std::memory_order_release);
    for (auto &t : consumers) t.join();
    std::vector<bool> taken(kEvents + 1, false);
    uint64_t total = 0;
    for (const auto &v : seen) {
        for (size_t k = 0; k < v.size(); ++k) {
            ASSERT_GE(v[k], 1u);
            ASSERT_LE(v[k], kEvents);
            EXPECT_FALSE(taken[v[k]]) << "event " << v[k] << " taken twice";
            taken[v[k]] = true;
            if (k > 0) {
                EXPECT_LT(v[k - 1], v[k]) << "a consumer saw events out of order";
            }
        }
        total += v.size();
    }
    EXPECT_TRUE(taken[kEvents]) << "the newest event can never be dropped";
    // Whatever was not taken was dropped, and every drop was reported on some later event.
    if (total < kEvents) {
        EXPECT_GT(drops_reported.load(), 0u);
    }
    EXPECT_LE(drops_reported.load(), kEvents - total);
}

TEST(EventRing, ConsumersRacingAProducerThatDropsLoseNothingElse) {
    race_consumers_against_the_producer(16, 64); // small: the producer overruns the consumers and drops
}

TEST(EventRing, ConsumersRacingAProducerWhoseRingGrowsLoseNothing) {
    // Bursts of 4096 fill the first storage, so the ring grows while consumers read the old one.
    race_consumers_against_the_producer(size_t{1} << 16, 4096);
}

} // namespace
