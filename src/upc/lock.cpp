// SPDX-License-Identifier: BSD-3-Clause
// UPC locks (UPC 1.3 §7.2.4): MCS queue locks (docs/UPC.md, *Locks*).
//
// A lock is two words in shared memory on its creator (thread 0 for upc_all_lock_alloc):
// `last`, the MCS tail (the pointer-to-shared bits of the last queued link, 0 when free), and a
// tag that says "this is a live lock". The owner's link is kept in this process, not in a shared
// word beside them, because an unlocker's put clearing it could land after the successor's
// write. Queue links live on the waiting thread: the preallocated Control::links, then blocks of
// its local heap when more than kLockLinks locks are held at once.
//
// Traffic: SWAP and CSWAP on `last` through kPtGmem (the engine applies them, so they are atomic
// with each other wherever the lock lives); the successor's "I am behind you" write and the
// hand-over signal are puts on kPtLock, which the target counts, so that a waiter sleeps on its
// own counter and reads its own link in its own memory.
//
// Memory model (UPC §5.2): upc_unlock begins with a fence, so the critical section's writes are
// complete before the next holder can start; upc_lock and a successful upc_lock_attempt end with
// an acquire fence, so nothing of the critical section is read before the lock is held.
#include "runtime.hpp"

#include <upc.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#define UPC_EXPORT extern "C" __attribute__((visibility("default")))

namespace portico::upc {

namespace {

struct LockObject {
    uint64_t last;
    uint64_t tag; // kLockMagic << 32 | a serial number of this allocation
};
constexpr uint32_t kLockMagic = 0x4b434f4c; // "LOCK" in memory
constexpr uint64_t kLastAt = offsetof(LockObject, last);
constexpr uint64_t kTagAt = offsetof(LockObject, tag);
constexpr uint64_t kNextAt = offsetof(LockLink, next);
constexpr uint64_t kSignalAt = offsetof(LockLink, signal);

struct Link {
    uint64_t offset; // in this thread's segment
    LockLink *local; // the same, through this process's mapping
    int index;       // in Control::links, or -1 for a block of the local heap
};

struct Held {
    Link link;
    uint64_t tag; // of the lock when it was taken
};

// This process's lock state (one UPC thread per process).
struct State {
    std::vector<int> free_links;
    std::unordered_map<uint64_t, Held> held; // by lock (thread and address: the phase is not the lock's)
    uint32_t serial = 0;

