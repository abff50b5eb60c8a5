// SPDX-License-Identifier: BSD-3-Clause
// The two barriers of triggered_barrier (and upc_barrier_lat, which measures them next to UPC's):
// a barrier over N processes built only from triggered puts and counters on a binary tree (as
// examples/triggered_collectives.c, on physical NIs), the way collective libraries offload
// barriers onto Portals: after setup the application only bumps its own counter and waits. And
// the physical baseline: a raw shared-memory barrier among the same processes (one shared counter
// page; each arrival is a fetch_add, the last one advances a generation word the others spin on
// for a while and then sleep on with a process-shared futex — pure spinning collapses when there
// are more processes than cores).
#pragma once

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <linux/futex.h>
#include <random>
#include <string>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "bench.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {

class ShmBarrier {
public:
    explicit ShmBarrier(Job &job) : n_(static_cast<uint64_t>(job.size())) {
        std::string name;
        if (job.rank() == 0) {
            name = "/portico-bench-bar-" + job.id() + "-" + std::to_string(std::random_device{}());
            fd_ = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd_ < 0 || ftruncate(fd_, 4096) != 0) throw Error("shm_open(" + name + "): " + std::strerror(errno));
        }
        const auto names = job.allgather(job.rank() == 0 ? name : std::string("-"));
        if (job.rank() != 0) {
            fd_ = shm_open(names[0].c_str(), O_RDWR | O_CLOEXEC, 0600);
            if (fd_ < 0) throw Error("shm_open(" + names[0] + "): " + std::strerror(errno));
        }
        void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) throw Error(std::string("mmap: ") + std::strerror(errno));
        mem_ = static_cast<unsigned char *>(p);
        job.barrier();
        if (job.rank() == 0) shm_unlink(names[0].c_str()); // everybody has it mapped: nothing left behind
    }
    ~ShmBarrier() {
        if (mem_) munmap(mem_, 4096);
        if (fd_ >= 0) close(fd_);
    }
    // `iters` barriers; returns µs per barrier.
    double run(uint64_t iters) {
        auto &arrived = *reinterpret_cast<std::atomic<uint64_t> *>(mem_);
        auto &generation = *reinterpret_cast<std::atomic<uint32_t> *>(mem_ + 128); // its own cache line
        auto &sleepers = *reinterpret_cast<std::atomic<uint32_t> *>(mem_ + 256);
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; ++i) {
            const uint32_t gen = generation.load(std::memory_order_acquire);
            if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == n_ * (uint64_t(gen) + 1)) {
                generation.store(gen + 1, std::memory_order_seq_cst);
                if (sleepers.load(std::memory_order_seq_cst) > 0)
                    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&generation), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
                            0);
                continue;
            }
            for (int spin = 0; generation.load(std::memory_order_acquire) == gen; ++spin) {
                if (spin < 4000)
                    __builtin_ia32_pause();
                else {
                    sleepers.fetch_add(1, std::memory_order_seq_cst);
                    if (generation.load(std::memory_order_seq_cst) == gen)
                        syscall(SYS_futex, reinterpret_cast<uint32_t *>(&generation), FUTEX_WAIT, gen, nullptr, nullptr,
                                0);
                    sleepers.fetch_sub(1, std::memory_order_seq_cst);
                }
            }
        }
        return static_cast<double>(now_ns() - t0) / 1000.0 / static_cast<double>(iters ? iters : 1);
    }

private:
    uint64_t n_;
    int fd_ = -1;
    unsigned char *mem_ = nullptr;
};

class TriggeredBarrier {
public:
    explicit TriggeredBarrier(Job &job) : rank_(job.rank()), n_(job.size()) {
        up_ = counted_entry();
        down_ = counted_entry();
        zero_ = ck::bind_md(ni_.get(), ck::md_desc(nullptr, 0));
        // Each rank publishes one id; the two entries use consecutive pt indexes (checked below).
        if (down_.pt.index() != up_.pt.index() + 1) throw Error("portal table entries are not consecutive");
        peers_ = exchange_peers(job, ni_.phys_id(), up_.pt.index());
        for (int c = 2 * rank_ + 1; c <= 2 * rank_ + 2 && c < n_; ++c) children_.push_back(c);
    }
    // `iters` barriers; returns µs per barrier.
    double run(uint64_t iters, Watchdog &dog) {
        const uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; ++i) {
            once();
            dog.beat();
        }
        return static_cast<double>(now_ns() - t0) / 1000.0 / static_cast<double>(iters ? iters : 1);
    }
    std::string describe() const {
        return "in triggered barrier " + std::to_string(round_.load(std::memory_order_relaxed));
    }

private:
    // A portal table entry whose ME counts the zero-byte puts that arrive.
    struct Counted {
        ck::Ct ct;
        ck::Pt pt;
        ck::Me me;
    };
    Counted counted_entry() {
        Counted c;
        c.ct = ck::alloc_ct(ni_.get());
        c.pt = ck::alloc_pt(ni_.get(), PTL_EQ_NONE);
        c.me = ck::append_me(ni_.get(), c.pt.index(),
                             ck::me_desc(nullptr, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 0, 0, c.ct.get()));
        return c;
    }
    void send_to(int rank, ptl_pt_index_t pt_offset, ptl_handle_ct_t trig, ptl_size_t threshold) {
        const Peer &p = peers_[static_cast<size_t>(rank)];
        check(PtlTriggeredPut(zero_.get(), 0, 0, PTL_NO_ACK_REQ, p.id, p.pt + pt_offset, 0, 0, nullptr, 0, trig,
                              threshold),
              "PtlTriggeredPut");
    }
    void once() {
        const ptl_size_t k = round_.load(std::memory_order_relaxed) + 1;
        round_.store(k, std::memory_order_relaxed);
        const ptl_size_t all_arrived = k * (children_.size() + 1);
        const ptl_handle_ct_t up = up_.ct.get(), down = down_.ct.get();
        for (int c : children_) send_to(c, 1, rank_ ? down : up, rank_ ? k : all_arrived); // release
        if (rank_) send_to((rank_ - 1) / 2, 0, up, all_arrived);                           // arrived
        const ptl_ct_event_t one = {1, 0};
        check(PtlCTInc(up, one), "PtlCTInc");
        ck::wait_ct(rank_ ? down : up, rank_ ? k : all_arrived, "the barrier's counter");
    }

    int rank_, n_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    Counted up_, down_;
    ck::Md zero_;
    std::vector<Peer> peers_;
    std::vector<int> children_;
    std::atomic<ptl_size_t> round_{0}; // atomic only for the watchdog thread
};

} // namespace portico::bench
