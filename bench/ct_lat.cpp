// SPDX-License-Identifier: BSD-3-Clause
// ct_lat: one-way latency of Portals' leanest put, measured by a ping-pong between two processes:
// an 8..4096-byte PtlPut without ack from an MD that has neither EQ nor CT (nothing at the
// initiator observes it, so the engine sends it without tracking it or taking its lock), into a
// persistent ME whose only completion is its counting event (PTL_ME_EVENT_CT_COMM, no full
// events), waited for with PtlCTWait. Next to put_lat (an ack, a SEND, an ACK and a PUT event per
// message) it shows what the engine's core path costs without the events and acknowledgements,
// i.e. how much of put_lat the full-event path adds.
//
// Each round: rank 0 puts, then waits until its counter reaches the round number; rank 1 waits,
// then puts back. Every message carries the round number and the receiver checks it and the
// counter's failure count. The physical baseline (latency_baseline.hpp) runs interleaved between
// the same processes, as in put_lat.
//
// self_ct: the same put and wait, but rank 0 puts to itself (its own shared-memory link) while
// rank 1 idles: both sides' software of one ct_lat hop with no cache line crossing cores, the
// number the design's software budget is about (docs/FASTPATH.md: one hop of ct_lat leaves one
// flag transfer for the software of both sides). Its ratio to the flag ping-pong is that budget
// used: at most 1 for the ct_lat goal.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "latency_baseline.hpp"
#include "portals_util.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

constexpr size_t kMaxSize = 4096;

class CtPingPong {
public:
    CtPingPong(Job &job, bool loopback) : rank_(job.rank()), loopback_(loopback), send_(kMaxSize), recv_(kMaxSize) {
        if (job.size() != 2) throw Error("ct_lat needs exactly 2 processes");
        ct_ = ck::alloc_ct(ni_.get());
        pt_ = ck::alloc_pt(ni_.get(), PTL_EQ_NONE);
        me_ = ck::append_me(ni_.get(), pt_.index(),
                            ck::me_desc(recv_.data(), recv_.size(),
                                        PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_SUCCESS_DISABLE |
                                            PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE,
                                        0, 0, ct_.get()));
        md_ = ck::bind_md(ni_.get(), ck::md_desc(send_.data(), send_.size()));
        peer_ = exchange_peers(job, ni_.phys_id(), pt_.index())[static_cast<size_t>(loopback ? rank_ : 1 - rank_)];
    }

    // `rounds` round trips; rank 0 returns the one-way latency in microseconds, rank 1 returns 0.
    double run(size_t size, uint64_t rounds, Watchdog &dog) {
        if (size > kMaxSize || size < sizeof(uint64_t)) throw Error("put size out of range");
        if (loopback_) return rank_ == 0 ? run_loopback(size, rounds, dog) : 0;
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < rounds; ++i) {
            // One writer; atomic only for the watchdog thread's reads (no locked instruction here).
            const uint64_t seq = seq_.load(std::memory_order_relaxed) + 1;
            seq_.store(seq, std::memory_order_relaxed);
            if (rank_ == 0) {
                put(size, seq);
                wait(seq);
            } else {
                wait(seq);
                put(size, seq);
            }
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        return rank_ == 0 && rounds ? static_cast<double>(t1 - t0) / 1000.0 / (2.0 * static_cast<double>(rounds)) : 0;
    }

    std::string describe() const {
        ptl_ct_event_t c{};
        PtlCTGet(ct_.get(), &c);
        return "round " + std::to_string(seq_.load(std::memory_order_relaxed)) + ", counter " +
               std::to_string(c.success) + " (failures " + std::to_string(c.failure) + ")";
    }

private:
    // Twice the rounds of a ping-pong, each a put and its wait: the same number of hops.
    double run_loopback(size_t size, uint64_t rounds, Watchdog &dog) {
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < 2 * rounds; ++i) {
            const uint64_t seq = seq_.load(std::memory_order_relaxed) + 1;
            seq_.store(seq, std::memory_order_relaxed);
            put(size, seq);
            wait(seq);
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        return rounds ? static_cast<double>(t1 - t0) / 1000.0 / (2.0 * static_cast<double>(rounds)) : 0;
    }
    void put(size_t size, uint64_t seq) {
        std::memcpy(send_.data(), &seq, sizeof seq);
        check(PtlPut(md_.get(), 0, size, PTL_NO_ACK_REQ, peer_.id, peer_.pt, 0, 0, nullptr, 0), "PtlPut");
    }
    void wait(uint64_t seq) {
        ptl_ct_event_t c{};
        check(PtlCTWait(ct_.get(), seq, &c), "PtlCTWait");
        if (c.failure != 0) throw Error("the counter reports " + std::to_string(c.failure) + " failed puts");
        if (c.success != seq)
            throw Error("the counter reached " + std::to_string(c.success) + ", expected " + std::to_string(seq));
        uint64_t got;
        std::memcpy(&got, recv_.data(), sizeof got);
        if (got != seq) throw Error("put carried round " + std::to_string(got) + ", expected " + std::to_string(seq));
    }

    int rank_;
    bool loopback_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    std::vector<unsigned char> send_, recv_;
    ck::Ct ct_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md md_;
    Peer peer_;
    std::atomic<uint64_t> seq_{0}; // read by the watchdog thread
};

void run(Context &ctx, bool loopback) {
    Job &job = ctx.job;
    const std::vector<size_t> sizes = sizes_of(ctx.opt, {8, 64, 1024, 4096}, {8}, 8, kMaxSize);
    const Plan p = Plan::of(ctx.opt, 20000, 1000);

    CtPingPong pp(job, loopback);
    auto base = make_latency_baseline(job, ctx.transport);
    Watchdog dog(job, kWatchdogS, [&pp] { return pp.describe(); });
    job.barrier();

    measure_latency(ctx, loopback ? "self_ct" : "ct_lat",
                    loopback ? "software cost of one ct_lat hop: an untracked PtlPut from rank 0 to itself counted on "
                               "its own ME's CT, then PtlCTWait (no cache line crosses cores; rank 1 idles)"
                             : "one-way latency of an untracked PtlPut (no ack, MD without EQ or CT) counted on the "
                               "target ME's CT (PtlCTWait), ping-pong between 2 processes, physical matching NIs",
                    *base, dog, sizes, p,
                    [&pp](size_t size, uint64_t rounds, Watchdog &d) { return pp.run(size, rounds, d); });
    job.barrier(); // nobody closes its NI while the peer still talks to it
}

void run_ct_lat(Context &ctx) { run(ctx, false); }
void run_self_ct(Context &ctx) { run(ctx, true); }

} // namespace

PORTICO_BENCH_TEST(ct_lat, "one-way latency of an untracked PtlPut counted on the target's CT (ping-pong)", 2,
                   run_ct_lat);
PORTICO_BENCH_TEST(self_ct, "software cost of one ct_lat hop: a PtlPut to itself and PtlCTWait, no transfer", 2,
                   run_self_ct);

} // namespace portico::bench
