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
// window (tcp_baseline.hpp: TcpRecordStream).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "rate.hpp"
#include "report.hpp"
#include "shm_ring.hpp"
#include "tcp_baseline.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

void run_rate(Context &ctx, RateOp op) {
    Job &job = ctx.job;
    const std::string name = std::string(op_name(op)) + "_rate";
    Plan p = Plan::of(ctx.opt, 200000, 20000);
    p.iters = (p.iters + kRateWindow - 1) / kRateWindow * kRateWindow;
    const uint64_t warmup = std::max<uint64_t>(kRateWindow, p.iters / 10 / kRateWindow * kRateWindow);
    const uint64_t ring_msgs = std::max<uint64_t>(p.iters, 1u << 20);

    Rate rate(job, op);
    const bool tcp = ctx.transport == "tcp";
    std::unique_ptr<ShmRing> ring;
    std::unique_ptr<TcpRecordStream> stream;
    if (tcp)
        stream = std::make_unique<TcpRecordStream>(job);
    else
        ring = std::make_unique<ShmRing>(job);
    const uint64_t base_msgs = tcp ? p.iters : ring_msgs;
    const std::string base_kind = tcp ? stream->kind() : "shm_spsc_ring";
    Watchdog dog(job, kWatchdogS, [&rate] { return rate.describe(); });
    job.barrier();
    const std::string what = op == RateOp::Put ? "8-byte PtlPuts without ack (the last of each window acknowledged)"
                             : op == RateOp::Atomic ? "8-byte PtlAtomic(SUM, UINT64) without ack (the last of each "
                                                      "window acknowledged)"
                                                    : "8-byte PtlGets (the window ends when every REPLY came)";
    ctx.report.begin(name + ": rate of " + what + " from rank 0 to rank 1, windows of " + std::to_string(kRateWindow) +
                         ", target application idle, transport " + ctx.transport,
                     std::to_string(p.iters) + " operations x " + std::to_string(p.reps) + " repetitions after " +
                         std::to_string(warmup) + " warm-up ones; Mmsg/s = 10^6 operations/s; baseline: " +
                         (tcp ? std::string("raw TCP stream of 8-byte records, one write per window, ")
                              : std::string("raw shared-memory SPSC ring, 8-byte messages, ")) +
                         "same window, " + std::to_string(base_msgs) + " messages per repetition, interleaved");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    std::vector<double> value, baseline;
    for (int r = -1; r < p.reps; ++r) {
        dog.peer_phase();
        const uint64_t n =
            r < 0 ? std::max<uint64_t>(kRateWindow, base_msgs / 10 / kRateWindow * kRateWindow) : base_msgs;
        const double b = tcp ? stream->run(n, kRateWindow) : ring->run(n, kRateWindow);
        job.barrier();
        dog.portals_phase();
        const double v = rate.run(r < 0 ? warmup : p.iters, dog);
        dog.peer_phase();
        job.barrier();
        if (r < 0) continue;
        baseline.push_back(b);
        value.push_back(v);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "%s rep %d: %s %.3f Mmsg/s, %.3f Mmsg/s\n", name.c_str(), r, base_kind.c_str(), b, v);
    }
    Result res = Result::of(name, job.size(), 8, value, baseline, base_kind, p.reps, p.iters, warmup);
    res.unit = "Mmsg/s";
    res.better = "higher";
    ctx.report.result(res);

    const auto counts = job.allgather(std::to_string(rate.sent()));
    if (job.rank() == 1) rate.check_received(std::stoull(counts[0]));
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
