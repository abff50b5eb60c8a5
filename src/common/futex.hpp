// SPDX-License-Identifier: BSD-3-Clause
// Process-private futex wait/wake on a 32-bit word: how blocked waiters sleep without burning a core.
#pragma once

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace portico {

// Sleeps while *word == expected, at most timeout_ns (< 0: no limit). Spurious wakeups are allowed.
inline void futex_wait(std::atomic<uint32_t> &word, uint32_t expected, int64_t timeout_ns = -1) {
    struct timespec ts, *tsp = nullptr;
    if (timeout_ns >= 0) {
        ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
        ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
        tsp = &ts;
    }
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, expected, tsp, nullptr, 0);
}

inline void futex_wake(std::atomic<uint32_t> &word, int count = INT_MAX) {
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

inline uint64_t monotonic_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

} // namespace portico
