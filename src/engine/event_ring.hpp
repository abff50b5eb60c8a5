// SPDX-License-Identifier: BSD-3-Clause
// The ring of an event queue (spec §3.13): one producer at a time (the engine, under its lock),
// any number of consumers without a lock (PtlEQGet/PtlEQPoll/PtlEQWait on the application's
// threads), so that taking an event is a few atomic loads, a copy and one compare-and-swap.
//
// Indices count events since creation (64-bit, never wrap); event i lives in slot i % capacity,
// stamped with seq = 2i + 2 once written (2i + 1 while being written). head is the next event to
// take; its top bit says that events were dropped before it (the producer of a full queue drops
// the oldest, §3.13: "older events will be overwritten by new ones"), and the consumer that takes
// the event at head reports PTL_EQ_DROPPED and clears the bit in the same compare-and-swap. A
// consumer copies a slot, then checks its stamp again: a slot the producer overwrote meanwhile is
// noticed and the take is retried. Events are stored as atomic words so that such a racing copy
// is well-defined.
//
// The queue holds `limit` events (PtlEQAlloc's count, plus the reserved slots below) but its
// storage starts small and grows with the events actually pending (grow: the producer copies the
// pending events into a storage twice as large and publishes it), so that a
// queue asked for a million events costs what its busiest moment needed (rounded up to a power of
// two, so that a slot is found with a mask, not a division, on every push and take): GASNet sizes its
// active-message queues for every event its credits allow, which with many peers is hundreds of
// megabytes that no run ever fills. A consumer may still read an old storage, so it is kept
// until the ring is reset, which the engine does only when no thread is inside (EQ users); the
// old ones add up to less than the current one.
//
// Flow control keeps `reserved` slots free for PT_DISABLED events; reserving one raises the limit.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include <portals4.h>

namespace portico::engine {

class EventRing {
public:
    enum class Take { Empty, Ok, Dropped };

    EventRing() = default;
    EventRing(const EventRing &) = delete;
    EventRing &operator=(const EventRing &) = delete;

    // Producer side (one thread at a time; the engine lock) ------------------------------------
    void reset(size_t capacity) {
        retired_.clear();
        limit_ = capacity;
        current_ = std::make_unique<Storage>(std::bit_ceil(std::min(capacity, kFirstStorage)));
        storage_.store(current_.get(), std::memory_order_release);
        head_.store(0, std::memory_order_relaxed);
        tail_.store(0, std::memory_order_relaxed);
        reserved_ = 0;
    }
    void release() { // frees the storage (no thread may be inside)
        retired_.clear();
        storage_.store(nullptr, std::memory_order_relaxed);
        current_.reset();
        limit_ = 0;
    }
    // The events the queue holds before it drops the oldest (reserved slots included).
    size_t capacity() const { return limit_; }
    size_t reserved() const { return reserved_; }
    // Slots allocated now: a power of two below twice capacity(), grown with the events pending at once.
    size_t storage_slots() const { return current_ ? current_->capacity : 0; }
    // An ordinary event fits without taking a reserved slot.
    bool has_room() const { return size() + reserved_ < capacity(); }
    // A flow-controlled PT keeps one slot for its PT_DISABLED event.
    void reserve_one() {
        ++limit_;
        ++reserved_;
    }
    void unreserve_one() {
        if (reserved_ > 0) --reserved_; // the limit stays: ordinary room from now on
    }

    // Adds an event; a full ring drops its oldest (reserved slots are for uses_reserve events).
    void push(const ptl_event_t &ev, bool uses_reserve) {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        const uint64_t limit = limit_ - (uses_reserve ? 0 : reserved_);
        uint64_t h = head_.load(std::memory_order_acquire);
        while (t - (h & ~kDropped) >= limit) {
            // Full: the oldest goes, and whoever takes the next one is told. A failed exchange
            // (a consumer took it first) reloads h and looks again.
            head_.compare_exchange_weak(h, ((h & ~kDropped) + 1) | kDropped, std::memory_order_acq_rel);
        }
        // Fewer than limit_ events are pending now; the storage grows when they fill it (a
        // consumer taking one meanwhile only makes the growth early). Should the memory for that
        // be refused, the queue is full at the size it has.
        if (t - (h & ~kDropped) >= current_->capacity && !grow(2 * current_->capacity)) {
            while (t - (h & ~kDropped) >= current_->capacity)
                head_.compare_exchange_weak(h, ((h & ~kDropped) + 1) | kDropped, std::memory_order_acq_rel);
        }
        write_slot(*current_, t, ev);
        tail_.store(t + 1, std::memory_order_release);
    }

