// SPDX-License-Identifier: BSD-3-Clause
#include "tcp_baseline.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.hpp"
#include "bench_settings.hpp"
#include "job.hpp"
#include "net.hpp"
#include "timing.hpp"

namespace portico::bench {

namespace {

constexpr size_t kChunk = 1u << 20;

[[noreturn]] void sys_fail(const std::string &what) {
    throw Error("raw TCP baseline: " + what + ": " + std::strerror(errno));
}

void set_nodelay(int fd) {
    const int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) sys_fail("setsockopt(TCP_NODELAY)");
}

// A blocking receive must not wait forever for a dead peer.
void set_timeouts(int fd) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(kPeerTimeoutNs / 1000000000ull);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
        sys_fail("setsockopt(SO_RCVTIMEO)");
}

// Reads exactly n bytes with a deadline (setup only).
bool read_hello(int fd, std::string &out, size_t n) {
    out.assign(n, '\0');
    size_t got = 0;
    const uint64_t deadline = now_ns() + 10ull * 1000000000ull;
    while (got < n) {
        pollfd p{fd, POLLIN, 0};
        const uint64_t t = now_ns();
        if (t >= deadline) return false;
        const int rc = poll(&p, 1, static_cast<int>((deadline - t) / 1000000) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) return false;
        const ssize_t r = recv(fd, out.data() + got, n - got, 0);
        if (r <= 0) return false;
        got += static_cast<size_t>(r);
    }
    return true;
}

} // namespace

TcpLink::TcpLink(Job &job) : rank_(job.rank()) {
    if (job.size() < 2) throw Error("the TCP baseline needs at least 2 processes");
    // Rank 1 listens; the token it publishes is "address:port", or "-" from the other ranks.
    int lfd = -1;
    std::string mine = "-";
    std::string error;
    if (rank_ == 1) {
        const std::string ip = listen_address();
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        socklen_t len = sizeof sa;
        if (inet_pton(AF_INET, ip.c_str(), &sa.sin_addr) != 1) {
            error = "bad listening address " + ip;
        } else if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
                   bind(lfd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || listen(lfd, 4) != 0 ||
                   getsockname(lfd, reinterpret_cast<sockaddr *>(&sa), &len) != 0) {
            error = "cannot listen on " + ip + ": " + std::strerror(errno);
        } else {
            mine = ip + ":" + std::to_string(ntohs(sa.sin_port));
        }
        if (!error.empty()) mine = "error";
    }
    const auto all = job.allgather(mine);
    address_ = all[1];
    if (!error.empty()) {
        if (lfd >= 0) close(lfd);
        throw Error("raw TCP baseline: " + error);
    }
    if (address_ == "error") throw Error("raw TCP baseline: rank 1 could not listen");
    const std::string hello = "portico-bench:" + job.id() + "\n";
    if (rank_ == 0) {
        const size_t colon = address_.rfind(':');
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address_.substr(colon + 1))));
        if (inet_pton(AF_INET, address_.substr(0, colon).c_str(), &sa.sin_addr) != 1)
            throw Error("raw TCP baseline: rank 1 published a malformed address '" + address_ + "'");
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) sys_fail("socket");
        if (connect(fd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) sys_fail("connect(" + address_ + ")");
        set_nodelay(fd_);
        set_timeouts(fd_);
        send_all(hello.data(), hello.size());
    } else if (rank_ == 1) {
        // Accept until rank 0 shows up with the job's hello; ignore anything else.
        const uint64_t deadline = now_ns() + kPeerTimeoutNs;
        while (fd_ < 0) {
            pollfd p{lfd, POLLIN, 0};
            const uint64_t t = now_ns();
            if (t >= deadline) {
                close(lfd);
                throw Error("raw TCP baseline: rank 0 did not connect to " + address_ + " within 60 s");
            }
            const int rc = poll(&p, 1, static_cast<int>((deadline - t) / 1000000) + 1);
            if (rc <= 0) continue;
            const int c = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            std::string got;
            if (read_hello(c, got, hello.size()) && got == hello) {
                fd_ = c;
            } else {
                close(c);
            }
        }
        close(lfd);
        set_nodelay(fd_);
        set_timeouts(fd_);
    }
    job.barrier();
}

TcpLink::~TcpLink() {
    if (fd_ >= 0) close(fd_);
}

void TcpLink::send_all(const void *p, size_t n, bool busy_poll) {
    const auto *b = static_cast<const unsigned char *>(p);
    unsigned spins = 0;
    uint64_t since = 0;
    while (n > 0) {
        const ssize_t r = send(fd_, b, n, MSG_NOSIGNAL | (busy_poll ? MSG_DONTWAIT : 0));
        if (r < 0) {
            if (errno == EINTR) continue;
            if (!busy_poll || (errno != EAGAIN && errno != EWOULDBLOCK)) sys_fail("send");
            cpu_pause();
            if ((++spins & 0xfff) == 0) {
                const uint64_t t = now_ns();
                if (since == 0)
                    since = t;
                else if (t - since > kPeerTimeoutNs)
                    throw Error("raw TCP baseline: the peer did not read for 60 s");
            }
            continue;
        }
        b += r;
        n -= static_cast<size_t>(r);
    }
}

