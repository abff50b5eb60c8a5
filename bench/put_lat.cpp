// SPDX-License-Identifier: BSD-3-Clause
// put_lat: one-way latency of PtlPut (PTL_ACK_REQ), measured by a ping-pong between two processes
// (put_pingpong.hpp: a ring of two). One-way latency is the round trip / 2.
//
// The physical baseline (latency_baseline.hpp: the shared-memory flag ping-pong, or the raw TCP
// ping-pong when the transport is TCP) runs between the same two processes, interleaved with the
// Portals measurement: baseline repetition, Portals repetition, baseline repetition, ...
#include <memory>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "latency_baseline.hpp"
#include "put_pingpong.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

void run_put_lat(Context &ctx) {
    Job &job = ctx.job;
    const std::vector<size_t> sizes = sizes_of(ctx.opt, {8, 16, 64, 256, 1024, 4096}, {8}, 8, PutRing::kMaxSize);
    const Plan p = Plan::of(ctx.opt, 20000, 1000);

    PutRing pp(job);
    auto base = make_latency_baseline(job, ctx.transport);
    Watchdog dog(job, kWatchdogS, [&pp] { return pp.describe(); });
    job.barrier();

    measure_latency(
        ctx, "put_lat", "one-way latency of PtlPut (PTL_ACK_REQ), ping-pong between 2 processes, physical matching NIs",
        *base, dog, sizes, p, [&pp](size_t size, uint64_t rounds, Watchdog &d) { return pp.run(size, rounds, d); },
        [&pp] { pp.set_phase("waiting for the peer in the baseline ping-pong"); });
    job.barrier(); // nobody closes its NI while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(put_lat, "one-way latency of PtlPut with ack (ping-pong), sizes 8..4096", 2, run_put_lat);

} // namespace portico::bench
