// SPDX-License-Identifier: BSD-3-Clause
// The TCP baselines, used when the transport is TCP: a raw TCP connection between ranks 0 and 1,
// set up without Portico. Rank 1 listens on listen_address() (net.hpp), port chosen by the kernel,
// and publishes "address:port" over PMI; rank 0 connects and sends the job id, which rank 1
// checks (a stranger's connection is closed and ignored). TCP_NODELAY on both ends.
//
// TcpPingPong: 8-byte messages back and forth; one-way latency = round trip / 2.
// TcpStream: rank 0 writes N bytes in 1 MiB writes, rank 1 reads them (1 MiB reads) and answers
// one byte when it has all of them; rank 0's time from the first write to that byte gives MB/s.
//
// TcpRecordStream: the message-rate baseline (put_rate over TCP). Rank 0 sends 8-byte records
// (counting up by one) in windows: each window is one write of all its records, and rank 1, having
// read and checked them, answers one byte, for which rank 0 waits before the next window.
//
// Both busy-poll by default (recv/send with MSG_DONTWAIT in a loop, pause between tries), which
// gave the faster raw numbers (see docs/PERFORMANCE.md); PORTICO_BENCH_TCP_RECV=block selects
// blocking calls. The baseline_kind says which: tcp_pingpong_busypoll / tcp_pingpong_blocking,
// tcp_stream_busypoll / tcp_stream_blocking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "latency_baseline.hpp"

namespace portico::bench {

class Job;

class TcpLink {
public:
    explicit TcpLink(Job &job); // collective over the job (at least 2 ranks); ranks >= 2 get no socket
    ~TcpLink();
    TcpLink(const TcpLink &) = delete;
    TcpLink &operator=(const TcpLink &) = delete;

    int rank() const { return rank_; }
    // Rank 1's address, as rank 0 connected to it ("a.b.c.d:port").
    const std::string &address() const { return address_; }

    // Both spin (pause) on a full or empty socket with busy_poll, else block.
    void send_all(const void *p, size_t n, bool busy_poll = false);
    void recv_exact(void *p, size_t n, bool busy_poll);

private:
    int rank_;
    int fd_ = -1;
    std::string address_;
};

class TcpPingPong : public LatencyBaseline {
public:
    explicit TcpPingPong(Job &job);
    double run(uint64_t iters) override;
    std::string kind() const override { return busy_ ? "tcp_pingpong_busypoll" : "tcp_pingpong_blocking"; }
    std::string description() const override;

private:
    TcpLink link_;
    bool busy_;
    uint64_t seq_ = 0;
};

class TcpStream {
public:
    explicit TcpStream(Job &job);
    // Ranks 0 and 1 call it with the same `bytes`; rank 0 returns MB/s (10^6 bytes/s), others 0.
    double run(uint64_t bytes);
    const char *kind() const { return busy_ ? "tcp_stream_busypoll" : "tcp_stream_blocking"; }

private:
    TcpLink link_;
    bool busy_;
    std::vector<unsigned char> buf_;
};

class TcpRecordStream {
public:
    explicit TcpRecordStream(Job &job);
    // `records` (a multiple of `window`) 8-byte records; ranks 0 and 1 call it with the same
    // arguments. Rank 0 returns Mmsg/s, the others 0.
    double run(uint64_t records, uint64_t window);
    const char *kind() const { return busy_ ? "tcp_record_stream_busypoll" : "tcp_record_stream_blocking"; }

private:
    TcpLink link_;
    bool busy_;
    uint64_t sent_ = 0; // records so far (both ranks advance it alike)
    std::vector<uint64_t> buf_;
};

} // namespace portico::bench
