// put_lat: one-way latency of PtlPut (PTL_ACK_REQ), measured by a ping-pong between two processes
// (put_pingpong.hpp: a ring of two). One-way latency is the round trip / 2.
//
// The physical baseline (latency_baseline.hpp: the shared-memory flag ping-pong, or the raw TCP
// ping-pong when the transport is TCP) runs between the same two processes, interleaved with the
// Portals measurement: baseline repetition, Portals repetition, baseline repetition, ...
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

void run_put_lat(Context &ctx) {
    Job &job = ctx.job;
    const std::vector<size_t> sizes = sizes_of(ctx.opt, {8, 16, 64, 256, 1024, 4096}, {8}, 8, PutRing::kMaxSize);
    const Plan p = Plan::of(ctx.opt, 20000, 1000);

    PutRing pp(job);
    auto base = make_latency_baseline(job, ctx.transport);
    Watchdog dog(job, kWatchdogS, [&pp] { return pp.describe(); });
    job.barrier();

    ctx.report.begin("put_lat: one-way latency of PtlPut (PTL_ACK_REQ), ping-pong between 2 processes, "
                     "physical matching NIs, transport " +
                         ctx.transport,
                     std::to_string(p.iters) + " round trips x " + std::to_string(p.reps) +
                         " repetitions per size after " + std::to_string(p.warmup) +
                         " warm-up ones; medians [min .. max] over the repetitions; "
                         "baseline: " +
                         base->description() + ", interleaved; ratio = value / baseline");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    for (size_t size : sizes) {
        pp.set_phase("waiting for the peer in the baseline ping-pong");
        dog.peer_phase();
        base->run(p.warmup);
        dog.portals_phase();
        pp.run(size, p.warmup, dog);
        std::vector<double> value, baseline;
        for (int r = 0; r < p.reps; ++r) {
            pp.set_phase("waiting for the peer in the baseline ping-pong");
            dog.peer_phase();
            baseline.push_back(base->run(p.iters));
            dog.portals_phase();
            const uint64_t t0 = now_ns();
            value.push_back(pp.run(size, p.iters, dog));
            if (ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr, "put_lat size %zu rep %d: baseline %.4f us, put %.4f us (%.1f ms)\n", size, r,
                             baseline.back(), value.back(), static_cast<double>(now_ns() - t0) / 1e6);
        }
        ctx.report.result(
            Result::of("put_lat", job.size(), size, value, baseline, base->kind(), p.reps, p.iters, p.warmup));
    }
    job.barrier(); // nobody closes its NI while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(put_lat, "one-way latency of PtlPut with ack (ping-pong), sizes 8..4096", 2, run_put_lat);

} // namespace portico::bench
