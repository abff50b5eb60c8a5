// SPDX-License-Identifier: BSD-3-Clause
// Data movement (docs/UPC.md, *Data movement and the memory model*) with the memory model of UPC
// §5: loads and stores to the segments this process maps, Portals gets and puts to the others, and
// the ordering rules that decide when an access must wait for earlier ones.
//
// Ordering, as built:
// - A relaxed get waits for this thread's earlier puts to the same thread (otherwise it could
//   overtake a put above max_waw_ordered_size to the same address and read the old value).
// - A relaxed put is asynchronous: up to kBounceMax bytes are copied to the bounce buffer and
//   the call returns; a larger one is sent from the caller's buffer and returns once that buffer
//   is free (its SEND), its acknowledgement counted later like the small ones'.
// - A strict put first completes every earlier put, and leaves itself pending: the next access of
//   any kind completes it first (one strict put in flight).
// - A strict get completes every earlier put and the pending strict put first.
// - fence (upc_fence, notify, unlock) completes everything.
// Node-local targets need none of this for same-address order (stores are program-ordered on
// one core); strict accesses to them are fenced with full memory barriers.
#include "state.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace portico::upc {

namespace {

constexpr size_t kBounceBytes = 256 * 1024; // the bounce buffer
constexpr size_t kBounceMax = 1024;         // puts up to this size are bounced
constexpr size_t kStagingBytes = 256 * 1024;

ptl_process_t target(int thread) { return ck::rank_id(static_cast<ptl_rank_t>(thread)); }

void check_range(const Runtime &r, int thread, uint64_t offset, size_t n) {
    if (thread < 0 || thread >= r.n)
        fatal("shared access to thread " + std::to_string(thread) + " of " + std::to_string(r.n));
    if (offset > r.seg_bytes || n > r.seg_bytes - offset)
        fatal("shared access out of range: thread " + std::to_string(thread) + ", offset " + std::to_string(offset) +
              ", " + std::to_string(n) + " bytes (the segment has " + std::to_string(r.seg_bytes) + ")");
}

void require(int rc, const char *call) {
    if (rc != PTL_OK) fatal(ck::failure(rc, call));
}

void mark_dirty(Runtime &r, int thread) {
    auto &d = r.dirty[static_cast<size_t>(thread)];
    if (!d) {
        d = 1;
        r.dirty_list.push_back(thread);
    }
}

void sync_puts_of(Runtime &r) {
    if (r.puts_issued) wait_ct_at(r, r.put_ct.get(), r.puts_issued, "a shared write");
    if (r.bulk_issued) wait_ct_at(r, r.bulk_ct.get(), 2 * r.bulk_issued, "a shared write");
    for (int t : r.dirty_list) r.dirty[static_cast<size_t>(t)] = 0;
    r.dirty_list.clear();
    r.bounce_used = 0;
    r.pending_strict = false;
}

// Every access starts here: a strict put still in flight completes first.
inline void before_access(Runtime &r) {
    if (r.pending_strict) sync_puts_of(r);
}

void portals_get(Runtime &r, void *dst, int thread, uint64_t offset, size_t n) {
    if (r.dirty[static_cast<size_t>(thread)]) sync_puts_of(r);
    auto *d = static_cast<unsigned char *>(dst);
    while (n) {
        const size_t len = std::min<size_t>(n, r.max_msg);
        require(
            PtlGet(r.get_md.get(), reinterpret_cast<ptl_size_t>(d), len, target(thread), kPtGmem, 0, offset, nullptr),
            "PtlGet");
        ++r.gets_issued;
        d += len;
        offset += len;
        n -= len;
    }
    wait_ct_at(r, r.get_ct.get(), r.gets_issued, "a shared read");
}

// Puts n bytes from src through md in messages of at most max_msg bytes, counting each in
// `issued`.
void send_puts(Runtime &r, ptl_handle_md_t md, uint64_t &issued, int thread, uint64_t offset, const unsigned char *src,
               size_t n) {
    while (n) {
        const size_t len = std::min<size_t>(n, r.max_msg);
        require(PtlPut(md, reinterpret_cast<ptl_size_t>(src), len, PTL_ACK_REQ, target(thread), kPtGmem, 0, offset,
                       nullptr, 0),
                "PtlPut");
        ++issued;
        src += len;
        offset += len;
        n -= len;
    }
    mark_dirty(r, thread);
}

// Sends from src, which must stay untouched until the put completes (sync_puts).
void portals_put_from(Runtime &r, int thread, uint64_t offset, const unsigned char *src, size_t n) {
    send_puts(r, r.put_md.get(), r.puts_issued, thread, offset, src, n);
}

// Sends from the caller's buffer and returns once that buffer is free again, which is when the
// put's SEND is counted: the acknowledgement may still be on its way, so consecutive large puts
// overlap (the transfer of one with the answer of the one before) instead of taking a round trip
// each. Every put counts a SEND and an ACK on bulk_ct; once the counter is within one of twice the
// puts issued, at most one event is missing: a SEND (whose put is then acknowledged: its data
// has arrived) or an ACK (whose put's SEND is counted), so every buffer handed to these puts is
// free either way.
void portals_put_bulk(Runtime &r, int thread, uint64_t offset, const unsigned char *src, size_t n) {
    send_puts(r, r.bulk_md.get(), r.bulk_issued, thread, offset, src, n);
    wait_ct_at(r, r.bulk_ct.get(), 2 * r.bulk_issued - 1, "a shared write");
}

void portals_put(Runtime &r, int thread, uint64_t offset, const void *src, size_t n) {
    if (n == 0) return;
    if (n <= kBounceMax) {
        if (r.bounce_used + n > kBounceBytes) sync_puts_of(r);
        unsigned char *slot = r.bounce.data() + r.bounce_used;
        std::memcpy(slot, src, n);
        r.bounce_used += (n + 15) & ~size_t{15};
        portals_put_from(r, thread, offset, slot, n);
        return;
    }
    portals_put_bulk(r, thread, offset, static_cast<const unsigned char *>(src), n);
}

void do_get(Runtime &r, void *dst, int thread, uint64_t offset, size_t n) {
    check_range(r, thread, offset, n);
    if (n == 0) return;
    if (unsigned char *b = r.bases[static_cast<size_t>(thread)]) {
        std::memcpy(dst, b + offset, n);
        return;
    }
    portals_get(r, dst, thread, offset, n);
}

void do_put(Runtime &r, int thread, uint64_t offset, const void *src, size_t n) {
    check_range(r, thread, offset, n);
    if (n == 0) return;
    if (unsigned char *b = r.bases[static_cast<size_t>(thread)]) {
        std::memmove(b + offset, src, n);
        return;
    }
    portals_put(r, thread, offset, src, n);
}

void do_copy(Runtime &r, int dt, uint64_t doff, int st, uint64_t soff, size_t n) {
    check_range(r, dt, doff, n);
    check_range(r, st, soff, n);
    if (n == 0) return;
    unsigned char *db = r.bases[static_cast<size_t>(dt)];
    unsigned char *sb = r.bases[static_cast<size_t>(st)];
    if (db && sb) {
        std::memmove(db + doff, sb + soff, n);
    } else if (db) {
        // Only the destination is here: a get into it (a put to ourselves would complete later, so
        // a local read right after the copy could see old data).
        portals_get(r, db + doff, st, soff, n);
    } else if (sb) {
        portals_put_bulk(r, dt, doff, sb + soff, n);
    } else {
        r.staging_fill = -1;
        while (n) {
            const size_t len = std::min(n, kStagingBytes);
            portals_get(r, r.staging.data(), st, soff, len);
            portals_put_from(r, dt, doff, r.staging.data(), len);
            sync_puts_of(r); // staging is reused by the next chunk
            doff += len;
            soff += len;
            n -= len;
        }
    }
}

} // namespace

