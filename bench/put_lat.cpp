// put_lat: one-way latency of PtlPut, measured by a ping-pong between two processes.
//
// Each rank opens a physical matching NI, one EQ, a portal table entry with a persistent ME
// (PTL_ME_OP_PUT, any initiator, match bits 0) over a receive buffer, and an MD over a send buffer
// with the same EQ; ids and pt indexes are exchanged over PMI. Rank 0 puts `size` bytes with
// PTL_ACK_REQ and waits (PtlEQWait) until the PUT from rank 1 arrives, consuming its own SEND and
// ACK events on the way; rank 1 waits for the PUT from rank 0 and puts back. One-way latency is the
// round trip / 2. Every message carries a sequence number that the receiver checks, and every
// event is checked (type, ni_fail_type, lengths), so a broken engine cannot look fast.
//
// The physical baseline (shm_pingpong.hpp) runs between the same two processes, interleaved with
// the Portals measurement: baseline repetition, Portals repetition, baseline repetition, ...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "report.hpp"
#include "shm_pingpong.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {
namespace {

constexpr size_t kMaxSize = 4096;

class PutPingPong {
public:
    explicit PutPingPong(Job &job) : rank_(job.rank()), send_(kMaxSize), recv_(kMaxSize) {
        check(PtlEQAlloc(ni_.handle(), 1024, &eq_), "PtlEQAlloc");
        check(PtlPTAlloc(ni_.handle(), 0, eq_, PTL_PT_ANY, &pt_), "PtlPTAlloc");
        pt_allocated_ = true;

        ptl_me_t me{};
        me.start = recv_.data();
        me.length = recv_.size();
        me.ct_handle = PTL_CT_NONE;
        me.uid = PTL_UID_ANY;
        me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE;
        me.match_id.phys.nid = PTL_NID_ANY;
        me.match_id.phys.pid = PTL_PID_ANY;
        me.match_bits = 0;
        me.ignore_bits = 0;
        me.min_free = 0;
        check(PtlMEAppend(ni_.handle(), pt_, &me, PTL_PRIORITY_LIST, nullptr, &me_), "PtlMEAppend");
        me_linked_ = true;

        ptl_md_t md{};
        md.start = send_.data();
        md.length = send_.size();
        md.options = 0;
        md.eq_handle = eq_;
        md.ct_handle = PTL_CT_NONE;
        check(PtlMDBind(ni_.handle(), &md, &md_), "PtlMDBind");
        md_bound_ = true;

        const auto peers = exchange_peers(job, ni_.id(), pt_);
        peer_ = peers[rank_ == 0 ? 1 : 0];
    }

    ~PutPingPong() {
        if (md_bound_) PtlMDRelease(md_);
        if (me_linked_) PtlMEUnlink(me_);
        if (pt_allocated_) PtlPTFree(ni_.handle(), pt_);
        if (eq_ != PTL_INVALID_HANDLE) PtlEQFree(eq_);
    }

    // `iters` round trips of `size` bytes. Rank 0 returns the one-way latency in microseconds.
    double run(size_t size, uint64_t iters, Watchdog &dog) {
        size_.store(size, std::memory_order_relaxed);
        phase_.store("ping-pong", std::memory_order_relaxed);
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; ++i) {
            bump(seq_);
            if (rank_ == 0) {
                put(size);
                wait_put(size);
            } else {
                wait_put(size);
                put(size);
            }
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        // Both sides end with every SEND and ACK consumed, so repetitions do not leak into each other.
        phase_.store("waiting for the last SEND/ACK events", std::memory_order_relaxed);
        ptl_event_t ev;
        while (get(sends_done_) < get(sent_) || get(acks_) < get(sent_)) {
            check(PtlEQWait(eq_, &ev), "PtlEQWait");
            take(ev, size, false);
        }
        phase_.store("between repetitions", std::memory_order_relaxed);
        return rank_ == 0 && iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }

    // Where the measurement stands (called from the watchdog thread).
    std::string describe() const {
        return std::string(phase_.load(std::memory_order_relaxed)) + ", size " + std::to_string(get(size_)) +
               ", round " + std::to_string(get(seq_)) + ": " + std::to_string(get(sent_)) + " puts started, " +
               std::to_string(get(sends_done_)) + " SEND and " + std::to_string(get(acks_)) + " ACK events seen";
    }
    void set_phase(const char *p) { phase_.store(p, std::memory_order_relaxed); }

private:
    // Counters are atomics only so that the watchdog thread may read them; one thread writes them.
    static uint64_t get(const std::atomic<uint64_t> &c) { return c.load(std::memory_order_relaxed); }
    static void bump(std::atomic<uint64_t> &c) { c.store(get(c) + 1, std::memory_order_relaxed); }

    void put(size_t size) {
        const uint64_t seq = get(seq_);
        std::memcpy(send_.data(), &seq, sizeof seq);
        check(PtlPut(md_, 0, size, PTL_ACK_REQ, peer_.id, peer_.pt, 0, 0, nullptr, 0), "PtlPut");
        bump(sent_);
    }

    // Consumes events until the peer's put of this round has arrived.
    void wait_put(size_t size) {
        ptl_event_t ev;
        do {
            check(PtlEQWait(eq_, &ev), "PtlEQWait");
        } while (!take(ev, size, true));
    }

