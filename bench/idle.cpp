// SPDX-License-Identifier: BSD-3-Clause
// idle: what a process costs while it waits for nothing. Rank 0 blocks in PtlEQWait while nothing
// arrives for about a second; the CPU time its whole process uses meanwhile (all threads: the
// application thread, Portico's progress thread, the benchmark's watchdog;
// CLOCK_PROCESS_CPUTIME_ID) is reported as % of one core (the baseline, 100%).
//
// What ends the wait: rank 1 waits itself, in PtlEQPoll with a timeout of --iters milliseconds
// (default 1000), expects PTL_EQ_EMPTY, and then puts 8 bytes to rank 0. Rank 1's own CPU use
// during its timed wait is printed as a note. Both ranks exchange one put first, so that the links
// exist before the measurement.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "report.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

class Idle {
public:
    explicit Idle(Job &job) : rank_(job.rank()) {
        eq_ = ck::alloc_eq(ni_.get(), 64);
        pt_ = ck::alloc_pt(ni_.get(), eq_.get());
        me_ = ck::append_me(ni_.get(), pt_.index(),
                            ck::me_desc(&target_, sizeof target_, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE));
        md_ = ck::bind_md(ni_.get(), ck::md_desc(&source_, sizeof source_, PTL_MD_EVENT_SEND_DISABLE));
        peer_ = exchange_peers(job, ni_.phys_id(), pt_.index())[rank_ == 0 ? 1 : 0];
    }
    void put() {
        check(PtlPut(md_.get(), 0, sizeof source_, PTL_NO_ACK_REQ, peer_.id, peer_.pt, 0, 0, nullptr, 0), "PtlPut");
    }
    void wait_put() { ck::expect_event(eq_.get(), PTL_EVENT_PUT, "incoming put"); }
    // Rank 1: waits `ms` in PtlEQPoll, which must time out.
    void poll_nothing(int64_t ms) {
        ptl_event_t ev;
        unsigned which = 0;
        const ptl_handle_eq_t eq = eq_.get();
        const int rc = PtlEQPoll(&eq, 1, ms, &ev, &which);
        if (rc == PTL_OK) throw Error(std::string("an event arrived during the idle wait: ") + event_name(ev.type));
        if (rc != PTL_EQ_EMPTY) check(rc, "PtlEQPoll");
    }

private:
    int rank_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    uint64_t target_ = 0, source_ = 42;
    ck::Eq eq_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md md_;
    Peer peer_;
};

void run_idle(Context &ctx) {
    Job &job = ctx.job;
    const Plan p = Plan::of(ctx.opt, 1000, 1000, 3, 1); // iters: milliseconds of idleness
    const int64_t ms = static_cast<int64_t>(p.iters);
    Idle idle(job);
    std::atomic<const char *> phase{"setting up"};
    Watchdog dog(job, kWatchdogS + static_cast<int>(ms / 1000), [&phase] { return std::string(phase.load()); });
    job.barrier();
    // Both links exist before anything is measured.
    phase = "exchanging the first puts";
    if (job.rank() == 0) {
        idle.put();
        idle.wait_put();
    } else {
        idle.wait_put();
        idle.put();
    }
    job.barrier();
    ctx.report.begin("idle: CPU time of a process blocked in PtlEQWait while nothing arrives, % of one core, "
                     "transport " +
                         ctx.transport,
                     std::to_string(p.reps) + " waits of ~" + std::to_string(ms) +
                         " ms (the peer waits in PtlEQPoll with that timeout, then puts); whole process "
                         "(CLOCK_PROCESS_CPUTIME_ID); baseline: 100% = one core");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    std::vector<double> value, peer;
    for (int r = 0; r < p.reps; ++r) {
        dog.portals_phase();
        job.barrier();
        phase = job.rank() == 0 ? "blocked in PtlEQWait" : "waiting in PtlEQPoll";
        const uint64_t c0 = process_cpu_ns(), t0 = now_ns();
        if (job.rank() == 0) {
            idle.wait_put();
        } else {
            idle.poll_nothing(ms);
        }
        const uint64_t c1 = process_cpu_ns(), t1 = now_ns();
        if (job.rank() == 1) idle.put();
        const double pct = 100.0 * static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
        phase = "between repetitions";
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6f", pct);
        const auto all = job.allgather(buf);
        value.push_back(std::stod(all[0]));
        peer.push_back(std::stod(all[1]));
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr, "idle rep %d: %.3f s, rank 0 (PtlEQWait) %.4f%%, rank 1 (PtlEQPoll) %.4f%%\n", r,
                         static_cast<double>(t1 - t0) / 1e9, value.back(), peer.back());
    }
    Result res = Result::of("idle", job.size(), 0, value, {100.0}, "one_core", p.reps, p.iters);
    res.unit = "%";
    ctx.report.result(res);
    const Stats ps = Stats::of(peer);
    char note[160];
    std::snprintf(note, sizeof note,
                  "rank 1, waiting in PtlEQPoll(timeout %lld ms) meanwhile: %.4f [%.4f .. %.4f] %% of a core",
                  static_cast<long long>(ms), ps.median, ps.min, ps.max);
    ctx.report.note(note);
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(idle, "CPU use (% of a core) of a process blocked in PtlEQWait with nothing arriving for ~1 s", 2,
                   run_idle);

} // namespace portico::bench
