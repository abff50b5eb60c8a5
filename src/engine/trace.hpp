// SPDX-License-Identifier: BSD-3-Clause
// The engine's trace of counting events, triggered operations and matching (PORTICO_TRACE): for
// finding which operation or count a collective built of triggered operations lost, on every
// rank of a job. Off by default; then each trace point costs one relaxed load and a branch,
// inlined (no call, no lock). On, each process writes one line per step to <PORTICO_TRACE>.<pid>,
// one write() per line and unbuffered, so that a hung job's files end with what every rank last
// did:
//   <ns> post ct=<h> thr=<n> at (<s>,<f>) <kind> ...  a triggered operation posted on a counter
//   <ns> fire ct=<h> thr=<n> at (<s>,<f>) <kind> ...  ... and fired (its counter reached thr)
//   <ns> ct <h> +(<s>,<f>) = (<S>,<F>)                a counter changed (API, message, CTInc)
//   <ns> rx <kind> pt=<i> bits=<b> ...                a request matched (entry, list, counter) or dropped
//   <ns> append|unlink|event|take|wait|waited ...     entries, full events, PtlCTWait/PtlCTPoll
// Handles and match bits are printed in hex; <ns> is CLOCK_MONOTONIC, comparable across the
// processes of one machine.
#pragma once

#include <atomic>

namespace portico::engine::trace {

// The trace file's descriptor; kUnread until the setting is first read.
inline constexpr int kOff = -1;
inline constexpr int kUnread = -2;
inline std::atomic<int> trace_fd{kUnread};

int open_from_setting(); // reads PORTICO_TRACE once, opens the file; returns the new trace_fd

inline bool enabled() {
    const int fd = trace_fd.load(std::memory_order_relaxed);
    if (fd == kOff) [[likely]]
        return false;
    return fd >= 0 || open_from_setting() >= 0;
}

[[gnu::format(printf, 1, 2)]] void line(const char *fmt, ...);

} // namespace portico::engine::trace
