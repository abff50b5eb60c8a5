// SPDX-License-Identifier: BSD-3-Clause
// psm2_lat: one-way latency of a PSM2 MQ message (Portico's libpsm2, psm2_session.hpp) between
// two processes, by ping-pong, sizes 8 B .. 4 MiB.
//
// Round i: rank 0 posts the receive of the answer (psm2_mq_irecv), sends `size` bytes
// (psm2_mq_send, blocking) and waits for the answer (psm2_mq_wait); rank 1 waits for the message
// on a receive it posted beforehand, posts the next round's receive and sends the same number of
// bytes back. Both receives are thus posted before their message comes (the expected path, as
// in an MPI ping-pong whose receives are ready). Every message carries the round number in its
// first and last 8 bytes and every status is checked. One-way latency = round trip / 2. The
// JSON variant names the protocol the size took: "eager" (the data travels with the message) or
// "rendezvous" (above PSM2_MQ_RNDV_SHM_SZ on shared memory, PSM2_MQ_RNDV_HFI_SZ over the
// network: the receiver fetches the data).
//
// Baselines, interleaved with the PSM2 repetitions (baseline, Portals, PSM2, baseline, ...):
//   - baseline: the physical one of put_lat (latency_baseline.hpp): the raw shared-memory flag
//     ping-pong, or the raw TCP ping-pong when the transport is TCP;
//   - baseline2 (sizes up to 4 KiB, put_pingpong.hpp's limit): Portico's own PtlPut with ack,
//     the put_lat ping-pong of the same size in the same processes ("portals_put_lat"), which is
//     what libpsm2 turns a message into.
// Large messages make fewer round trips per repetition (at most 256 MiB each way, 16 MiB with
// --short, and at least 50 round trips, 20 with --short).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "bw.hpp"
#include "job.hpp"
#include "latency_baseline.hpp"
#include "psm2_session.hpp"
#include "put_pingpong.hpp"
#include "report.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

class Psm2PingPong {
public:
    Psm2PingPong(Psm2Session &s, int rank, size_t max_size)
        : s_(s), rank_(rank), send_(rank <= 1 ? max_size : 0), recv_(rank <= 1 ? max_size : 0) {}

    // `rounds` round trips of `size`-byte messages; rank 0 returns the one-way latency (µs),
    // the others 0.
    double run(size_t size, uint64_t rounds, Watchdog &dog) {
        if (rank_ > 1 || rounds == 0) return 0;
        if (size < sizeof(uint64_t) || size > send_.size()) throw Error("psm2_lat: message size out of range");
        size_.store(size, std::memory_order_relaxed);
        const auto len = static_cast<uint32_t>(size);
        psm2_mq_t mq = s_.mq();
        psm2_epaddr_t peer = s_.peer(rank_ == 0 ? 1 : 0);
        const uint64_t t0 = now_ns();
        if (rank_ == 0) {
            for (uint64_t i = 0; i < rounds; ++i) {
                const uint64_t seq = next();
                psm2_mq_req_t req = psm2_post_recv(mq, kPsm2TagPong, recv_.data(), len);
                write_stamp(send_.data(), size, seq);
                Psm2Session::check(psm2_mq_send(mq, peer, 0, kPsm2TagPing, send_.data(), len), "psm2_mq_send");
                psm2_wait_recv(&req, len, "psm2_lat (answer)");
                check_stamp(recv_.data(), size, seq, "psm2_lat answer");
                dog.beat();
            }
        } else {
            psm2_mq_req_t req = psm2_post_recv(mq, kPsm2TagPing, recv_.data(), len);
            for (uint64_t i = 0; i < rounds; ++i) {
                const uint64_t seq = next();
                psm2_wait_recv(&req, len, "psm2_lat");
                check_stamp(recv_.data(), size, seq, "psm2_lat message");
                if (i + 1 < rounds) req = psm2_post_recv(mq, kPsm2TagPing, recv_.data(), len);
                write_stamp(send_.data(), size, seq);
                Psm2Session::check(psm2_mq_send(mq, peer, 0, kPsm2TagPong, send_.data(), len), "psm2_mq_send");
                dog.beat();
            }
        }
        const uint64_t t1 = now_ns();
        return rank_ == 0 ? static_cast<double>(t1 - t0) / 1000.0 / (2.0 * static_cast<double>(rounds)) : 0;
    }

    std::string describe() const {
        return "PSM2 ping-pong of " + std::to_string(size_.load(std::memory_order_relaxed)) + "-byte messages, round " +
               std::to_string(round_.load(std::memory_order_relaxed));
    }

private:
    uint64_t next() {
        const uint64_t v = round_.load(std::memory_order_relaxed) + 1;
        round_.store(v, std::memory_order_relaxed);
        return v;
    }

