// SPDX-License-Identifier: BSD-3-Clause
// A sleeping lock for sections that may be long (the engine lock: a frame run, a list walk, an
// MD bind). Its word is 0 (free), 1 (held) or 2 (held, and somebody may sleep on it). Taking a
// free lock is one compare-exchange and leaving it one exchange, inlined at the caller: a
// std::mutex does the same locked instructions behind two calls into libc, about 50 instructions
// a lock and unlock, which a small message pays on each side of every hop (docs/FASTPATH.md).
// A taker that finds it held spins briefly (the holder is usually between two frames), then
// sleeps on the futex; with more threads than cores the holder may be the one descheduled.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/futex.hpp"

namespace portico {

class FutexMutex {
public:
    FutexMutex() = default;
    FutexMutex(const FutexMutex &) = delete;
    FutexMutex &operator=(const FutexMutex &) = delete;

    bool try_lock() {
        uint32_t free = 0;
        return word_.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed);
    }
    void lock() {
        if (!try_lock()) lock_contended();
    }
    void unlock() {
        if (word_.exchange(0, std::memory_order_release) == 2) futex_wake(word_, 1);
    }

private:
    [[gnu::noinline, gnu::cold]] void lock_contended() {
        for (unsigned turn = 0; turn < 32; ++turn) {
            cpu_relax();
            if (word_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
        }
        // Announce a sleeper (2) whenever we take or wait: the unlock that follows wakes one, and
        // a lock taken as 2 passes the duty on, at worst one needless wake-up.
        while (word_.exchange(2, std::memory_order_acquire) != 0) futex_wait(word_, 2);
    }

    std::atomic<uint32_t> word_{0};
};

} // namespace portico
