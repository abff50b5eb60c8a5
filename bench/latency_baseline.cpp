// SPDX-License-Identifier: BSD-3-Clause
#include "latency_baseline.hpp"

#include <cstdio>

#include "bench.hpp"
#include "job.hpp"
#include "report.hpp"
#include "shm_pingpong.hpp"
#include "tcp_baseline.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {

std::unique_ptr<LatencyBaseline> make_latency_baseline(Job &job, const std::string &transport) {
    if (transport == "tcp") return std::make_unique<TcpPingPong>(job);
    return std::make_unique<ShmPingPong>(job);
}

void measure_latency(Context &ctx, const char *name, const std::string &what, LatencyBaseline &base, Watchdog &dog,
                     const std::vector<size_t> &sizes, const Plan &p, const LatencyRun &portals,
                     const std::function<void()> &waiting) {
    Job &job = ctx.job;
    ctx.report.begin(std::string(name) + ": " + what + ", transport " + ctx.transport,
                     std::to_string(p.iters) + " round trips x " + std::to_string(p.reps) +
                         " repetitions per size after " + std::to_string(p.warmup) +
                         " warm-up ones; medians [min .. max] over the repetitions; baseline: " + base.description() +
                         ", interleaved; ratio = value / baseline");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);
    auto baseline_run = [&](uint64_t iters) {
        if (waiting) waiting();
        dog.peer_phase();
        const double v = base.run(iters);
        dog.portals_phase();
        return v;
    };
    for (size_t size : sizes) {
        baseline_run(p.warmup);
        portals(size, p.warmup, dog);
        std::vector<double> value, baseline;
        for (int r = 0; r < p.reps; ++r) {
            baseline.push_back(baseline_run(p.iters));
            const uint64_t t0 = now_ns();
            value.push_back(portals(size, p.iters, dog));
            if (ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr, "%s size %zu rep %d: baseline %.4f us, portals %.4f us (%.1f ms)\n", name, size, r,
                             baseline.back(), value.back(), static_cast<double>(now_ns() - t0) / 1e6);
        }
        ctx.report.result(Result::of(name, job.size(), size, value, baseline, base.kind(), p.reps, p.iters, p.warmup));
    }
}

} // namespace portico::bench
