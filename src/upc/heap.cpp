// SPDX-License-Identifier: BSD-3-Clause
// The shared heap (UPC 1.3 §7.2.2; docs/UPC.md, *The heap*): upc_global_alloc,
// upc_all_alloc, upc_alloc, upc_free, upc_all_free.
//
// Two kinds of binary-buddy heap over the segments:
// - one global heap: a block at offset X is reserved on every thread at once (each thread's share
//   of a upc_global_alloc lives at the same offset); its metadata (free lists, block headers)
//   live in thread 0's segment only, at the block offsets;
// - one local heap per thread, at the top of that thread's segment, growing down (upc_alloc).
// The global heap grows up from heap_base(), the local heaps grow down from segment_bytes().
//
// Blocks: 2^order bytes, aligned at 2^order as absolute segment offsets, with a 16-byte header at
// the block start (so user data, at block + 16, is 16-byte aligned). A free block links into its
// order's free list through its user area. Blocks come from superblocks: each extension of a
// heap adds one superblock of max(4 MiB, the request rounded up to a power of two) aligned at its
// own size, and cuts the alignment gap between the old top and the new superblock into maximal
// aligned power-of-two blocks that become superblocks of their own, so no byte is lost. A block
// never coalesces past its superblock's order, which is what makes unaligned heap ends and gaps
// safe for the buddy arithmetic (buddy = X ^ 2^order).
//
// Water marks: one word on thread 0, (global high mark << 32) | lowest local
// bottom, in 64 KiB units, moved with Portals CSWAP retry loops. Each thread keeps its own local
// bottom privately (a single shared low mark would give every local heap the size of the
// largest one); the word only records the lowest, which is all the global heap must not cross.
//
// Locking: a CSWAP spinlock in the HeapHeader (never a upc_lock_t, whose queue links may come from
// this heap: an allocation inside upc_lock would recurse). Every metadata put is complete before
// the lock word is released, so the next holder, which may read through Portals or through its own
// mapping, sees all of it.
#include "runtime.hpp"

#include <upc.h>

#include <sched.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#define UPC_EXPORT extern "C" __attribute__((visibility("default")))