    // Consumer side (any thread, no lock) --------------------------------------------------------
    Take take(ptl_event_t *ev) {
        for (;;) {
            uint64_t h = head_.load(std::memory_order_acquire);
            const uint64_t index = h & ~kDropped;
            if (index == tail_.load(std::memory_order_acquire)) return Take::Empty;
            const Storage *s = storage_.load(std::memory_order_acquire);
            const Slot &slot = s->slots[index & (s->capacity - 1)];
            const uint64_t stamp = slot.seq.load(std::memory_order_acquire);
            if (stamp != 2 * index + 2) continue; // overwritten meanwhile, or the ring grew: look again
            // Acquire loads: a word of a later overwrite brings its odd stamp along, so the check
            // after the copy sees it (no fences: ThreadSanitizer does not model them).
            // Copied straight into *ev, word by word (through a buffer, then a memcpy, it cost
            // twice the instructions). A copy that another consumer or the producer spoiled is
            // overwritten by the retry, or left if the queue turns out empty (the spec defines
            // the event only on success).
            auto *to = reinterpret_cast<std::byte *>(ev);
#pragma GCC unroll 16
            for (size_t i = 0; i < kWords; ++i) {
                const uint64_t w = slot.words[i].load(std::memory_order_acquire);
                std::memcpy(to + 8 * i, &w, 8);
            }
            if (slot.seq.load(std::memory_order_relaxed) != stamp) continue;
            if (!head_.compare_exchange_strong(h, index + 1, std::memory_order_acq_rel)) continue;
            return (h & kDropped) ? Take::Dropped : Take::Ok;
        }
    }
    bool empty() const {
        return (head_.load(std::memory_order_acquire) & ~kDropped) == tail_.load(std::memory_order_acquire);
    }
    size_t size() const {
        return static_cast<size_t>(tail_.load(std::memory_order_acquire) -
                                   (head_.load(std::memory_order_acquire) & ~kDropped));
    }

private:
    static constexpr uint64_t kDropped = uint64_t{1} << 63;
    static constexpr size_t kFirstStorage = 256; // slots a new queue starts with (26 KiB)
    static constexpr size_t kWords = sizeof(ptl_event_t) / 8;
    static_assert(sizeof(ptl_event_t) % 8 == 0, "an event is copied in whole words");
    struct Slot {
        std::atomic<uint64_t> seq{0};
        std::atomic<uint64_t> words[kWords];
    };
    struct Storage {
        explicit Storage(size_t n) : capacity(n), slots(new (std::nothrow) Slot[n]) {}
        size_t capacity;               // a power of two
        std::unique_ptr<Slot[]> slots; // nullptr: the memory was refused
    };

    static void write_slot(Storage &s, uint64_t index, const ptl_event_t &ev) {
        Slot &slot = s.slots[index & (s.capacity - 1)];
        const auto *from = reinterpret_cast<const std::byte *>(&ev);
        slot.seq.store(2 * index + 1, std::memory_order_relaxed);
#pragma GCC unroll 16
        for (size_t i = 0; i < kWords; ++i) {
            uint64_t w;
            std::memcpy(&w, from + 8 * i, 8);
            slot.words[i].store(w, std::memory_order_release);
        }
        slot.seq.store(2 * index + 2, std::memory_order_release);
    }

    // Producer: a larger storage with the pending events at their new places; false if the
    // memory is refused.
    bool grow(size_t capacity) {
        auto bigger = std::unique_ptr<Storage>(new (std::nothrow) Storage(capacity));
        if (!bigger || !bigger->slots) return false;
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        for (uint64_t i = head_.load(std::memory_order_acquire) & ~kDropped; i < t; ++i) {
            const Slot &from = current_->slots[i & (current_->capacity - 1)];
            Slot &to = bigger->slots[i & (capacity - 1)];
            for (size_t w = 0; w < kWords; ++w)
                to.words[w].store(from.words[w].load(std::memory_order_relaxed), std::memory_order_relaxed);
            to.seq.store(from.seq.load(std::memory_order_relaxed), std::memory_order_relaxed);
        }
        storage_.store(bigger.get(), std::memory_order_release);
        retired_.push_back(std::move(current_));
        current_ = std::move(bigger);
        return true;
    }

    std::atomic<const Storage *> storage_{nullptr}; // what consumers read
    std::unique_ptr<Storage> current_;              // producer's view of the same
    std::vector<std::unique_ptr<Storage>> retired_; // grown out of; consumers may still read them
    std::atomic<uint64_t> head_{0};
    std::atomic<uint64_t> tail_{0};
    size_t limit_ = 0; // producer: events held before the oldest is dropped
    size_t reserved_ = 0;
};

} // namespace portico::engine
