// SPDX-License-Identifier: BSD-3-Clause
// throughput.hpp: the driver of the bandwidth tests (put_bw and get_bw: bw.cpp, psm2_bw, upc_bw)
// and the rate tests (put_rate, get_rate and atomic_rate: rate.cpp, psm2_rate): their plan (the
// sizes, the messages and windows of a repetition), the physical baseline that the transport
// calls for, and the loop of interleaved repetitions. Each test adds what it measures besides.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "report.hpp"

namespace portico::bench {

class Job;
class ShmRing;
class TcpRecordStream;
class TcpStream;

// The values of a test's counted repetitions, one series per quantity it measures:
// series[i][r] is quantity i of repetition r.
using Series = std::vector<std::vector<double>>;

// One untimed warm-up call of `once` (rep = -1, its values dropped), then `reps` counted ones
// (rep = 0 .. reps-1), each returning one value per series. Interleaving every quantity within a
// repetition lets all of them see the same machine.
Series repeat_interleaved(int reps, const std::function<std::vector<double>(int rep)> &once);

// Announces a test (Reporter::begin) and notes the PORTICO_* settings in force.
void begin_report(Context &ctx, const std::string &title, const std::string &details, const std::string &second = "");

// Result::of for the bandwidth tests (MB/s) and the rate tests (Mmsg/s, 8-byte messages), whose
// values are better higher.
Result bandwidth_result(std::string test, int procs, uint64_t size, std::vector<double> value,
                        std::vector<double> baseline, std::string baseline_kind, int reps, uint64_t iters,
                        uint64_t warmup);
Result rate_result(std::string test, int procs, std::vector<double> value, std::vector<double> baseline,
                   std::string baseline_kind, int reps, uint64_t iters, uint64_t warmup);

// ---- bandwidth --------------------------------------------------------------------------------

// The messages of one size: put_bw's window (how many operations are in flight), how many a
// repetition makes (at most `bytes` bytes or `iters` operations, whole windows) and the warm-up's
// share (an eighth, whole windows).
struct BwCounts {
    uint64_t window = 0, msgs = 0, warm = 0;
    static BwCounts of(size_t size, uint64_t bytes, uint64_t iters);
    uint64_t count(int rep) const { return rep < 0 ? warm : msgs; }
};

struct BandwidthPlan {
    std::vector<size_t> sizes;
    Plan plan;             // --iters caps the operations of a repetition
    uint64_t bytes;        // ... and this the bytes it moves
    uint64_t stream_bytes; // the raw TCP stream's bytes per repetition
    // --sizes (between 8 B and 16 MiB) or the test's defaults (full or --short).
    static BandwidthPlan of(const Options &o, const std::vector<size_t> &full, const std::vector<size_t> &short_sizes);
    BwCounts counts(size_t size) const { return BwCounts::of(size, bytes, plan.iters); }
};

// For each size of the plan, repeat_interleaved(`once`), then `done` with its series.
void sweep_sizes(const BandwidthPlan &plan,
                 const std::function<std::vector<double>(size_t, const BwCounts &, int)> &once,
                 const std::function<void(size_t, const BwCounts &, const Series &)> &done);

// MB/s of `copies` memcpys of `size` bytes from `src` to `dst`.
double memcpy_rate(unsigned char *dst, const unsigned char *src, size_t size, uint64_t copies);

// The physical references of the bandwidth tests, between ranks 0 and 1 without Portico: over
// TCP a raw TCP stream; otherwise memcpy on rank 0, of the message's size (in cache as far as it
// fits: the same bytes again and again) or of 64 MiB (out of cache), into buffers allocated at
// the first use (a warm-up). Collective.
class BandwidthBaseline {
public:
    BandwidthBaseline(Job &job, const std::string &transport, const BandwidthPlan &plan);
    ~BandwidthBaseline();
    BandwidthBaseline(const BandwidthBaseline &) = delete;
    BandwidthBaseline &operator=(const BandwidthBaseline &) = delete;

    bool tcp() const { return stream_ != nullptr; }
    // The transport's reference for messages of one size: the TCP stream (every rank), else on
    // rank 0 memcpys of the size from `src` into `dst` (nullptr: a buffer of its own): as many
    // as the repetition's messages, or 16 MiB's worth (at most 2^21 copies) if that is more; an
    // eighth of them in the warm-up. MB/s on rank 0, 0 elsewhere.
    double same_size(size_t size, const BwCounts &c, int rep, const unsigned char *src, unsigned char *dst = nullptr);
    std::string same_size_kind() const; // "tcp_stream_*" or "memcpy_same_size"
    std::string same_size_description() const;
    // memcpy of 64 MiB on rank 0 (twice, once in the warm-up): MB/s on rank 0, 0 elsewhere.
    double out_of_cache(int rep);
    // The transport's out-of-cache reference: the TCP stream, else out_of_cache().
    double stream_or_out_of_cache(int rep);
    std::string stream_or_out_of_cache_kind() const; // "tcp_stream_*" or "memcpy_64MiB"
    std::string stream_kind() const;

private:
    double stream();

    int rank_;
    uint64_t stream_bytes_;
    std::unique_ptr<TcpStream> stream_;
    std::vector<unsigned char> copy_dst_, big_src_, big_dst_;
};

// ---- message rate -----------------------------------------------------------------------------

// The operations of a rate test's repetition: --iters (or the defaults) rounded up to whole
// windows, and the warm-up's share (a tenth, at least a window).
struct RatePlan {
    Plan plan;
    uint64_t window;
    uint64_t warmup;
    static RatePlan of(const Options &o, uint64_t window);
    uint64_t count(int rep) const { return rep < 0 ? warmup : plan.iters; }
};

// The physical reference of the rate tests, 8-byte messages from rank 0 to rank 1 in the same
// windows: over TCP a raw stream of 8-byte records (one write per window, the plan's messages per
// repetition), otherwise the raw shared-memory SPSC ring (at least 2^20 messages). Collective.
class RateBaseline {
public:
    RateBaseline(Job &job, const std::string &transport, const RatePlan &plan);
    ~RateBaseline();
    RateBaseline(const RateBaseline &) = delete;
    RateBaseline &operator=(const RateBaseline &) = delete;

    // Mmsg/s on rank 0, 0 elsewhere; ranks 0 and 1 take part.
    double run(int rep);
    std::string kind() const; // "tcp_record_stream_*" or "shm_spsc_ring"
    // For table titles: "raw ... , same window, N messages per repetition".
    std::string description() const;

private:
    uint64_t window_;
    uint64_t msgs_;
    std::unique_ptr<TcpRecordStream> records_;
    std::unique_ptr<ShmRing> ring_;
};

} // namespace portico::bench
