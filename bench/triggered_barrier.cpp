// SPDX-License-Identifier: BSD-3-Clause
// triggered_barrier: a barrier over N processes built only from triggered puts and counters on a
// binary tree (as examples/triggered_collectives.c, on physical NIs), the way collective libraries
// offload barriers onto Portals. After setup the application only bumps its own counter and waits.
//
// Baseline, interleaved: a raw shared-memory barrier among the same processes (one shared counter
// page; each arrival is a fetch_add, the last one advances a generation word the others spin on
// for a while and then sleep on with a process-shared futex — pure spinning collapses when there
// are more processes than cores).
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "report.hpp"
#include "triggered_barrier.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

void run_triggered_barrier(Context &ctx) {
    Job &job = ctx.job;
    // Short mode stays short even when the spinning baseline collapses (more processes than cores).
    const uint64_t iters = ctx.opt.iters ? ctx.opt.iters : ctx.opt.short_mode ? 100 : 5000;
    const int reps = ctx.opt.reps ? ctx.opt.reps : ctx.opt.short_mode ? 3 : 7;
    TriggeredBarrier tb(job);
    ShmBarrier shm(job);
    Watchdog dog(job, kWatchdogS, [&tb] { return tb.describe(); });
    job.barrier();
    ctx.report.begin("triggered_barrier: barrier from triggered puts and counters over a binary tree, " +
                         std::to_string(job.size()) + " processes",
                     std::to_string(iters) + " barriers x " + std::to_string(reps) +
                         " repetitions; baseline: raw shared-memory counter barrier, interleaved; transport " +
                         ctx.transport);
    std::vector<double> value, baseline;
    for (int r = -1; r < reps; ++r) {
        const uint64_t n = r < 0 ? std::max<uint64_t>(50, iters / 10) : iters;
        dog.peer_phase(); // the raw barrier may sleep for a slow peer
        const double b = shm.run(n);
        dog.portals_phase();
        const double v = tb.run(n, dog);
        if (r >= 0) {
            baseline.push_back(b);
            value.push_back(v);
        }
    }
    ctx.report.result(
        Result::of("triggered_barrier", job.size(), 0, value, baseline, "shm_counter_barrier", reps, iters));
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(triggered_barrier, "barrier from triggered puts and counters (binary tree), any number of processes",
                   0, run_triggered_barrier);

} // namespace portico::bench
