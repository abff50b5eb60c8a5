// SPDX-License-Identifier: BSD-3-Clause
#include "psm2_session.hpp"

#include <cstring>
#include <exception>
#include <string>

#include "bench.hpp"
#include "job.hpp"
#include "timing.hpp"
#include "watchdog.hpp"

namespace portico::bench {

namespace {

// The job key every rank opens its endpoint with: fixed, since all ranks of a portico-bench job
// run the same test (Portico's libpsm2 also makes it the TCP job secret unless the launcher set
// one, which portico-run does).
constexpr psm2_uuid_t kJobKey = {'p', 'o', 'r', 't', 'i', 'c', 'o', '-', 'b', 'e', 'n', 'c', 'h', 'p', 's', 'm'};

constexpr int64_t kConnectTimeoutNs = 30'000'000'000;
constexpr int64_t kCloseTimeoutNs = 10'000'000'000;

} // namespace

void Psm2Session::check(psm2_error_t err, const char *what) {
    if (err != PSM2_OK)
        throw Error(std::string(what) + " failed: " + psm2_error_get_string(err) + " (" + std::to_string(err) + ")");
}

Psm2Session::Psm2Session(Job &job) : rank_(job.rank()) {
    if (job.size() < 2) throw Error("the PSM2 tests need at least 2 processes");
    check(psm2_error_register_handler(nullptr, PSM2_ERRHANDLER_NO_HANDLER), "psm2_error_register_handler");
    int major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    check(psm2_init(&major, &minor), "psm2_init");
    initialized_ = true;
    psm2_ep_open_opts opts{};
    check(psm2_ep_open_opts_get_defaults(&opts), "psm2_ep_open_opts_get_defaults");
    check(psm2_ep_open(kJobKey, &opts, &ep_, &epid_), "psm2_ep_open");

    const std::vector<std::string> all = job.allgather(std::to_string(epid_));
    const int n = job.size();
    epids_.resize(static_cast<size_t>(n));
    std::vector<int> mask(static_cast<size_t>(n), 1);
    for (size_t r = 0; r < all.size(); ++r) epids_[r] = std::stoull(all[r]);
    mask[static_cast<size_t>(rank_)] = 0;
    std::vector<psm2_error_t> errors(static_cast<size_t>(n), PSM2_OK);
    addrs_.assign(static_cast<size_t>(n), nullptr);
    const psm2_error_t err =
        psm2_ep_connect(ep_, n, epids_.data(), mask.data(), errors.data(), addrs_.data(), kConnectTimeoutNs);
    if (err != PSM2_OK) {
        std::string which;
        for (int r = 0; r < n; ++r)
            if (r != rank_ && errors[static_cast<size_t>(r)] != PSM2_OK)
                which += " rank " + std::to_string(r) + ": " + psm2_error_get_string(errors[static_cast<size_t>(r)]);
        throw Error(std::string("psm2_ep_connect failed: ") + psm2_error_get_string(err) + ";" + which);
    }
    check(psm2_mq_init(ep_, PSM2_MQ_ORDERMASK_ALL, nullptr, 0, &mq_), "psm2_mq_init");
}

Psm2Session::~Psm2Session() {
    if (ep_) {
        if (std::uncaught_exceptions() == 0)
            psm2_ep_close(ep_, PSM2_EP_CLOSE_GRACEFUL, kCloseTimeoutNs);
        else
            psm2_ep_close(ep_, PSM2_EP_CLOSE_FORCE, 0);
    }
    if (initialized_) psm2_finalize();
}

bool Psm2Session::shares_memory(int rank) const {
    int result = 0;
    check(psm2_ep_epid_share_memory(ep_, epids_.at(static_cast<size_t>(rank)), &result), "psm2_ep_epid_share_memory");
    return result != 0;
}

uint32_t Psm2Session::eager_limit(int rank) const {
    uint32_t v = 0;
    check(psm2_mq_getopt(mq_, shares_memory(rank) ? PSM2_MQ_RNDV_SHM_SZ : PSM2_MQ_RNDV_HFI_SZ, &v), "psm2_mq_getopt");
    return v;
}

psm2_mq_req_t psm2_post_recv(psm2_mq_t mq, uint64_t tag, void *buf, uint32_t len) {
    psm2_mq_req_t req = nullptr;
    Psm2Session::check(psm2_mq_irecv(mq, tag, ~uint64_t{0}, 0, buf, len, nullptr, &req), "psm2_mq_irecv");
    return req;
}

void psm2_wait_recv(psm2_mq_req_t *req, uint32_t len, const char *what) {
    psm2_mq_status_t st{};
    Psm2Session::check(psm2_mq_wait(req, &st), "psm2_mq_wait (receive)");
    if (st.error_code != PSM2_OK)
        throw Error(std::string(what) + ": the receive completed with " + psm2_error_get_string(st.error_code));
    if (st.msg_length != len || st.nbytes != len)
        throw Error(std::string(what) + ": received " + std::to_string(st.nbytes) + " of " +
                    std::to_string(st.msg_length) + " bytes, expected " + std::to_string(len));
}

// ---- Psm2Stream -----------------------------------------------------------------------------------

Psm2Stream::Psm2Stream(Psm2Session &s, int rank, size_t max_size)
    : s_(s), rank_(rank), buf_(rank <= 1 ? max_size : 0), reqs_(kWindow) {}

void Psm2Stream::prepare(size_t size, uint64_t msgs, uint64_t stamp) {
    if (size < sizeof(uint64_t) || size > buf_.size()) throw Error("psm2 stream: message size out of range");
    if (msgs == 0 || msgs % kWindow != 0) throw Error("psm2 stream: the messages must be whole windows");
    size_ = size;
    msgs_ = msgs;
    ack_ = 0;
    if (rank_ == 0) {
        write_stamp(buf_.data(), size, stamp);
    } else if (rank_ == 1) {
        std::memset(buf_.data(), 0, sizeof(uint64_t));
        std::memset(buf_.data() + size - sizeof(uint64_t), 0, sizeof(uint64_t));
        post_receives();
    }
}

void Psm2Stream::post_receives() {
    for (psm2_mq_req_t &r : reqs_) r = psm2_post_recv(s_.mq(), kPsm2TagData, buf_.data(), static_cast<uint32_t>(size_));
}

double Psm2Stream::run(Watchdog &dog) {
    if (rank_ > 1) return 0;
    const auto len = static_cast<uint32_t>(size_);
    const uint64_t windows = msgs_ / kWindow;
    auto bump = [](std::atomic<uint64_t> &c) {
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    };
    if (rank_ == 1) {
        psm2_epaddr_t to = s_.peer(0);
        for (uint64_t w = 0; w < windows; ++w) {
            for (psm2_mq_req_t &r : reqs_) {
                psm2_wait_recv(&r, len, "psm2 stream");
                bump(completed_);
                dog.beat();
            }
            if (w + 1 < windows) post_receives();
            ack_ = w;
            Psm2Session::check(psm2_mq_send(s_.mq(), to, 0, kPsm2TagAck, &ack_, sizeof ack_), "psm2_mq_send (answer)");
            bump(windows_);
        }
        return 0;
    }
    psm2_epaddr_t to = s_.peer(1);
    uint64_t answer = ~uint64_t{0};
    const uint64_t t0 = now_ns();
    for (uint64_t w = 0; w < windows; ++w) {
        psm2_mq_req_t ack = psm2_post_recv(s_.mq(), kPsm2TagAck, &answer, sizeof answer);
        for (psm2_mq_req_t &r : reqs_) {
            Psm2Session::check(psm2_mq_isend(s_.mq(), to, 0, kPsm2TagData, buf_.data(), len, nullptr, &r),
                               "psm2_mq_isend");
            bump(started_);
        }
        for (psm2_mq_req_t &r : reqs_) {
            psm2_mq_status_t st{};
            Psm2Session::check(psm2_mq_wait(&r, &st), "psm2_mq_wait (send)");
            if (st.error_code != PSM2_OK)
                throw Error(std::string("psm2 stream: a send completed with ") + psm2_error_get_string(st.error_code));
            bump(completed_);
            dog.beat();
        }
        psm2_wait_recv(&ack, sizeof answer, "psm2 stream answer");
        if (answer != w)
            throw Error("psm2 stream: the answer names window " + std::to_string(answer) + ", expected " +
                        std::to_string(w));
        bump(windows_);
    }
    const uint64_t t1 = now_ns();
    return static_cast<double>(msgs_) * 1000.0 / static_cast<double>(t1 - t0);
}

double Psm2Stream::measure(Job &job, Watchdog &dog, size_t size, uint64_t msgs, uint64_t stamp) {
    prepare(size, msgs, stamp);
    job.barrier();
    dog.portals_phase();
    running_.store(true, std::memory_order_relaxed);
    const double v = run(dog);
    running_.store(false, std::memory_order_relaxed);
    dog.peer_phase();
    job.barrier();
    check(stamp);
    return v;
}

void Psm2Stream::check(uint64_t stamp) const {
    if (rank_ == 1) check_stamp(buf_.data(), size_, stamp, "psm2 stream");
}

std::string Psm2Stream::describe() const {
    return "psm2 stream of " + std::to_string(size_) + "-byte messages, rank " + std::to_string(rank_) + ": " +
           std::to_string(started_.load(std::memory_order_relaxed)) + " sends started, " +
           std::to_string(completed_.load(std::memory_order_relaxed)) + " requests completed, " +
           std::to_string(windows_.load(std::memory_order_relaxed)) + " windows answered";
}

} // namespace portico::bench
