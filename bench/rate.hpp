// SPDX-License-Identifier: BSD-3-Clause
// rate.hpp: put_rate's (get_rate's, atomic_rate's) Portals loop, shared with psm2_rate, which
// measures Portals' put rate in the same run as its PSM2 messages.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {

inline constexpr uint64_t kRateWindow = 64;

enum class RateOp { Put, Get, Atomic };

inline const char *op_name(RateOp op) {
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
        for (uint64_t done = 0; done < ops; done += kRateWindow) {
            for (uint64_t i = 0; i < kRateWindow; ++i) {
                const bool last = i + 1 == kRateWindow;
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

    // One repetition as put_rate (get_rate, atomic_rate) makes it, on every rank: rank 0 runs
    // `ops` operations while rank 1's application idles in a barrier. Rank 0's Mop/s (0 elsewhere).
    double measure(Job &job, Watchdog &dog, uint64_t ops) {
        job.barrier();
        dog.portals_phase();
        const double rate = run(ops, dog);
        dog.peer_phase();
        job.barrier();
        return rate;
    }
    // At the end, on every rank: rank 1's counter must have seen every operation rank 0 sent.
    void verify(Job &job) {
        const auto counts = job.allgather(std::to_string(sent()));
        if (job.rank() == 1) check_received(std::stoull(counts[0]));
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

} // namespace portico::bench
