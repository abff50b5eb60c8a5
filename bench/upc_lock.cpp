// SPDX-License-Identifier: BSD-3-Clause
// upc_lock: UPC locks (upc_lock/upc_unlock, libportico-upc's MCS queue locks).
//
// - "uncontended/home", "uncontended/remote/<path>": upc_lock + upc_unlock in a loop by one
//   thread while the others wait in a job barrier, on a lock from upc_all_lock_alloc (it lives on
//   thread 0): timed on thread 0, the lock's home (its atomics go through its own engine), and on
//   thread 1 (through thread 0's). µs per lock + unlock.
// - "contended/<path>": every thread takes the lock `count` times (1000; 100 with --short),
//   each time incrementing a shared counter on thread 0 (__getdi2, __putdi2) inside it, all
//   starting together from a raw shared-memory barrier. Time per hand-off = the slowest thread's
//   time / (threads x count). The counter is checked.
// <path> is how thread 1 reaches thread 0's data: "node_local" or, with UPC_NODE_LOCAL_MEM=0,
// "portals" (the lock's tag check and the counter then go through the engine as well).
//
// Baselines, interleaved repetition by repetition:
// - uncontended: the round trip of one 8-byte PtlFetchAtomic from the same thread to the lock's
//   home (physical NIs, completion counted). The runtime must take and give back a lock with
//   atomics the engine applies (a CPU atomic on the same word would not be atomic with the
//   engine's, runtime.hpp), so two of these round trips, a SWAP and a CSWAP, are the floor of an
//   uncontended lock + unlock whatever the lock's algorithm: the ratio says how many round trips
//   the lock costs. baseline2 (physical): a raw shared-memory ticket lock taken and released by
//   one process alone.
// - contended: the same counter loop under a raw shared-memory ticket lock among the same
//   processes (shm_ticket_lock_handoff), fully contended: FIFO like the MCS lock, so each
//   release hands the lock to the next process in line, the fastest hand-off plain shared
//   memory gives. Waiters spin, then yield their core after 4096 spins (timing.hpp's
//   spin_until), since with more processes than cores the next in line may not be running.
//   baseline2: the fetch-atomic round trip from thread 1 to thread 0. The table notes how many
//   of the UPC lock's acquisitions came from another thread (hand-offs, not re-acquisitions).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "report.hpp"
#include "shm_region.hpp"
#include "timing.hpp"
#include "triggered_barrier.hpp"
#include "upc_session.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

// Where the measuring loops are, for the watchdog.
struct Progress {
    std::atomic<const char *> phase{"start-up"};
    std::atomic<uint64_t> step{0};
    std::string describe() const {
        return std::string("in ") + phase.load(std::memory_order_relaxed) + ", step " +
               std::to_string(step.load(std::memory_order_relaxed));
    }
    void at(const char *p) {
        phase.store(p, std::memory_order_relaxed);
        step.store(0, std::memory_order_relaxed);
    }
    void beat(Watchdog &dog) {
        step.store(step.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        dog.beat();
    }
};

// 8-byte PtlFetchAtomic(SUM) round trips from this rank to any rank's word (itself included).
class FetchAtomicRt {
public:
    explicit FetchAtomicRt(Job &job) : rank_(job.rank()) {
        ct_ = ck::alloc_ct(ni_.get());
        served_ = ck::alloc_ct(ni_.get());
        pt_ = ck::alloc_pt(ni_.get(), PTL_EQ_NONE);
        me_ = ck::append_me(ni_.get(), pt_.index(),
                            ck::me_desc(&word_, sizeof word_, PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, 0,
                                        0, served_.get()));
        md_ = ck::bind_md(ni_.get(), ck::md_desc(&io_, sizeof io_, PTL_MD_EVENT_CT_REPLY, PTL_EQ_NONE, ct_.get()));
        peers_ = exchange_peers(job, ni_.phys_id(), pt_.index());
    }