namespace portico::upc {

namespace {

constexpr uint32_t kBlockMagic = 0x48435055; // "UPCH" in memory
constexpr uint64_t kHeaderBytes = 16;
constexpr unsigned kMinOrder = 5;                   // the header and the two free-list links
constexpr unsigned kMaxOrder = 47;                  // HeapHeader::free has 48 lists
constexpr unsigned kSuperOrder = 22;                // 4 MiB, so that extensions are rare
constexpr unsigned kMarkShift = 16;                 // water marks count 64 KiB units
constexpr unsigned kSmallestExtension = kMarkShift; // so that every mark is exact
constexpr unsigned kSpinsBeforeYield = 16;

struct BlockHeader {
    uint32_t magic;
    uint8_t order;       // the block is 2^order bytes
    uint8_t super_order; // of the superblock it was cut from: coalescing stops there
    uint8_t is_free;
    uint8_t is_global;
    uint32_t owner; // the thread that last allocated or freed it (for post-mortems)
    uint32_t check; // the block's own offset / 16: a header copied elsewhere does not validate
};
static_assert(sizeof(BlockHeader) == kHeaderBytes);

// A free block's first 32 bytes: the header, then the list links (offsets, 0 for none).
struct FreeBlock {
    BlockHeader h;
    uint64_t next;
    uint64_t prev;
};
static_assert(sizeof(FreeBlock) == 32 && (uint64_t{1} << kMinOrder) >= sizeof(FreeBlock));
constexpr uint64_t kNextAt = offsetof(FreeBlock, next);
constexpr uint64_t kPrevAt = offsetof(FreeBlock, prev);

uint32_t check_of(uint64_t block) { return static_cast<uint32_t>(block >> 4); }

uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

// The smallest order whose block holds `need` bytes (header included), or 0 when none does.
unsigned order_for(uint64_t need) {
    if (need > (uint64_t{1} << kMaxOrder)) return 0;
    return std::max(kMinOrder, static_cast<unsigned>(std::bit_width(need - 1)));
}

// ---- the private part of the heaps' state ----------------------------------------------------
uint64_t g_local_bottom = 0; // this thread's local heap starts here (private: see Water marks)

uint64_t heap_floor() { return round_up(heap_base(), uint64_t{1} << kMinOrder); }
uint64_t heap_ceiling() { return segment_bytes() & ~((uint64_t{1} << kMinOrder) - 1); }

// ---- water marks -------------------------------------------------------------------------------
uint64_t marks_offset() { return control_offset(&Control::water_marks); }

uint64_t initial_marks() { return ((heap_floor() >> kMarkShift) << 32) | (heap_ceiling() >> kMarkShift); }

// The word as read; 0 is the value before thread 0's heap_init, which means the initial marks.
struct Marks {
    uint64_t raw;
    uint64_t global_top; // bytes: the global heap ends here
    uint64_t local_low;  // bytes: no local heap starts below this
};

Marks decode(uint64_t raw) {
    const uint64_t w = raw ? raw : initial_marks();
    return {raw, std::max(heap_floor(), (w >> 32) << kMarkShift), (w & 0xffffffffu) << kMarkShift};
}

// An atomic read through the engine, which applies every atomic to the word under its own lock.
Marks read_marks() { return decode(atomic_fetch_add(0, marks_offset(), 0)); }

// ---- one heap, locked ----------------------------------------------------------------------------
// Holds the heap's lock for its lifetime, with the free-list heads cached (one get when taken,
// one put when released).
class LockedHeap {
public:
    LockedHeap(bool global, int thread)
        : global_(global), thread_(thread),
          header_(global ? control_offset(&Control::global_heap) : control_offset(&Control::local_heap)) {
        acquire();
        get(free_, thread_, header_ + offsetof(HeapHeader, free), sizeof free_);
    }
    ~LockedHeap() {
        if (dirty_) put(thread_, header_ + offsetof(HeapHeader, free), free_, sizeof free_);
        sync_puts();
        // A CSWAP from our own value rather than a plain store: it checks that we still held it.
        const uint64_t me = static_cast<uint64_t>(mythread()) + 1;
        const uint64_t was = atomic_cswap(thread_, lock_offset(), me, 0);
        if (was != me)
            fatal("shared heap: the heap lock word reads " + std::to_string(was) + " at release instead of " +
                  std::to_string(me) + " (overwritten?)");
    }
    LockedHeap(const LockedHeap &) = delete;
    LockedHeap &operator=(const LockedHeap &) = delete;

    bool global() const { return global_; }

    // A block of 2^order bytes, its header written as allocated; 0 when the free lists have none
    // large enough.
    uint64_t take(unsigned order) {
        unsigned j = order;
        while (j <= kMaxOrder && free_[j] == 0) ++j;
        if (j > kMaxOrder) return 0;
        const uint64_t block = free_[j];
        const FreeBlock fb = read_free(block);
        if (fb.h.magic != kBlockMagic || !fb.h.is_free || fb.h.order != j)
            corrupt(block, "listed as free but its header disagrees");
        unlink(j, fb.next, fb.prev);
        // Split down, keeping the lower half: repeated allocations of one size pack from the bottom.
        while (j > order) {
            --j;
            push(j, block + (uint64_t{1} << j), fb.h.super_order);
        }
        const BlockHeader h{kBlockMagic,
                            static_cast<uint8_t>(order),
                            fb.h.super_order,
                            0,
                            static_cast<uint8_t>(global_),
                            static_cast<uint32_t>(mythread()),
                            check_of(block)};
        put(thread_, block, &h, sizeof h);
        return block;
    }

    // Returns an allocated block, coalescing with free buddies up to its superblock.
    void give_back(uint64_t block, const char *who) {
        BlockHeader h;
        get(&h, thread_, block, sizeof h);
        if (h.magic != kBlockMagic || h.check != check_of(block))
            bad_pointer(who, block, "not a block of the shared heap, or already freed");
        if (h.is_free) bad_pointer(who, block, "freed twice");
        if (h.is_global != static_cast<uint8_t>(global_) || h.order < kMinOrder || h.order > h.super_order ||
            h.super_order > kMaxOrder || (block & ((uint64_t{1} << h.order) - 1)))
            corrupt(block, "an allocated block's header is damaged");
        unsigned k = h.order;
        while (k < h.super_order) {
            const uint64_t buddy = block ^ (uint64_t{1} << k);
            // The buddy's start is always a block start (its half of the parent is one block or
            // was split), so its header is authoritative.
            const FreeBlock fb = read_free(buddy);
            if (fb.h.magic != kBlockMagic || !fb.h.is_free || fb.h.order != k) break;
            unlink(k, fb.next, fb.prev);
            // The upper half's header is now inside the merged block: kill it, so that a second
            // free of that pointer is caught instead of passing as a live block.
            const uint32_t dead = 0;
            put(thread_, std::max(block, buddy) + offsetof(BlockHeader, magic), &dead, sizeof dead);
            block = std::min(block, buddy);
            ++k;
        }
        push(k, block, h.super_order);
    }

