// SPDX-License-Identifier: BSD-3-Clause
// A token passed around a ring of PtlPuts: put_lat (2 processes: a ping-pong) and put_ring
// (N processes).
//
// Each rank opens a physical matching NI, one EQ, a portal table entry with a persistent ME
// (PTL_ME_OP_PUT, any initiator, match bits 0) over a receive buffer, and an MD over a send buffer
// with the same EQ; ids and pt indexes are exchanged over PMI. In each round rank 0 puts `size`
// bytes (PTL_ACK_REQ) to rank 1 and waits (PtlEQWait) until the put of rank N-1 arrives, consuming
// its own SEND and ACK events on the way; every other rank r waits for the put of rank r-1 and puts
// to rank r+1 (mod N). Every message carries the round number, which the receiver checks, and
// every event is checked (type, ni_fail_type, lengths), so a broken engine cannot look fast.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <portals4.h>

#include "portals_util.hpp"

namespace portico::bench {

class Job;
class Watchdog;

class PutRing {
public:
    static constexpr size_t kMaxSize = 4096;
    explicit PutRing(Job &job); // collective
    PutRing(const PutRing &) = delete;
    PutRing &operator=(const PutRing &) = delete;

    // `rounds` trips of the token around the ring with `size`-byte puts; rank 0 returns the
    // time per hop in microseconds (round time / N: the one-way latency for N = 2), others 0.
    double run(size_t size, uint64_t rounds, Watchdog &dog);

    // Where the measurement stands (called from the watchdog thread).
    std::string describe() const;
    void set_phase(const char *p) { phase_.store(p, std::memory_order_relaxed); }

private:
    // Counters are atomics only so that the watchdog thread may read them; one thread writes them.
    static uint64_t get(const std::atomic<uint64_t> &c) { return c.load(std::memory_order_relaxed); }
    static void bump(std::atomic<uint64_t> &c) { c.store(get(c) + 1, std::memory_order_relaxed); }
    void put(size_t size);
    void wait_put(size_t size);
    bool take(const ptl_event_t &ev, size_t size, bool want_put);

    int rank_, n_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    std::vector<unsigned char> send_, recv_;
    ck::Eq eq_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md md_;
    Peer next_;
    std::atomic<uint64_t> seq_{0};        // round number, the same on every rank
    std::atomic<uint64_t> sent_{0};       // puts started
    std::atomic<uint64_t> sends_done_{0}; // SEND events
    std::atomic<uint64_t> acks_{0};       // ACK events
    std::atomic<uint64_t> size_{0};
    std::atomic<const char *> phase_{"setting up"};
};

} // namespace portico::bench
