// Diagnostics: errors always go to stderr; debug output only with PORTICO_DEBUG=1.
#pragma once

#include <cstdarg>

namespace portico {

[[gnu::format(printf, 1, 2)]] void log_error(const char *fmt, ...);
[[gnu::format(printf, 1, 2)]] void log_debug(const char *fmt, ...);
bool debug_enabled();

} // namespace portico
