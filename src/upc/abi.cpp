// SPDX-License-Identifier: BSD-3-Clause
// GCC UPC's compiler interface (portico/upc_abi.h) and the UPC library's pointer and transfer
// functions (upc.h, UPC 1.3 §7.2.3 and §7.2.5), over gmem.cpp and barrier.cpp.
#include "state.hpp"

#include <climits>
#include <cstring>

#define UPC_EXPORT extern "C" __attribute__((visibility("default")))

using namespace portico::upc;

namespace {

int thread_of(upc_shared_ptr_t p) { return static_cast<int>(upc_pts_thread(p)); }

template <typename T> T relaxed_get(upc_shared_ptr_t p) {
    T v;
    get(&v, thread_of(p), upc_pts_vaddr(p), sizeof v);
    return v;
}
template <typename T> T strict_get(upc_shared_ptr_t p) {
    T v;
    get_strict(&v, thread_of(p), upc_pts_vaddr(p), sizeof v);
    return v;
}
template <typename T> void relaxed_put(upc_shared_ptr_t p, T v) { put(thread_of(p), upc_pts_vaddr(p), &v, sizeof v); }
template <typename T> void strict_put(upc_shared_ptr_t p, T v) {
    put_strict(thread_of(p), upc_pts_vaddr(p), &v, sizeof v);
}

// A null pointer-to-shared passed where data must be: UPC makes it undefined; we say so.
void not_null(upc_shared_ptr_t p, const char *call) {
    if (upc_pts_is_null(p)) fatal(std::string(call) + ": null pointer-to-shared");
}

} // namespace

#define PORTICO_UPC_ACCESS(code, type)                                                                                 \
    UPC_EXPORT type __get##code##2(upc_shared_ptr_t p) { return relaxed_get<type>(p); }                                \
    UPC_EXPORT type __gets##code##2(upc_shared_ptr_t p) { return strict_get<type>(p); }                                \
    UPC_EXPORT void __put##code##2(upc_shared_ptr_t p, type v) { relaxed_put<type>(p, v); }                            \
    UPC_EXPORT void __puts##code##2(upc_shared_ptr_t p, type v) { strict_put<type>(p, v); }
PORTICO_UPC_TYPE_CODES(PORTICO_UPC_ACCESS)
#undef PORTICO_UPC_ACCESS

UPC_EXPORT void __getblk3(void *dst, upc_shared_ptr_t src, size_t n) {
    get(dst, thread_of(src), upc_pts_vaddr(src), n);
}
UPC_EXPORT void __getsblk3(void *dst, upc_shared_ptr_t src, size_t n) {
    get_strict(dst, thread_of(src), upc_pts_vaddr(src), n);
}
UPC_EXPORT void __putblk3(upc_shared_ptr_t dst, void *src, size_t n) {
    put(thread_of(dst), upc_pts_vaddr(dst), src, n);
}
UPC_EXPORT void __putsblk3(upc_shared_ptr_t dst, void *src, size_t n) {
    put_strict(thread_of(dst), upc_pts_vaddr(dst), src, n);
}
UPC_EXPORT void __copyblk3(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t n) {
    copy(thread_of(dst), upc_pts_vaddr(dst), thread_of(src), upc_pts_vaddr(src), n);
}
UPC_EXPORT void __copysblk3(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t n) {
    copy_strict(thread_of(dst), upc_pts_vaddr(dst), thread_of(src), upc_pts_vaddr(src), n);
}

UPC_EXPORT void *__cvtaddr(upc_shared_ptr_t p) {
    if (upc_pts_is_null(p)) return nullptr;
    const int t = thread_of(p);
    if (t >= threads()) return nullptr;
    return local_addr(t, upc_pts_vaddr(p));
}

// ---- barriers: GCC UPC passes INT_MIN for a statement without an expression -----------------------
UPC_EXPORT void __upc_notify(int id) { notify(id, id == INT_MIN); }
UPC_EXPORT void __upc_wait(int id) { wait(id, id == INT_MIN); }
UPC_EXPORT void __upc_barrier(int id) {
    notify(id, id == INT_MIN);
    wait(id, id == INT_MIN);
}
UPC_EXPORT void __upc_fence(void) { fence(); }

// Portico's own entry for front ends that name every int (the C++ front end): anonymous is a flag.
UPC_EXPORT void portico_upc_notify(int64_t id, int anonymous) { notify(id, anonymous != 0); }
UPC_EXPORT void portico_upc_wait(int64_t id, int anonymous) { wait(id, anonymous != 0); }

// ---- pointer-to-shared functions (UPC 1.3 §7.2.3) ----------------------------------------------
UPC_EXPORT size_t upc_threadof(upc_shared_ptr_t p) { return upc_pts_is_null(p) ? 0 : upc_pts_thread(p); }
UPC_EXPORT size_t upc_phaseof(upc_shared_ptr_t p) { return upc_pts_is_null(p) ? 0 : upc_pts_phase(p); }
UPC_EXPORT upc_shared_ptr_t upc_resetphase(upc_shared_ptr_t p) {
    return upc_pts_make(upc_pts_thread(p), 0, upc_pts_vaddr(p));
}
// Implementation-defined: the byte offset in the owning thread's segment.
UPC_EXPORT size_t upc_addrfield(upc_shared_ptr_t p) { return static_cast<size_t>(upc_pts_vaddr(p)); }

// UPC 1.3 §7.2.3.5: bytes of a `shared [nbytes] char[totalsize]` array that have affinity to
// threadid; nbytes == 0 is the indefinite block size (all on thread 0).
UPC_EXPORT size_t upc_affinitysize(size_t totalsize, size_t nbytes, size_t threadid) {
    if (nbytes == 0 || totalsize == 0) return threadid == 0 ? totalsize : 0;
    const size_t t = static_cast<size_t>(threads());
    const size_t blocks = (totalsize + nbytes - 1) / nbytes; // the last may be short
    const size_t full_rounds = blocks / t, extra = blocks % t;
    size_t mine = full_rounds + (threadid < extra ? 1 : 0); // blocks on threadid
    if (mine == 0) return 0;
    size_t bytes = mine * nbytes;
    const size_t last_owner = (blocks - 1) % t, last_len = totalsize - (blocks - 1) * nbytes;
    if (threadid == last_owner) bytes -= nbytes - last_len;
    return bytes;
}

// ---- transfers (UPC 1.3 §7.2.5): relaxed accesses (§5.3), no fence -------------------------------
UPC_EXPORT void upc_memcpy(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t n) {
    if (n == 0) return;
    not_null(dst, "upc_memcpy");
    not_null(src, "upc_memcpy");
    copy(thread_of(dst), upc_pts_vaddr(dst), thread_of(src), upc_pts_vaddr(src), n);
}
UPC_EXPORT void upc_memget(void *dst, upc_shared_ptr_t src, size_t n) {
    if (n == 0) return;
    not_null(src, "upc_memget");
    get(dst, thread_of(src), upc_pts_vaddr(src), n);
}
UPC_EXPORT void upc_memput(upc_shared_ptr_t dst, const void *src, size_t n) {
    if (n == 0) return;
    not_null(dst, "upc_memput");
    put(thread_of(dst), upc_pts_vaddr(dst), src, n);
}
UPC_EXPORT void upc_memset(upc_shared_ptr_t dst, int c, size_t n) {
    if (n == 0) return;
    not_null(dst, "upc_memset");
    set(thread_of(dst), upc_pts_vaddr(dst), c, n);
}
