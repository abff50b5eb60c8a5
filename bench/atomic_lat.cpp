// SPDX-License-Identifier: BSD-3-Clause
// atomic_lat and fetch_atomic_lat: latency of Portals atomics between two processes.
//
// atomic_lat: a ping-pong of 8-byte PtlAtomic(PTL_SUM, PTL_INT64_T, PTL_ACK_REQ): rank 0 adds to
// rank 1's counter, rank 1 waits for the ATOMIC event and adds back. One-way = round trip / 2.
// fetch_atomic_lat: rank 0 does PtlFetchAtomic(PTL_SUM) on rank 1's counter and waits for the
// REPLY; rank 1's application does nothing meanwhile (its engine answers: application bypass).
// Reported as round trip / 2, so that both compare with the flag ping-pong's one-way latency.
// Every REPLY's old value is checked (it must count up by one), and the final counters are checked.
// Baseline, interleaved: latency_baseline.hpp (shared-memory flag ping-pong, or raw TCP ping-pong
// when the transport is TCP).
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "latency_baseline.hpp"
#include "portals_util.hpp"
#include "report.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

class AtomicPingPong {
public:
    explicit AtomicPingPong(Job &job) : rank_(job.rank()) {
        eq_ = ck::alloc_eq(ni_.get(), 1024);
        pt_ = ck::alloc_pt(ni_.get(), eq_.get());
        me_ = ck::append_me(
            ni_.get(), pt_.index(),
            ck::me_desc(&counter_, sizeof counter_, PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE));
        one_md_ = ck::bind_md(ni_.get(), ck::md_desc(&one_, sizeof one_, 0, eq_.get()));
        old_md_ = ck::bind_md(ni_.get(), ck::md_desc(&old_, sizeof old_, 0, eq_.get()));
        peer_ = exchange_peers(job, ni_.phys_id(), pt_.index())[rank_ == 0 ? 1 : 0];
    }

    // atomic_lat: `iters` round trips; rank 0 returns the one-way latency (µs).
    double pingpong(uint64_t iters, Watchdog &dog) {
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; ++i) {
            if (rank_ == 0) {
                add();
                await(PTL_EVENT_ATOMIC);
            } else {
                await(PTL_EVENT_ATOMIC);
                add();
            }
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        while (acks_ < sent_ || sends_ < sent_) await(kAnyEvent); // drain our own completions
        return rank_ == 0 && iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }

    // fetch_atomic_lat: rank 0 fetches `iters` times; returns round trip / 2 (µs). Rank 1 idles.
    double fetch(uint64_t iters, Watchdog &dog) {
        if (rank_ != 0) return 0;
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; ++i) {
            check(PtlFetchAtomic(old_md_.get(), 0, one_md_.get(), 0, sizeof(int64_t), peer_.id, peer_.pt, 0, 0, nullptr,
                                 0, PTL_SUM, PTL_INT64_T),
                  "PtlFetchAtomic");
            await(PTL_EVENT_REPLY);
            if (old_ != fetched_)
                throw Error("PtlFetchAtomic returned " + std::to_string(old_) + ", expected " +
                            std::to_string(fetched_));
            ++fetched_;
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        while (sends_ < fetches_sent()) await(PTL_EVENT_SEND);
        return iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }
    int64_t counter() const { return counter_; }
    int64_t fetched() const { return fetched_; }
    uint64_t atomics_sent() const { return sent_; }
    std::string describe() const {
        return std::to_string(sent_) + " atomics and " + std::to_string(fetched_) + " fetch-atomics done, " +
               std::to_string(sends_) + " SEND and " + std::to_string(acks_) + " ACK events seen";
    }

private:
    void add() {
        check(PtlAtomic(one_md_.get(), 0, sizeof(int64_t), PTL_ACK_REQ, peer_.id, peer_.pt, 0, 0, nullptr, 0, PTL_SUM,
                        PTL_INT64_T),
              "PtlAtomic");
        ++sent_;
    }
    uint64_t fetches_sent() const { return static_cast<uint64_t>(fetched_.load()) + sent_.load(); }
    static constexpr int kAnyEvent = -1;
    // Consumes events until one of kind `want` arrives (kAnyEvent: exactly one event); every event
    // must be a success.
    void await(int want) {
        for (;;) {
            const ptl_event_t ev = ck::wait_event(eq_.get(), "atomic");
            check_event(ev, "atomic");
            if (ev.type == PTL_EVENT_SEND) ++sends_;
            if (ev.type == PTL_EVENT_ACK) ++acks_;
            if (ev.type == PTL_EVENT_ATOMIC &&
                (ev.atomic_operation != PTL_SUM || ev.atomic_type != PTL_INT64_T || ev.mlength != sizeof(int64_t)))
                throw Error("ATOMIC event with the wrong operation, type or length");
            if (want == kAnyEvent || ev.type == want) return;
            if (ev.type != PTL_EVENT_SEND && ev.type != PTL_EVENT_ACK && ev.type != PTL_EVENT_FETCH_ATOMIC)
                throw Error(std::string("unexpected event ") + event_name(ev.type));
        }
    }