void gmem_start(Runtime &r) {
    r.dirty.assign(static_cast<size_t>(r.n), 0);
    r.bounce.assign(kBounceBytes, 0);
    r.staging.assign(kStagingBytes, 0);
}

void get(void *dst, int thread, uint64_t offset, size_t n) {
    Runtime &r = rt();
    before_access(r);
    do_get(r, dst, thread, offset, n);
}

void put(int thread, uint64_t offset, const void *src, size_t n) {
    Runtime &r = rt();
    before_access(r);
    do_put(r, thread, offset, src, n);
}

void copy(int dst_thread, uint64_t dst_offset, int src_thread, uint64_t src_offset, size_t n) {
    Runtime &r = rt();
    before_access(r);
    do_copy(r, dst_thread, dst_offset, src_thread, src_offset, n);
}

void set(int thread, uint64_t offset, int c, size_t n) {
    Runtime &r = rt();
    before_access(r);
    check_range(r, thread, offset, n);
    if (n == 0) return;
    if (unsigned char *b = r.bases[static_cast<size_t>(thread)]) {
        std::memset(b + offset, c, n);
        return;
    }
    if (r.staging_fill != (c & 0xff)) {
        std::memset(r.staging.data(), c, kStagingBytes);
        r.staging_fill = c & 0xff;
    }
    while (n) {
        const size_t len = std::min(n, kStagingBytes);
        portals_put_from(r, thread, offset, r.staging.data(), len);
        offset += len;
        n -= len;
    }
    sync_puts_of(r);
}

void sync_puts() { sync_puts_of(rt()); }

void fence() {
    Runtime &r = rt();
    sync_puts_of(r);
    full_fence();
}

void get_strict(void *dst, int thread, uint64_t offset, size_t n) {
    Runtime &r = rt();
    sync_puts_of(r);
    full_fence();
    do_get(r, dst, thread, offset, n);
    full_fence();
}

