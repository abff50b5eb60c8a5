// SPDX-License-Identifier: BSD-3-Clause
// upc_read_lat: a relaxed 8-byte UPC read (__getdi2) of data another thread has just written, the
// other thread a process of this machine; one-way latency.
//
// Threads 0 and 1 each own one 8-byte word, on a cache line of its own, in their shared segments
// (upc_all_alloc). Round i: thread 0 writes i into its word (a relaxed __putdi2 to its own data)
// and reads thread 1's word with __getdi2 until it shows i; thread 1 reads thread 0's word with
// __getdi2 until it shows i, then writes i into its own. A hop is one thread's store and the
// other's remote reads until the line modified in the writer's cache has come over, so a read
// that has to fetch its data from another core is timed, not one the reader's cache answers;
// one-way = round trip / 2.
//
// Baseline, interleaved: the same ping-pong with raw loads and stores on one cache line per
// direction (latency_baseline.hpp's shared-memory flag ping-pong: a raw cross-core cache-line
// transfer, one way). The goal for the node-local read: at most 2 x the baseline.
//
// The path (JSON variant) is what the runtime chose when it started: "node_local" (the default on
// one machine: __getdi2 is a load through this process's mapping of the peer's segment) or, with
// UPC_NODE_LOCAL_MEM=0, "portals" (a PtlGet, answered by the peer's engine; each poll a round
// trip). On the Portals path over TCP (PORTICO_TRANSPORT=tcp) the baseline is the raw TCP
// ping-pong instead, as for the Portals latencies.
#include <atomic>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "latency_baseline.hpp"
#include "report.hpp"
#include "shm_pingpong.hpp"
#include "timing.hpp"
#include "upc_session.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

class UpcReadPingPong {
public:
    explicit UpcReadPingPong(int rank) : rank_(rank) {
        // Two cache lines per thread: the word, moved up to a line boundary inside the block.
        const upc_shared_ptr_t all = upc_all_alloc(static_cast<size_t>(THREADS), kBlock);
        if (upc_pts_is_null(all))
            throw Error("upc_all_alloc of " + std::to_string(kBlock) + " bytes per thread failed");
        mine_ = UpcSession::aligned(UpcSession::block_of(all, rank_, kBlock), kLine);
        theirs_ = UpcSession::aligned(UpcSession::block_of(all, rank_ == 0 ? 1 : 0, kBlock), kLine);
        __putdi2(mine_, 0);
        __upc_barrier(INT_MIN); // both words are 0 before either thread reads the other's
    }

    // `iters` round trips; thread 0 returns the one-way latency (µs), thread 1 returns 0.
    double run(uint64_t iters, Watchdog &dog) {
        const uint64_t base = seq_;
        seq_ += iters;
        const char *what = "UPC read ping-pong";
        const uint64_t t0 = now_ns();
        for (uint64_t i = base + 1; i <= base + iters; ++i) {
            if (rank_ == 0) {
                __putdi2(mine_, i);
                spin_until([&] { return __getdi2(theirs_) == i; }, what);
            } else {
                spin_until([&] { return __getdi2(theirs_) == i; }, what);
                __putdi2(mine_, i);
            }
            round_.store(i, std::memory_order_relaxed);
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        return rank_ == 0 && iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }

    std::string describe() const {
        return "UPC read ping-pong, thread " + std::to_string(rank_) + " in round " +
               std::to_string(round_.load(std::memory_order_relaxed));
    }

private:
    static constexpr size_t kLine = 64;
    static constexpr size_t kBlock = 2 * kLine;
    int rank_;
    upc_shared_ptr_t mine_{}, theirs_{};
    uint64_t seq_ = 0;
    std::atomic<uint64_t> round_{0}; // atomic only for the watchdog thread
};

void run_upc_read_lat(Context &ctx) {
    Job &job = ctx.job;
    const Plan p = Plan::of(ctx.opt, 20000, 1000);

    UpcSession upc(job); // before any Portals object of the benchmark's (upc_session.hpp)
    const std::string path = UpcSession::path_to(job.rank() == 0 ? 1 : 0);
    UpcReadPingPong pp(job.rank());
    std::unique_ptr<LatencyBaseline> base;
    if (path == "node_local")
        base = std::make_unique<ShmPingPong>(job);
    else
        base = make_latency_baseline(job, ctx.transport);
    Watchdog dog(job, kWatchdogS, [&pp] { return pp.describe(); });
    job.barrier();
    ctx.report.begin("upc_read_lat: relaxed 8-byte UPC read (__getdi2) of data the other thread has just written, "
                     "one-way (ping-pong of UPC reads / 2), path " +
                         path + ", transport " + ctx.transport,
                     std::to_string(p.iters) + " round trips x " + std::to_string(p.reps) + " repetitions after " +
                         std::to_string(p.warmup) +
                         " warm-up ones; medians [min .. max]; baseline: " + base->description() + ", interleaved");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    std::vector<double> value, baseline;
    for (int r = -1; r < p.reps; ++r) { // r = -1: warm-up
        const uint64_t n = r < 0 ? p.warmup : p.iters;
        dog.peer_phase();
        const double b = base->run(n);
        dog.portals_phase();
        const double v = pp.run(n, dog);
        if (r < 0) continue;
        baseline.push_back(b);
        value.push_back(v);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "upc_read_lat %s rep %d: baseline %.4f us, UPC read %.4f us\n", path.c_str(), r, b, v);
    }
    Result res = Result::of("upc_read_lat", job.size(), 8, value, baseline, base->kind(), p.reps, p.iters, p.warmup);
    res.variant = path;
    ctx.report.result(res);
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(upc_read_lat,
                   "relaxed 8-byte UPC read of the other thread's fresh data (__getdi2), one-way; "
                   "UPC_NODE_LOCAL_MEM=0: through Portals",
                   2, run_upc_read_lat);

} // namespace portico::bench