    // µs per round trip of `iters` fetch-atomics to `target`.
    double run(int target, uint64_t iters, Progress &where, Watchdog &dog) {
        const Peer &p = peers_[static_cast<size_t>(target)];
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; ++i) {
            check(PtlFetchAtomic(md_.get(), offsetof(Io, old), md_.get(), offsetof(Io, one), sizeof(uint64_t), p.id,
                                 p.pt, 0, 0, nullptr, 0, PTL_SUM, PTL_UINT64_T),
                  "PtlFetchAtomic");
            ck::wait_ct(ct_.get(), ++issued_, "a fetch-atomic's reply");
            where.beat(dog);
        }
        const uint64_t t1 = now_ns();
        sent_to_[static_cast<size_t>(target)] += iters;
        return static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(iters ? iters : 1);
    }

    // Collective: every rank's word must count the fetch-atomics the ranks sent it.
    void verify(Job &job) {
        std::string mine;
        for (uint64_t n : sent_to_) mine += std::to_string(n) + ",";
        const std::vector<std::string> all = job.allgather(mine);
        uint64_t expected = 0;
        for (const std::string &row : all) {
            size_t at = 0;
            for (int r = 0; r <= rank_; ++r) {
                const size_t comma = row.find(',', at);
                if (r == rank_) expected += std::stoull(row.substr(at, comma - at));
                at = comma + 1;
            }
        }
        ptl_ct_event_t c;
        check(PtlCTGet(served_.get(), &c), "PtlCTGet");
        if (c.failure || c.success != expected || word_ != expected)
            throw Error("rank " + std::to_string(rank_) + " served " + std::to_string(c.success) +
                        " fetch-atomics and counts " + std::to_string(word_) + ", the ranks sent " +
                        std::to_string(expected));
    }
    void size_for(int n) { sent_to_.assign(static_cast<size_t>(n), 0); }

private:
    struct Io {
        uint64_t one = 1;
        uint64_t old = 0;
    };
    int rank_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    uint64_t word_ = 0;
    Io io_;
    ck::Ct ct_, served_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md md_;
    std::vector<Peer> peers_;
    uint64_t issued_ = 0;
    std::vector<uint64_t> sent_to_;
};

