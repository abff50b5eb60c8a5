// SPDX-License-Identifier: BSD-3-Clause
// A set of at most N values as plain data (nothing to construct at run time, nothing to destroy),
// for the thread-locals of the message path: Portals may be called from atexit handlers, after
// glibc has destroyed a thread's objects, and those thread-locals are initial-exec (a
// general-dynamic access is a call to __tls_get_addr), which takes static TLS from the surplus a
// dlopen'ed library may use, so they stay small. What does not fit, its owner does at once.
#pragma once

namespace portico {

template <class T, unsigned N> struct SmallSet {
    unsigned count = 0;
    T items[N]{}; // initialized, so that a thread-local set needs no guard (constant initialization)
    // False when the set is full and x is not in it.
    bool add(T x) {
        for (unsigned i = 0; i < count; ++i)
            if (items[i] == x) return true;
        if (count == N) return false;
        items[count++] = x;
        return true;
    }
};

} // namespace portico
