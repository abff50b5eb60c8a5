// SPDX-License-Identifier: BSD-3-Clause
// put_rate, get_rate, atomic_rate: message rate of 8-byte operations from rank 0 to rank 1,
// windowed.
//
// Rank 1 exposes an 8-byte buffer with a persistent ME (counting on a CT, no events) and stays
// idle (in a PMI barrier) while its engine receives. Rank 0 sends windows of `window` operations
// and waits (PtlCTWait) for the window to complete:
// - put_rate: window-1 PtlPuts with PTL_NO_ACK_REQ from an MD without EQ or CT, then one with
//   PTL_ACK_REQ from an MD whose CT counts ACKs. Portico applies the messages of one
//   initiator-target pair in order, so the ack of the last put means the whole window arrived.
// - atomic_rate: the same with PtlAtomic(PTL_SUM, PTL_UINT64_T); rank 1's sum is checked.
// - get_rate: window PtlGets into an MD whose CT counts REPLYs; the window ends when all came.
// Rate = operations / time, in millions of operations per second; rank 1's counter is checked
// against the number of operations at the end.
//
// Baseline, interleaved: the raw shared-memory SPSC ring (shm_ring.hpp) with 8-byte messages and
// the same window; over TCP, a raw TCP stream of 8-byte records in the same windows, one write per
// window (tcp_baseline.hpp: TcpRecordStream). The plan, the baseline and the loop are the rate
// tests' driver's (throughput.hpp).
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "rate.hpp"
#include "report.hpp"
#include "throughput.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

void run_rate(Context &ctx, RateOp op) {
    Job &job = ctx.job;
    const std::string name = std::string(op_name(op)) + "_rate";
    const RatePlan plan = RatePlan::of(ctx.opt, kRateWindow);
    const Plan &p = plan.plan;

    Rate rate(job, op);
    RateBaseline base(job, ctx.transport, plan);
    Watchdog dog(job, kWatchdogS, [&rate] { return rate.describe(); });
    job.barrier();
    const std::string what = op == RateOp::Put ? "8-byte PtlPuts without ack (the last of each window acknowledged)"
                             : op == RateOp::Atomic ? "8-byte PtlAtomic(SUM, UINT64) without ack (the last of each "
                                                      "window acknowledged)"
                                                    : "8-byte PtlGets (the window ends when every REPLY came)";
    begin_report(ctx,
                 name + ": rate of " + what + " from rank 0 to rank 1, windows of " + std::to_string(kRateWindow) +
                     ", target application idle, transport " + ctx.transport,
                 std::to_string(p.iters) + " operations x " + std::to_string(p.reps) + " repetitions after " +
                     std::to_string(plan.warmup) +
                     " warm-up ones; Mmsg/s = 10^6 operations/s; baseline: " + base.description() + ", interleaved");

    const Series series = repeat_interleaved(p.reps, [&](int rep) -> std::vector<double> {
        dog.peer_phase();
        const double b = base.run(rep);
        const double v = rate.measure(job, dog, plan.count(rep));
        if (rep >= 0 && ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "%s rep %d: %s %.3f Mmsg/s, %.3f Mmsg/s\n", name.c_str(), rep, base.kind().c_str(), b,
                         v);
        return {v, b};
    });
    ctx.report.result(rate_result(name, job.size(), series[0], series[1], base.kind(), p.reps, p.iters, plan.warmup));
    rate.verify(job);
    job.barrier();
}

void run_put_rate(Context &ctx) { run_rate(ctx, RateOp::Put); }
void run_get_rate(Context &ctx) { run_rate(ctx, RateOp::Get); }
void run_atomic_rate(Context &ctx) { run_rate(ctx, RateOp::Atomic); }

} // namespace

PORTICO_BENCH_TEST(put_rate, "message rate of 8-byte PtlPuts without ack, windowed", 2, run_put_rate);
PORTICO_BENCH_TEST(get_rate, "message rate of 8-byte PtlGets, windowed", 2, run_get_rate);
PORTICO_BENCH_TEST(atomic_rate, "message rate of 8-byte PtlAtomic(SUM) without ack, windowed", 2, run_atomic_rate);

} // namespace portico::bench