    State() {
        free_links.reserve(kLockLinks);
        for (int i = kLockLinks - 1; i >= 0; --i) free_links.push_back(i);
    }
};

State &state() {
    static State s;
    return s;
}

uint64_t key_of(upc_shared_ptr_t p) { return p.bits >> UPC_PTS_THREAD_SHIFT; }
int thread_of(upc_shared_ptr_t p) { return static_cast<int>(upc_pts_thread(p)); }
uint64_t link_bits(const Link &l) { return upc_pts_make(static_cast<unsigned>(mythread()), 0, l.offset).bits; }

uint64_t load(const uint64_t &word) { return __atomic_load_n(&word, __ATOMIC_ACQUIRE); }

Link take_link() {
    State &s = state();
    if (!s.free_links.empty()) {
        const int i = s.free_links.back();
        s.free_links.pop_back();
        return {control_offset(&Control::links) + static_cast<uint64_t>(i) * sizeof(LockLink), &my_control().links[i],
                i};
    }
    const upc_shared_ptr_t p = heap_local_alloc(sizeof(LockLink));
    if (upc_pts_is_null(p))
        fatal("upc_lock: no shared memory left for a lock queue link (this thread holds " +
              std::to_string(s.held.size()) + " locks)");
    const uint64_t off = upc_pts_vaddr(p);
    auto *local = static_cast<LockLink *>(local_addr(mythread(), off));
    if (!local) fatal("upc_lock: this thread's own segment is not mapped"); // never: own memory always is
    return {off, local, -1};
}

void release_link(const Link &l) {
    if (l.index >= 0)
        state().free_links.push_back(l.index);
    else
        heap_free(upc_pts_make(static_cast<unsigned>(mythread()), 0, l.offset));
}

// Nobody can have seen the link yet (the SWAP/CSWAP that publishes it comes after), so plain
// stores; the atomic that follows orders them before its message.
void clear_link(const Link &l) {
    __atomic_store_n(&l.local->next, uint64_t{0}, __ATOMIC_RELAXED);
    __atomic_store_n(&l.local->signal, uint64_t{0}, __ATOMIC_RELAXED);
}

// The lock's tag, after checking that ptr points at a live lock; fatal otherwise.
uint64_t tag_of(upc_shared_ptr_t p, const char *who) {
    if (upc_pts_is_null(p)) fatal(std::string(who) + ": null lock pointer");
    const int t = thread_of(p);
    const uint64_t addr = upc_pts_vaddr(p);
    if (t >= threads() || addr % alignof(LockObject) != 0 || addr > segment_bytes() - sizeof(LockObject))
        fatal(std::string(who) + ": pointer-to-shared (thread " + std::to_string(t) + ", offset " +
              std::to_string(addr) + ") is not a lock");
    uint64_t tag = 0;
    get(&tag, t, addr + kTagAt, sizeof tag);
    if ((tag >> 32) != kLockMagic)
        fatal(std::string(who) + ": pointer-to-shared (thread " + std::to_string(t) + ", offset " +
              std::to_string(addr) +
              ") is not a lock (bad magic): not from upc_global_lock_alloc or upc_all_lock_alloc, or freed");
    return tag;
}

// Whether this thread holds the lock with this tag. An entry with another tag is for a lock that
// was freed while this thread held it (allowed by UPC 1.3 §7.2.4.3) and whose memory now holds a
// new lock: forget it, and retire its link rather than reuse it, since a waiter of the dead lock
// may still write into it.
bool holds(upc_shared_ptr_t p, uint64_t tag) {
    State &s = state();
    const auto it = s.held.find(key_of(p));
    if (it == s.held.end()) return false;
    if (it->second.tag == tag) return true;
    s.held.erase(it);
    return false;
}

void check_link_pointer(uint64_t bits, const char *who) {
    const upc_shared_ptr_t l{bits};
    if (static_cast<int>(upc_pts_thread(l)) >= threads() || upc_pts_vaddr(l) > segment_bytes() - sizeof(LockLink))
        fatal(std::string(who) + ": the lock's queue is damaged (was the lock freed, or its memory overwritten?)");
}

void unlock_held(upc_shared_ptr_t p, const char *who) {
    State &s = state();
    const auto it = s.held.find(key_of(p));
    if (it == s.held.end()) fatal(std::string(who) + ": this thread does not hold the lock");
    const Link link = it->second.link;
    s.held.erase(it);
    fence();
    const uint64_t mine = link_bits(link);
    const uint64_t last = atomic_cswap(thread_of(p), upc_pts_vaddr(p) + kLastAt, mine, 0);
    if (last != mine) {
        // Someone queued behind us: wait until they have told us who they are, then hand over.
        if (last == 0)
            fatal(std::string(who) + ": the lock's queue does not hold this thread (was the lock freed while held?)");
        check_link_pointer(last, who);
        wait_counted(kPtLock, [&] { return load(link.local->next) != 0; });
        const uint64_t next = load(link.local->next);
        check_link_pointer(next, who);
        const uint64_t signal = 1;
        const upc_shared_ptr_t n{next};
        put_counted(thread_of(n), upc_pts_vaddr(n) + kSignalAt, &signal, sizeof signal, kPtLock);
    }
    release_link(link);
}

} // namespace

} // namespace portico::upc

using namespace portico::upc;

// A lock on the calling thread, unlocked; NULL when the shared heap is exhausted (UPC leaves this
// case open; NULL lets the caller see it, and any lock call on NULL is a clear fatal error).
UPC_EXPORT upc_shared_ptr_t upc_global_lock_alloc(void) {
    const upc_shared_ptr_t p = heap_local_alloc(sizeof(LockObject));
    if (upc_pts_is_null(p)) return p;
    State &s = state();
    ++s.serial;
    const LockObject init{
        0, (uint64_t{kLockMagic} << 32) |
               ((uint64_t{s.serial} << UPC_PTS_THREAD_BITS | static_cast<uint64_t>(mythread())) & 0xffffffffu)};
    put(mythread(), upc_pts_vaddr(p), &init, sizeof init);
    sync_puts();
    return p;
}

