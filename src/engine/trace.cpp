// SPDX-License-Identifier: BSD-3-Clause
#include "engine/trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

#include "common/log.hpp"
#include "engine/engine_settings.hpp"

namespace portico::engine::trace {

int open_from_setting() {
    static std::once_flag once;
    std::call_once(once, [] {
        const std::string prefix = settings::kTrace.get();
        int fd = kOff;
        if (!prefix.empty()) {
            const std::string path = prefix + "." + std::to_string(getpid());
            fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (fd < 0) {
                log_error("PORTICO_TRACE: cannot open %s; no trace", path.c_str());
                fd = kOff;
            }
        }
        trace_fd.store(fd, std::memory_order_relaxed);
    });
    return trace_fd.load(std::memory_order_relaxed);
}

void line(const char *fmt, ...) {
    char text[512];
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    int n = std::snprintf(text, sizeof text, "%lld%09ld ", static_cast<long long>(now.tv_sec), now.tv_nsec);
    if (n < 0) return;
    va_list ap;
    va_start(ap, fmt);
    const int m = std::vsnprintf(text + n, sizeof text - static_cast<size_t>(n) - 1, fmt, ap);
    va_end(ap);
    if (m < 0) return;
    size_t len = std::min(static_cast<size_t>(n) + static_cast<size_t>(m), sizeof text - 2);
    text[len++] = '\n';
    // One write() per line: lines of concurrent threads never interleave.
    [[maybe_unused]] const ssize_t w = ::write(trace_fd.load(std::memory_order_relaxed), text, len);
}

} // namespace portico::engine::trace
