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
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "bw.hpp"
#include "job.hpp"
#include "psm2_session.hpp"
#include "report.hpp"
#include "tcp_baseline.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

void run_psm2_bw(Context &ctx) {
    Job &job = ctx.job;
    const bool tcp = ctx.transport == "tcp";
    const std::vector<size_t> sizes =
        sizes_of(ctx.opt, {8, 64, 512, 4096, 16384, 32768, 65536, 262144, 1u << 20, 4u << 20}, {8, 65536, 4u << 20}, 8,
                 Bandwidth::kMaxSize);
    const size_t max_size = *std::max_element(sizes.begin(), sizes.end());
    const Plan p = Plan::of(ctx.opt, 20000, 2000);
    const uint64_t bytes = ctx.opt.short_mode ? 32ull << 20 : 256ull << 20;
    const uint64_t stream_bytes = ctx.opt.short_mode ? 16ull << 20 : 64ull << 20;
    constexpr uint64_t kWindow = Psm2Stream::kWindow;

    Psm2Session psm(job); // before the benchmark's Portals objects (psm2_session.hpp)
    const int peer = job.rank() == 0 ? 1 : 0;
    Psm2Stream stream(psm, job.rank(), max_size);
    Bandwidth bw(job, false);
    std::unique_ptr<TcpStream> raw;
    if (tcp) raw = std::make_unique<TcpStream>(job);
    std::vector<unsigned char> copy_dst;
    if (job.rank() == 0) copy_dst.assign(Bandwidth::kMaxSize, 1);
    Watchdog dog(job, kWatchdogS, [&] { return stream.running() ? stream.describe() : bw.describe(); });
    job.barrier();

    const std::string base_desc = tcp ? "raw TCP stream of " + std::to_string(stream_bytes >> 20) +
                                            " MiB in 1 MiB writes between ranks 0 and 1 (" + raw->kind() + ")"
                                      : "memcpy of the same size (in cache as far as it fits)";
    ctx.report.begin(
        "psm2_bw: bandwidth of PSM2 MQ messages from rank 0 to rank 1 (psm2_mq_isend in windows of " +
            std::to_string(kWindow) + ", receives pre-posted, each window answered), libpsm2 reaches the peer over " +
            (psm.shares_memory(peer) ? "shared memory" : "the network path") + ", transport " + ctx.transport,
        "per repetition at most " + std::to_string(p.iters) + " messages or " + std::to_string(bytes >> 20) +
            " MiB, whole windows; " + std::to_string(p.reps) +
            " repetitions; MB/s = 10^6 bytes/s; baseline: " + base_desc +
            "; baseline2: Portals put_bw (windowed PtlPut with ack, put_bw's code, window and count; goal "
            "at 4 MiB: PSM2 >= 0.9 of it); all interleaved; variant: the PSM2 protocol (eager up to " +
            std::to_string(psm.eager_limit(peer)) + " bytes)",
        "Portals put_bw [min .. max]");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    uint64_t stamp = 0;
    for (size_t size : sizes) {
        // Portals put_bw exactly as put_bw runs it; PSM2 with the same number of messages, whole windows.
        const uint64_t window = BwCounts::window_of(size);
        const uint64_t msgs = BwCounts::messages(size, bytes, p.iters);
        const uint64_t warm = std::max(window, msgs / 8 / window * window);
        const uint64_t pmsgs = (msgs + kWindow - 1) / kWindow * kWindow;
        const uint64_t pwarm = std::max(kWindow, pmsgs / 8 / kWindow * kWindow);
        const uint64_t copies = std::max<uint64_t>(msgs, std::min<uint64_t>(1ull << 21, (16ull << 20) / size));
        std::vector<double> value, baseline, portals;
        for (int r = -1; r < p.reps; ++r) { // r = -1: warm-up (shorter)
            dog.peer_phase();
            double b = 0;
            if (tcp)
                b = raw->run(stream_bytes);
            else if (job.rank() == 0)
                b = memcpy_rate(copy_dst.data(), bw.buffer(), size, r < 0 ? copies / 8 + 1 : copies);

            bw.stamp(size, ++stamp);
            job.barrier();
            dog.portals_phase();
            const double pb = bw.run(size, r < 0 ? warm : msgs, window, dog);
            dog.peer_phase();
            job.barrier();
            bw.check_stamp(size, stamp);

            const double v = stream.measure(job, dog, size, r < 0 ? pwarm : pmsgs, ++stamp) * static_cast<double>(size);
            if (r < 0) continue;
            value.push_back(v);
            baseline.push_back(b);
            portals.push_back(pb);
            if (ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr,
                             "psm2_bw size %zu rep %d: psm2 %.1f MB/s (%llu messages), Portals put_bw %.1f (%llu in "
                             "windows of %llu), baseline %.1f\n",
                             size, r, v, static_cast<unsigned long long>(pmsgs), pb,
                             static_cast<unsigned long long>(msgs), static_cast<unsigned long long>(window), b);
        }
        Result res = Result::of("psm2_bw", job.size(), size, value, baseline, tcp ? raw->kind() : "memcpy_same_size",
                                p.reps, pmsgs, pwarm);
        res.variant = psm.protocol(peer, size);
        res.unit = "MB/s";
        res.better = "higher";
        res.set_baseline2(portals, "portals_put_bw");
        ctx.report.result(res);
    }
    job.barrier(); // nobody closes its endpoint while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(psm2_bw,
                   "bandwidth of PSM2 MQ messages (isend, windows of 64), sizes 8 B..4 MiB, against Portals put_bw", 2,
                   run_psm2_bw);

} // namespace portico::bench