    Psm2Session &s_;
    int rank_;
    std::vector<unsigned char> send_, recv_;
    std::atomic<uint64_t> round_{0}, size_{0}; // atomics only for the watchdog thread
};

enum Phase : int { kBaseline, kPut, kPsm2 };

void run_psm2_lat(Context &ctx) {
    Job &job = ctx.job;
    const std::vector<size_t> sizes = sizes_of(ctx.opt, {8, 64, 512, 4096, 16384, 65536, 262144, 1u << 20, 4u << 20},
                                               {8, 65536, 4u << 20}, 8, Bandwidth::kMaxSize);
    const size_t max_size = *std::max_element(sizes.begin(), sizes.end());
    const Plan p = Plan::of(ctx.opt, 20000, 1000);
    const uint64_t budget = ctx.opt.short_mode ? 16ull << 20 : 256ull << 20; // bytes each way per repetition
    const uint64_t min_rounds = ctx.opt.short_mode ? 20 : 50;

    Psm2Session psm(job); // before the benchmark's Portals objects (psm2_session.hpp)
    const std::string transport = psm.shares_memory(job.rank() == 0 ? 1 : 0) ? "shared memory" : "the network path";
    Psm2PingPong pp(psm, job.rank(), max_size);
    PutRing put(job);
    auto base = make_latency_baseline(job, ctx.transport);
    std::atomic<int> phase{kBaseline};
    Watchdog dog(job, kWatchdogS, [&] {
        switch (phase.load(std::memory_order_relaxed)) {
        case kPut: return put.describe();
        case kPsm2: return pp.describe();
        default: return std::string("waiting for the peer in the baseline ping-pong");
        }
    });
    job.barrier();

    ctx.report.begin(
        "psm2_lat: one-way latency of a PSM2 MQ message (psm2_mq_send, receive pre-posted with "
        "psm2_mq_irecv + psm2_mq_wait), ping-pong between 2 processes, libpsm2 reaches the peer over " +
            transport + ", transport " + ctx.transport,
        "per size at most " + std::to_string(p.iters) + " round trips (at most " + std::to_string(budget >> 20) +
            " MiB each way) x " + std::to_string(p.reps) +
            " repetitions after a tenth as many warm-up ones; medians [min .. max]; baseline: " + base->description() +
            "; baseline2: Portals PtlPut with ack, put_lat's ping-pong (sizes <= 4096); all interleaved; "
            "variant: the PSM2 protocol (eager below the rendezvous threshold of " +
            std::to_string(psm.eager_limit(job.rank() == 0 ? 1 : 0)) + " bytes)",
        "Portals put_lat [min .. max]");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    for (size_t size : sizes) {
        const uint64_t rounds = std::min<uint64_t>(p.iters, std::max<uint64_t>(min_rounds, budget / size));
        const uint64_t warm = std::max<uint64_t>(rounds / 10, std::min<uint64_t>(rounds, 100));
        const bool with_put = size <= PutRing::kMaxSize;
        std::vector<double> value, baseline, portals;
        for (int r = -1; r < p.reps; ++r) { // r = -1: warm-up
            phase.store(kBaseline, std::memory_order_relaxed);
            dog.peer_phase();
            const double b = base->run(r < 0 ? p.warmup : p.iters);
            dog.portals_phase();
            double pv = 0;
            if (with_put) {
                phase.store(kPut, std::memory_order_relaxed);
                pv = put.run(size, r < 0 ? p.warmup : p.iters, dog);
            }
            phase.store(kPsm2, std::memory_order_relaxed);
            const uint64_t t0 = now_ns();
            const double v = pp.run(size, r < 0 ? warm : rounds, dog);
            if (r < 0) continue;
            value.push_back(v);
            baseline.push_back(b);
            portals.push_back(pv);
            if (ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr,
                             "psm2_lat size %zu rep %d: baseline %.4f us, put %.4f us, psm2 %.4f us (%.1f ms)\n", size,
                             r, b, pv, v, static_cast<double>(now_ns() - t0) / 1e6);
        }
        Result res = Result::of("psm2_lat", job.size(), size, value, baseline, base->kind(), p.reps, rounds, warm);
        res.variant = psm.protocol(job.rank() == 0 ? 1 : 0, size);
        if (with_put) {
            res.set_baseline2(portals, "portals_put_lat");
        }
        ctx.report.result(res);
    }
    job.barrier(); // nobody closes its endpoint while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(psm2_lat,
                   "one-way latency of PSM2 MQ messages (ping-pong), sizes 8 B..4 MiB, against Portals put_lat", 2,
                   run_psm2_lat);

} // namespace portico::bench
