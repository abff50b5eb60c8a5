// SPDX-License-Identifier: BSD-3-Clause
// psm2_rate: message rate of 8-byte PSM2 MQ messages (Portico's libpsm2, psm2_session.hpp) from
// rank 0 to rank 1, windows of 64.
//
// Psm2Stream (psm2_session.hpp) with 8-byte messages: rank 1 keeps a window of receives posted,
// rank 0 starts 64 psm2_mq_isend, waits for each and for rank 1's answer that the window arrived.
// Rate = messages / time on rank 0, millions of messages per second.
//
// Baselines, interleaved:
//   - baseline: put_rate's physical one: the raw shared-memory SPSC ring with 8-byte messages and
//     the same window (shm_ring.hpp), or over TCP the raw TCP stream of 8-byte records, one write
//     per window (tcp_baseline.hpp: TcpRecordStream);
//   - baseline2: Portico's Portals put_rate in the same processes ("portals_put_rate"): put_rate's
//     loop (rate.cpp), 63 PtlPuts without ack and one with, per window of 64, from rank 0 to an
//     8-byte ME of rank 1 counting on a CT, rank 1's application idle. PSM2's receiver is not idle:
//     a message must meet a posted receive, and each window is answered.
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "psm2_session.hpp"
#include "rate.hpp"
#include "report.hpp"
#include "throughput.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

constexpr uint64_t kWindow = Psm2Stream::kWindow;

void run_psm2_rate(Context &ctx) {
    Job &job = ctx.job;
    const RatePlan plan = RatePlan::of(ctx.opt, kWindow);
    const Plan &p = plan.plan;

    Psm2Session psm(job); // before the benchmark's Portals objects (psm2_session.hpp)
    const int peer = job.rank() == 0 ? 1 : 0;
    Psm2Stream stream(psm, job.rank(), 8);
    Rate put(job, RateOp::Put); // put_rate's loop, in the same run
    RateBaseline base(job, ctx.transport, plan);
    Watchdog dog(job, kWatchdogS, [&] { return stream.running() ? stream.describe() : put.describe(); });
    job.barrier();
    begin_report(ctx,
                 "psm2_rate: rate of 8-byte PSM2 MQ messages (" + psm.protocol(peer, 8) +
                     ") from rank 0 to rank 1, psm2_mq_isend in windows of " + std::to_string(kWindow) +
                     ", receives pre-posted, each window answered; libpsm2 reaches the peer over " +
                     (psm.shares_memory(peer) ? "shared memory" : "the network path") + ", transport " + ctx.transport,
                 std::to_string(p.iters) + " messages x " + std::to_string(p.reps) + " repetitions after " +
                     std::to_string(plan.warmup) +
                     " warm-up ones; Mmsg/s = 10^6 messages/s; baseline: " + base.description() +
                     "; baseline2: Portals put_rate (8-byte PtlPuts without ack, the last of each window "
                     "acknowledged, target idle); all interleaved",
                 "Portals put_rate [min .. max]");

    uint64_t stamp = 0;
    const Series series = repeat_interleaved(p.reps, [&](int rep) -> std::vector<double> {
        dog.peer_phase();
        const double b = base.run(rep);
        const double pr = put.measure(job, dog, plan.count(rep));
        const double v = stream.measure(job, dog, 8, plan.count(rep), ++stamp);
        if (rep >= 0 && ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "psm2_rate rep %d: %s %.3f Mmsg/s, Portals put_rate %.3f, psm2 %.3f\n", rep,
                         base.kind().c_str(), b, pr, v);
        return {v, b, pr};
    });
    Result res = rate_result("psm2_rate", job.size(), series[0], series[1], base.kind(), p.reps, p.iters, plan.warmup);
    res.variant = psm.protocol(peer, 8);
    res.set_baseline2(series[2], "portals_put_rate");
    ctx.report.result(res);

    put.verify(job);
    job.barrier(); // nobody closes its endpoint while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(psm2_rate, "message rate of 8-byte PSM2 MQ messages, windows of 64, against Portals put_rate", 2,
                   run_psm2_rate);

} // namespace portico::bench
