// SPDX-License-Identifier: BSD-3-Clause
// upc_bw: bandwidth of upc_memget and upc_memput between threads 0 and 1, against Portals put_bw
// measured in the same run.
//
// Thread 0 moves `size` bytes from (memget) or to (memput) thread 1's block of a upc_all_alloc
// array, one call after the other, always at the start of the block, while thread 1 waits in a
// job barrier (its engine serves what comes through Portals); MB/s = 10^6 bytes/s over the calls.
// memput ends with upc_fence, so that a put still in flight is counted (puts above 1 KiB are
// complete on return anyway). The data is checked after each repetition (a stamp in the first
// and last 8 bytes, as put_bw).
//
// Baselines, interleaved repetition by repetition:
//   - baseline: Portals put_bw (bw.hpp: windowed PtlPut with ack from rank 0 to an idle rank 1,
//     the same sizes and number of messages); the goal is >= 80% of it;
//   - baseline2, physical: memcpy of 64 MiB (out of cache) on shared memory; over TCP the raw
//     TCP stream (tcp_baseline.hpp), as put_bw.
// The path (JSON variant "memget/<path>", "memput/<path>") is the one the runtime chose:
// "node_local" (a memcpy through this process's mapping of thread 1's segment) or, with
// UPC_NODE_LOCAL_MEM=0, "portals" (PtlGet and PtlPut). On one machine PORTICO_TRANSPORT=tcp
// carries UPC's data only with UPC_NODE_LOCAL_MEM=0; the table says so when it does not.
//
// Like put_bw, every transfer uses the same bytes: on the node-local path they stay in the
// caches as far as they fit (a 64 KiB memget is then a copy within thread 0's cache).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "bw.hpp"
#include "job.hpp"
#include "report.hpp"
#include "throughput.hpp"
#include "timing.hpp"
#include "upc_session.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

class UpcTransfers {
public:
    UpcTransfers(int rank, size_t max_size) : rank_(rank), local_(rank == 0 ? max_size : 0) {
        const upc_shared_ptr_t all = upc_all_alloc(static_cast<size_t>(THREADS), max_size);
        if (upc_pts_is_null(all))
            throw Error("upc_all_alloc of " + std::to_string(max_size) +
                        " bytes per thread failed (UPC_SHARED_HEAP_SIZE too small?)");
        remote_ = UpcSession::block_of(all, 1, max_size);
        if (rank_ == 1) own_ = static_cast<unsigned char *>(UpcSession::local(remote_));
    }

    // Before a repetition (then a barrier): the source gets the stamp, the destination loses it.
    void prepare(bool get, size_t size, uint64_t v) {
        unsigned char *src = get ? own_ : local_.data();
        unsigned char *dst = get ? local_.data() : own_;
        if (src) write_stamp(src, size, v);
        if (dst) write_stamp(dst, size, 0);
    }
    // After it (and a barrier): the destination must hold the stamp.
    void check(bool get, size_t size, uint64_t v) const {
        const unsigned char *dst = get ? local_.data() : own_;
        if (dst) check_stamp(dst, size, v, get ? "upc_memget" : "upc_memput");
    }

    // Thread 0: `calls` transfers of `size` bytes; returns MB/s. Thread 1: 0 at once.
    double run(bool get, size_t size, uint64_t calls, Watchdog &dog) {
        if (rank_ != 0) return 0;
        get_.store(get, std::memory_order_relaxed);
        size_.store(size, std::memory_order_relaxed);
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < calls; ++i) {
            if (get)
                upc_memget(local_.data(), remote_, size);
            else
                upc_memput(remote_, local_.data(), size);
            done_.store(done_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            dog.beat();
        }
        if (!get) __upc_fence();
        const uint64_t t1 = now_ns();
        return static_cast<double>(size) * static_cast<double>(calls) * 1000.0 / static_cast<double>(t1 - t0);
    }

    std::string describe() const {
        return std::string(get_.load(std::memory_order_relaxed) ? "upc_memget" : "upc_memput") + " of " +
               std::to_string(size_.load(std::memory_order_relaxed)) + " bytes, " +
               std::to_string(done_.load(std::memory_order_relaxed)) + " calls returned so far";
    }

private:
    int rank_;
    std::vector<unsigned char> local_; // thread 0's private buffer
    upc_shared_ptr_t remote_{};        // thread 1's block
    unsigned char *own_ = nullptr;     // thread 1: its block, through its own mapping
    std::atomic<bool> get_{false};     // atomics only for the watchdog thread
    std::atomic<uint64_t> size_{0}, done_{0};
};

