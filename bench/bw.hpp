// SPDX-License-Identifier: BSD-3-Clause
// The Portals side of put_bw and get_bw (bw.cpp), also measured by psm2_bw and upc_bw next to
// their own transfers: windowed PtlPut (PTL_ACK_REQ) or PtlGet from rank 0 to an idle rank 1,
// completion counted on a CT (bw.cpp's header says how).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <portico_ext.h>

#include "bench.hpp"
#include "bench_settings.hpp"
#include "job.hpp"
#include "portals_util.hpp"
#include "throughput.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {

class Bandwidth {
public:
    static constexpr size_t kMaxSize = 16u << 20; // the largest message, and both ranks' buffer
    Bandwidth(Job &job, bool get) : rank_(job.rank()), get_(get), buf_(kMaxSize) {
        if (settings::kBenchSegment.get()) buf_.use_segment();
        ct_ = ck::alloc_ct(ni_.get());
        pt_ = ck::alloc_pt(ni_.get(), PTL_EQ_NONE);
        me_ = ck::append_me(ni_.get(), pt_.index(),
                            ck::me_desc(buf_.data(), buf_.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM,
                                        0, 0, ct_.get()));
        md_ = ck::bind_md(ni_.get(), ck::md_desc(buf_.data(), buf_.size(), PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY,
                                                 PTL_EQ_NONE, ct_.get()));
        peer_ = exchange_peers(job, ni_.phys_id(), pt_.index())[rank_ == 0 ? 1 : 0];
    }

    unsigned char *buffer() { return buf_.data(); }
    // PORTICO_BENCH_SEGMENT: this rank's buffer as a shared segment (nullptr otherwise).
    const portico_segment_t *segment() const { return buf_.segment(); }

    // One repetition as put_bw (get_bw) makes it, on every rank: the source stamps its buffer, rank
    // 0 starts `msgs` operations in windows of `window` while rank 1's application idles in a
    // barrier, and the destination checks the stamp. Returns rank 0's MB/s (0 elsewhere).
    double measure(Job &job, Watchdog &dog, size_t size, uint64_t msgs, uint64_t window, uint64_t stamp_value) {
        if ((rank_ == 0) != get_) write_stamp(buf_.data(), size, stamp_value); // the source's buffer
        job.barrier();
        dog.portals_phase();
        const double mbps = run(size, msgs, window, dog);
        dog.peer_phase();
        job.barrier();
        if ((rank_ == 0) == get_) check_stamp(buf_.data(), size, stamp_value, get_ ? "get" : "put");
        return mbps;
    }

    // Rank 0: `msgs` operations of `size` bytes in windows of `window`; returns MB/s. Rank 1: 0.
    double run(size_t size, uint64_t msgs, uint64_t window, Watchdog &dog) {
        if (rank_ != 0) return 0;
        size_.store(size, std::memory_order_relaxed);
        const std::string what = std::string(get_ ? "gets" : "puts") + " of " + std::to_string(size) +
                                 " bytes in windows of " + std::to_string(window) + " (counted on the MD's CT)";
        const uint64_t t0 = now_ns();
        for (uint64_t done = 0; done < msgs;) {
            const uint64_t n = std::min(window, msgs - done);
            for (uint64_t i = 0; i < n; ++i) {
                if (get_)
                    check(PtlGet(md_.get(), 0, size, peer_.id, peer_.pt, 0, 0, nullptr), "PtlGet");
                else
                    check(PtlPut(md_.get(), 0, size, PTL_ACK_REQ, peer_.id, peer_.pt, 0, 0, nullptr, 0), "PtlPut");
                started_.store(started_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            }
            ck::wait_ct(ct_.get(), started(), what.c_str());
            done += n;
            dog.beat();
        }
        const uint64_t t1 = now_ns();
        return static_cast<double>(size) * static_cast<double>(msgs) * 1000.0 / static_cast<double>(t1 - t0);
    }

    uint64_t started() const { return started_.load(std::memory_order_relaxed); }
    // Rank 1: its count of the operations rank 0 started, once it reaches `expected` or after 5 s.
    // A get's REPLY can reach rank 0 before rank 1's engine has counted the get, so one look
    // right after rank 0 finished may come up one short.
    uint64_t counted(uint64_t expected) {
        ptl_ct_event_t c{};
        ptl_handle_ct_t ct = ct_.get();
        unsigned which = 0;
        const int rc = PtlCTPoll(&ct, &expected, 1, 5000, &c, &which);
        if (rc == PTL_CT_NONE_REACHED)
            check(PtlCTGet(ct, &c), "PtlCTGet");
        else
            check(rc, "PtlCTPoll");
        if (c.failure) throw Error(std::to_string(c.failure) + " operations failed at the target");
        return c.success;
    }
    std::string describe() const {
        return std::string(get_ ? "gets" : "puts") + " of " + std::to_string(size_.load(std::memory_order_relaxed)) +
               " bytes: " + std::to_string(started()) + " started, waiting for their completion on the counter";
    }

private:
    int rank_;
    bool get_;
    ck::Library lib_;
    ck::Ni ni_{kPhysicalMatching};
    // The buffer: ordinary memory, or a shared segment (PORTICO_BENCH_SEGMENT).
    class Buffer {
    public:
        explicit Buffer(size_t n) : vec_(n) {}
        ~Buffer() {
            if (seg_) portico_segment_destroy(seg_, &id_);
        }
        Buffer(const Buffer &) = delete;
        Buffer &operator=(const Buffer &) = delete;
        void use_segment() {
            void *p = nullptr;
            if (portico_segment_create(vec_.size(), nullptr, &p, &id_) != PTL_OK)
                throw Error("portico_segment_create of " + std::to_string(vec_.size()) + " bytes failed");
            seg_ = static_cast<unsigned char *>(p);
        }
        unsigned char *data() { return seg_ ? seg_ : vec_.data(); }
        size_t size() const { return vec_.size(); }
        const portico_segment_t *segment() const { return seg_ ? &id_ : nullptr; }

    private:
        std::vector<unsigned char> vec_;
        unsigned char *seg_ = nullptr;
        portico_segment_t id_{};
    };
    Buffer buf_;
    ck::Ct ct_;
    ck::Pt pt_;
    ck::Me me_;
    ck::Md md_;
    Peer peer_;
    std::atomic<uint64_t> started_{0}, size_{0};
};

} // namespace portico::bench