void put_strict(int thread, uint64_t offset, const void *src, size_t n) {
    Runtime &r = rt();
    sync_puts_of(r);
    full_fence();
    do_put(r, thread, offset, src, n);
    full_fence();
    if (!r.dirty_list.empty()) r.pending_strict = true;
}

void copy_strict(int dst_thread, uint64_t dst_offset, int src_thread, uint64_t src_offset, size_t n) {
    Runtime &r = rt();
    sync_puts_of(r);
    full_fence();
    do_copy(r, dst_thread, dst_offset, src_thread, src_offset, n);
    full_fence();
    if (!r.dirty_list.empty()) r.pending_strict = true;
}

// ---- atomics and counted puts: one at a time, each waited for -----------------------------------
namespace {

void settle_before_atomic(Runtime &r, int thread) {
    before_access(r);
    // A relaxed put still in flight to the same thread would race the atomic on the same word.
    if (r.dirty[static_cast<size_t>(thread)]) sync_puts_of(r);
    // Stores this thread made with the CPU into mapped memory come before the message.
    full_fence();
}

void wait_op(Runtime &r, const char *what) {
    ++r.ops_issued;
    wait_ct_at(r, r.op_ct.get(), r.ops_issued, what);
    full_fence();
}

uint64_t fetch(ptl_op_t op, int thread, uint64_t offset, uint64_t operand, ptl_pt_index_t pt, const char *what) {
    Runtime &r = rt();
    check_range(r, thread, offset, 8);
    settle_before_atomic(r, thread);
    uint64_t in = operand, out = 0;
    require(PtlFetchAtomic(r.op_md.get(), reinterpret_cast<ptl_size_t>(&out), r.op_md.get(),
                           reinterpret_cast<ptl_size_t>(&in), 8, target(thread), pt, 0, offset, nullptr, 0, op,
                           PTL_UINT64_T),
            "PtlFetchAtomic");
    wait_op(r, what);
    return out;
}

} // namespace

uint64_t atomic_swap(int thread, uint64_t offset, uint64_t value, ptl_pt_index_t pt) {
    // The swap family goes through PtlSwap only (Portals 4.3 §3.15.4), never PtlFetchAtomic.
    Runtime &r = rt();
    check_range(r, thread, offset, 8);
    settle_before_atomic(r, thread);
    uint64_t in = value, out = 0;
    require(PtlSwap(r.op_md.get(), reinterpret_cast<ptl_size_t>(&out), r.op_md.get(), reinterpret_cast<ptl_size_t>(&in),
                    8, target(thread), pt, 0, offset, nullptr, 0, nullptr, PTL_SWAP, PTL_UINT64_T),
            "PtlSwap");
    wait_op(r, "an atomic swap");
    return out;
}

uint64_t atomic_fetch_add(int thread, uint64_t offset, uint64_t value, ptl_pt_index_t pt) {
    return fetch(PTL_SUM, thread, offset, value, pt, "an atomic add");
}

uint64_t atomic_cswap(int thread, uint64_t offset, uint64_t expected, uint64_t desired, ptl_pt_index_t pt) {
    Runtime &r = rt();
    check_range(r, thread, offset, 8);
    settle_before_atomic(r, thread);
    uint64_t in = desired, out = 0, cmp = expected;
    require(PtlSwap(r.op_md.get(), reinterpret_cast<ptl_size_t>(&out), r.op_md.get(), reinterpret_cast<ptl_size_t>(&in),
                    8, target(thread), pt, 0, offset, nullptr, 0, &cmp, PTL_CSWAP, PTL_UINT64_T),
            "PtlSwap");
    wait_op(r, "an atomic compare-and-swap");
    return out;
}

void atomic(int thread, uint64_t offset, const void *operand, size_t n, ptl_op_t op, ptl_datatype_t type,
            ptl_pt_index_t pt) {
    Runtime &r = rt();
    check_range(r, thread, offset, n);
    settle_before_atomic(r, thread);
    require(PtlAtomic(r.op_md.get(), reinterpret_cast<ptl_size_t>(operand), n, PTL_ACK_REQ, target(thread), pt, 0,
                      offset, nullptr, 0, op, type),
            "PtlAtomic");
    wait_op(r, "an atomic operation");
}

void put_counted(int thread, uint64_t offset, const void *src, size_t n, ptl_pt_index_t pt) {
    Runtime &r = rt();
    check_range(r, thread, offset, n);
    settle_before_atomic(r, thread);
    require(PtlPut(r.op_md.get(), reinterpret_cast<ptl_size_t>(src), n, PTL_ACK_REQ, target(thread), pt, 0, offset,
                   nullptr, 0),
            "PtlPut");
    wait_op(r, "a counted put");
}

} // namespace portico::upc