// Collective: thread 0 allocates and broadcasts (the lock has affinity to thread 0).
UPC_EXPORT upc_shared_ptr_t upc_all_lock_alloc(void) {
    upc_shared_ptr_t p{0};
    if (mythread() == 0) p = upc_global_lock_alloc();
    broadcast(&p, sizeof p, 0);
    return p;
}

UPC_EXPORT void upc_lock(upc_shared_ptr_t ptr) {
    const uint64_t tag = tag_of(ptr, "upc_lock");
    if (holds(ptr, tag)) fatal("upc_lock: this thread holds the lock already (it would wait for itself forever)");
    const Link link = take_link();
    clear_link(link);
    const uint64_t mine = link_bits(link);
    const uint64_t pred = atomic_swap(thread_of(ptr), upc_pts_vaddr(ptr) + kLastAt, mine);
    if (pred != 0) {
        check_link_pointer(pred, "upc_lock");
        const upc_shared_ptr_t p{pred};
        put_counted(thread_of(p), upc_pts_vaddr(p) + kNextAt, &mine, sizeof mine, kPtLock);
        wait_counted(kPtLock, [&] { return load(link.local->signal) != 0; });
    }
    state().held.emplace(key_of(ptr), Held{link, tag});
    acquire_fence();
}

// Returns 0 also when this thread holds the lock already (UPC leaves that undefined; the lock is
// in the locked state, which is what 0 says).
UPC_EXPORT int upc_lock_attempt(upc_shared_ptr_t ptr) {
    const uint64_t tag = tag_of(ptr, "upc_lock_attempt");
    if (holds(ptr, tag)) return 0;
    const int t = thread_of(ptr);
    const uint64_t last_at = upc_pts_vaddr(ptr) + kLastAt;
    // A held lock we can see costs no queue link and no trip through the engine.
    if (const auto *last = static_cast<const uint64_t *>(local_addr(t, last_at)); last && load(*last) != 0) return 0;
    const Link link = take_link();
    clear_link(link);
    if (atomic_cswap(t, last_at, 0, link_bits(link)) != 0) {
        release_link(link);
        return 0;
    }
    state().held.emplace(key_of(ptr), Held{link, tag});
    acquire_fence();
    return 1;
}

UPC_EXPORT void upc_unlock(upc_shared_ptr_t ptr) {
    if (upc_pts_is_null(ptr)) fatal("upc_unlock: null lock pointer");
    unlock_held(ptr, "upc_unlock");
}

// UPC 1.3 §7.2.4.3: frees a lock whether or not it is held. Held by this thread: released first,
// so that a waiter behind us is not left writing into a link we reuse. The tag is cleared (and
// complete: heap_free syncs our puts before it lets go of the heap) before the memory can be
// handed out again, so that later use of the freed lock is caught.
UPC_EXPORT void upc_lock_free(upc_shared_ptr_t ptr) {
    if (upc_pts_is_null(ptr)) return;
    const uint64_t tag = tag_of(ptr, "upc_lock_free");
    if (holds(ptr, tag)) unlock_held(ptr, "upc_lock_free");
    const uint64_t dead = 0;
    put(thread_of(ptr), upc_pts_vaddr(ptr) + kTagAt, &dead, sizeof dead);
    heap_free(ptr);
}

// UPC 1.3 §7.2.4.4: collective. Every thread is here, so none waits for the lock; a thread that
// holds it lets go, then after a barrier thread 0 frees it.
UPC_EXPORT void upc_all_lock_free(upc_shared_ptr_t ptr) {
    if (upc_pts_is_null(ptr)) return;
    if (state().held.count(key_of(ptr)) && holds(ptr, tag_of(ptr, "upc_all_lock_free")))
        unlock_held(ptr, "upc_all_lock_free");
    barrier();
    if (mythread() == 0) upc_lock_free(ptr);
}
