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
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "psm2_session.hpp"
#include "rate.hpp"
#include "report.hpp"
#include "shm_ring.hpp"
#include "tcp_baseline.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

constexpr uint64_t kWindow = Psm2Stream::kWindow;

void run_psm2_rate(Context &ctx) {
    Job &job = ctx.job;
    Plan p = Plan::of(ctx.opt, 200000, 20000);
    p.iters = (p.iters + kWindow - 1) / kWindow * kWindow;
    const uint64_t warmup = std::max<uint64_t>(kWindow, p.iters / 10 / kWindow * kWindow);
    const uint64_t ring_msgs = std::max<uint64_t>(p.iters, 1u << 20);
    const bool tcp = ctx.transport == "tcp";

    Psm2Session psm(job); // before the benchmark's Portals objects (psm2_session.hpp)
    const int peer = job.rank() == 0 ? 1 : 0;
    Psm2Stream stream(psm, job.rank(), 8);
    Rate put(job, RateOp::Put); // put_rate's loop, in the same run
    std::unique_ptr<ShmRing> ring;
    std::unique_ptr<TcpRecordStream> records;
    if (tcp)
        records = std::make_unique<TcpRecordStream>(job);
    else
        ring = std::make_unique<ShmRing>(job);
    const uint64_t base_msgs = tcp ? p.iters : ring_msgs;
    const std::string base_kind = tcp ? records->kind() : "shm_spsc_ring";
    Watchdog dog(job, kWatchdogS, [&] { return stream.running() ? stream.describe() : put.describe(); });
    job.barrier();
    ctx.report.begin(
        "psm2_rate: rate of 8-byte PSM2 MQ messages (" + psm.protocol(peer, 8) +
            ") from rank 0 to rank 1, psm2_mq_isend in windows of " + std::to_string(kWindow) +
            ", receives pre-posted, each window answered; libpsm2 reaches the peer over " +
            (psm.shares_memory(peer) ? "shared memory" : "the network path") + ", transport " + ctx.transport,
        std::to_string(p.iters) + " messages x " + std::to_string(p.reps) + " repetitions after " +
            std::to_string(warmup) + " warm-up ones; Mmsg/s = 10^6 messages/s; baseline: " +
            (tcp ? std::string("raw TCP stream of 8-byte records, one write per window, ")
                 : std::string("raw shared-memory SPSC ring, 8-byte messages, ")) +
            "same window, " + std::to_string(base_msgs) +
            " messages per repetition; baseline2: Portals put_rate (8-byte PtlPuts without ack, the last of each "
            "window acknowledged, target idle); all interleaved",
        "Portals put_rate [min .. max]");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    std::vector<double> value, baseline, portals;
    uint64_t stamp = 0;
    for (int r = -1; r < p.reps; ++r) {
        dog.peer_phase();
        const uint64_t n = r < 0 ? std::max<uint64_t>(kWindow, base_msgs / 10 / kWindow * kWindow) : base_msgs;
        const double b = tcp ? records->run(n, kWindow) : ring->run(n, kWindow);
        job.barrier();
        dog.portals_phase();
        const double pr = put.run(r < 0 ? warmup : p.iters, dog);
        dog.peer_phase();
        job.barrier();
        const double v = stream.measure(job, dog, 8, r < 0 ? warmup : p.iters, ++stamp);
        if (r < 0) continue;
        value.push_back(v);
        baseline.push_back(b);
        portals.push_back(pr);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "psm2_rate rep %d: %s %.3f Mmsg/s, Portals put_rate %.3f, psm2 %.3f\n", r,
                         base_kind.c_str(), b, pr, v);
    }
    Result res = Result::of("psm2_rate", job.size(), 8, value, baseline, base_kind, p.reps, p.iters, warmup);
    res.variant = psm.protocol(peer, 8);
    res.unit = "Mmsg/s";
    res.better = "higher";
    res.set_baseline2(portals, "portals_put_rate");
    ctx.report.result(res);

    const auto counts = job.allgather(std::to_string(put.sent()));
    if (job.rank() == 1) put.check_received(std::stoull(counts[0]));
    job.barrier(); // nobody closes its endpoint while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(psm2_rate, "message rate of 8-byte PSM2 MQ messages, windows of 64, against Portals put_rate", 2,
                   run_psm2_rate);

} // namespace portico::bench
