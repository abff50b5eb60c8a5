// SPDX-License-Identifier: BSD-3-Clause
// Memory regions of MDs and list entries: contiguous or gather lists, possibly covering memory
// that is not mapped (every copy is guarded).
#pragma once

#include <sys/uio.h>
#include <unistd.h>
#include <vector>

#include "common/guarded_copy.hpp"
#include "engine/engine.hpp"

namespace portico::engine {

// A memory region of an MD or list entry: contiguous from `base` (which may be 0 for a region
// covering the whole address space), or a gather list.
struct Region {
    uintptr_t base = 0;
    const ptl_iovec_t *iov = nullptr;
    size_t iovcnt = 0;
};

inline Region region_of(const MD &m) {
    if (m.desc.options & PTL_IOVEC) return {0, m.iov.data(), m.iov.size()};
    return {reinterpret_cast<uintptr_t>(m.desc.start), nullptr, 0};
}
inline Region region_of(const Entry &e) {
    if (e.d.options & PTL_IOVEC) return {0, e.iov.data(), e.iov.size()};
    return {reinterpret_cast<uintptr_t>(e.d.start), nullptr, 0};
}

inline void *address_at(const Region &r, ptl_size_t off) {
    if (!r.iov) return reinterpret_cast<void *>(r.base + off);
    for (size_t i = 0; i < r.iovcnt; ++i) {
        if (off < r.iov[i].iov_len) return static_cast<std::byte *>(r.iov[i].iov_base) + off;
        off -= r.iov[i].iov_len;
    }
    return r.iovcnt ? static_cast<std::byte *>(r.iov[r.iovcnt - 1].iov_base) + r.iov[r.iovcnt - 1].iov_len : nullptr;
}

// Calls piece(address, bytes) for each contiguous piece of [off, off+len) in order; false if any
// call returned false (every piece is still visited: a copy fills what it can).
template <class Piece> bool for_each_piece(const Region &r, ptl_size_t off, ptl_size_t len, Piece piece) {
    if (len == 0) return true;
    if (!r.iov) return piece(reinterpret_cast<std::byte *>(r.base + off), len);
    bool ok = true;
    for (size_t i = 0; i < r.iovcnt && len > 0; ++i) {
        if (off >= r.iov[i].iov_len) {
            off -= r.iov[i].iov_len;
            continue;
        }
        const ptl_size_t take = std::min(len, r.iov[i].iov_len - off);
        ok &= piece(static_cast<std::byte *>(r.iov[i].iov_base) + off, take);
        len -= take;
        off = 0;
    }
    return ok;
}

// Appends the pieces of [off, off+len) to out.
inline void gather(const Region &r, ptl_size_t off, ptl_size_t len, std::vector<iovec> &out) {
    for_each_piece(r, off, len, [&out](std::byte *p, ptl_size_t n) {
        out.push_back({p, n});
        return true;
    });
}

// Copies n bytes into the region at off; false if the destination faulted.
inline bool copy_into(const Region &r, ptl_size_t off, const std::byte *src, size_t n) {
    return for_each_piece(r, off, n, [&src](std::byte *p, ptl_size_t k) {
        const bool ok = guarded_copy(p, src, k);
        src += k;
        return ok;
    });
}

// Copies n bytes out of the region at off; false if the source faulted.
inline bool copy_from(const Region &r, ptl_size_t off, std::byte *dst, size_t n) {
    return for_each_piece(r, off, n, [&dst](std::byte *p, ptl_size_t k) {
        const bool ok = guarded_copy(dst, p, k);
        dst += k;
        return ok;
    });
}

inline ptl_uid_t my_uid() {
    static const ptl_uid_t uid = static_cast<ptl_uid_t>(getuid());
    return uid;
}

} // namespace portico::engine
