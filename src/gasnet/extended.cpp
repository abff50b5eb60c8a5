// SPDX-License-Identifier: BSD-3-Clause
// The extended API: put, get and memset (blocking, explicit-handle, implicit-handle, access
// regions), register-value operations. Every transfer is one Portals operation straight onto the
// target's segment entry; the target's engine answers it without the target application. A put
// completes on its ACK (the data is in the target's memory), a get on its REPLY.
#include <cstring>
#include <vector>

#include "internal.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "value puts and gets assume a little-endian host");

namespace gasnetp {

namespace {

void require_attached(const char *fn) {
    if (!state || !state->attached.load(std::memory_order_acquire)) fatal("%s called before gasnet_attach()", fn);
}

// The remote offset of [addr, addr + n) on node, after checking it lies in node's segment.
uint64_t remote_offset(const char *fn, gasnet_node_t node, const void *addr, size_t n) {
    require_attached(fn);
    if (node >= state->nodes) fatal("%s: node %u out of range (the job has %u nodes)", fn, node, state->nodes);
    if (state->seg_mode == 2) return reinterpret_cast<uint64_t>(addr);
    const gasnet_seginfo_t &s = state->segs[node];
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr), base = reinterpret_cast<uintptr_t>(s.addr);
    if (n == 0) return 0;
    if (a < base || a - base > s.size || n > s.size - (a - base))
        fatal("%s: [%p, %p) is not inside node %u's segment [%p, %p)", fn, addr, static_cast<const char *>(addr) + n,
              node, s.addr, static_cast<char *>(s.addr) + s.size);
    return a - base;
}

// A put or get to oneself or to a node whose segment is mapped here (PSHM) is a memory copy: it
// moves no message, so a thread that loops on such calls waiting for a flag an AM handler sets
// (GASNet 1.28's testcontend does) would never run that handler. Every 256th copy polls, as GASNet's
// own blocking calls poll (a poll costs as much as a hundred copies of a few bytes). The copies
// gasnet.h's inline functions make count too: they leave the 256th to the library.
void copied_locally() {
    if (++gasnetp_local_copies % 256 == 0 && state->attached.load(std::memory_order_acquire)) poll(ctx_of(ts()));
}

// Starts a put counted in ctr. bulk: the source stays untouched until the operation completes;
// otherwise it may be reused on return.
void start_put(const char *fn, gasnet_node_t node, void *dest, const void *src, size_t n, OpCounter *ctr, bool bulk) {
    const uint64_t roff = remote_offset(fn, node, dest, n);
    if (n == 0) return;
    if (node == state->mynode) {
        std::memmove(dest, src, n);
        copied_locally();
        return;
    }
    if (char *local = local_segment(node)) { // PSHM: the node's segment is mapped here
        std::memmove(local + roff, src, n);
        copied_locally();
        return;
    }
    ctr->pending.fetch_add(1, std::memory_order_relaxed);
    if (!bulk) {
        put_copy(node, state->pt_seg, 0, roff, src, n, PTL_ACK_REQ, ctr, 0, kZeroCopyMin);
        return;
    }
    // Bulk: sent from the client's buffer (single copy for large transfers on one machine).
    reserve_events(1);
    check_ptl(PtlPut(state->md_bulk, reinterpret_cast<uint64_t>(src), n, PTL_ACK_REQ, proc(node), state->pt_seg, 0,
                     roff, ctr, 0),
              "PtlPut");
}

void start_get(const char *fn, void *dest, gasnet_node_t node, const void *src, size_t n, OpCounter *ctr) {
    const uint64_t roff = remote_offset(fn, node, src, n);
    if (n == 0) return;
    if (node == state->mynode) {
        std::memmove(dest, src, n);
        copied_locally();
        return;
    }
    if (const char *local = local_segment(node)) {
        std::memmove(dest, local + roff, n);
        copied_locally();
        return;
    }
    ctr->pending.fetch_add(1, std::memory_order_relaxed);
    reserve_events(1);
    check_ptl(PtlGet(state->md_bulk, reinterpret_cast<uint64_t>(dest), n, proc(node), state->pt_seg, 0, roff, ctr),
              "PtlGet");
}

// memset on the target: puts of a buffer filled with the value, at most one volatile-copy chunk
// each (the chunk buffer may go as soon as the puts are issued).
void start_memset(const char *fn, gasnet_node_t node, void *dest, int val, size_t n, OpCounter *ctr) {
    const uint64_t roff = remote_offset(fn, node, dest, n);
    if (n == 0) return;
    if (node == state->mynode) {
        std::memset(dest, val, n);
        return;
    }
    if (char *local = local_segment(node)) {
        std::memset(local + roff, val, n);
        return;
    }
    const size_t chunk = std::min<size_t>(n, state->vol_max >= 4096 ? state->vol_max : 65536);
    std::vector<unsigned char> pattern(chunk, static_cast<unsigned char>(val));
    for (size_t off = 0; off < n; off += chunk) {
        const size_t len = std::min(chunk, n - off);
        ctr->pending.fetch_add(1, std::memory_order_relaxed);
        put_copy(node, state->pt_seg, 0, roff + off, pattern.data(), len, PTL_ACK_REQ, ctr, 0);
    }
}

void wait_counter(OpCounter &c) {
    wait_until(ctx_of(ts()), [&] { return c.pending.load(std::memory_order_acquire) == 0; });
}

gasnetp_op *new_op(ThreadState &t) {
    gasnetp_op *op = t.free_ops;
    if (op)
        t.free_ops = op->next_free;
    else
        op = new gasnetp_op;
    op->magic = kOpMagic;
    op->next_free = nullptr;
    op->pending.store(0, std::memory_order_relaxed);
    return op;
}

void free_op(ThreadState &t, gasnetp_op *op) {
    op->magic = 0;
    op->next_free = t.free_ops;
    t.free_ops = op;
}

// An explicit handle for what was just started into op (or none if it is complete already).
gasnet_handle_t finish_nb(ThreadState &t, gasnetp_op *op) {
    if (op->pending.load(std::memory_order_acquire) == 0) {
        free_op(t, op);
        return GASNET_INVALID_HANDLE;
    }
    return op;
}

void check_handle(gasnet_handle_t h, const char *fn) {
    if (h->magic != kOpMagic) fatal("%s: invalid handle %p (already synchronized?)", fn, static_cast<void *>(h));
}

OpCounter *nbi_counter(ThreadState &t, bool put) {
    if (t.region) return t.region;
    return put ? &t.nbi_puts : &t.nbi_gets;
}

void check_value_size(const char *fn, size_t n) {
    if (n == 0 || n > sizeof(gasnet_register_value_t))
        fatal("%s: nbytes = %zu (must be 1 .. %zu)", fn, n, sizeof(gasnet_register_value_t));
}

void check_no_region(const ThreadState &t, const char *fn) {
    if (t.region) fatal("%s called inside an implicit access region", fn);
}

} // namespace
} // namespace gasnetp

