// put_rate, get_rate, atomic_rate: message rate of 8-byte operations from rank 0 to rank 1,
// windowed.
//
// Rank 1 exposes an 8-byte buffer with a persistent ME (counting on a CT, no events) and stays
// idle (in a PMI barrier) while its engine receives. Rank 0 sends windows of `window` operations
// and waits (PtlCTWait) for the window to complete:
// - put_rate: window-1 PtlPuts with PTL_NO_ACK_REQ from an MD without EQ or CT, then one with
//   PTL_ACK_REQ from an MD whose CT counts ACKs. Portico applies the messages of one
//   initiator-target pair in order, so the ack of the last put means the whole window arrived.
// - atomic_rate: the same with PtlAtomic(PTL_SUM, PTL_UINT64_T); rank 1's sum is checked.
// - get_rate: window PtlGets into an MD whose CT counts REPLYs; the window ends when all came.
// Rate = operations / time, in millions of operations per second; rank 1's counter is checked
// against the number of operations at the end.
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

enum class RateOp { Put, Get, Atomic };

const char *op_name(RateOp op) {
    switch (op) {
    case RateOp::Put: return "put";
    case RateOp::Get: return "get";
    case RateOp::Atomic: return "atomic";
    }
    return "?";
}

class Rate {
public:
    Rate(Job &job, RateOp op) : op_(op), rank_(job.rank()) {
        recv_ct_ = ck::alloc_ct(ni_.get());
        done_ct_ = ck::alloc_ct(ni_.get());
        pt_ = ck::alloc_pt(ni_.get(), PTL_EQ_NONE);
        const unsigned me_op = op == RateOp::Get ? PTL_ME_OP_GET : PTL_ME_OP_PUT;
        me_ = ck::append_me(ni_.get(), pt_.index(),
                            ck::me_desc(&target_, sizeof target_, me_op | PTL_ME_EVENT_CT_COMM, 0, 0, recv_ct_.get()));
        plain_md_ = ck::bind_md(ni_.get(), ck::md_desc(&source_, sizeof source_));
        const unsigned counted = op == RateOp::Get ? PTL_MD_EVENT_CT_REPLY : PTL_MD_EVENT_CT_ACK;
        counted_md_ =
            ck::bind_md(ni_.get(), ck::md_desc(&source_, sizeof source_, counted, PTL_EQ_NONE, done_ct_.get()));
        peer_ = exchange_peers(job, ni_.phys_id(), pt_.index())[rank_ == 0 ? 1 : 0];
    }

    // Rank 0: `ops` operations (a multiple of the window); returns Mop/s. Rank 1 returns 0 at once.
    double run(uint64_t ops, Watchdog &dog) {
        if (rank_ != 0) return 0;
        const uint64_t t0 = now_ns();
        for (uint64_t done = 0; done < ops; done += kWindow) {
            for (uint64_t i = 0; i < kWindow; ++i) {
                const bool last = i + 1 == kWindow;
                issue(last);
                bump(sent_);
            }
            // Puts and atomics count one ACK per window, gets one REPLY per operation.
            bump(windows_);
            ck::wait_ct(done_ct_.get(), op_ == RateOp::Get ? sent() : windows_.load(std::memory_order_relaxed),
                        "the window's completion");
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        return static_cast<double>(ops) * 1000.0 / static_cast<double>(t1 - t0);
    }

    uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }
    // Rank 1: checks what arrived against what rank 0 says it sent.
    void check_received(uint64_t sent) {
        ptl_ct_event_t c;
        check(PtlCTGet(recv_ct_.get(), &c), "PtlCTGet");
        if (c.failure) throw Error(std::to_string(c.failure) + " operations failed at the target");
        if (c.success != sent)
            throw Error("rank 1 saw " + std::to_string(c.success) + " operations, rank 0 sent " + std::to_string(sent));
        if (op_ == RateOp::Atomic && target_ != sent * kAddend)
            throw Error("rank 1's sum is " + std::to_string(target_) + ", expected " + std::to_string(sent * kAddend));
    }
    std::string describe() const {
        return std::to_string(sent()) + " " + op_name(op_) + "s started, waiting for the completion of window " +
               std::to_string(windows_.load(std::memory_order_relaxed));
    }

private:
    static constexpr uint64_t kAddend = 3;

