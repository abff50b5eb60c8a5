// Tunables read from the environment (documented in the README and by portico-info).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

namespace portico {

inline uint64_t env_u64(const char *name, uint64_t fallback) {
    const char *v = std::getenv(name);
    if (!v || !*v) return fallback;
    char *end = nullptr;
    unsigned long long x = std::strtoull(v, &end, 0);
    if (end == v) return fallback;
    switch (*end) { // accept K/M/G suffixes for sizes
    case 'k': case 'K': x <<= 10; break;
    case 'm': case 'M': x <<= 20; break;
    case 'g': case 'G': x <<= 30; break;
    default: break;
    }
    return x;
}

inline std::string env_str(const char *name, const char *fallback = "") {
    const char *v = std::getenv(name);
    return (v && *v) ? std::string(v) : std::string(fallback);
}

} // namespace portico
