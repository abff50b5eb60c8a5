// SPDX-License-Identifier: BSD-3-Clause
#include "put_pingpong.hpp"

#include <cstring>

#include "bench.hpp"
#include "job.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {

PutRing::PutRing(Job &job) : rank_(job.rank()), n_(job.size()), send_(kMaxSize), recv_(kMaxSize) {
    if (n_ < 2) throw Error("a ring of puts needs at least 2 processes");
    eq_ = ck::alloc_eq(ni_.get(), 1024);
    pt_ = ck::alloc_pt(ni_.get(), eq_.get());
    me_ = ck::append_me(ni_.get(), pt_.index(),
                        ck::me_desc(recv_.data(), recv_.size(),
                                    PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE));
    md_ = ck::bind_md(ni_.get(), ck::md_desc(send_.data(), send_.size(), 0, eq_.get()));
    const auto peers = exchange_peers(job, ni_.phys_id(), pt_.index());
    next_ = peers[static_cast<size_t>((rank_ + 1) % n_)];
}

double PutRing::run(size_t size, uint64_t rounds, Watchdog &dog) {
    if (size > kMaxSize || size < sizeof(uint64_t)) throw Error("put size out of range");
    size_.store(size, std::memory_order_relaxed);
    phase_.store(n_ == 2 ? "ping-pong" : "passing the token", std::memory_order_relaxed);
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < rounds; ++i) {
        bump(seq_);
        if (rank_ == 0) {
            put(size);
            wait_put(size);
        } else {
            wait_put(size);
            put(size);
        }
        dog.beat();
    }
    const uint64_t t1 = now_ns();
    // Every rank ends with every SEND and ACK consumed, so repetitions do not leak into each other.
    phase_.store("waiting for the last SEND/ACK events", std::memory_order_relaxed);
    while (get(sends_done_) < get(sent_) || get(acks_) < get(sent_))
        take(ck::wait_event(eq_.get(), "put"), size, false);
    phase_.store("between repetitions", std::memory_order_relaxed);
    return rank_ == 0 && rounds
               ? static_cast<double>(t1 - t0) / 1000.0 / (static_cast<double>(rounds) * static_cast<double>(n_))
               : 0;
}

std::string PutRing::describe() const {
    return std::string(phase_.load(std::memory_order_relaxed)) + ", size " + std::to_string(get(size_)) + ", round " +
           std::to_string(get(seq_)) + ": " + std::to_string(get(sent_)) + " puts started, " +
           std::to_string(get(sends_done_)) + " SEND and " + std::to_string(get(acks_)) + " ACK events seen";
}

void PutRing::put(size_t size) {
    const uint64_t seq = get(seq_);
    std::memcpy(send_.data(), &seq, sizeof seq);
    check(PtlPut(md_.get(), 0, size, PTL_ACK_REQ, next_.id, next_.pt, 0, 0, nullptr, 0), "PtlPut");
    bump(sent_);
}

// Consumes events until the previous rank's put of this round has arrived.
void PutRing::wait_put(size_t size) {
    while (!take(ck::wait_event(eq_.get(), "put"), size, true)) {
    }
}

// Checks one event; true if it is the awaited PUT.
bool PutRing::take(const ptl_event_t &ev, size_t size, bool want_put) {
    switch (ev.type) {
    case PTL_EVENT_SEND:
        check_event(ev, "put");
        bump(sends_done_);
        return false;
    case PTL_EVENT_ACK:
        check_event(ev, "put");
        if (ev.mlength != size)
            throw Error("ACK reports mlength " + std::to_string(ev.mlength) + ", expected " + std::to_string(size));
        bump(acks_);
        return false;
    case PTL_EVENT_PUT: {
        check_event(ev, "incoming put");
        if (!want_put) throw Error("a PUT arrived when none was expected");
        if (ev.mlength != size || ev.rlength != size)
            throw Error("PUT event with rlength " + std::to_string(ev.rlength) + " mlength " +
                        std::to_string(ev.mlength) + ", expected " + std::to_string(size));
        if (ev.start != recv_.data()) throw Error("PUT event: start does not point at the receive buffer");
        uint64_t got;
        std::memcpy(&got, ev.start, sizeof got);
        if (got != get(seq_))
            throw Error("PUT carried round number " + std::to_string(got) + ", expected " + std::to_string(get(seq_)));
        return true;
    }
    default:
        throw Error(std::string("unexpected event ") + event_name(ev.type) + " (" + fail_name(ev.ni_fail_type) + ")");
    }
}

} // namespace portico::bench