using namespace gasnetp;

// gasnet.h's inline node-local copies (published by gasnet_attach).
// (gasnet.h declares them extern "C" with default visibility.)
const gasnetp_local_segment_t *gasnetp_local_segments = nullptr;
gasnet_node_t gasnetp_local_nodes = 0;
__thread unsigned gasnetp_local_copies = 0;

// ---- blocking ------------------------------------------------------------------------------------------
GASNETP_EXPORT void(gasnet_get)(void *dest, gasnet_node_t node, void *src, size_t nbytes) {
    OpCounter c;
    start_get("gasnet_get", dest, node, src, nbytes, &c);
    wait_counter(c);
}
GASNETP_EXPORT void(gasnet_put)(gasnet_node_t node, void *dest, void *src, size_t nbytes) {
    OpCounter c;
    start_put("gasnet_put", node, dest, src, nbytes, &c, true);
    wait_counter(c);
}
GASNETP_EXPORT void(gasnet_get_bulk)(void *dest, gasnet_node_t node, void *src, size_t nbytes) {
    OpCounter c;
    start_get("gasnet_get_bulk", dest, node, src, nbytes, &c);
    wait_counter(c);
}
GASNETP_EXPORT void(gasnet_put_bulk)(gasnet_node_t node, void *dest, void *src, size_t nbytes) {
    OpCounter c;
    start_put("gasnet_put_bulk", node, dest, src, nbytes, &c, true);
    wait_counter(c);
}
GASNETP_EXPORT void gasnet_memset(gasnet_node_t node, void *dest, int val, size_t nbytes) {
    OpCounter c;
    start_memset("gasnet_memset", node, dest, val, nbytes, &c);
    wait_counter(c);
}