void run_upc_bw(Context &ctx) {
    Job &job = ctx.job;
    const BandwidthPlan plan = BandwidthPlan::of(ctx.opt, {65536, 4u << 20}, {65536, 4u << 20});
    const Plan &p = plan.plan;
    const size_t max_size = *std::max_element(plan.sizes.begin(), plan.sizes.end());

    UpcSession upc(job); // before any Portals object of the benchmark's (upc_session.hpp)
    const std::string path = UpcSession::path_to(1);
    UpcTransfers xfer(job.rank(), max_size);
    Bandwidth bw(job, false);
    const bool tcp = ctx.transport == "tcp";
    BandwidthBaseline base(job, ctx.transport, plan);
    std::atomic<bool> in_upc{false};
    Watchdog dog(job, kWatchdogS,
                 [&] { return in_upc.load(std::memory_order_relaxed) ? xfer.describe() : bw.describe(); });
    job.barrier();

    begin_report(
        ctx,
        "upc_bw: bandwidth of upc_memget and upc_memput from thread 0 (thread 1 idle), path " + path + ", transport " +
            ctx.transport,
        "per repetition at most " + std::to_string(p.iters) + " calls or " + std::to_string(plan.bytes >> 20) +
            " MiB; " + std::to_string(p.reps) +
            " repetitions; MB/s = 10^6 bytes/s; baseline: Portals put_bw (windowed PtlPut with ack, "
            "same sizes and counts; goal: UPC >= 0.8 of it); baseline2: " +
            (tcp ? "raw TCP stream (" + base.stream_kind() + ")" : std::string("memcpy of 64 MiB (out of cache)")) +
            "; all interleaved",
        tcp ? "raw TCP stream" : "memcpy 64 MiB");
    if (tcp && path == "node_local")
        ctx.report.note("UPC's transfers do not use TCP: node-local memory maps thread 1's segment "
                        "(UPC_NODE_LOCAL_MEM=0 sends them through Portals)");

    uint64_t stamp = 0;
    sweep_sizes(
        plan,
        [&](size_t size, const BwCounts &c, int rep) -> std::vector<double> {
            const uint64_t n = c.count(rep);
            dog.peer_phase();
            const double b2 = base.stream_or_out_of_cache(rep);
            const double pb = bw.measure(job, dog, size, n, c.window, ++stamp);
            double ops[2] = {0, 0}; // memget, memput
            for (int op = 0; op < 2; ++op) {
                const bool get = op == 0;
                xfer.prepare(get, size, ++stamp);
                job.barrier();
                dog.portals_phase();
                in_upc.store(true, std::memory_order_relaxed);
                ops[op] = xfer.run(get, size, n, dog);
                in_upc.store(false, std::memory_order_relaxed);
                dog.peer_phase();
                job.barrier();
                xfer.check(get, size, stamp);
            }
            if (rep >= 0 && ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr,
                             "upc_bw %s size %zu rep %d: %llu calls: memget %.1f MB/s, memput %.1f, Portals put_bw "
                             "%.1f (windows of %llu), baseline2 %.1f\n",
                             path.c_str(), size, rep, static_cast<unsigned long long>(n), ops[0], ops[1], pb,
                             static_cast<unsigned long long>(c.window), b2);
            return {ops[0], ops[1], pb, b2};
        },
        [&](size_t size, const BwCounts &c, const Series &series) {
            for (int op = 0; op < 2; ++op) {
                Result res = bandwidth_result("upc_bw", job.size(), size, series[op == 0 ? 0 : 1], series[2],
                                              "portals_put_bw", p.reps, c.msgs, c.warm);
                res.variant = std::string(op == 0 ? "memget/" : "memput/") + path;
                res.set_baseline2(series[3], base.stream_or_out_of_cache_kind());
                ctx.report.result(res);
            }
        });
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(upc_bw,
                   "upc_memget and upc_memput bandwidth between 2 threads against Portals put_bw, 64 KiB and 4 MiB; "
                   "UPC_NODE_LOCAL_MEM=0: through Portals",
                   2, run_upc_bw);

} // namespace portico::bench
