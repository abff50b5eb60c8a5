// SPDX-License-Identifier: BSD-3-Clause
// upc_barrier_lat: the UPC barrier (__upc_barrier, anonymous, in a loop: a notify and a wait) at
// the job's size, next to the two other barriers a program on Portico can use, in the same
// processes and the same run, interleaved repetition by repetition:
//   - Portico's triggered barrier (triggered_barrier.hpp: triggered puts and counters on a binary
//     tree, physical NIs), the offloaded barrier collective libraries build on Portals;
//   - GASNet's barrier (gasnet_barrier_notify + gasnet_barrier_wait, anonymous: a dissemination
//     barrier of puts, libgasnet-portico), started in this process next to the UPC runtime.
// Baseline of all three (physical): the raw shared-memory counter barrier (triggered_barrier.hpp).
// JSON: one line per barrier (variant "upc", "triggered", "gasnet"); the UPC and GASNet lines
// carry the triggered barrier as baseline2, so ratio2 compares them with it directly.
//
// Three Portals clients share the process's one endpoint: the UPC runtime (logical non-matching
// NI), GASNet (logical matching NI, portal indexes 40-44) and the triggered barrier (a physical
// matching NI). gasnet_init lengthens the engine's wait spin (PORTICO_WAIT_SPIN_US) to 200 µs
// when the job's processes fit on the machine's cores; the setting is the process's, so the test
// sets the engine's default back after it, and all three barriers wait alike. GASNet has no
// finalize: it stays up until the process ends, when its exit hook tells the other nodes.
#define GASNET_SEQ
#include <gasnet.h>

#include <portico_ext.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "engine/engine_settings.hpp"
#include "job.hpp"
#include "report.hpp"
#include "timing.hpp"
#include "triggered_barrier.hpp"
#include "upc_session.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

// Where the measuring loops are, for the watchdog.
struct Progress {
    std::atomic<const char *> phase{"start-up"};
    std::atomic<uint64_t> round{0};
    std::string describe() const {
        return std::string("in ") + phase.load(std::memory_order_relaxed) + ", barrier " +
               std::to_string(round.load(std::memory_order_relaxed));
    }
};

// µs per barrier of `iters` barriers made by `once`.
template <class Once>
double time_barriers(uint64_t iters, Progress &where, const char *phase, Watchdog &dog, Once once) {
    where.phase.store(phase, std::memory_order_relaxed);
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < iters; ++i) {
        once();
        where.round.store(i, std::memory_order_relaxed);
        dog.beat();
    }
    return static_cast<double>(now_ns() - t0) / 1000.0 / static_cast<double>(iters ? iters : 1);
}

void start_gasnet() {
    if (gasnet_init(nullptr, nullptr) != GASNET_OK) throw Error("gasnet_init failed (see the message above)");
    // No handlers and a one-page segment: only the barrier is used.
    if (gasnet_attach(nullptr, 0, GASNET_PAGESIZE, 0) != GASNET_OK)
        throw Error("gasnet_attach failed (see the message above)");
    // Ignored (PTL_IGNORED) when PORTICO_WAIT_SPIN_US is set: then it holds for all three anyway.
    portico_set_wait_spin_us(static_cast<unsigned>(settings::kWaitSpinUs.get()));
}

void gasnet_barrier() {
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    if (gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS) != GASNET_OK) throw Error("gasnet_barrier_wait failed");
}

void run_upc_barrier_lat(Context &ctx) {
    Job &job = ctx.job;
    // As triggered_barrier: short mode stays short when the spinning baseline collapses (more
    // processes than cores).
    const uint64_t iters = ctx.opt.iters ? ctx.opt.iters : ctx.opt.short_mode ? 100 : 5000;
    const int reps = ctx.opt.reps ? ctx.opt.reps : ctx.opt.short_mode ? 3 : 7;
    const uint64_t warmup = std::max<uint64_t>(50, iters / 10);

    UpcSession upc(job); // before any Portals object of the benchmark's (upc_session.hpp)
    start_gasnet();
    if (static_cast<int>(gasnet_nodes()) != job.size() || static_cast<int>(gasnet_mynode()) != job.rank())
        throw Error("GASNet numbers this process node " + std::to_string(gasnet_mynode()) + " of " +
                    std::to_string(gasnet_nodes()));
    TriggeredBarrier tb(job);
    ShmBarrier shm(job);
    Progress where;
    Watchdog dog(job, kWatchdogS, [&where] { return where.describe(); });
    job.barrier();
    ctx.report.begin("upc_barrier_lat: UPC barrier (__upc_barrier, anonymous), " + std::to_string(job.size()) +
                         " processes, next to Portico's triggered barrier and GASNet's barrier, transport " +
                         ctx.transport,
                     std::to_string(iters) + " barriers x " + std::to_string(reps) +
                         " repetitions of each; baseline: raw shared-memory counter barrier; all four interleaved",
                     "triggered barrier");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    std::vector<double> base, upc_v, trig_v, gas_v;
    for (int r = -1; r < reps; ++r) { // r = -1: warm-up (shorter)
        const uint64_t n = r < 0 ? warmup : iters;
        dog.peer_phase(); // the raw barrier may sleep for a slow peer
        where.phase.store("the raw shared-memory barrier", std::memory_order_relaxed);
        const double b = shm.run(n);
        dog.portals_phase();
        const double t = tb.run(n, dog);
        const double u = time_barriers(n, where, "the UPC barrier", dog, [] { __upc_barrier(INT_MIN); });
        const double g = time_barriers(n, where, "GASNet's barrier", dog, gasnet_barrier);
        if (r < 0) continue;
        base.push_back(b);
        trig_v.push_back(t);
        upc_v.push_back(u);
        gas_v.push_back(g);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "upc_barrier_lat rep %d: raw %.3f us, triggered %.3f, UPC %.3f, GASNet %.3f\n", r, b,
                         t, u, g);
    }
    const Stats trig = Stats::of(trig_v);
    auto line = [&](const char *variant, const std::vector<double> &v, bool against_triggered) {
        Result res = Result::of("upc_barrier_lat", job.size(), 0, v, base, "shm_counter_barrier", reps, iters, warmup);
        res.variant = variant;
        if (against_triggered) {
            res.set_baseline2(trig, "portico_triggered_barrier");
        }
        ctx.report.result(res);
    };
    line("upc", upc_v, true);
    line("triggered", trig_v, false);
    line("gasnet", gas_v, true);
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(upc_barrier_lat,
                   "UPC barrier next to Portico's triggered barrier and GASNet's, any number of processes >= 2", 0,
                   run_upc_barrier_lat, 2);

} // namespace portico::bench