// ---- explicit handle -------------------------------------------------------------------------------------
GASNETP_EXPORT gasnet_handle_t(gasnet_get_nb)(void *dest, gasnet_node_t node, void *src, size_t nbytes) {
    ThreadState &t = ts();
    gasnetp_op *op = new_op(t);
    start_get("gasnet_get_nb", dest, node, src, nbytes, op);
    return finish_nb(t, op);
}
GASNETP_EXPORT gasnet_handle_t(gasnet_get_nb_bulk)(void *dest, gasnet_node_t node, void *src, size_t nbytes) {
    ThreadState &t = ts();
    gasnetp_op *op = new_op(t);
    start_get("gasnet_get_nb_bulk", dest, node, src, nbytes, op);
    return finish_nb(t, op);
}
GASNETP_EXPORT gasnet_handle_t(gasnet_put_nb)(gasnet_node_t node, void *dest, void *src, size_t nbytes) {
    ThreadState &t = ts();
    gasnetp_op *op = new_op(t);
    start_put("gasnet_put_nb", node, dest, src, nbytes, op, false);
    return finish_nb(t, op);
}
GASNETP_EXPORT gasnet_handle_t(gasnet_put_nb_bulk)(gasnet_node_t node, void *dest, void *src, size_t nbytes) {
    ThreadState &t = ts();
    gasnetp_op *op = new_op(t);
    start_put("gasnet_put_nb_bulk", node, dest, src, nbytes, op, true);
    return finish_nb(t, op);
}
GASNETP_EXPORT gasnet_handle_t gasnet_memset_nb(gasnet_node_t node, void *dest, int val, size_t nbytes) {
    ThreadState &t = ts();
    gasnetp_op *op = new_op(t);
    start_memset("gasnet_memset_nb", node, dest, val, nbytes, op);
    return finish_nb(t, op);
}

GASNETP_EXPORT void gasnet_wait_syncnb(gasnet_handle_t handle) {
    if (handle == GASNET_INVALID_HANDLE) return;
    check_handle(handle, "gasnet_wait_syncnb");
    wait_counter(*handle);
    free_op(ts(), handle);
}

GASNETP_EXPORT int gasnet_try_syncnb(gasnet_handle_t handle) {
    if (handle == GASNET_INVALID_HANDLE) return GASNET_OK;
    check_handle(handle, "gasnet_try_syncnb");
    ThreadState &t = ts();
    if (handle->pending.load(std::memory_order_acquire) != 0) {
        poll_try(ctx_of(t));
        if (handle->pending.load(std::memory_order_acquire) != 0) return GASNET_ERR_NOT_READY;
    }
    free_op(t, handle);
    return GASNET_OK;
}

namespace {
// Syncs every complete handle of the array (setting it INVALID); counts what is left and what was
// valid to begin with.
void sync_done(gasnet_handle_t *hs, size_t n, size_t *left, size_t *valid, const char *fn) {
    ThreadState &t = ts();
    *left = *valid = 0;
    for (size_t i = 0; i < n; ++i) {
        if (hs[i] == GASNET_INVALID_HANDLE) continue;
        check_handle(hs[i], fn);
        ++*valid;
        if (hs[i]->pending.load(std::memory_order_acquire) == 0) {
            free_op(t, hs[i]);
            hs[i] = GASNET_INVALID_HANDLE;
        } else {
            ++*left;
        }
    }
}
} // namespace

