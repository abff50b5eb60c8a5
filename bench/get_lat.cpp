// SPDX-License-Identifier: BSD-3-Clause
// get_lat: latency of PtlGet between two processes: rank 0 gets `size` bytes from rank 1 and waits
// (PtlEQWait) for the REPLY; rank 1's application does nothing meanwhile (its engine answers:
// application bypass). Reported as round trip / 2, so that it compares with the baseline's one-way
// latency (latency_baseline.hpp, interleaved).
//
// Rank 1 exposes a 4 KiB buffer with a persistent ME (PTL_ME_OP_GET, counting gets on a CT, no
// events: the target application is idle); its contents are a pattern that rank 0 checks in
// every reply (first and last 8 bytes), and rank 1's count of gets is checked at the end.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "latency_baseline.hpp"
#include "portals_util.hpp"
#include "report.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

constexpr size_t kMaxSize = 4096;

uint64_t pattern_at(size_t offset) { return 0x9e3779b97f4a7c15ull * (offset + 1); }

class GetPingPong {
public:
    explicit GetPingPong(Job &job) : rank_(job.rank()), src_(kMaxSize), dst_(kMaxSize) {
        for (size_t off = 0; off + 8 <= kMaxSize; off += 8) {
            const uint64_t v = pattern_at(off);
            std::memcpy(src_.data() + off, &v, 8);
        }
        eq_ = ck::alloc_eq(ni_.get(), 1024);
        ct_ = ck::alloc_ct(ni_.get());
        pt_ = ck::alloc_pt(ni_.get(), PTL_EQ_NONE);
        me_ =
            ck::append_me(ni_.get(), pt_.index(),
                          ck::me_desc(src_.data(), src_.size(), PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, 0, 0, ct_.get()));
        md_ = ck::bind_md(ni_.get(), ck::md_desc(dst_.data(), dst_.size(), 0, eq_.get()));
        peer_ = exchange_peers(job, ni_.phys_id(), pt_.index())[rank_ == 0 ? 1 : 0];
    }

    // Rank 0: `iters` gets of `size` bytes; returns round trip / 2 in µs. Rank 1 returns 0 at once.
    double run(size_t size, uint64_t iters, Watchdog &dog) {
        if (rank_ != 0) return 0;
        size_.store(size, std::memory_order_relaxed);
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; ++i) {
            std::memset(dst_.data(), 0, 8);
            std::memset(dst_.data() + size - 8, 0, 8);
            check(PtlGet(md_.get(), 0, size, peer_.id, peer_.pt, 0, 0, nullptr), "PtlGet");
            gets_.store(gets_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            const ptl_event_t ev = ck::expect_event(eq_.get(), PTL_EVENT_REPLY, "get");
            if (ev.mlength != size)
                throw Error("REPLY with mlength " + std::to_string(ev.mlength) + ", expected " + std::to_string(size));
            uint64_t head, tail;
            std::memcpy(&head, dst_.data(), 8);
            std::memcpy(&tail, dst_.data() + size - 8, 8);
            if (head != pattern_at(0) || tail != pattern_at(size - 8))
                throw Error("a get of " + std::to_string(size) + " bytes returned the wrong data");
            replies_.store(replies_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        return iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }

    uint64_t gets() const { return gets_.load(std::memory_order_relaxed); }
    uint64_t served() {
        ptl_ct_event_t c;
        check(PtlCTGet(ct_.get(), &c), "PtlCTGet");
        if (c.failure) throw Error("the get counter reports " + std::to_string(c.failure) + " failures");
        return c.success;
    }
    std::string describe() const {
        return "size " + std::to_string(size_.load(std::memory_order_relaxed)) + ": " + std::to_string(gets()) +
               " gets started, " + std::to_string(replies_.load(std::memory_order_relaxed)) + " REPLY events seen";
    }

private:
    int rank_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    std::vector<unsigned char> src_, dst_;
    ck::Eq eq_;
    ck::Ct ct_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md md_;
    Peer peer_;
    std::atomic<uint64_t> gets_{0}, replies_{0}, size_{0};
};

void run_get_lat(Context &ctx) {
    Job &job = ctx.job;
    const std::vector<size_t> sizes = sizes_of(ctx.opt, {8, 16, 64, 256, 1024, 4096}, {8}, 8, kMaxSize);
    const Plan p = Plan::of(ctx.opt, 20000, 1000);

    GetPingPong gp(job);
    auto base = make_latency_baseline(job, ctx.transport);
    Watchdog dog(job, kWatchdogS, [&gp] { return gp.describe(); });
    job.barrier();
    ctx.report.begin("get_lat: PtlGet round trip / 2 between 2 processes, target application idle, transport " +
                         ctx.transport,
                     std::to_string(p.iters) + " gets x " + std::to_string(p.reps) + " repetitions per size after " +
                         std::to_string(p.warmup) +
                         " warm-up ones; medians [min .. max]; baseline: " + base->description() + ", interleaved");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    for (size_t size : sizes) {
        std::vector<double> value, baseline;
        for (int r = -1; r < p.reps; ++r) { // r = -1: warm-up
            const uint64_t n = r < 0 ? p.warmup : p.iters;
            dog.peer_phase();
            const double b = base->run(n);
            dog.portals_phase();
            const double v = gp.run(size, n, dog); // rank 1 waits in the barrier while its engine answers
            dog.peer_phase();
            job.barrier();
            if (r < 0) continue;
            baseline.push_back(b);
            value.push_back(v);
            if (ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr, "get_lat size %zu rep %d: baseline %.4f us, get %.4f us\n", size, r, b, v);
        }
        ctx.report.result(
            Result::of("get_lat", job.size(), size, value, baseline, base->kind(), p.reps, p.iters, p.warmup));
    }
    // Rank 1's engine must have served every get rank 0 made.
    const auto counts = job.allgather(std::to_string(gp.gets()) + ":" + std::to_string(gp.served()));
    if (job.rank() == 1) {
        const std::string made = counts[0].substr(0, counts[0].find(':'));
        if (std::to_string(gp.served()) != made)
            throw Error("rank 1 served " + std::to_string(gp.served()) + " gets, rank 0 made " + made);
    }
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(get_lat, "PtlGet round trip / 2, target application idle, sizes 8..4096", 2, run_get_lat);

} // namespace portico::bench
