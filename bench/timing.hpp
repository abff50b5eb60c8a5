// SPDX-License-Identifier: BSD-3-Clause
// Clocks and spinning.
#pragma once

#include <cstdint>
#include <ctime>
#include <sched.h>
#include <string>

#include "bench.hpp"

namespace portico::bench {

inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// CPU time used by all threads of this process.
inline uint64_t process_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The spin-wait hint: lets the sibling hyperthread run and saves power while spinning.
inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield" ::: "memory");
#elif defined(__powerpc__) || defined(__powerpc64__)
    asm volatile("or 27,27,27" ::: "memory");
#else
    asm volatile("" ::: "memory");
#endif
}

// How long a raw baseline waits for its peer before it gives up (the peer is stuck or gone).
constexpr uint64_t kPeerTimeoutNs = 60ull * 1000000000ull;

// Spins (pause) until done() holds; throws bench::Error naming `what` if the peer stays silent
// for kPeerTimeoutNs. The clock is read only every 64 Ki spins.
template <class Done> void spin_until(Done done, const char *what) {
    unsigned spins = 0;
    uint64_t since = 0;
    while (!done()) {
        cpu_pause();
        // A peer that has not answered after a few thousand spins is not running: on a machine
        // with more runnable threads than cores, give it the core rather than spin a whole time
        // slice (which made one window of the ring baseline cost milliseconds under load).
        if (++spins >= 4096) sched_yield();
        if ((spins & 0xffff) == 0) {
            const uint64_t t = now_ns();
            if (since == 0)
                since = t;
            else if (t - since > kPeerTimeoutNs)
                throw Error(std::string(what) + ": the peer did not answer for 60 s");
        }
    }
}

} // namespace portico::bench