GASNETP_EXPORT void gasnet_wait_syncnb_all(gasnet_handle_t *handles, size_t numhandles) {
    size_t left, valid;
    sync_done(handles, numhandles, &left, &valid, "gasnet_wait_syncnb_all");
    const Ctx ctx = ctx_of(ts());
    unsigned iter = 0;
    while (left) {
        block_step(ctx, &iter);
        sync_done(handles, numhandles, &left, &valid, "gasnet_wait_syncnb_all");
    }
}

GASNETP_EXPORT int gasnet_try_syncnb_all(gasnet_handle_t *handles, size_t numhandles) {
    poll_try(ctx_of(ts()));
    size_t left, valid;
    sync_done(handles, numhandles, &left, &valid, "gasnet_try_syncnb_all");
    return left ? GASNET_ERR_NOT_READY : GASNET_OK;
}

GASNETP_EXPORT void gasnet_wait_syncnb_some(gasnet_handle_t *handles, size_t numhandles) {
    size_t left, valid;
    sync_done(handles, numhandles, &left, &valid, "gasnet_wait_syncnb_some");
    const Ctx ctx = ctx_of(ts());
    unsigned iter = 0;
    while (valid && left == valid) {
        block_step(ctx, &iter);
        sync_done(handles, numhandles, &left, &valid, "gasnet_wait_syncnb_some");
    }
}

GASNETP_EXPORT int gasnet_try_syncnb_some(gasnet_handle_t *handles, size_t numhandles) {
    poll_try(ctx_of(ts()));
    size_t left, valid;
    sync_done(handles, numhandles, &left, &valid, "gasnet_try_syncnb_some");
    return valid == 0 || left < valid ? GASNET_OK : GASNET_ERR_NOT_READY;
}

// ---- implicit handle -------------------------------------------------------------------------------------
GASNETP_EXPORT void(gasnet_get_nbi)(void *dest, gasnet_node_t node, void *src, size_t nbytes) {
    ThreadState &t = ts();
    start_get("gasnet_get_nbi", dest, node, src, nbytes, nbi_counter(t, false));
}
GASNETP_EXPORT void(gasnet_get_nbi_bulk)(void *dest, gasnet_node_t node, void *src, size_t nbytes) {
    ThreadState &t = ts();
    start_get("gasnet_get_nbi_bulk", dest, node, src, nbytes, nbi_counter(t, false));
}
GASNETP_EXPORT void(gasnet_put_nbi)(gasnet_node_t node, void *dest, void *src, size_t nbytes) {
    ThreadState &t = ts();
    start_put("gasnet_put_nbi", node, dest, src, nbytes, nbi_counter(t, true), false);
}
GASNETP_EXPORT void(gasnet_put_nbi_bulk)(gasnet_node_t node, void *dest, void *src, size_t nbytes) {
    ThreadState &t = ts();
    start_put("gasnet_put_nbi_bulk", node, dest, src, nbytes, nbi_counter(t, true), true);
}
GASNETP_EXPORT void gasnet_memset_nbi(gasnet_node_t node, void *dest, int val, size_t nbytes) {
    ThreadState &t = ts();
    start_memset("gasnet_memset_nbi", node, dest, val, nbytes, nbi_counter(t, true));
}

namespace {
void wait_nbi(bool gets, bool puts, const char *fn) {
    ThreadState &t = ts();
    check_no_region(t, fn);
    wait_until(ctx_of(t), [&] {
        return (!gets || t.nbi_gets.pending.load(std::memory_order_acquire) == 0) &&
               (!puts || t.nbi_puts.pending.load(std::memory_order_acquire) == 0);
    });
}
int try_nbi(bool gets, bool puts, const char *fn) {
    ThreadState &t = ts();
    check_no_region(t, fn);
    auto done = [&] {
        return (!gets || t.nbi_gets.pending.load(std::memory_order_acquire) == 0) &&
               (!puts || t.nbi_puts.pending.load(std::memory_order_acquire) == 0);
    };
    if (done()) return GASNET_OK;
    poll_try(ctx_of(t));
    return done() ? GASNET_OK : GASNET_ERR_NOT_READY;
}
} // namespace

