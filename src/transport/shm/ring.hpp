// SPDX-License-Identifier: BSD-3-Clause
// A single-producer single-consumer ring of variable-length records in shared memory, whose
// record is its own doorbell (docs/FASTPATH.md, "A ring whose record is its own doorbell").
//
// Each record starts with an 8-byte prefix word: the record's sequence value, its size in cache
// lines and its type. The producer writes the body first, then stores the prefix with release
// order; the consumer polls the prefix of the next record's slot (acquire) and reads the record
// only once the sequence matches the one it expects there. A record is padded to a cache line so
// that producer and consumer never write the same line, and the record's line is the only line
// that moves per record: `tail` is no longer what the consumer polls (it stays for diagnostics),
// and `head` is published by the consumer in batches (a quarter of the ring, and at the end of
// every drain run, see publish_head()), so the producer reads the consumer's line a few times per
// ring. head and tail count bytes since creation (64-bit, never wrap in practice); the data area
// is a power of two of at most kMaxRingBytes.
//
// Why a stale prefix never matches: the sequence value is odd and names the record's line
// position (so it differs from any value the same slot held a lap before), and before publishing a
// record the producer clears the prefix word of the slot that follows it to 0, so that what the
// consumer finds there next is either 0, or the next record's prefix, never payload bytes of an
// older record that happened to look like a prefix. The one slot the producer may not clear is the
// start of the oldest record in the ring (the ring is then full); that word holds that record's
// own prefix, a lap behind. Fresh ring memory is zero (memfd pages, or zeroed by the creator).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace portico::transport::shm {

inline constexpr size_t kCacheLine = 64;
inline constexpr uint32_t kRecordFrame = 1;
inline constexpr uint32_t kRecordPad = 2;
// The prefix holds a size of up to 2^24 - 1 lines: a padding record is shorter than the ring.
inline constexpr uint64_t kMaxRingBytes = uint64_t{1} << 30;
inline constexpr size_t kRecordPrefixBytes = 8;

// The prefix word: bits 0-31 the sequence value, 32-55 the record's size in lines, 56-63 its type.
inline constexpr uint32_t record_sequence(uint64_t position) {
    return static_cast<uint32_t>(position / kCacheLine) << 1 | 1u;
}
inline constexpr uint64_t record_prefix(uint64_t position, size_t bytes, uint32_t type) {
    return uint64_t{record_sequence(position)} | uint64_t{bytes / kCacheLine} << 32 | uint64_t{type} << 56;
}
inline constexpr uint32_t prefix_sequence(uint64_t word) { return static_cast<uint32_t>(word); }
inline constexpr size_t prefix_bytes(uint64_t word) {
    return static_cast<size_t>((word >> 32) & 0xffffff) * kCacheLine;
}
inline constexpr uint32_t prefix_type(uint64_t word) { return static_cast<uint32_t>(word >> 56); }