    // A free superblock [block, block + 2^order): coalescing never goes past it.
    void add_superblock(uint64_t block, unsigned order) { push(order, block, order); }

    // [lo, hi) cut into maximal aligned power-of-two superblocks.
    void add_region(uint64_t lo, uint64_t hi) {
        while (lo < hi) {
            const unsigned align = static_cast<unsigned>(std::countr_zero(lo));
            const unsigned fit = static_cast<unsigned>(std::bit_width(hi - lo)) - 1;
            const unsigned order = std::min({align, fit, kMaxOrder});
            add_superblock(lo, order);
            lo += uint64_t{1} << order;
        }
    }

private:
    uint64_t lock_offset() const { return header_ + offsetof(HeapHeader, lock); }

    // Test-and-test-and-set: a failed CSWAP waits for the word to read 0 before the next one, so
    // that waiting threads do not flood the engine that serves the holder's own traffic.
    void acquire() {
        const uint64_t me = static_cast<uint64_t>(mythread()) + 1;
        const uint64_t off = lock_offset();
        unsigned spins = 0;
        for (;;) {
            const uint64_t holder = atomic_cswap(thread_, off, 0, me);
            if (holder == 0) return;
            if (holder == me) fatal("shared heap: the allocator was re-entered while this thread held its lock");
            for (;;) {
                if (++spins > kSpinsBeforeYield) sched_yield();
                uint64_t now;
                if (const auto *word = static_cast<const uint64_t *>(local_addr(thread_, off)))
                    now = __atomic_load_n(word, __ATOMIC_ACQUIRE);
                else
                    get(&now, thread_, off, sizeof now);
                if (now == 0) break;
            }
        }
    }

    FreeBlock read_free(uint64_t block) {
        FreeBlock fb;
        get(&fb, thread_, block, sizeof fb);
        if (fb.h.magic == kBlockMagic && fb.h.is_free && fb.h.check != check_of(block))
            corrupt(block, "a free block's header is damaged");
        return fb;
    }

    void push(unsigned order, uint64_t block, unsigned super_order) {
        const FreeBlock fb{{kBlockMagic, static_cast<uint8_t>(order), static_cast<uint8_t>(super_order), 1,
                            static_cast<uint8_t>(global_), static_cast<uint32_t>(mythread()), check_of(block)},
                           free_[order],
                           0};
        put(thread_, block, &fb, sizeof fb);
        if (free_[order]) put(thread_, free_[order] + kPrevAt, &block, sizeof block);
        free_[order] = block;
        dirty_ = true;
    }

    void unlink(unsigned order, uint64_t next, uint64_t prev) {
        if (prev)
            put(thread_, prev + kNextAt, &next, sizeof next);
        else {
            free_[order] = next;
            dirty_ = true;
        }
        if (next) put(thread_, next + kPrevAt, &prev, sizeof prev);
    }

    [[noreturn]] void corrupt(uint64_t block, const char *what) const {
        fatal(std::string("shared heap corrupted (") + (global_ ? "global heap" : "local heap of thread ") +
              (global_ ? "" : std::to_string(thread_)) + ", block at offset " + std::to_string(block) + "): " + what +
              "; was shared memory written outside an allocation?");
    }

    [[noreturn]] void bad_pointer(const char *who, uint64_t block, const char *what) const {
        fatal(std::string(who) + ": pointer-to-shared (thread " + std::to_string(global_ ? 0 : thread_) + ", offset " +
              std::to_string(block + kHeaderBytes) + ") is " + what);
    }