GASNETP_EXPORT void gasnet_wait_syncnbi_gets(void) { wait_nbi(true, false, "gasnet_wait_syncnbi_gets"); }
GASNETP_EXPORT void gasnet_wait_syncnbi_puts(void) { wait_nbi(false, true, "gasnet_wait_syncnbi_puts"); }
GASNETP_EXPORT void gasnet_wait_syncnbi_all(void) { wait_nbi(true, true, "gasnet_wait_syncnbi_all"); }
GASNETP_EXPORT int gasnet_try_syncnbi_gets(void) { return try_nbi(true, false, "gasnet_try_syncnbi_gets"); }
GASNETP_EXPORT int gasnet_try_syncnbi_puts(void) { return try_nbi(false, true, "gasnet_try_syncnbi_puts"); }
GASNETP_EXPORT int gasnet_try_syncnbi_all(void) { return try_nbi(true, true, "gasnet_try_syncnbi_all"); }

GASNETP_EXPORT void gasnet_begin_nbi_accessregion(void) {
    require_attached("gasnet_begin_nbi_accessregion");
    ThreadState &t = ts();
    if (t.region) fatal("gasnet_begin_nbi_accessregion: access regions may not be nested");
    t.region = new_op(t);
}

GASNETP_EXPORT gasnet_handle_t gasnet_end_nbi_accessregion(void) {
    ThreadState &t = ts();
    if (!t.region) fatal("gasnet_end_nbi_accessregion without gasnet_begin_nbi_accessregion");
    gasnetp_op *op = t.region;
    t.region = nullptr;
    return finish_nb(t, op);
}

// ---- register values ---------------------------------------------------------------------------------------
GASNETP_EXPORT void gasnet_put_val(gasnet_node_t node, void *dest, gasnet_register_value_t value, size_t nbytes) {
    check_value_size("gasnet_put_val", nbytes);
    OpCounter c;
    start_put("gasnet_put_val", node, dest, &value, nbytes, &c, false); // low-order bytes (little-endian)
    wait_counter(c);
}
GASNETP_EXPORT gasnet_handle_t gasnet_put_nb_val(gasnet_node_t node, void *dest, gasnet_register_value_t value,
                                                 size_t nbytes) {
    check_value_size("gasnet_put_nb_val", nbytes);
    ThreadState &t = ts();
    gasnetp_op *op = new_op(t);
    start_put("gasnet_put_nb_val", node, dest, &value, nbytes, op, false);
    return finish_nb(t, op);
}
GASNETP_EXPORT void gasnet_put_nbi_val(gasnet_node_t node, void *dest, gasnet_register_value_t value, size_t nbytes) {
    check_value_size("gasnet_put_nbi_val", nbytes);
    ThreadState &t = ts();
    start_put("gasnet_put_nbi_val", node, dest, &value, nbytes, nbi_counter(t, true), false);
}

GASNETP_EXPORT gasnet_register_value_t gasnet_get_val(gasnet_node_t node, void *src, size_t nbytes) {
    check_value_size("gasnet_get_val", nbytes);
    gasnet_register_value_t v = 0; // zero-extended: the high bytes stay 0
    OpCounter c;
    start_get("gasnet_get_val", &v, node, src, nbytes, &c);
    wait_counter(c);
    return v;
}

GASNETP_EXPORT gasnet_valget_handle_t gasnet_get_nb_val(gasnet_node_t node, void *src, size_t nbytes) {
    check_value_size("gasnet_get_nb_val", nbytes);
    gasnetp_valget *v = new gasnetp_valget;
    v->op.magic = kOpMagic;
    v->nbytes = nbytes;
    start_get("gasnet_get_nb_val", &v->value, node, src, nbytes, &v->op);
    return v;
}

GASNETP_EXPORT gasnet_register_value_t gasnet_wait_syncnb_valget(gasnet_valget_handle_t handle) {
    if (!handle || handle->op.magic != kOpMagic) fatal("gasnet_wait_syncnb_valget: invalid handle");
    wait_counter(handle->op);
    const gasnet_register_value_t v = handle->value;
    handle->op.magic = 0;
    delete handle;
    return v;
}
