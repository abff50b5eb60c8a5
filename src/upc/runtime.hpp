// SPDX-License-Identifier: BSD-3-Clause
// The UPC runtime's internal interface: one Runtime per process (one UPC thread per process),
// built on the public Portals API (portals4.h, portico_runtime.h, portico_ext.h) and clientkit,
// as GASNet is. The compiler ABI (abi.cpp), the library calls of upc.h (heap.cpp, lock.cpp,
// collectives.cpp) and the C++ front end all go through these functions.
//
// Addresses: a shared address is (thread, offset), offset a byte offset into that thread's
// segment (the address field of a pointer-to-shared). Every thread's segment has the same layout:
//
//   [0, kControlBytes)          the runtime's control block (struct Control): barrier slots,
//                               heap headers, lock links, collective scratch, exit word
//   [kControlBytes, statics)    the program's `upc_shared` section, if it has one
//   [heap_base, ...)            the global heap, growing up (same offsets on every thread)
//   [..., segment_bytes)        this thread's local heap, growing down
//
// Data path: a thread whose segment this process has mapped (its own; with node-local memory
// every thread on this machine) is reached with loads, stores and memcpy; any other through
// Portals gets and puts on PTE kPtGmem. Atomics, lock traffic and barrier traffic always go
// through Portals, even to this process's own memory, because the engine applies atomics with
// plain loads and stores under its own lock: a CPU atomic on the same word would not be atomic
// with them.
#pragma once

#include <portals4.h>
#include <portico/upc_abi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace portico::upc {

// ---- layout ------------------------------------------------------------------------------------
constexpr ptl_pt_index_t kPtGmem = 10;     // every shared get/put/atomic (LE over the segment)
constexpr ptl_pt_index_t kPtLock = 11;     // lock-link puts, counted (the waiter's CT)
constexpr ptl_pt_index_t kPtBarUp = 12;    // barrier notify: MIN atomics into the UP slots
constexpr ptl_pt_index_t kPtBarDown = 13;  // barrier wait: the agreed value from the parent
constexpr ptl_pt_index_t kPtShutdown = 14; // upc_global_exit's code
constexpr ptl_pt_index_t kPtColl = 15;     // collective signals and data, counted

constexpr int kLockLinks = 64; // links a thread may hold at once before it allocates
constexpr size_t kCollScratchBytes = 64 * 1024;
constexpr size_t kBroadcastBytes = 4096;
constexpr int kMaxThreads = UPC_PTS_MAX_THREADS;

// Barrier values travel as two int64 items reduced with PTL_MIN: {min id, -max id}; anonymous
// contributes {INT64_MAX, INT64_MAX} (it matches anything).
struct BarrierValue {
    int64_t min_id;
    int64_t neg_max_id;
};

// An MCS queue node (upc_lock): `next` a pointer-to-shared bits, `signal` non-zero when the
// predecessor hands the lock over.
struct LockLink {
    uint64_t next;
    uint64_t signal;
};

// A buddy heap's header: a CSWAP spinlock (0 free, else the holder's thread + 1; not a upc_lock_t,
// which would allocate its queue links from this heap, recursively) and the free lists
// by order (offset of the first free block, 0 for none). Layout and use are heap.cpp's.
struct HeapHeader {
    uint64_t lock;
    uint64_t free[48];
};

// The runtime's part of every segment, at offset 0. Fields written by remote threads are only
// ever written through Portals (see above).
struct alignas(64) Control {
    uint64_t reserved_null[8];  // offset 0 is the null pointer's address: never user data
    BarrierValue bar_up[2];     // accumulators, by barrier episode parity (PTE kPtBarUp)
    BarrierValue bar_down[2];   // the agreed value, by parity (PTE kPtBarDown)
    BarrierValue bar_identity;  // {INT64_MAX, INT64_MAX}, the source of re-arming
    int64_t shutdown_code;      // upc_global_exit's code (PTE kPtShutdown)
    uint64_t water_marks;       // thread 0 only: (global high mark << 32) | local low mark, 64 KiB units
    HeapHeader global_heap;     // thread 0 only: the global heap (upc_global_alloc, upc_all_alloc)
    HeapHeader local_heap;      // this thread's local heap (upc_alloc)
    LockLink links[kLockLinks]; // this thread's MCS links (PTE kPtLock writes them)
    alignas(64) unsigned char bcast[2][kBroadcastBytes];       // broadcast(): the root's value, by parity
    alignas(64) unsigned char coll_scratch[kCollScratchBytes]; // collectives' own (collectives.cpp)
    alignas(64) int64_t coll_slots[kMaxThreads * 2];           // collectives: one pair per thread
};
constexpr size_t kControlBytes = (sizeof(Control) + 65535) & ~size_t{65535};