// A ticket lock and a counter in a region every rank maps, each word on its own 128 bytes.
class RawTicketLock {
public:
    explicit RawTicketLock(Job &job) : shm_(job, "lock", sizeof(Words), job.size()) {
        if (job.rank() == 0) new (shm_.data()) Words{};
        job.barrier();
        w_ = std::launder(static_cast<Words *>(shm_.data()));
    }
    void lock() { wait_for(w_->next.fetch_add(1, std::memory_order_relaxed)); }
    // The contended loop: tickets dealt round-robin (process p of N holds first + p, first + p + N,
    // ...), which is how a FIFO lock serves them once every process is always waiting. Taking
    // them with fetch_add instead made the loop depend on the start: a process that began a few
    // µs before the others ran its whole loop alone at 3 ns per lock, and no hand-off was timed.
    void lock(uint64_t ticket) { wait_for(ticket); }
    void unlock() { w_->serving.store(w_->serving.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
    // The first ticket of a contended round, read while nobody holds or waits for the lock; and
    // `next` moved past the round's tickets (by one process), for lock() afterwards.
    uint64_t serving() const { return w_->serving.load(std::memory_order_acquire); }
    void skip(uint64_t tickets) { w_->next.fetch_add(tickets, std::memory_order_relaxed); }
    void increment() { w_->counter.store(w_->counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
    uint64_t counter() const { return w_->counter.load(std::memory_order_acquire); }

private:
    void wait_for(uint64_t ticket) {
        spin_until([&] { return w_->serving.load(std::memory_order_acquire) == ticket; }, "raw ticket lock");
    }
    struct Words {
        alignas(128) std::atomic<uint64_t> next{0};
        alignas(128) std::atomic<uint64_t> serving{0};
        alignas(128) std::atomic<uint64_t> counter{0};
    };
    SharedRegion shm_;
    Words *w_ = nullptr;
};

constexpr unsigned kHolderBits = 16; // the UPC counter: (count << 16) | (last holder + 1)
constexpr uint64_t kHolderMask = (uint64_t{1} << kHolderBits) - 1;

// The slowest rank's time, in µs, of a phase every rank timed itself (collective).
double slowest(Job &job, uint64_t ns) {
    double worst = 0;
    for (const std::string &v : job.allgather(std::to_string(ns))) worst = std::max(worst, std::stod(v) / 1000.0);
    return worst;
}

void run_upc_lock(Context &ctx) {
    Job &job = ctx.job;
    const Plan p = Plan::of(ctx.opt, 10000, 1000);
    const uint64_t count = ctx.opt.short_mode ? 100 : 1000; // the N x 1000 increments

    UpcSession upc(job); // before any Portals object of the benchmark's (upc_session.hpp)
    // As thread 1 reaches thread 0 (the lock's and the counter's home); the setting is the same on
    // every thread, and thread 0 asks about thread 1 since its own data is always mapped.
    const std::string path = UpcSession::path_to(job.rank() == 0 ? 1 : 0);
    const upc_shared_ptr_t lock = upc_all_lock_alloc();
    if (upc_pts_is_null(lock)) throw Error("upc_all_lock_alloc failed");
    const upc_shared_ptr_t words = upc_all_alloc(static_cast<size_t>(THREADS), 128);
    if (upc_pts_is_null(words)) throw Error("upc_all_alloc failed");
    const upc_shared_ptr_t counter = UpcSession::aligned(UpcSession::block_of(words, 0, 128), 64);
    if (MYTHREAD == 0) __putdi2(counter, 0);
    __upc_barrier(INT_MIN);
    const int home = static_cast<int>(upc_threadof(lock));

    FetchAtomicRt fa(job);
    fa.size_for(job.size());
    RawTicketLock raw(job);
    // The contended loops start together from a raw shared-memory barrier: a job barrier lets
    // the ranks go tens of µs apart, longer than the raw lock's whole loop, which then never
    // meets a competitor.
    ShmBarrier start(job);
    Progress where;
    Watchdog dog(job, kWatchdogS, [&where] { return where.describe(); });
    job.barrier();
    ctx.report.begin("upc_lock: upc_lock + upc_unlock (MCS queue lock on thread " + std::to_string(home) + "), " +
                         std::to_string(job.size()) + " threads, path " + path + ", transport " + ctx.transport,
                     "uncontended: " + std::to_string(p.iters) +
                         " lock + unlock by thread 0 (the lock's home) and "
                         "by thread 1, baseline: PtlFetchAtomic round trip to the lock's home, baseline2: raw "
                         "ticket lock alone; contended: " +
                         std::to_string(count) +
                         " increments per thread under the lock, time per hand-off, baseline: raw shared-memory "
                         "ticket lock, baseline2: fetch-atomic round trip thread 1 -> 0; " +
                         std::to_string(p.reps) + " repetitions, interleaved",
                     "baseline2");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    // [0]: thread 0, [1]: thread 1.
    std::vector<double> un_upc[2], un_fa[2], un_raw[2], co_upc, co_raw;
    uint64_t upc_increments = 0, raw_increments = 0, handoffs = 0;
    for (int r = -1; r < p.reps; ++r) { // r = -1: warm-up
        const uint64_t n = r < 0 ? p.warmup : p.iters;
        const uint64_t c = r < 0 ? std::max<uint64_t>(10, count / 10) : count;
        double u[2] = {0, 0}, f[2] = {0, 0}, w[2] = {0, 0};
        for (int who = 0; who < 2; ++who) {
            dog.peer_phase(); // the others wait for the one measuring
            job.barrier();
            if (job.rank() == who) {
                dog.portals_phase();
                where.at("uncontended upc_lock + upc_unlock");
                uint64_t t0 = now_ns();
                for (uint64_t i = 0; i < n; ++i) {
                    upc_lock(lock);
                    upc_unlock(lock);
                    where.beat(dog);
                }
                u[who] = static_cast<double>(now_ns() - t0) / 1000.0 / static_cast<double>(n);
                where.at("fetch-atomic round trips to the lock's home");
                f[who] = fa.run(home, n, where, dog);
                where.at("the raw ticket lock, alone");
                t0 = now_ns();
                for (uint64_t i = 0; i < n; ++i) {
                    raw.lock();
                    raw.unlock();
                }
                w[who] = static_cast<double>(now_ns() - t0) / 1000.0 / static_cast<double>(n);
                dog.peer_phase();
            }
            job.barrier();
        }

        const uint64_t n_threads = static_cast<uint64_t>(job.size());
        const uint64_t me = static_cast<uint64_t>(job.rank());
        dog.portals_phase();
        where.at("contended increments under the UPC lock");
        job.barrier();
        start.run(1);
        uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < c; ++i) {
            upc_lock(lock);
            // The counter's low bits name its last holder: whether the lock came from another
            // thread, i.e. whether the loop timed hand-offs.
            const uint64_t v = __getdi2(counter);
            if ((v & kHolderMask) != me + 1) ++handoffs;
            __putdi2(counter, (((v >> kHolderBits) + 1) << kHolderBits) | (me + 1));
            upc_unlock(lock);
            where.beat(dog);
        }
        const double cu = slowest(job, now_ns() - t0) / static_cast<double>(c * n_threads);
        upc_increments += c * n_threads;

        dog.peer_phase();
        where.at("contended increments under the raw ticket lock");
        job.barrier();
        const uint64_t first = raw.serving();
        if (job.rank() == 0) raw.skip(c * n_threads);
        start.run(1);
        t0 = now_ns();
        for (uint64_t i = 0; i < c; ++i) {
            raw.lock(first + me + i * n_threads);
            raw.increment();
            raw.unlock();
        }
        const double cr = slowest(job, now_ns() - t0) / static_cast<double>(c * n_threads);
        raw_increments += c * n_threads;

        // Thread 1's figures reach rank 0 (which reports) through the job.
        const std::vector<std::string> all =
            job.allgather(std::to_string(u[1]) + " " + std::to_string(f[1]) + " " + std::to_string(w[1]));
        if (job.rank() == 0) std::sscanf(all[1].c_str(), "%lf %lf %lf", &u[1], &f[1], &w[1]);
        if (r < 0) continue;
        for (int who = 0; who < 2; ++who) {
            un_upc[who].push_back(u[who]);
            un_fa[who].push_back(f[who]);
            un_raw[who].push_back(w[who]);
        }
        co_upc.push_back(cu);
        co_raw.push_back(cr);
        if (ctx.opt.verbose && job.rank() == 0)
            std::fprintf(stderr,
                         "upc_lock rep %d: uncontended thread 0 %.3f us (fetch-atomic %.3f, raw %.4f), thread 1 %.3f "
                         "(%.3f, %.4f); contended hand-off %.3f us, raw %.4f\n",
                         r, u[0], f[0], w[0], u[1], f[1], w[1], cu, cr);
    }

    // Every increment of either loop must be in its counter.
    __upc_barrier(INT_MIN);
    const uint64_t upc_count = __getdi2(counter) >> kHolderBits;
    if (upc_count != upc_increments || raw.counter() != raw_increments)
        throw Error("the counters hold " + std::to_string(upc_count) + " (UPC lock) and " +
                    std::to_string(raw.counter()) + " (raw lock) increments, expected " +
                    std::to_string(upc_increments) + " and " + std::to_string(raw_increments));
    fa.verify(job);
    uint64_t all_handoffs = 0;
    for (const std::string &h : job.allgather(std::to_string(handoffs))) all_handoffs += std::stoull(h);
    const std::string handoff_note = "UPC lock: " + std::to_string(all_handoffs) + " of " +
                                     std::to_string(upc_increments) +
                                     " acquisitions (warm-up included) came from "
                                     "another thread";
    ctx.report.note(handoff_note);
    if (ctx.opt.verbose && job.rank() == 0) std::fprintf(stderr, "upc_lock: %s\n", handoff_note.c_str());

    for (int who = 0; who < 2; ++who) {
        Result res = Result::of("upc_lock", job.size(), 0, un_upc[who], un_fa[who], "portals_fetch_atomic_rt", p.reps,
                                p.iters, p.warmup);
        res.variant = who == 0 ? "uncontended/home" : "uncontended/remote/" + path;
        res.set_baseline2(un_raw[who], "shm_ticket_lock_alone");
        ctx.report.result(res);
    }
    Result res = Result::of("upc_lock", job.size(), 0, co_upc, co_raw, "shm_ticket_lock_handoff", p.reps, count,
                            std::max<uint64_t>(10, count / 10));
    res.variant = "contended/" + path;
    res.set_baseline2(un_fa[1], "portals_fetch_atomic_rt_1_to_0");
    ctx.report.result(res);
    job.barrier();
}

} // namespace

PORTICO_BENCH_TEST(upc_lock,
                   "UPC lock: uncontended lock + unlock, and N threads x 1000 increments under one lock (hand-off)", 0,
                   run_upc_lock, 2);

} // namespace portico::bench