    void issue(bool last) {
        const ptl_handle_md_t md = last ? counted_md_.get() : plain_md_.get();
        const ptl_ack_req_t ack = last ? PTL_ACK_REQ : PTL_NO_ACK_REQ;
        switch (op_) {
        case RateOp::Put: check(PtlPut(md, 0, 8, ack, peer_.id, peer_.pt, 0, 0, nullptr, 0), "PtlPut"); break;
        case RateOp::Atomic:
            check(PtlAtomic(md, 0, 8, ack, peer_.id, peer_.pt, 0, 0, nullptr, 0, PTL_SUM, PTL_UINT64_T), "PtlAtomic");
            break;
        case RateOp::Get: check(PtlGet(counted_md_.get(), 0, 8, peer_.id, peer_.pt, 0, 0, nullptr), "PtlGet"); break;
        }
    }
    static void bump(std::atomic<uint64_t> &c) {
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }

    RateOp op_;
    int rank_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    uint64_t target_ = 0, source_ = kAddend;
    ck::Ct recv_ct_, done_ct_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md plain_md_, counted_md_;
    Peer peer_;
    std::atomic<uint64_t> sent_{0}, windows_{0};
};

void run_rate(Context &ctx, RateOp op) {
    Job &job = ctx.job;
    const std::string name = std::string(op_name(op)) + "_rate";
    Plan p = Plan::of(ctx.opt, 200000, 20000);
    p.iters = (p.iters + kWindow - 1) / kWindow * kWindow;
    const uint64_t warmup = std::max<uint64_t>(kWindow, p.iters / 10 / kWindow * kWindow);
    const uint64_t ring_msgs = std::max<uint64_t>(p.iters, 1u << 20);

    Rate rate(job, op);
    const bool tcp = ctx.transport == "tcp";
    std::unique_ptr<ShmRing> ring;
    std::unique_ptr<TcpRecordStream> stream;
    if (tcp)
        stream = std::make_unique<TcpRecordStream>(job);
    else
        ring = std::make_unique<ShmRing>(job);
    const uint64_t base_msgs = tcp ? p.iters : ring_msgs;
    const std::string base_kind = tcp ? stream->kind() : "shm_spsc_ring";
    Watchdog dog(job, kWatchdogS, [&rate] { return rate.describe(); });
    job.barrier();
    const std::string what = op == RateOp::Put ? "8-byte PtlPuts without ack (the last of each window acknowledged)"
                             : op == RateOp::Atomic ? "8-byte PtlAtomic(SUM, UINT64) without ack (the last of each "
                                                      "window acknowledged)"
                                                    : "8-byte PtlGets (the window ends when every REPLY came)";
    ctx.report.begin(name + ": rate of " + what + " from rank 0 to rank 1, windows of " + std::to_string(kWindow) +
                         ", target application idle, transport " + ctx.transport,
                     std::to_string(p.iters) + " operations x " + std::to_string(p.reps) + " repetitions after " +
                         std::to_string(warmup) + " warm-up ones; Mmsg/s = 10^6 operations/s; baseline: " +
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
        const double v = rate.run(r < 0 ? warmup : p.iters, dog);
        dog.peer_phase();
        job.barrier();
        if (r < 0) continue;
        baseline.push_back(b);
        value.push_back(v);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "%s rep %d: %s %.3f Mmsg/s, %.3f Mmsg/s\n", name.c_str(), r, base_kind.c_str(), b, v);
    }
    Result res = Result::of(name, job.size(), 8, value, baseline, base_kind, p.reps, p.iters, warmup);
    res.unit = "Mmsg/s";
    res.better = "higher";
    ctx.report.result(res);

    const auto counts = job.allgather(std::to_string(rate.sent()));
    if (job.rank() == 1) rate.check_received(std::stoull(counts[0]));
    job.barrier();
}

void run_put_rate(Context &ctx) { run_rate(ctx, RateOp::Put); }
void run_get_rate(Context &ctx) { run_rate(ctx, RateOp::Get); }
void run_atomic_rate(Context &ctx) { run_rate(ctx, RateOp::Atomic); }

} // namespace

PORTICO_BENCH_TEST(put_rate, "message rate of 8-byte PtlPuts without ack, windowed", 2, run_put_rate);
PORTICO_BENCH_TEST(get_rate, "message rate of 8-byte PtlGets, windowed", 2, run_get_rate);
PORTICO_BENCH_TEST(atomic_rate, "message rate of 8-byte PtlAtomic(SUM) without ack, windowed", 2, run_atomic_rate);

} // namespace portico::bench