    bool global_;
    int thread_;
    uint64_t header_;
    uint64_t free_[48];
    bool dirty_ = false;
};
static_assert(sizeof(HeapHeader::free) / sizeof(uint64_t) == kMaxOrder + 1);

// ---- extension -------------------------------------------------------------------------------------
// Orders tried for a superblock: the preferred size first, then smaller ones (never below the
// request, nor below 64 KiB so that the marks stay exact), so that the last few megabytes of a
// small heap still serve small requests.
unsigned first_super_order(unsigned order) { return std::max(order, kSuperOrder); }
unsigned last_super_order(unsigned order) { return std::max(order, kSmallestExtension); }

// The largest superblock, from max(4 MiB, the request) down to the request, that `place` can put
// somewhere (place(size): its start, or nothing): its order and start, or order 0 when none fits.
template <class Place> std::pair<unsigned, uint64_t> choose_superblock(unsigned order, Place place) {
    for (unsigned o = first_super_order(order); o >= last_super_order(order); --o)
        if (const std::optional<uint64_t> at = place(uint64_t{1} << o)) return {o, *at};
    return {0, 0};
}

// Raises the global high mark by one superblock able to hold a block of `order`; false when it
// would cross the lowest local heap (out of memory). Called with the global heap locked, so the
// global top only moves under us by nobody; local extensions race us through the CSWAP.
bool extend_global(LockedHeap &heap, unsigned order) {
    Marks m = read_marks();
    for (;;) {
        const auto [so, start] = choose_superblock(order, [&](uint64_t size) -> std::optional<uint64_t> {
            const uint64_t at = round_up(m.global_top, size);
            if (at + size > m.local_low) return std::nullopt;
            return at;
        });
        if (so == 0) return false;
        const uint64_t end = start + (uint64_t{1} << so);
        const uint64_t word = ((end >> kMarkShift) << 32) | ((m.raw ? m.raw : initial_marks()) & 0xffffffffu);
        const uint64_t seen = atomic_cswap(0, marks_offset(), m.raw, word);
        if (seen != m.raw) {
            m = decode(seen); // a local heap moved down meanwhile: decide again
            continue;
        }
        heap.add_region(m.global_top, start);
        heap.add_superblock(start, so);
        return true;
    }
}

// Moves this thread's local bottom down by one superblock able to hold a block of `order`; false
// when it would cross the global high mark. Other threads' local heaps do not limit it: only the
// lowest bottom is published, for the global heap to respect.
bool extend_local(LockedHeap &heap, unsigned order) {
    Marks m = read_marks();
    for (;;) {
        const auto [so, start] = choose_superblock(order, [&](uint64_t size) -> std::optional<uint64_t> {
            if (g_local_bottom < size) return std::nullopt;
            const uint64_t at = (g_local_bottom - size) & ~(size - 1);
            if (at < m.global_top) return std::nullopt;
            return at;
        });
        if (so == 0) return false;
        const uint64_t w = m.raw ? m.raw : initial_marks();
        const uint64_t low = std::min<uint64_t>(w & 0xffffffffu, start >> kMarkShift);
        const uint64_t word = (w & ~uint64_t{0xffffffffu}) | low;
        // When another thread's local heap is lower already, the word says enough: the global heap
        // cannot reach `start`, and the marks only ever move towards each other.
        if (word != w || m.raw == 0) {
            const uint64_t seen = atomic_cswap(0, marks_offset(), m.raw, word);
            if (seen != m.raw) {
                m = decode(seen);
                continue;
            }
        }
        heap.add_region(start + (uint64_t{1} << so), g_local_bottom);
        heap.add_superblock(start, so);
        g_local_bottom = start;
        return true;
    }
}

uint64_t allocate(LockedHeap &heap, unsigned order) {
    if (uint64_t block = heap.take(order)) return block;
    const bool grown = heap.global() ? extend_global(heap, order) : extend_local(heap, order);
    return grown ? heap.take(order) : 0;
}

} // namespace

void heap_init() {
    g_local_bottom = heap_ceiling();
    Control &c = my_control();
    // The runtime's start-up barrier follows, so nobody takes these locks yet.
    std::memset(&c.local_heap, 0, sizeof c.local_heap);
    if (mythread() == 0) {
        std::memset(&c.global_heap, 0, sizeof c.global_heap);
        // Through the engine, like every later access to the word; 0 reads as the initial marks
        // anyway, so a thread racing ahead of this is harmless.
        (void)atomic_cswap(0, marks_offset(), 0, initial_marks());
    }
}

upc_shared_ptr_t heap_global_alloc(size_t nblocks, size_t nbytes) {
    if (nblocks == 0 || nbytes == 0) return upc_shared_ptr_t{0};
    const auto n = static_cast<uint64_t>(threads());
    const uint64_t per_thread = nblocks / n + (nblocks % n != 0);
    if (per_thread > (uint64_t{1} << kMaxOrder) / nbytes) return upc_shared_ptr_t{0};
    const unsigned order = order_for(per_thread * nbytes + kHeaderBytes);
    if (order == 0) return upc_shared_ptr_t{0};
    LockedHeap heap(true, 0);
    const uint64_t block = allocate(heap, order);
    if (block == 0) return upc_shared_ptr_t{0};
    return upc_pts_make(0, 0, block + kHeaderBytes);
}

upc_shared_ptr_t heap_local_alloc(size_t nbytes) {
    if (nbytes == 0 || nbytes > (uint64_t{1} << kMaxOrder)) return upc_shared_ptr_t{0};
    const unsigned order = order_for(nbytes + kHeaderBytes);
    if (order == 0) return upc_shared_ptr_t{0};
    const int me = mythread();
    LockedHeap heap(false, me);
    const uint64_t block = allocate(heap, order);
    if (block == 0) return upc_shared_ptr_t{0};
    return upc_pts_make(static_cast<unsigned>(me), 0, block + kHeaderBytes);
}

void heap_free(upc_shared_ptr_t p) {
    if (upc_pts_is_null(p)) return;
    const char *who = "upc_free";
    const int thread = static_cast<int>(upc_pts_thread(p));
    const uint64_t addr = upc_pts_vaddr(p);
    auto where = [&] {
        return "pointer-to-shared (thread " + std::to_string(thread) + ", phase " + std::to_string(upc_pts_phase(p)) +
               ", offset " + std::to_string(addr) + ")";
    };
    if (thread >= threads() || upc_pts_phase(p) != 0 || addr % kHeaderBytes != 0 ||
        addr < heap_floor() + kHeaderBytes || addr > heap_ceiling())
        fatal(std::string(who) + ": " + where() + " was not returned by upc_alloc, upc_global_alloc or upc_all_alloc");
    const uint64_t block = addr - kHeaderBytes;
    // Which heap: read before taking its lock, checked again under it.
    BlockHeader h;
    get(&h, thread, block, sizeof h);
    if (h.magic != kBlockMagic || h.check != check_of(block))
        fatal(std::string(who) + ": " + where() + " is not a block of the shared heap, or was freed already");
    if (h.is_global && thread != 0)
        fatal(std::string(who) + ": " + where() + " points into a global allocation but not at its start");
    LockedHeap heap(h.is_global != 0, h.is_global ? 0 : thread);
    heap.give_back(block, who);
}

} // namespace portico::upc

