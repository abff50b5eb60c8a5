// Clocks and spinning.
#pragma once

#include <cstdint>
#include <ctime>

namespace portico::bench {

inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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

} // namespace portico::bench
