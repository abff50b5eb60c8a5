// put_rate: message rate of 8-byte PtlPuts without acks from rank 0 to rank 1, windowed.
//
// Rank 1 exposes an 8-byte buffer with a persistent ME (PTL_ME_OP_PUT, counting on a CT, no
// events) and stays idle (in a PMI barrier) while its engine receives. Rank 0 sends windows of
// `window` puts: window-1 with PTL_NO_ACK_REQ from an MD without EQ or CT, then one with
// PTL_ACK_REQ from an MD whose CT counts ACKs, and waits (PtlCTWait) for that ack. Portico applies
// the messages of one initiator-target pair in order, so the ack of the last put of a window means
// the whole window has been received. Rate = puts / time, in millions of messages per second; rank
// 1's counter is checked against the number of puts at the end.
//
// Baseline, interleaved: the raw shared-memory SPSC ring (shm_ring.hpp) with 8-byte messages and
// the same window; over TCP, a raw TCP stream of 8-byte records in the same windows, one write per
// window (tcp_baseline.hpp: TcpRecordStream).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "report.hpp"
#include "shm_ring.hpp"
#include "tcp_baseline.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

constexpr uint64_t kWindow = 64;

class PutRate {
public:
    explicit PutRate(Job &job) : rank_(job.rank()) {
        recv_ct_ = ck::alloc_ct(ni_.get());
        ack_ct_ = ck::alloc_ct(ni_.get());
        pt_ = ck::alloc_pt(ni_.get(), PTL_EQ_NONE);
        me_ = ck::append_me(
            ni_.get(), pt_.index(),
            ck::me_desc(&target_, sizeof target_, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 0, 0, recv_ct_.get()));
        plain_md_ = ck::bind_md(ni_.get(), ck::md_desc(&source_, sizeof source_));
        acked_md_ = ck::bind_md(ni_.get(),
                                ck::md_desc(&source_, sizeof source_, PTL_MD_EVENT_CT_ACK, PTL_EQ_NONE, ack_ct_.get()));
        peer_ = exchange_peers(job, ni_.phys_id(), pt_.index())[rank_ == 0 ? 1 : 0];
    }

    // Rank 0: `msgs` puts (a multiple of the window); returns Mmsg/s. Rank 1 returns 0 at once.
    double run(uint64_t msgs, Watchdog &dog) {
        if (rank_ != 0) return 0;
        const uint64_t t0 = now_ns();
        for (uint64_t done = 0; done < msgs; done += kWindow) {
            for (uint64_t i = 1; i < kWindow; ++i) {
                check(PtlPut(plain_md_.get(), 0, 8, PTL_NO_ACK_REQ, peer_.id, peer_.pt, 0, 0, nullptr, 0), "PtlPut");
                bump(sent_);
            }
            check(PtlPut(acked_md_.get(), 0, 8, PTL_ACK_REQ, peer_.id, peer_.pt, 0, 0, nullptr, 0), "PtlPut");
            bump(sent_);
            bump(windows_);
            ck::wait_ct(ack_ct_.get(), windows_.load(std::memory_order_relaxed), "the acknowledged puts");
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        return static_cast<double>(msgs) * 1000.0 / static_cast<double>(t1 - t0);
    }

    uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }
    uint64_t received() {
        ptl_ct_event_t c;
        check(PtlCTGet(recv_ct_.get(), &c), "PtlCTGet");
        if (c.failure) throw Error(std::to_string(c.failure) + " puts failed at the target");
        return c.success;
    }
    std::string describe() const {
        return std::to_string(sent()) + " puts started, waiting for the ack of window " +
               std::to_string(windows_.load(std::memory_order_relaxed));
    }

private:
    static void bump(std::atomic<uint64_t> &c) {
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }

    int rank_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    uint64_t target_ = 0, source_ = 0x0123456789abcdefull;
    ck::Ct recv_ct_, ack_ct_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md plain_md_, acked_md_;
    Peer peer_;
    std::atomic<uint64_t> sent_{0}, windows_{0};
};

void run_put_rate(Context &ctx) {
    Job &job = ctx.job;
    Plan p = Plan::of(ctx.opt, 200000, 20000);
    p.iters = (p.iters + kWindow - 1) / kWindow * kWindow;
    const uint64_t warmup = std::max<uint64_t>(kWindow, p.iters / 10 / kWindow * kWindow);
    const uint64_t ring_msgs = std::max<uint64_t>(p.iters, 1u << 20);

    PutRate pr(job);
    const bool tcp = ctx.transport == "tcp";
    std::unique_ptr<ShmRing> ring;
    std::unique_ptr<TcpRecordStream> stream;
    if (tcp)
        stream = std::make_unique<TcpRecordStream>(job);
    else
        ring = std::make_unique<ShmRing>(job);
    const uint64_t base_msgs = tcp ? p.iters : ring_msgs;
    const std::string base_kind = tcp ? stream->kind() : "shm_spsc_ring";
    Watchdog dog(job, kWatchdogS, [&pr] { return pr.describe(); });
    job.barrier();
    ctx.report.begin("put_rate: rate of 8-byte PtlPuts without ack from rank 0 to rank 1, windows of " +
                         std::to_string(kWindow) +
                         " (the last put of each window acknowledged), target application "
                         "idle, transport " +
                         ctx.transport,
                     std::to_string(p.iters) + " puts x " + std::to_string(p.reps) + " repetitions after " +
                         std::to_string(warmup) + " warm-up ones; Mmsg/s = 10^6 messages/s; baseline: " +
                         (tcp ? std::string("raw TCP stream of 8-byte records, one write per window, ")
                              : std::string("raw shared-memory SPSC ring, 8-byte messages, ")) +
                         "same window, " + std::to_string(base_msgs) + " messages per repetition, interleaved");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    std::vector<double> value, baseline;
    for (int r = -1; r < p.reps; ++r) {
        dog.peer_phase();
        const uint64_t n = r < 0 ? std::max<uint64_t>(kWindow, base_msgs / 10 / kWindow * kWindow) : base_msgs;
        const double b = tcp ? stream->run(n, kWindow) : ring->run(n, kWindow);
        job.barrier();
        dog.portals_phase();
        const double v = pr.run(r < 0 ? warmup : p.iters, dog);
        dog.peer_phase();
        job.barrier();
        if (r < 0) continue;
        baseline.push_back(b);
        value.push_back(v);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "put_rate rep %d: %s %.3f Mmsg/s, puts %.3f Mmsg/s\n", r, base_kind.c_str(), b, v);
    }
    Result res = Result::of("put_rate", job.size(), 8, value, baseline, base_kind, p.reps, p.iters, warmup);
    res.unit = "Mmsg/s";
    res.better = "higher";
    ctx.report.result(res);

    const auto counts = job.allgather(std::to_string(pr.sent()));
    if (job.rank() == 1 && std::to_string(pr.received()) != counts[0])
        throw Error("rank 1 received " + std::to_string(pr.received()) + " puts, rank 0 sent " + counts[0]);
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(put_rate, "message rate of 8-byte PtlPuts without ack, windowed", 2, run_put_rate);

} // namespace portico::bench