void TcpLink::recv_exact(void *p, size_t n, bool busy_poll) {
    auto *b = static_cast<unsigned char *>(p);
    unsigned spins = 0;
    uint64_t since = 0;
    while (n > 0) {
        const ssize_t r = recv(fd_, b, n, busy_poll ? MSG_DONTWAIT : MSG_WAITALL);
        if (r > 0) {
            b += r;
            n -= static_cast<size_t>(r);
            continue;
        }
        if (r == 0) throw Error("raw TCP baseline: the peer closed the connection");
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) sys_fail("recv");
        if (!busy_poll) throw Error("raw TCP baseline: the peer did not answer for 60 s");
        cpu_pause();
        if ((++spins & 0xfff) == 0) {
            const uint64_t t = now_ns();
            if (since == 0)
                since = t;
            else if (t - since > kPeerTimeoutNs)
                throw Error("raw TCP baseline: the peer did not answer for 60 s");
        }
    }
}

TcpPingPong::TcpPingPong(Job &job) : link_(job), busy_(settings::kBenchTcpRecv.get() != "block") {}

std::string TcpPingPong::description() const {
    return std::string("raw TCP socket ping-pong (TCP_NODELAY, 8-byte messages, ") +
           (busy_ ? "busy-polling recv" : "blocking recv") + ")";
}

double TcpPingPong::run(uint64_t iters) {
    if (link_.rank() >= 2) return 0;
    const uint64_t base = seq_;
    seq_ += iters;
    uint64_t got = 0;
    const auto expect = [&](uint64_t want) {
        if (got != want)
            throw Error("raw TCP ping-pong: received " + std::to_string(got) + ", expected " + std::to_string(want));
    };
    if (link_.rank() == 0) {
        const uint64_t t0 = now_ns();
        for (uint64_t i = 1; i <= iters; ++i) {
            const uint64_t v = base + i;
            link_.send_all(&v, sizeof v);
            link_.recv_exact(&got, sizeof got, busy_);
            expect(v);
        }
        const uint64_t t1 = now_ns();
        return iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }
    for (uint64_t i = 1; i <= iters; ++i) {
        link_.recv_exact(&got, sizeof got, busy_);
        expect(base + i);
        link_.send_all(&got, sizeof got);
    }
    return 0;
}

TcpStream::TcpStream(Job &job)
    : link_(job), busy_(settings::kBenchTcpRecv.get() != "block"), buf_(link_.rank() < 2 ? kChunk : 0, 0x5a) {}

double TcpStream::run(uint64_t bytes) {
    if (link_.rank() >= 2) return 0;
    unsigned char ack = 0;
    if (link_.rank() == 0) {
        const uint64_t t0 = now_ns();
        for (uint64_t left = bytes; left > 0;) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kChunk));
            link_.send_all(buf_.data(), n, busy_);
            left -= n;
        }
        link_.recv_exact(&ack, 1, false);
        const uint64_t t1 = now_ns();
        if (ack != 1) throw Error("raw TCP stream: bad end-of-stream answer");
        return static_cast<double>(bytes) * 1000.0 / static_cast<double>(t1 - t0); // bytes/ns * 1000 = MB/s
    }
    for (uint64_t left = bytes; left > 0;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kChunk));
        link_.recv_exact(buf_.data(), n, busy_);
        left -= n;
    }
    ack = 1;
    link_.send_all(&ack, 1);
    return 0;
}

TcpRecordStream::TcpRecordStream(Job &job) : link_(job), busy_(settings::kBenchTcpRecv.get() != "block") {}

double TcpRecordStream::run(uint64_t records, uint64_t window) {
    if (link_.rank() >= 2) return 0;
    buf_.resize(window);
    const uint64_t base = sent_;
    sent_ += records;
    unsigned char ack = 0;
    const uint64_t t0 = now_ns();
    for (uint64_t done = 0; done < records; done += window) {
        if (link_.rank() == 0) {
            for (uint64_t i = 0; i < window; ++i) buf_[i] = base + done + i;
            link_.send_all(buf_.data(), window * sizeof(uint64_t), busy_);
            link_.recv_exact(&ack, 1, busy_);
            if (ack != 1) throw Error("raw TCP record stream: bad window answer");
        } else {
            link_.recv_exact(buf_.data(), window * sizeof(uint64_t), busy_);
            for (uint64_t i = 0; i < window; ++i)
                if (buf_[i] != base + done + i) throw Error("raw TCP record stream: records out of order");
            ack = 1;
            link_.send_all(&ack, 1, busy_);
        }
    }
    const uint64_t t1 = now_ns();
    return link_.rank() == 0 ? static_cast<double>(records) * 1000.0 / static_cast<double>(t1 - t0) : 0;
}

} // namespace portico::bench
