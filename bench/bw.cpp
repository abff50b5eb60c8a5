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
// is TCP, `baseline` is instead a raw TCP stream between ranks 0 and 1 (tcp_baseline.hpp).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <portico_ext.h>

#include "bench.hpp"
#include "bench_settings.hpp"
#include "bw.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "report.hpp"
#include "tcp_baseline.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {

// memcpy through a volatile pointer: the compiler cannot drop or merge the copies.
static void *(*volatile g_copy)(void *, const void *, size_t) = std::memcpy;

double memcpy_rate(unsigned char *dst, const unsigned char *src, size_t size, uint64_t copies) {
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < copies; ++i) g_copy(dst, src, size);
    const uint64_t t1 = now_ns();
    return static_cast<double>(size) * static_cast<double>(copies) * 1000.0 / static_cast<double>(t1 - t0);
}

namespace {

constexpr size_t kMaxSize = Bandwidth::kMaxSize;
constexpr size_t kBigCopy = 64u << 20;

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
    const bool tcp = ctx.transport == "tcp";
    const char *name = get ? "get_bw" : "put_bw";
    const std::vector<size_t> sizes =
        sizes_of(ctx.opt, {8, 64, 512, 4096, 16384, 32768, 65536, 262144, 1u << 20, 4u << 20, 16u << 20},
                 {8, 65536, 4u << 20}, 8, kMaxSize);
    // --iters caps the operations per repetition; a repetition moves at most `bytes` bytes.
    const Plan p = Plan::of(ctx.opt, 20000, 2000);
    const uint64_t bytes = ctx.opt.short_mode ? 32ull << 20 : 256ull << 20;
    const uint64_t stream_bytes = ctx.opt.short_mode ? 16ull << 20 : 64ull << 20;

    Bandwidth bw(job, get);
    std::unique_ptr<TcpStream> stream;
    if (tcp) stream = std::make_unique<TcpStream>(job);
    // With the buffers in shared segments, the baseline is the copy the goal compares with: a
    // memcpy of the same size from rank 0's buffer into rank 1's segment, mapped at rank 0.
    PeerSegment peer_seg(job, bw.segment() != nullptr && !tcp);
    std::vector<unsigned char> copy_dst, big_src, big_dst;
    if (job.rank() == 0) {
        copy_dst.assign(kMaxSize, 1);
        big_src.assign(kBigCopy, 2);
        big_dst.assign(kBigCopy, 3);
    }
    Watchdog dog(job, kWatchdogS, [&bw] { return bw.describe(); });
    job.barrier();

    const std::string base_desc = tcp ? "raw TCP stream of " + std::to_string(stream_bytes >> 20) +
                                            " MiB in 1 MiB writes between ranks 0 and 1 (" + stream->kind() + ")"
                                  : peer_seg.addr
                                      ? "memcpy of the same size from rank 0's segment into rank 1's, mapped at rank 0 "
                                        "(a cross-process copy into a shared mapping)"
                                      : "memcpy of the same size (in cache as far as it fits)";
    ctx.report.begin(std::string(name) + ": bandwidth of " + (get ? "PtlGet" : "PtlPut (PTL_ACK_REQ)") +
                         " from rank 0, windowed, target application idle, transport " + ctx.transport,
                     "per repetition at most " + std::to_string(p.iters) + " operations or " +
                         std::to_string(bytes >> 20) + " MiB; " + std::to_string(p.reps) +
                         " repetitions; MB/s = 10^6 bytes/s; baseline: " + base_desc +
                         "; baseline2: memcpy of 64 MiB (out of cache); both interleaved",
                     "memcpy 64 MiB [min .. max]");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    uint64_t stamp = 0;
    for (size_t size : sizes) {
        const uint64_t window = BwCounts::window_of(size);
        const uint64_t msgs = BwCounts::messages(size, bytes, p.iters);
        const uint64_t copies = std::max<uint64_t>(msgs, std::min<uint64_t>(1ull << 21, (16ull << 20) / size));
        std::vector<double> value, baseline, baseline2;
        for (int r = -1; r < p.reps; ++r) { // r = -1: warm-up (shorter)
            const uint64_t n = r < 0 ? std::max(window, msgs / 8 / window * window) : msgs;
            dog.peer_phase();
            double b = 0, b2 = 0;
            if (tcp)
                b = stream->run(stream_bytes);
            else if (job.rank() == 0)
                b = memcpy_rate(peer_seg.addr ? peer_seg.addr : copy_dst.data(), bw.buffer(), size,
                                r < 0 ? copies / 8 + 1 : copies);
            if (job.rank() == 0) b2 = memcpy_rate(big_dst.data(), big_src.data(), kBigCopy, r < 0 ? 1 : 2);
            bw.stamp(size, ++stamp);
            job.barrier();
            dog.portals_phase();
            const double v = bw.run(size, n, window, dog);
            dog.peer_phase();
            job.barrier();
            bw.check_stamp(size, stamp);
            if (r < 0) continue;
            value.push_back(v);
            baseline.push_back(b);
            baseline2.push_back(b2);
            if (ctx.opt.verbose && job.rank() == 0)
                std::fprintf(
                    stderr,
                    "%s size %zu rep %d: %llu ops in windows of %llu: %.1f MB/s, baseline %.1f, memcpy 64 MiB %.1f\n",
                    name, size, r, static_cast<unsigned long long>(n), static_cast<unsigned long long>(window), v, b,
                    b2);
        }
        Result res = Result::of(name, job.size(), size, value, baseline,
                                tcp             ? stream->kind()
                                : peer_seg.addr ? "memcpy_into_peer_segment"
                                                : "memcpy_same_size",
                                p.reps, msgs, std::max(window, msgs / 8 / window * window));
        res.unit = "MB/s";
        res.better = "higher";
        res.set_baseline2(baseline2, "memcpy_64MiB");
        ctx.report.result(res);
    }
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
