// SPDX-License-Identifier: BSD-3-Clause
// PSM2 (Portico's libpsm2, src/psm2) inside a portico-bench process, for the psm2_* tests, and the
// two MQ loops they time.
//
// Psm2Session opens PSM2 as a PSM2 client does: psm2_init, one endpoint (psm2_ep_open with a
// fixed job key), the epids exchanged over the job's allgather (never over the library measured),
// psm2_ep_connect to every other rank, psm2_mq_init. Errors return codes (the global handler is
// PSM2_ERRHANDLER_NO_HANDLER) and become bench::Error naming the call.
//
// The library is one more Portals client of the process: its own PtlInit and the physical matching
// NI that the benchmark's Portals baselines (put_pingpong.hpp, bw.hpp) open too; a second
// PtlNIInit of that kind returns the same NI. Two rules follow:
// - the session opens before the benchmark's own Portals objects: endpoint c claims the fixed
//   portal table indexes 16 + 3c .. 18 + 3c, which an object allocated with PTL_PT_ANY earlier
//   could take, and the NI keeps the limits of its first PtlNIInit (PSM2 asks for enough indexes);
// - it closes after them: psm2_finalize makes the process's last PtlFini, which ends the engine
//   for good.
// A test therefore declares its Psm2Session before its other objects.
#pragma once

#include <psm2.h>
#include <psm2_mq.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace portico::bench {

class Job;
class Watchdog;

// The tags of the tests' messages: "PSM2" in the high word, the purpose in the low one (matched
// exactly: tag selector ~0).
constexpr uint64_t kPsm2TagBase = uint64_t{0x50534D32} << 32;
constexpr uint64_t kPsm2TagData = kPsm2TagBase | 1; // a stream's messages
constexpr uint64_t kPsm2TagAck = kPsm2TagBase | 2;  // a stream's answer to a window
constexpr uint64_t kPsm2TagPing = kPsm2TagBase | 3; // ping-pong, rank 0 to rank 1
constexpr uint64_t kPsm2TagPong = kPsm2TagBase | 4; // ping-pong, rank 1 to rank 0

class Psm2Session {
public:
    // Collective over the job.
    explicit Psm2Session(Job &job);
    // Not collective: psm2_ep_close (graceful, bounded; forced when an exception is unwinding, since
    // main() then ends the whole job) and psm2_finalize. A test ends with a job barrier before it,
    // so that nobody closes while a peer still sends to it.
    ~Psm2Session();
    Psm2Session(const Psm2Session &) = delete;
    Psm2Session &operator=(const Psm2Session &) = delete;

    psm2_mq_t mq() const { return mq_; }
    // The connected address of `rank` (not this rank's own).
    psm2_epaddr_t peer(int rank) const { return addrs_.at(static_cast<size_t>(rank)); }
    // Whether PSM2 reaches `rank` through shared memory (psm2_ep_epid_share_memory), and the
    // largest message it sends there eagerly (PSM2_MQ_RNDV_SHM_SZ or PSM2_MQ_RNDV_HFI_SZ): larger
    // ones take the rendezvous protocol.
    bool shares_memory(int rank) const;
    uint32_t eager_limit(int rank) const;
    // "eager" or "rendezvous": the protocol a `size`-byte message to `rank` takes.
    std::string protocol(int rank, uint64_t size) const { return size > eager_limit(rank) ? "rendezvous" : "eager"; }

    // Throws bench::Error naming `what` unless err is PSM2_OK.
    static void check(psm2_error_t err, const char *what);

private:
    int rank_;
    psm2_ep_t ep_ = nullptr;
    psm2_epid_t epid_ = 0;
    psm2_mq_t mq_ = nullptr;
    bool initialized_ = false;
    std::vector<psm2_epid_t> epids_;
    std::vector<psm2_epaddr_t> addrs_;
};

// psm2_mq_irecv of exactly `tag` into buf; the request.
psm2_mq_req_t psm2_post_recv(psm2_mq_t mq, uint64_t tag, void *buf, uint32_t len);
// psm2_mq_wait for a receive; bench::Error unless the whole message, `len` bytes, came.
void psm2_wait_recv(psm2_mq_req_t *req, uint32_t len, const char *what);

// A stream of MQ messages from rank 0 to rank 1 in windows (psm2_bw, psm2_rate). Rank 1 keeps the
// receives of a whole window posted before rank 0 sends it (psm2_mq_irecv), waits for all of them
// (psm2_mq_wait, each status checked), posts the next window's receives and then answers with an
// 8-byte message; rank 0 posts the receive of that answer, starts the window's sends
// (psm2_mq_isend, all from the same buffer), waits for each send to complete and then for the
// answer. Every message of a repetition carries the same bytes into the same receive buffer; the
// sender stamps its buffer before the repetition and the receiver checks it afterwards.
class Psm2Stream {
public:
    static constexpr uint64_t kWindow = 64;
    Psm2Stream(Psm2Session &s, int rank, size_t max_size);
    Psm2Stream(const Psm2Stream &) = delete;
    Psm2Stream &operator=(const Psm2Stream &) = delete;

    // Before a repetition (then a job barrier): the sender stamps, the receiver posts the first
    // window's receives. `msgs` must be a multiple of kWindow.
    void prepare(size_t size, uint64_t msgs, uint64_t stamp);
    // Rank 0 returns the rate in messages per microsecond (size x that = MB/s) from its first send to
    // the last window's answer; rank 1 returns 0 once it has answered the last window.
    double run(Watchdog &dog);
    // After the repetition (and a job barrier): the receiver checks the stamp and the count.
    void check(uint64_t stamp) const;
    // One repetition, all of the above between the job's barriers and the watchdog's phases:
    // run's value at rank 0.
    double measure(Job &job, Watchdog &dog, size_t size, uint64_t msgs, uint64_t stamp);
    // Whether a repetition is under way (the watchdog describes the stream then).
    bool running() const { return running_.load(std::memory_order_relaxed); }

    std::string describe() const;

private:
    void post_receives();

    Psm2Session &s_;
    int rank_;
    std::vector<unsigned char> buf_;
    uint64_t ack_ = 0; // rank 0: the answer's buffer; rank 1: what it answers
    std::vector<psm2_mq_req_t> reqs_;
    size_t size_ = 0;
    uint64_t msgs_ = 0;
    // Atomics only for the watchdog thread; one thread writes them.
    std::atomic<uint64_t> started_{0}, completed_{0}, windows_{0};
    std::atomic<bool> running_{false};
};

} // namespace portico::bench