using namespace portico::upc;

UPC_EXPORT upc_shared_ptr_t upc_global_alloc(size_t nblocks, size_t nbytes) {
    return heap_global_alloc(nblocks, nbytes);
}

// Collective: thread 0 allocates and broadcasts. The arguments are single-valued (UPC 1.3
// §7.2.2.2), so a zero size returns NULL everywhere without a word exchanged.
UPC_EXPORT upc_shared_ptr_t upc_all_alloc(size_t nblocks, size_t nbytes) {
    if (nblocks == 0 || nbytes == 0) return upc_shared_ptr_t{0};
    upc_shared_ptr_t p{0};
    if (mythread() == 0) p = heap_global_alloc(nblocks, nbytes);
    broadcast(&p, sizeof p, 0);
    return p;
}

UPC_EXPORT upc_shared_ptr_t upc_alloc(size_t nbytes) { return heap_local_alloc(nbytes); }

UPC_EXPORT void upc_free(upc_shared_ptr_t ptr) { heap_free(ptr); }

// UPC 1.3 §7.2.2.5: collective. Every thread's writes to the block are complete (fence) and every
// thread has stopped using it (barrier) before thread 0 returns it to the heap; no barrier after,
// since nothing that follows can touch the block. NULL: no action, on every thread alike.
UPC_EXPORT void upc_all_free(upc_shared_ptr_t ptr) {
    if (upc_pts_is_null(ptr)) return;
    fence();
    barrier();
    if (mythread() == 0) heap_free(ptr);
}