struct alignas(kCacheLine) RingControl {
    // Written by the producer after each record: for diagnostics only, nobody waits on it.
    alignas(kCacheLine) std::atomic<uint64_t> tail;
    // Written by the consumer in batches: the producer may reuse everything before it.
    alignas(kCacheLine) std::atomic<uint64_t> head;
    // Set by a consumer about to sleep; a producer that clears it must wake the consumer.
    alignas(kCacheLine) std::atomic<uint32_t> consumer_sleeping;
    // Set by a producer that found no room; a consumer that clears it must wake the producer.
    alignas(kCacheLine) std::atomic<uint32_t> producer_waiting;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings need lock-free 64-bit atomics");
static_assert(std::atomic_ref<uint64_t>::required_alignment <= kCacheLine);

inline constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

class RingView {
public:
    RingView() = default;
    RingView(RingControl *ctl, std::byte *data, size_t bytes)
        : ctl_(ctl), data_(data), mask_(bytes - 1), size_(bytes), tail_(ctl->tail.load(std::memory_order_relaxed)),
          cached_head_(ctl->head.load(std::memory_order_relaxed)), next_(cached_head_), published_head_(cached_head_) {}
    RingView(const RingView &o) { *this = o; }
    RingView &operator=(const RingView &o) {
        if (this == &o) return *this;
        ctl_ = o.ctl_;
        data_ = o.data_;
        mask_ = o.mask_;
        size_ = o.size_;
        tail_ = o.tail_;
        cached_head_ = o.cached_head_;
        pending_tail_ = o.pending_tail_;
        pending_pad_ = o.pending_pad_;
        next_.store(o.next_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        published_head_ = o.published_head_;
        current_ = o.current_;
        return *this;
    }
    ~RingView() = default;

    RingControl *control() const { return ctl_; }
    size_t size() const { return size_; }
    static size_t record_bytes(size_t body) { return round_up(kRecordPrefixBytes + body, kCacheLine); }

    // Producer: returns where to write `body` bytes, or nullptr if there is no room now. Nothing
    // is visible to the consumer until commit().
    std::byte *reserve(size_t body) {
        const size_t need = record_bytes(body);
        const uint64_t tail = tail_;
        const size_t pos = tail & mask_;
        const size_t contiguous = size_ - pos;
        const size_t total = need <= contiguous ? need : contiguous + need; // pad to the end first
        if (tail + total - cached_head_ > size_) {
            cached_head_ = ctl_->head.load(std::memory_order_acquire);
            if (tail + total - cached_head_ > size_) return nullptr;
        }
        pending_pad_ = need > contiguous;
        const uint64_t start = pending_pad_ ? tail + contiguous : tail;
        pending_tail_ = start + need;
        // The slot after this record: cleared unless it is the oldest record's, still in use.
        if (pending_tail_ != cached_head_ + size_) word_at(pending_tail_).store(0, std::memory_order_relaxed);
        return data_ + (start & mask_) + kRecordPrefixBytes;
    }
    // Producer: publishes the record reserve() returned (and the padding before it).
    void commit() {
        const uint64_t start = pending_pad_ ? tail_ + (size_ - (tail_ & mask_)) : tail_;
        word_at(start).store(record_prefix(start, pending_tail_ - start, kRecordFrame), std::memory_order_release);
        if (pending_pad_)
            word_at(tail_).store(record_prefix(tail_, start - tail_, kRecordPad), std::memory_order_release);
        tail_ = pending_tail_;
        ctl_->tail.store(tail_, std::memory_order_relaxed);
    }
    // The consumer's head as the producer last read it: after a failed reserve(), the value that
    // showed there was no room.
    uint64_t head_seen_by_producer() const { return cached_head_; }

    // Consumer: the next record's body and its size, or nullptr if none is there yet.
    // A record whose prefix is implausible (a hostile or broken peer) sets *corrupt.
    const std::byte *peek(size_t *body_bytes, bool *corrupt) {
        for (;;) {
            const uint64_t next = next_.load(std::memory_order_relaxed);
            const uint64_t word = word_at(next).load(std::memory_order_acquire);
            if (prefix_sequence(word) != record_sequence(next)) return nullptr;
            const size_t pos = next & mask_;
            const size_t bytes = prefix_bytes(word);
            const uint32_t type = prefix_type(word);
            if (bytes == 0 || bytes > size_ - pos || (type != kRecordFrame && type != kRecordPad) ||
                (type == kRecordPad && bytes != size_ - pos)) {
                *corrupt = true;
                return nullptr;
            }
            if (type == kRecordPad) {
                advance(next + bytes);
                continue;
            }
            current_ = bytes;
            *body_bytes = bytes - kRecordPrefixBytes;
            return data_ + pos + kRecordPrefixBytes;
        }
    }
    // Consumer: done with the record peek() returned.
    void release() { advance(next_.load(std::memory_order_relaxed) + current_); }
    // Consumer: tells the producer about every record released so far. Called at the end of a run
    // of records, before the consumer looks at producer_waiting (the Dekker pair with a producer
    // that sets it and then looks at head).
    void publish_head() {
        const uint64_t next = next_.load(std::memory_order_relaxed);
        if (next == published_head_) return;
        published_head_ = next;
        ctl_->head.store(next, std::memory_order_release);
    }
    // Whether no record is ready; may be asked by any thread (a hint, unless it holds the
    // consumer's side, as after arm_sleep's fence).
    bool empty() const {
        const uint64_t next = next_.load(std::memory_order_acquire);
        return prefix_sequence(word_at(next).load(std::memory_order_acquire)) != record_sequence(next);
    }

private:
    std::atomic_ref<uint64_t> word_at(uint64_t position) const {
        return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(data_ + (position & mask_)));
    }
    void advance(uint64_t next) {
        next_.store(next, std::memory_order_release);
        if (next - published_head_ >= size_ / 4) publish_head();
    }

    RingControl *ctl_ = nullptr;
    std::byte *data_ = nullptr;
    size_t mask_ = 0;
    size_t size_ = 0;
    // Producer side.
    uint64_t tail_ = 0;        // as it last published it
    uint64_t cached_head_ = 0; // its last view of head
    uint64_t pending_tail_ = 0;
    bool pending_pad_ = false;
    // Consumer side: the next record's position (atomic: empty() may be asked by other threads).
    std::atomic<uint64_t> next_{0};
    uint64_t published_head_ = 0;
    size_t current_ = 0;
};

} // namespace portico::transport::shm