// ---- fences --------------------------------------------------------------------------------------
// A full barrier (strict accesses, fence) and an acquire barrier (after a counter says the engine
// has written). ThreadSanitizer does not model fences (GCC refuses them under it); there a
// sequentially consistent read-modify-write stands in, a full barrier on the hardware as well.
inline void full_fence() {
#if defined(__SANITIZE_THREAD__)
    static int tsan_fence = 0;
    __atomic_fetch_add(&tsan_fence, 0, __ATOMIC_SEQ_CST);
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
inline void acquire_fence() {
#if defined(__SANITIZE_THREAD__)
    full_fence();
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

// ---- the runtime ---------------------------------------------------------------------------------
struct Runtime;
Runtime &rt(); // the started runtime (fatal if not started)

int mythread();
int threads();
size_t segment_bytes(); // every thread's segment length
uint64_t heap_base();   // first offset of the global heap (after control and statics)
bool started();

// Fatal error: prints "UPC thread N: <message>" and ends the whole job with code 1 (as a
// crash would). Never returns.
[[noreturn]] void fatal(const std::string &message);
// Ends the whole job with `code` (upc_global_exit).
[[noreturn]] void global_exit(int code);

// This process's mapping of `thread`'s segment (own thread always; others with node-local
// memory on the same machine), or nullptr.
unsigned char *local_base(int thread);
inline void *local_addr(int thread, uint64_t offset) {
    unsigned char *b = local_base(thread);
    return b ? b + offset : nullptr;
}
// This thread's own control block (always mapped).
Control &my_control();
template <typename T> constexpr uint64_t control_offset(T Control::*field) {
    return static_cast<uint64_t>(reinterpret_cast<std::uintptr_t>(&(static_cast<Control *>(nullptr)->*field)));
}

// ---- data movement (gmem.cpp); relaxed unless said otherwise ----------------------------------
// Blocking read of n bytes at (thread, offset). Waits first for this thread's own earlier puts
// to the same thread (same-address ordering, whatever their sizes).
void get(void *dst, int thread, uint64_t offset, size_t n);
// Write n bytes; src is reusable on return; completion is asynchronous (sync_puts/fence).
void put(int thread, uint64_t offset, const void *src, size_t n);
// Shared to shared copy, and memset.
void copy(int dst_thread, uint64_t dst_offset, int src_thread, uint64_t src_offset, size_t n);
void set(int thread, uint64_t offset, int c, size_t n);
// Strict forms (UPC §5: ordered with respect to every other access of this thread).
void get_strict(void *dst, int thread, uint64_t offset, size_t n);
void put_strict(int thread, uint64_t offset, const void *src, size_t n);
void copy_strict(int dst_thread, uint64_t dst_offset, int src_thread, uint64_t src_offset, size_t n);
// Completes every outstanding put of this thread (and a pending strict put); then a full fence.
void fence();
void sync_puts();

// Portals atomics on 8-byte words (always through the engine, even to this process's memory).
// pt is the portal index the target counts them on (kPtGmem, or kPtLock to wake a waiter).
uint64_t atomic_swap(int thread, uint64_t offset, uint64_t value, ptl_pt_index_t pt = kPtGmem);
// Compare-and-swap; returns the old value (success iff it equals expected).
uint64_t atomic_cswap(int thread, uint64_t offset, uint64_t expected, uint64_t desired, ptl_pt_index_t pt = kPtGmem);
uint64_t atomic_fetch_add(int thread, uint64_t offset, uint64_t value, ptl_pt_index_t pt = kPtGmem);
// A non-fetching atomic of n bytes (n <= 32 * item size, within max_atomic_size) of `type`,
// completed (acknowledged) on return.
void atomic(int thread, uint64_t offset, const void *operand, size_t n, ptl_op_t op, ptl_datatype_t type,
            ptl_pt_index_t pt = kPtGmem);
// A put through Portals on `pt`, even to a thread this process maps (so that the target's
// counter for that PTE sees it); completed (acknowledged) on return.
void put_counted(int thread, uint64_t offset, const void *src, size_t n, ptl_pt_index_t pt);
// Waits until pred() is true, sleeping on the counter of this thread's PTE `pt` (kPtLock or
// kPtColl) between checks: returns as soon as a counted put made pred() true.
template <typename Pred> void wait_counted(ptl_pt_index_t pt, Pred pred);
ptl_handle_ct_t counter_of(ptl_pt_index_t pt);                    // kPtLock, kPtColl
void check_counter(ptl_handle_ct_t ct, const ptl_ct_event_t &ev); // fatal on a failure count

// ---- barrier (barrier.cpp) -----------------------------------------------------------------------
// A named barrier has an id; anonymous matches any. Mismatch: fatal error on every thread that
// sees it ("barrier id mismatch"), as UPC §6.6.1 makes it an error.
void notify(int64_t id, bool anonymous);
void wait(int64_t id, bool anonymous);
void barrier(); // an internal anonymous barrier (notify + wait)
bool barrier_active();

// Small-value broadcast from `root` to every thread (collective; n <= kBroadcastBytes): the root's
// value travels through its control block, one internal barrier per call. Used by upc_all_alloc
// and upc_all_lock_alloc.
void broadcast(void *data, size_t n, int root);

// ---- heap (heap.cpp) -----------------------------------------------------------------------------
// Offsets of blocks of the global heap (same offset on every thread) and of local heaps.
void heap_init();                                                  // collective, at start-up
upc_shared_ptr_t heap_global_alloc(size_t nblocks, size_t nbytes); // upc_global_alloc
upc_shared_ptr_t heap_local_alloc(size_t nbytes);                  // upc_alloc
void heap_free(upc_shared_ptr_t p);                                // upc_free

} // namespace portico::upc

// ---- inline definitions ------------------------------------------------------------------------
template <typename Pred> void portico::upc::wait_counted(ptl_pt_index_t pt, Pred pred) {
    const ptl_handle_ct_t ct = counter_of(pt);
    for (;;) {
        ptl_ct_event_t now{};
        PtlCTGet(ct, &now);
        check_counter(ct, now);
        // The engine raises the counter after it wrote the data (a release); read it after.
        acquire_fence();
        if (pred()) return;
        ptl_ct_event_t seen{};
        PtlCTWait(ct, now.success + 1, &seen);
    }
}
