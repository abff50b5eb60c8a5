// SPDX-License-Identifier: BSD-3-Clause
// put_bw and get_bw: windowed bandwidth of PtlPut (PTL_ACK_REQ) and PtlGet from rank 0 to/from
// rank 1, sizes 8 B .. 16 MiB.
//
// Rank 1 exposes a 16 MiB buffer with a persistent ME (PTL_ME_OP_PUT | PTL_ME_OP_GET, counting on
// a CT, no events) and its application stays idle (in a PMI barrier) while its engine serves; every
// message goes to offset 0. Rank 0 has one MD over a 16 MiB buffer with a CT counting ACKs and
// REPLYs (no events). A repetition is a number of windows: rank 0 starts `window` operations, then
// waits (PtlCTWait) until all of them are acknowledged (put: the data has landed; get: it is
// here), and so on. Bandwidth = bytes / time, MB/s (10^6 bytes/s). The data is checked after every
// repetition (a stamp in the first and last 8 bytes of the message) and rank 1's count of
// operations at the end.
//
// Baselines, interleaved with the repetitions, all on rank 0 while rank 1 waits: `baseline` is
// memcpy of the same size between two buffers that stay in cache as far as they fit (the same bytes
// again and again); `baseline2` is memcpy of a 64 MiB buffer (out of cache). When the transport
// is TCP, `baseline` is instead a raw TCP stream between ranks 0 and 1 (tcp_baseline.hpp). The
// plan, the baselines and the loop are the bandwidth tests' driver's (throughput.hpp).
#include <cstdio>
#include <string>
#include <vector>

#include <portico_ext.h>

#include "bench.hpp"
#include "bw.hpp"
#include "job.hpp"
#include "report.hpp"
#include "throughput.hpp"
#include "watchdog.hpp"

namespace portico::bench {

namespace {

constexpr size_t kMaxSize = Bandwidth::kMaxSize;

// The baseline's destination under PORTICO_BENCH_SEGMENT: a segment rank 1 creates for it alone
// (its benchmark buffer must not be written by the baseline: it is the source of the gets),
// mapped at rank 0. Created, mapped and unmapped collectively.
class PeerSegment {
public:
    static constexpr size_t kBytes = kMaxSize;
    PeerSegment(Job &job, bool wanted) : rank_(job.rank()) {
        std::string text;
        if (wanted && rank_ == 1) {
            void *p = nullptr;
            if (portico_segment_create(kBytes, nullptr, &p, &id_) != PTL_OK)
                throw Error("portico_segment_create of " + std::to_string(kBytes) + " bytes failed");
            own_ = p;
            for (uint64_t w : id_.opaque) text += std::to_string(w) + ",";
        }
        const std::vector<std::string> all = job.allgather(text);
        if (rank_ != 0 || all.size() < 2 || all[1].empty()) return;
        size_t at = 0;
        for (uint64_t &w : id_.opaque) {
            const size_t comma = all[1].find(',', at);
            w = std::stoull(all[1].substr(at, comma - at));
            at = comma + 1;
        }
        void *p = nullptr;
        if (portico_segment_attach(&id_, &p) != PTL_OK) throw Error("cannot map rank 1's segment");
        addr = static_cast<unsigned char *>(p);
    }
    ~PeerSegment() {
        if (addr) portico_segment_detach(addr, &id_);
        if (own_) portico_segment_destroy(own_, &id_);
    }
    PeerSegment(const PeerSegment &) = delete;
    PeerSegment &operator=(const PeerSegment &) = delete;

    unsigned char *addr = nullptr; // rank 0: rank 1's segment, mapped here

private:
    int rank_;
    void *own_ = nullptr; // rank 1: the segment it created
    portico_segment_t id_{};
};

void run_bw(Context &ctx, bool get) {
    Job &job = ctx.job;
    const char *name = get ? "get_bw" : "put_bw";
    const BandwidthPlan plan = BandwidthPlan::of(
        ctx.opt, {8, 64, 512, 4096, 16384, 32768, 65536, 262144, 1u << 20, 4u << 20, 16u << 20}, {8, 65536, 4u << 20});
    const Plan &p = plan.plan;

    Bandwidth bw(job, get);
    BandwidthBaseline base(job, ctx.transport, plan);
    // With the buffers in shared segments, the baseline is the copy the goal compares with: a
    // memcpy of the same size from rank 0's buffer into rank 1's segment, mapped at rank 0.
    PeerSegment peer_seg(job, bw.segment() != nullptr && !base.tcp());
    Watchdog dog(job, kWatchdogS, [&bw] { return bw.describe(); });
    job.barrier();

    const std::string base_desc = peer_seg.addr ? "memcpy of the same size from rank 0's segment into rank 1's, "
                                                  "mapped at rank 0 (a cross-process copy into a shared mapping)"
                                                : base.same_size_description();
    begin_report(ctx,
                 std::string(name) + ": bandwidth of " + (get ? "PtlGet" : "PtlPut (PTL_ACK_REQ)") +
                     " from rank 0, windowed, target application idle, transport " + ctx.transport,
                 "per repetition at most " + std::to_string(p.iters) + " operations or " +
                     std::to_string(plan.bytes >> 20) + " MiB; " + std::to_string(p.reps) +
                     " repetitions; MB/s = 10^6 bytes/s; baseline: " + base_desc +
                     "; baseline2: memcpy of 64 MiB (out of cache); both interleaved",
                 "memcpy 64 MiB [min .. max]");

    uint64_t stamp = 0;
    sweep_sizes(
        plan,
        [&](size_t size, const BwCounts &c, int rep) -> std::vector<double> {
            dog.peer_phase();
            const double b = base.same_size(size, c, rep, bw.buffer(), peer_seg.addr);
            const double b2 = base.out_of_cache(rep);
            const double v = bw.measure(job, dog, size, c.count(rep), c.window, ++stamp);
            if (rep >= 0 && ctx.opt.verbose && job.rank() == 0)
                std::fprintf(
                    stderr,
                    "%s size %zu rep %d: %llu ops in windows of %llu: %.1f MB/s, baseline %.1f, memcpy 64 MiB %.1f\n",
                    name, size, rep, static_cast<unsigned long long>(c.count(rep)),
                    static_cast<unsigned long long>(c.window), v, b, b2);
            return {v, b, b2};
        },
        [&](size_t size, const BwCounts &c, const Series &series) {
            Result res = bandwidth_result(name, job.size(), size, series[0], series[1],
                                          peer_seg.addr ? "memcpy_into_peer_segment" : base.same_size_kind(), p.reps,
                                          c.msgs, c.warm);
            res.set_baseline2(series[2], "memcpy_64MiB");
            ctx.report.result(res);
        });
    // Rank 1's counter must have seen every operation rank 0 started.
    const auto counts = job.allgather(std::to_string(bw.started()));
    if (job.rank() == 1) {
        const uint64_t counted = bw.counted(std::stoull(counts[0]));
        if (std::to_string(counted) != counts[0])
            throw Error("rank 1 counted " + std::to_string(counted) + " operations, rank 0 started " + counts[0]);
    }
    job.barrier();
}

void run_put_bw(Context &ctx) { run_bw(ctx, false); }
void run_get_bw(Context &ctx) { run_bw(ctx, true); }

} // namespace

PORTICO_BENCH_TEST(put_bw, "bandwidth of PtlPut with ack, windowed, sizes 8 B..16 MiB", 2, run_put_bw);
PORTICO_BENCH_TEST(get_bw, "bandwidth of PtlGet, windowed, sizes 8 B..16 MiB", 2, run_get_bw);

} // namespace portico::bench
