// SPDX-License-Identifier: BSD-3-Clause
// Diagnostics: one logger for every layer and client. A line is
//   portico[<pid>] rank <r> <layer> <level>: <text>
// ("rank <r>" once the process knows its rank in a job), written with one write() so that the
// lines of concurrent processes do not interleave. The layer comes from the source file's folder
// (src/engine/... -> "engine", src/transport/shm/... -> "transport.shm", src/gasnet -> "gasnet"),
// so a call names only its level.
//
// PORTICO_LOG_LEVEL chooses what is printed: a level (error, warn, info, debug, trace; default
// warn), optionally followed by per-layer levels: "warn,engine=debug,transport.shm=trace".
#pragma once

#include <cstdint>

namespace portico {

enum class LogLevel : uint8_t { error, warn, info, debug, trace };

// Whether a line of this level from the source file `file` (its __FILE__) is printed.
bool log_enabled(LogLevel level, const char *file);
[[gnu::format(printf, 3, 4)]] void log_line(LogLevel level, const char *file, const char *fmt, ...);
// From the bootstrap (or a client that knows it first), for every later line of the process.
void set_log_rank(int rank);
// The layer a source file belongs to, as lines and PORTICO_LOG_LEVEL name it.
const char *log_layer_of(const char *file, char *buf, unsigned size);

} // namespace portico

// Macros, so that the line carries the caller's file (hence its layer) and the format is checked.
#define log_error(...) ::portico::log_line(::portico::LogLevel::error, __FILE__, __VA_ARGS__)
#define log_warn(...) ::portico::log_line(::portico::LogLevel::warn, __FILE__, __VA_ARGS__)
#define log_info(...) ::portico::log_line(::portico::LogLevel::info, __FILE__, __VA_ARGS__)
#define log_debug(...)                                                                                                 \
    (::portico::log_enabled(::portico::LogLevel::debug, __FILE__)                                                      \
         ? ::portico::log_line(::portico::LogLevel::debug, __FILE__, __VA_ARGS__)                                      \
         : void())
#define log_trace(...)                                                                                                 \
    (::portico::log_enabled(::portico::LogLevel::trace, __FILE__)                                                      \
         ? ::portico::log_line(::portico::LogLevel::trace, __FILE__, __VA_ARGS__)                                      \
         : void())
