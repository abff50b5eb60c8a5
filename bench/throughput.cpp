// SPDX-License-Identifier: BSD-3-Clause
#include "throughput.hpp"

#include <algorithm>
#include <cstring>

#include "job.hpp"
#include "shm_ring.hpp"
#include "tcp_baseline.hpp"
#include "timing.hpp"

namespace portico::bench {

Series repeat_interleaved(int reps, const std::function<std::vector<double>(int rep)> &once) {
    Series series;
    for (int r = -1; r < reps; ++r) {
        const std::vector<double> values = once(r);
        if (r < 0) continue;
        series.resize(std::max(series.size(), values.size()));
        for (size_t i = 0; i < values.size(); ++i) series[i].push_back(values[i]);
    }
    return series;
}

void begin_report(Context &ctx, const std::string &title, const std::string &details, const std::string &second) {
    ctx.report.begin(title, details, second);
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);
}

namespace {
Result higher_is_better(Result res, const char *unit) {
    res.unit = unit;
    res.better = "higher";
    return res;
}
} // namespace

Result bandwidth_result(std::string test, int procs, uint64_t size, std::vector<double> value,
                        std::vector<double> baseline, std::string baseline_kind, int reps, uint64_t iters,
                        uint64_t warmup) {
    return higher_is_better(Result::of(std::move(test), procs, size, std::move(value), std::move(baseline),
                                       std::move(baseline_kind), reps, iters, warmup),
                            "MB/s");
}

Result rate_result(std::string test, int procs, std::vector<double> value, std::vector<double> baseline,
                   std::string baseline_kind, int reps, uint64_t iters, uint64_t warmup) {
    return higher_is_better(Result::of(std::move(test), procs, 8, std::move(value), std::move(baseline),
                                       std::move(baseline_kind), reps, iters, warmup),
                            "Mmsg/s");
}

// ---- bandwidth --------------------------------------------------------------------------------

namespace {
constexpr size_t kMaxSize = 16u << 20; // the largest message (Bandwidth::kMaxSize)
constexpr size_t kBigCopy = 64u << 20;
} // namespace

BwCounts BwCounts::of(size_t size, uint64_t bytes, uint64_t iters) {
    BwCounts c;
    c.window = std::clamp<uint64_t>((64ull << 20) / size, 2, 64);
    const uint64_t msgs = std::clamp<uint64_t>(bytes / size, c.window, std::max(iters, c.window));
    c.msgs = (msgs + c.window - 1) / c.window * c.window;
    c.warm = std::max(c.window, c.msgs / 8 / c.window * c.window);
    return c;
}

BandwidthPlan BandwidthPlan::of(const Options &o, const std::vector<size_t> &full,
                                const std::vector<size_t> &short_sizes) {
    return {sizes_of(o, full, short_sizes, 8, kMaxSize), Plan::of(o, 20000, 2000),
            o.short_mode ? 32ull << 20 : 256ull << 20, o.short_mode ? 16ull << 20 : 64ull << 20};
}

void sweep_sizes(const BandwidthPlan &plan,
                 const std::function<std::vector<double>(size_t, const BwCounts &, int)> &once,
                 const std::function<void(size_t, const BwCounts &, const Series &)> &done) {
    for (size_t size : plan.sizes) {
        const BwCounts c = plan.counts(size);
        done(size, c, repeat_interleaved(plan.plan.reps, [&](int rep) { return once(size, c, rep); }));
    }
}

// memcpy through a volatile pointer: the compiler cannot drop or merge the copies.
static void *(*volatile g_copy)(void *, const void *, size_t) = std::memcpy;

double memcpy_rate(unsigned char *dst, const unsigned char *src, size_t size, uint64_t copies) {
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < copies; ++i) g_copy(dst, src, size);
    const uint64_t t1 = now_ns();
    return static_cast<double>(size) * static_cast<double>(copies) * 1000.0 / static_cast<double>(t1 - t0);
}

BandwidthBaseline::BandwidthBaseline(Job &job, const std::string &transport, const BandwidthPlan &plan)
    : rank_(job.rank()), stream_bytes_(plan.stream_bytes) {
    if (transport == "tcp") stream_ = std::make_unique<TcpStream>(job);
}

BandwidthBaseline::~BandwidthBaseline() = default;

double BandwidthBaseline::stream() { return stream_->run(stream_bytes_); }

double BandwidthBaseline::same_size(size_t size, const BwCounts &c, int rep, const unsigned char *src,
                                    unsigned char *dst) {
    if (stream_) return stream();
    if (rank_ != 0) return 0;
    if (!dst && copy_dst_.empty()) copy_dst_.assign(kMaxSize, 1);
    const uint64_t copies = std::max<uint64_t>(c.msgs, std::min<uint64_t>(1ull << 21, (16ull << 20) / size));
    return memcpy_rate(dst ? dst : copy_dst_.data(), src, size, rep < 0 ? copies / 8 + 1 : copies);
}

std::string BandwidthBaseline::stream_kind() const { return stream_ ? stream_->kind() : ""; }

std::string BandwidthBaseline::same_size_kind() const { return stream_ ? stream_kind() : "memcpy_same_size"; }

std::string BandwidthBaseline::same_size_description() const {
    if (!stream_) return "memcpy of the same size (in cache as far as it fits)";
    return "raw TCP stream of " + std::to_string(stream_bytes_ >> 20) + " MiB in 1 MiB writes between ranks 0 and 1 (" +
           stream_kind() + ")";
}

double BandwidthBaseline::out_of_cache(int rep) {
    if (rank_ != 0) return 0;
    if (big_src_.empty()) {
        big_src_.assign(kBigCopy, 2);
        big_dst_.assign(kBigCopy, 3);
    }
    return memcpy_rate(big_dst_.data(), big_src_.data(), kBigCopy, rep < 0 ? 1 : 2);
}

double BandwidthBaseline::stream_or_out_of_cache(int rep) { return stream_ ? stream() : out_of_cache(rep); }

std::string BandwidthBaseline::stream_or_out_of_cache_kind() const { return stream_ ? stream_kind() : "memcpy_64MiB"; }

// ---- message rate -----------------------------------------------------------------------------

RatePlan RatePlan::of(const Options &o, uint64_t window) {
    RatePlan r{Plan::of(o, 200000, 20000), window, 0};
    r.plan.iters = (r.plan.iters + window - 1) / window * window;
    r.warmup = std::max<uint64_t>(window, r.plan.iters / 10 / window * window);
    return r;
}

RateBaseline::RateBaseline(Job &job, const std::string &transport, const RatePlan &plan) : window_(plan.window) {
    if (transport == "tcp") {
        records_ = std::make_unique<TcpRecordStream>(job);
        msgs_ = plan.plan.iters;
    } else {
        ring_ = std::make_unique<ShmRing>(job);
        msgs_ = std::max<uint64_t>(plan.plan.iters, 1u << 20);
    }
}

RateBaseline::~RateBaseline() = default;

double RateBaseline::run(int rep) {
    const uint64_t n = rep < 0 ? std::max<uint64_t>(window_, msgs_ / 10 / window_ * window_) : msgs_;
    return records_ ? records_->run(n, window_) : ring_->run(n, window_);
}

std::string RateBaseline::kind() const { return records_ ? records_->kind() : "shm_spsc_ring"; }

std::string RateBaseline::description() const {
    return (records_ ? std::string("raw TCP stream of 8-byte records, one write per window, ")
                     : std::string("raw shared-memory SPSC ring, 8-byte messages, ")) +
           "same window, " + std::to_string(msgs_) + " messages per repetition";
}

} // namespace portico::bench
