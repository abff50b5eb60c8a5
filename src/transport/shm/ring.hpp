// A single-producer single-consumer ring of variable-length records in shared memory.
//
// Each record is an 8-byte prefix (record size, type) followed by its bytes, padded to a cache
// line so that producer and consumer never write the same line. head and tail count bytes since
// creation (64-bit, never wrap in practice); the data area is a power of two.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace portico::transport::shm {

inline constexpr size_t kCacheLine = 64;
inline constexpr uint32_t kRecordFrame = 1;
inline constexpr uint32_t kRecordPad = 2;

struct RecordPrefix {
    uint32_t bytes; // whole record including this prefix, a multiple of kCacheLine
    uint32_t type;
};

struct alignas(kCacheLine) RingControl {
    alignas(kCacheLine) std::atomic<uint64_t> tail; // written by the producer
    alignas(kCacheLine) std::atomic<uint64_t> head; // written by the consumer
    // Set by a consumer about to sleep; a producer that clears it must wake the consumer.
    alignas(kCacheLine) std::atomic<uint32_t> consumer_sleeping;
    // Set by a producer that found no room; a consumer that clears it must wake the producer.
    alignas(kCacheLine) std::atomic<uint32_t> producer_waiting;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings need lock-free 64-bit atomics");

inline constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

class RingView {
public:
    RingView() = default;
    RingView(RingControl *ctl, std::byte *data, size_t bytes)
        : ctl_(ctl), data_(data), mask_(bytes - 1), size_(bytes), tail_(ctl->tail.load(std::memory_order_relaxed)) {}

    RingControl *control() const { return ctl_; }
    size_t size() const { return size_; }
    static size_t record_bytes(size_t body) { return round_up(sizeof(RecordPrefix) + body, kCacheLine); }

    // Producer: returns where to write `body` bytes, or nullptr if there is no room now.
    std::byte *reserve(size_t body) {
        const size_t need = record_bytes(body);
        // The producer's own copy: the shared line is the one the consumer polls, and reading it
        // back stalled the producer behind the consumer's last look.
        const uint64_t tail = tail_;
        const size_t pos = tail & mask_;
        const size_t contiguous = size_ - pos;
        const size_t total = need <= contiguous ? need : contiguous + need; // pad to the end first
        if (tail + total - cached_head_ > size_) {
            cached_head_ = ctl_->head.load(std::memory_order_acquire);
            if (tail + total - cached_head_ > size_) return nullptr;
        }
        if (need > contiguous) {
            auto *pad = reinterpret_cast<RecordPrefix *>(data_ + pos);
            pad->bytes = static_cast<uint32_t>(contiguous);
            pad->type = kRecordPad;
            pending_tail_ = tail + contiguous;
        } else {
            pending_tail_ = tail;
        }
        auto *p = reinterpret_cast<RecordPrefix *>(data_ + (pending_tail_ & mask_));
        p->bytes = static_cast<uint32_t>(need);
        p->type = kRecordFrame;
        pending_tail_ += need;
        return reinterpret_cast<std::byte *>(p + 1);
    }
    void commit() {
        tail_ = pending_tail_;
        ctl_->tail.store(pending_tail_, std::memory_order_release);
    }
    // The consumer's head as the producer last read it: after a failed reserve(), the value that
    // showed there was no room.
    uint64_t head_seen_by_producer() const { return cached_head_; }

    // Consumer: the next record's body and its size, or nullptr if the ring is empty.
    // A record whose prefix is implausible (a hostile or broken peer) sets *corrupt.
    const std::byte *peek(size_t *body_bytes, bool *corrupt) {
        for (;;) {
            const uint64_t head = ctl_->head.load(std::memory_order_relaxed);
            if (head == cached_tail_) {
                cached_tail_ = ctl_->tail.load(std::memory_order_acquire);
                if (head == cached_tail_) return nullptr;
            }
            const size_t pos = head & mask_;
            RecordPrefix p;
            std::memcpy(&p, data_ + pos, sizeof p);
            const uint64_t avail = cached_tail_ - head;
            if (p.bytes < sizeof(RecordPrefix) || p.bytes % kCacheLine != 0 || p.bytes > size_ - pos ||
                p.bytes > avail || (p.type != kRecordFrame && p.type != kRecordPad)) {
                *corrupt = true;
                return nullptr;
            }
            if (p.type == kRecordPad) {
                ctl_->head.store(head + p.bytes, std::memory_order_release);
                continue;
            }
            current_ = p.bytes;
            *body_bytes = p.bytes - sizeof(RecordPrefix);
            return data_ + pos + sizeof(RecordPrefix);
        }
    }
    void release() {
        ctl_->head.store(ctl_->head.load(std::memory_order_relaxed) + current_, std::memory_order_release);
    }
    bool empty() const {
        const uint64_t head = ctl_->head.load(std::memory_order_relaxed);
        // The next record's line is fetched while tail is: when the producer publishes, both
        // lines come over at once instead of one after the other.
        __builtin_prefetch(data_ + (head & mask_));
        return head == ctl_->tail.load(std::memory_order_acquire);
    }

private:
    RingControl *ctl_ = nullptr;
    std::byte *data_ = nullptr;
    size_t mask_ = 0;
    size_t size_ = 0;
    uint64_t tail_ = 0;        // producer: tail as it last published it
    uint64_t cached_head_ = 0; // producer's last view of head
    uint64_t pending_tail_ = 0;
    uint64_t cached_tail_ = 0; // consumer's last view of tail
    size_t current_ = 0;
};

} // namespace portico::transport::shm
