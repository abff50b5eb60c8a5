// SPDX-License-Identifier: BSD-3-Clause
// An in-memory transport for testing the engine in one process ("loopback"): every endpoint opened
// in this process is an inbox in one process-global fabric, keyed by (nid, pid), so two Engine
// objects are two peers without fork, sockets or shared memory.
//
// It behaves as the real transports do where the engine can tell: a message longer than one frame
// goes as its first frame followed by continuation frames (never interleaved with another message to the
// same peer), frames arrive in order, an unknown or closed peer is Unreachable, and a peer that
// closes its endpoint fails its link after everything it sent has been delivered. It never queues
// (every send is complete when send() returns), so on_send_complete is never called.
//
// Use: register_loopback(), then setenv("PORTICO_TRANSPORT", "loopback", 1) before the first
// Engine::ni_init (or ctest's ENVIRONMENT property). Select it alone: it sleeps on a condition
// variable and has no wait_fd(), so a router over it and another transport would not wake for it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace portico::transport {
struct TransportInfo;
}

namespace portico::loopback {

// The payload one frame carries: small, so that tests exercise continuation frames with modest messages.
inline constexpr size_t kFramePayload = 4096;

// The registration ("loopback"); register_loopback() adds it to the registry (idempotent).
const transport::TransportInfo &transport_info();
void register_loopback();

// Frames handed to an inbox since the process started: every frame, and the continuation frames among
// them (so that a test can check that a message really went as several frames).
uint64_t frames_sent();
uint64_t data_frames_sent();

// A receiver whose progress stalled: what is sent to the endpoint (nid, pid) stays out of sight of
// its polls, has_pending() and its progress thread's wait until the monotonic clock
// (common/futex.hpp) reads visible_at_ns, and its arrival wakes nobody. The endpoint must be open.
void hide_arrivals_until(uint32_t nid, uint32_t pid, uint64_t visible_at_ns);

} // namespace portico::loopback
