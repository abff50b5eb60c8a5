// SPDX-License-Identifier: BSD-3-Clause
// put_ring: N processes pass a token around a ring of 8-byte PtlPuts (PTL_ACK_REQ; the same code
// as put_lat, put_pingpong.hpp); reported per hop (the time of a trip around the ring / N). Run it
// with more processes than cores to see what oversubscription costs: every hop then needs the
// scheduler to run the next process.
//
// Baseline, interleaved: the latency baseline (shared-memory flag ping-pong, or raw TCP ping-pong
// when the transport is TCP) between ranks 0 and 1 alone, the others waiting in a PMI barrier
// (which sleeps).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "latency_baseline.hpp"
#include "put_pingpong.hpp"
#include "report.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

void run_put_ring(Context &ctx) {
    Job &job = ctx.job;
    const uint64_t n = static_cast<uint64_t>(job.size());
    // Rounds (trips around the ring) per repetition: about 20000 hops (1000 in short mode).
    const Plan p = Plan::of(ctx.opt, std::max<uint64_t>(100, 20000 / n), std::max<uint64_t>(20, 1000 / n));
    const uint64_t warmup = std::max<uint64_t>(10, p.iters / 10);
    const uint64_t base_iters = std::max<uint64_t>(1000, p.iters * n / 2); // as many one-way messages
    const size_t size = 8;

    PutRing ring(job);
    auto base = make_latency_baseline(job, ctx.transport);
    Watchdog dog(job, kWatchdogS, [&ring] { return ring.describe(); });
    job.barrier();

    ctx.report.begin("put_ring: a token passed around " + std::to_string(n) +
                         " processes by 8-byte PtlPuts "
                         "(PTL_ACK_REQ), time per hop, transport " +
                         ctx.transport,
                     std::to_string(p.iters) + " trips around the ring x " + std::to_string(p.reps) +
                         " repetitions after " + std::to_string(warmup) + " warm-up ones; baseline: " +
                         base->description() + " between ranks 0 and 1 (one-way), interleaved");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    std::vector<double> value, baseline;
    for (int r = -1; r < p.reps; ++r) { // r = -1: warm-up
        ring.set_phase("waiting for ranks 0 and 1 in the baseline ping-pong");
        dog.peer_phase();
        const double b = base->run(r < 0 ? std::max<uint64_t>(100, base_iters / 10) : base_iters);
        job.barrier();
        dog.portals_phase();
        const double v = ring.run(size, r < 0 ? warmup : p.iters, dog);
        dog.peer_phase();
        job.barrier();
        if (r < 0) continue;
        baseline.push_back(b);
        value.push_back(v);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "put_ring rep %d: baseline %.4f us, per hop %.4f us\n", r, b, v);
    }
    ctx.report.result(Result::of("put_ring", job.size(), size, value, baseline, base->kind(), p.reps, p.iters, warmup));
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(put_ring, "token ring of 8-byte PtlPuts over N processes, time per hop (oversubscription)", 0,
                   run_put_ring, 2);

} // namespace portico::bench