    // Checks one event; true if it is the awaited PUT.
    bool take(const ptl_event_t &ev, size_t size, bool want_put) {
        switch (ev.type) {
        case PTL_EVENT_SEND:
            check_event(ev, "put");
            bump(sends_done_);
            return false;
        case PTL_EVENT_ACK:
            check_event(ev, "put");
            if (ev.mlength != size)
                throw Error("ACK reports mlength " + std::to_string(ev.mlength) + ", expected " + std::to_string(size));
            bump(acks_);
            return false;
        case PTL_EVENT_PUT: {
            check_event(ev, "incoming put");
            if (!want_put) throw Error("a PUT arrived when none was expected");
            if (ev.mlength != size || ev.rlength != size)
                throw Error("PUT event with rlength " + std::to_string(ev.rlength) + " mlength " +
                            std::to_string(ev.mlength) + ", expected " + std::to_string(size));
            if (ev.start != recv_.data()) throw Error("PUT event: start does not point at the receive buffer");
            uint64_t got;
            std::memcpy(&got, ev.start, sizeof got);
            if (got != get(seq_))
                throw Error("PUT carried sequence number " + std::to_string(got) + ", expected " +
                            std::to_string(get(seq_)));
            return true;
        }
        default:
            throw Error(std::string("unexpected event ") + event_name(ev.type) + " (" + fail_name(ev.ni_fail_type) + ")");
        }
    }

    int rank_;
    Library lib_;
    PhysicalNi ni_{PTL_NI_MATCHING};
    std::vector<unsigned char> send_, recv_;
    ptl_handle_eq_t eq_ = PTL_INVALID_HANDLE;
    ptl_pt_index_t pt_ = 0;
    bool pt_allocated_ = false;
    ptl_handle_me_t me_ = PTL_INVALID_HANDLE;
    bool me_linked_ = false;
    ptl_handle_md_t md_ = PTL_INVALID_HANDLE;
    bool md_bound_ = false;
    Peer peer_;
    std::atomic<uint64_t> seq_{0};        // round number, the same on both ranks
    std::atomic<uint64_t> sent_{0};       // puts started
    std::atomic<uint64_t> sends_done_{0}; // SEND events
    std::atomic<uint64_t> acks_{0};       // ACK events
    std::atomic<uint64_t> size_{0};
    std::atomic<const char *> phase_{"setting up"};
};

std::string env_note() {
    std::string s;
    for (const char *name : {"PORTICO_WAIT_SPIN_US", "PORTICO_PROGRESS_SPIN_US", "PORTICO_SHM_RING_BYTES",
                             "PORTICO_SHM_SINGLE_COPY", "PORTICO_SHM_SINGLE_COPY_BYTES"}) {
        const char *v = std::getenv(name);
        if (v && *v) s += std::string(s.empty() ? "" : " ") + name + "=" + v;
    }
    return s;
}

// A round trip never takes seconds: kWatchdogS without one means a lost event or a hang. A rank
// in the baseline only waits for its peer, so it gives the peer time to report first.
constexpr int kWatchdogS = 30;
void baseline_phase(PutPingPong &pp, Watchdog &dog) {
    pp.set_phase("waiting for the peer in the baseline ping-pong");
    dog.set_limit(kWatchdogS + 10);
}
void portals_phase(Watchdog &dog) {
    dog.beat();
    dog.set_limit(kWatchdogS);
}

void run_put_lat(Context &ctx) {
    Job &job = ctx.job;
    const bool short_mode = ctx.opt.short_mode;
    const std::vector<size_t> sizes = short_mode ? std::vector<size_t>{8} : std::vector<size_t>{8, 16, 64, 256, 1024, 4096};
    const uint64_t iters = ctx.opt.iters ? ctx.opt.iters : short_mode ? 1000 : 20000;
    const int reps = ctx.opt.reps ? ctx.opt.reps : short_mode ? 3 : 7;
    const uint64_t warmup = std::max<uint64_t>(100, iters / 10);

    PutPingPong pp(job);
    ShmPingPong shm(job);
    Watchdog dog(job, kWatchdogS, [&pp] { return pp.describe(); });
    job.barrier();

    ctx.report.begin("put_lat: one-way latency of PtlPut (PTL_ACK_REQ), ping-pong between 2 processes, "
                     "physical matching NIs, transport shm",
                     std::to_string(iters) + " round trips x " + std::to_string(reps) + " repetitions per size after " +
                         std::to_string(warmup) + " warm-up ones; medians [min .. max] over the repetitions; "
                         "baseline: raw shared-memory flag ping-pong, interleaved; ratio = value / baseline");
    const std::string env = env_note();
    if (!env.empty()) ctx.report.note("environment: " + env);

    for (size_t size : sizes) {
        baseline_phase(pp, dog);
        shm.run(warmup);
        portals_phase(dog);
        pp.run(size, warmup, dog);
        std::vector<double> value, baseline;
        for (int r = 0; r < reps; ++r) {
            baseline_phase(pp, dog);
            baseline.push_back(shm.run(iters));
            portals_phase(dog);
            const uint64_t t0 = now_ns();
            value.push_back(pp.run(size, iters, dog));
            if (ctx.opt.verbose && job.rank() == 0)
                std::fprintf(stderr, "put_lat size %zu rep %d: baseline %.4f us, put %.4f us (%.1f ms)\n", size, r,
                             baseline.back(), value.back(), static_cast<double>(now_ns() - t0) / 1e6);
        }
        Result res;
        res.test = "put_lat";
        res.procs = job.size();
        res.size = size;
        res.value = Stats::of(value);
        res.has_baseline = true;
        res.baseline = Stats::of(baseline);
        res.baseline_kind = "shm_flag_pingpong";
        res.reps = reps;
        res.iters = iters;
        res.warmup = warmup;
        ctx.report.result(res);
    }
    job.barrier(); // nobody closes its NI while the peer still talks to it
}

} // namespace

PORTICO_BENCH_TEST(put_lat, "one-way latency of PtlPut with ack (ping-pong), sizes 8..4096", 2, run_put_lat);

} // namespace portico::bench
