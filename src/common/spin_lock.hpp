// SPDX-License-Identifier: BSD-3-Clause
// A lock for the short critical sections of the message path (a ring's producer or consumer
// side). Taking it is one exchange and leaving it a plain store; a std::mutex also pays a locked
// instruction to leave (it looks for sleepers), and a small message takes and leaves two of these
// per hop on each side (docs/FASTPATH.md: at most a few locked instructions per hop in all).
// A waiter spins a little, then gives its core away on every turn: with more processes than
// cores the holder may be the one descheduled.
#pragma once

#include <atomic>
#include <chrono>
#include <sched.h>
#include <thread>

#include "common/futex.hpp"

namespace portico {

class SpinLock {
public:
    bool try_lock() {
        return !held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire);
    }
    void lock() {
        for (unsigned turn = 0; !try_lock(); ++turn) {
            if (turn < 64)
                cpu_relax();
            else
                sched_yield();
        }
    }
    void unlock() { held_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> held_{false};
};

// For the goodbyes of a process that is ending: its exit may run on one thread while another was
// stopped for good inside the library holding the lock (a signal handler that exits, interrupting
// a send). Takes the lock if it comes free within `patience`, else gives up.
template <class Lockable> bool lock_within(Lockable &m, std::chrono::milliseconds patience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!m.try_lock()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

} // namespace portico
