// SPDX-License-Identifier: BSD-3-Clause
// psm2_bw: streaming bandwidth of PSM2 MQ messages (Portico's libpsm2, psm2_session.hpp) from
// rank 0 to rank 1, sizes 8 B .. 4 MiB.
//
// Psm2Stream (psm2_session.hpp) in windows of 64: rank 1 keeps the window's receives posted
// (psm2_mq_irecv) before rank 0 sends; rank 0 starts 64 psm2_mq_isend, waits for them
// (psm2_mq_wait) and for rank 1's 8-byte answer that all 64 arrived, and so on. MB/s = 10^6
// bytes/s from the first send to the last answer. A repetition moves at most 256 MiB (32 MiB with
// --short) or --iters messages, whole windows; the data is checked after each. The JSON variant
// names the PSM2 protocol of the size ("eager" or "rendezvous", psm2_lat.cpp says which is which).
//
// Baselines, interleaved repetition by repetition:
//   - baseline: put_bw's physical one: memcpy of the same size (in cache where it fits), or over
//     TCP the raw TCP stream (tcp_baseline.hpp);
//   - baseline2: Portico's Portals put_bw of the same size, measured by put_bw's own code in the
//     same processes (bw.hpp: windowed PtlPut with ack, put_bw's window and message count)
//     ("portals_put_bw"); the goal at 4 MiB is PSM2 >= 0.9 of it (ratio2).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "bw.hpp"
#include "job.hpp"
#include "psm2_session.hpp"
#include "report.hpp"
#include "throughput.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

constexpr uint64_t kWindow = Psm2Stream::kWindow;

void run_psm2_bw(Context &ctx) {
    Job &job = ctx.job;
    const BandwidthPlan plan = BandwidthPlan::of(
        ctx.opt, {8, 64, 512, 4096, 16384, 32768, 65536, 262144, 1u << 20, 4u << 20}, {8, 65536, 4u << 20});
    const Plan &p = plan.plan;
    const size_t max_size = *std::max_element(plan.sizes.begin(), plan.sizes.end());

    Psm2Session psm(job); // before the benchmark's Portals objects (psm2_session.hpp)
    const int peer = job.rank() == 0 ? 1 : 0;
    Psm2Stream stream(psm, job.rank(), max_size);
    Bandwidth bw(job, false);
    BandwidthBaseline base(job, ctx.transport, plan);
    Watchdog dog(job, kWatchdogS, [&] { return stream.running() ? stream.describe() : bw.describe(); });
    job.barrier();

    begin_report(ctx,
                 "psm2_bw: bandwidth of PSM2 MQ messages from rank 0 to rank 1 (psm2_mq_isend in windows of " +
                     std::to_string(kWindow) +
                     ", receives pre-posted, each window answered), libpsm2 reaches the peer over " +
                     (psm.shares_memory(peer) ? "shared memory" : "the network path") + ", transport " + ctx.transport,
                 "per repetition at most " + std::to_string(p.iters) + " messages or " +
                     std::to_string(plan.bytes >> 20) + " MiB, whole windows; " + std::to_string(p.reps) +
                     " repetitions; MB/s = 10^6 bytes/s; baseline: " + base.same_size_description() +
                     "; baseline2: Portals put_bw (windowed PtlPut with ack, put_bw's code, window and count; goal "
                     "at 4 MiB: PSM2 >= 0.9 of it); all interleaved; variant: the PSM2 protocol (eager up to " +
                     std::to_string(psm.eager_limit(peer)) + " bytes)",
                 "Portals put_bw [min .. max]");

    // Portals put_bw exactly as put_bw runs it; PSM2 with the same number of messages, whole windows.
    auto psm2_messages = [](uint64_t msgs) { return (msgs + kWindow - 1) / kWindow * kWindow; };
    auto psm2_warm = [](uint64_t pmsgs) { return std::max(kWindow, pmsgs / 8 / kWindow * kWindow); };
    uint64_t stamp = 0;
    sweep_sizes(
        plan,
        [&](size_t size, const BwCounts &c, int rep) -> std::vector<double> {
            const uint64_t pmsgs = psm2_messages(c.msgs);
            dog.peer_phase();
            const double b = base.same_size(size, c, rep, bw.buffer());
            const double pb = bw.measure(job, dog, size, c.count(rep), c.window, ++stamp);
            const uint64_t n = rep < 0 ? psm2_warm(pmsgs) : pmsgs;
            const double v = stream.measure(job, dog, size, n, ++stamp) * static_cast<double>(size);
            if (rep >= 0 && ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr,
                             "psm2_bw size %zu rep %d: psm2 %.1f MB/s (%llu messages), Portals put_bw %.1f (%llu in "
                             "windows of %llu), baseline %.1f\n",
                             size, rep, v, static_cast<unsigned long long>(pmsgs), pb,
                             static_cast<unsigned long long>(c.msgs), static_cast<unsigned long long>(c.window), b);
            return {v, b, pb};
        },
        [&](size_t size, const BwCounts &c, const Series &series) {
            const uint64_t pmsgs = psm2_messages(c.msgs);
            Result res = bandwidth_result("psm2_bw", job.size(), size, series[0], series[1], base.same_size_kind(),
                                          p.reps, pmsgs, psm2_warm(pmsgs));
            res.variant = psm.protocol(peer, size);
            res.set_baseline2(series[2], "portals_put_bw");
            ctx.report.result(res);
        });
    job.barrier(); // nobody closes its endpoint while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(psm2_bw,
                   "bandwidth of PSM2 MQ messages (isend, windows of 64), sizes 8 B..4 MiB, against Portals put_bw", 2,
                   run_psm2_bw);

} // namespace portico::bench
