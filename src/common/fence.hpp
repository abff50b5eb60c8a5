// SPDX-License-Identifier: BSD-3-Clause
// The full barrier of the sleep/wake handshakes (store my flag; barrier; load yours).
#pragma once

#include <atomic>

namespace portico {

inline void full_fence() {
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer does not model fences (GCC refuses them); a seq_cst read-modify-write is a
    // full barrier on the hardware and keeps the build going. TSan checks data races, not this.
    static std::atomic<int> tsan_fence{0};
    tsan_fence.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

} // namespace portico