    int rank_;
    int64_t counter_ = 0; // the target word
    int64_t one_ = 1;
    int64_t old_ = 0;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    ck::Eq eq_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md one_md_, old_md_;
    std::atomic<int64_t> fetched_{0}; // fetches done (the value the next one must return, before pingpongs)
    Peer peer_;
    // Atomics only so that the watchdog thread may read them; one thread writes them.
    std::atomic<uint64_t> sent_{0}, sends_{0}, acks_{0};
};

void run(Context &ctx, bool fetching) {
    Job &job = ctx.job;
    const Plan p = Plan::of(ctx.opt, 20000, 1000);
    const uint64_t iters = p.iters, warmup = p.warmup;
    const int reps = p.reps;
    AtomicPingPong ap(job);
    auto base = make_latency_baseline(job, ctx.transport);
    Watchdog dog(job, kWatchdogS, [&ap] { return ap.describe(); });
    job.barrier();
    const char *name = fetching ? "fetch_atomic_lat" : "atomic_lat";
    ctx.report.begin(std::string(name) +
                         (fetching ? ": PtlFetchAtomic(SUM, INT64) round trip / 2, target application idle"
                                   : ": one-way latency of PtlAtomic(SUM, INT64, ACK_REQ), ping-pong") +
                         ", transport " + ctx.transport,
                     std::to_string(iters) + " operations x " + std::to_string(reps) +
                         " repetitions; medians [min .. max]; baseline: " + base->description() + ", interleaved");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);
    std::vector<double> value, baseline;
    for (int r = -1; r < reps; ++r) { // r = -1: warm-up
        const uint64_t n = r < 0 ? warmup : iters;
        dog.peer_phase();
        const double b = base->run(n);
        dog.portals_phase();
        // The idle side of fetch_atomic_lat waits in the job barrier while its engine answers.
        const double v = fetching ? ap.fetch(n, dog) : ap.pingpong(n, dog);
        dog.peer_phase();
        job.barrier();
        if (r >= 0) {
            baseline.push_back(b);
            value.push_back(v);
        }
    }
    // What every rank's counter must hold now: each atomic adds one.
    const auto counts = job.allgather(std::to_string(ap.counter()));
    if (job.rank() == 0) {
        const int64_t expect_at_1 = fetching ? ap.fetched() : static_cast<int64_t>(ap.atomics_sent());
        if (std::stoll(counts[1]) != expect_at_1)
            throw Error("rank 1's counter is " + counts[1] + ", expected " + std::to_string(expect_at_1));
    }
    ctx.report.result(
        Result::of(name, job.size(), sizeof(int64_t), value, baseline, base->kind(), reps, iters, warmup));
    job.barrier();
}

void run_atomic_lat(Context &ctx) { run(ctx, false); }
void run_fetch_atomic_lat(Context &ctx) { run(ctx, true); }

} // namespace

PORTICO_BENCH_TEST(atomic_lat, "one-way latency of an 8-byte PtlAtomic with ack (ping-pong)", 2, run_atomic_lat);
PORTICO_BENCH_TEST(fetch_atomic_lat, "8-byte PtlFetchAtomic round trip / 2, target application idle", 2,
                   run_fetch_atomic_lat);

} // namespace portico::bench
