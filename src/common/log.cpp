#include "common/log.hpp"

#include "common/common_settings.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace portico {

namespace {
void vlog(const char *level, const char *fmt, va_list ap) {
    char line[1024];
    int n = std::snprintf(line, sizeof line, "portico[%d] %s: ", static_cast<int>(getpid()), level);
    if (n < 0 || n >= static_cast<int>(sizeof line)) return;
    int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n) - 1, fmt, ap);
    if (m < 0) return;
    size_t len = static_cast<size_t>(n) + std::min(static_cast<size_t>(m), sizeof line - static_cast<size_t>(n) - 2);
    line[len++] = '\n';
    // One write() per line so that lines of concurrent processes do not interleave.
    [[maybe_unused]] ssize_t w = ::write(2, line, len);
}
} // namespace

bool debug_enabled() {
    static const bool on = settings::kDebug.get();
    return on;
}

void log_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog("error", fmt, ap);
    va_end(ap);
}

void log_debug(const char *fmt, ...) {
    if (!debug_enabled()) return;
    va_list ap;
    va_start(ap, fmt);
    vlog("debug", fmt, ap);
    va_end(ap);
}

} // namespace portico
