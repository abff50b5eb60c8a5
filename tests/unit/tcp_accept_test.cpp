// SPDX-License-Identifier: BSD-3-Clause
// How a TCP endpoint takes connections that have not authenticated yet (docs/ARCHITECTURE.md,
// *Connections that have not authenticated*): the
// slots they may hold are shared out (per stranger's address; the oldest silent one goes first,
// strangers before the job's peers), a dropped connection is told why, and a connector that is
// dropped while the acceptor is busy or waited too long connects again instead of failing. Both
// endpoints live in this process and are polled by hand; the "flood" is raw sockets from other
// loopback addresses.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "free_endpoint.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/port_holder.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace {

using namespace portico::transport;

constexpr uint32_t kLoopback = 0x7f000001;

struct Recorder final : Receiver {
    int frames = 0, failures = 0;
    void on_frame(Link &, const FrameHeader &, const std::byte *) override { ++frames; }
    void on_link_failed(Link &, bool) override { ++failures; }
    void on_send_complete(uint64_t, bool, bool) override {}
};

std::unique_ptr<tcp::TcpTransport> open_tcp(const tcp::TcpConfig &cfg) {
    return portico::test::open_free(
        [&](uint32_t pid) { return std::make_unique<tcp::TcpTransport>(kLoopback, pid, cfg); });
}

FrameHeader message() {
    FrameHeader h{};
    h.t.protocol = Protocol::Portals;
    h.t.protocol_bytes = 8;
    return h;
}

bool poll_until(const std::function<bool()> &pred, const std::function<void()> &turn) {
    for (long i = 0; i < 20000; ++i) {
        if (pred()) return true;
        turn();
    }
    return pred();
}

// A connection to endpoint `to` from loopback address `from` (host order) that says nothing.
int silent_connection(uint32_t from, PeerId to, uint32_t port_base = 16384) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(from);
    EXPECT_EQ(0, ::bind(fd, reinterpret_cast<sockaddr *>(&src), sizeof src)) << std::strerror(errno);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_addr.s_addr = htonl(to.nid);
    dst.sin_port = htons(static_cast<uint16_t>(port_base + to.pid));
    EXPECT_EQ(0, ::connect(fd, reinterpret_cast<sockaddr *>(&dst), sizeof dst)) << std::strerror(errno);
    return fd;
}

// What the endpoint said before it closed fd: a Refusal's reason, 0 if it said nothing (yet).
int refusal_on(int fd) {
    tcp::HandshakeMessage m{};
    size_t got = 0;
    while (got < sizeof m) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) return 0;
        const ssize_t n = ::recv(fd, reinterpret_cast<char *>(&m) + got, sizeof m - got, 0);
        if (n <= 0) return 0;
        got += static_cast<size_t>(n);
    }
    return m.step == tcp::HandshakeStep::Refusal ? static_cast<int>(tcp::refusal_reason(m)) : -1;
}

} // namespace

// The acceptor gives up on a connection whose hello has not come (here: at once, before the
// connector has even written it), and says why; the connector connects again and its message
// arrives. (Until 2026-11 the connector's link failed, blamed on the job secret.)
TEST(TcpAccept, AConnectorDroppedForLatenessConnectsAgain) {
    tcp::TcpConfig cfg;
    cfg.secret = "tcp-accept-test";
    tcp::TcpConfig hasty = cfg;
    hasty.hello_timeout_ms = 0;
    hasty.hello_timeout_pressed_ms = 0;
    auto a = open_tcp(hasty), b = open_tcp(cfg);
    ASSERT_TRUE(a && b);
    Recorder ra, rb;
    testing::internal::CaptureStderr();
    ASSERT_NE(SendStatus::Unreachable, b->send(a->self(), message(), {}, 0, true)); // connects; b not polled yet
    ASSERT_TRUE(poll_until([&] { return a->refused_connections() > 0; }, [&] { a->wait(ra, 10); }))
        << "the acceptor never gave up on the silent connection";
    ASSERT_TRUE(poll_until([&] { return ra.frames > 0 || rb.failures > 0; },
                           [&] {
                               b->wait(rb, 1);
                               a->wait(ra, 1);
                           }));
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(1, ra.frames);
    EXPECT_EQ(0, rb.failures) << said;
    EXPECT_EQ(std::string::npos, said.find("wrong job secret")) << said;
    EXPECT_NE(std::string::npos, said.find("that sent no hello in time")) << said;
}

// Silent connections from a stranger's address hold at most its share of the slots: the oldest
// go, told that the endpoint was busy. With every slot held by strangers, a connection of the
// job's own (its address is a peer's) still comes up.
TEST(TcpAccept, StrangersShareTheSlotsAndTheJobsPeersStillGetIn) {
    tcp::TcpConfig cfg;
    cfg.secret = "tcp-accept-test";
    tcp::TcpConfig guarded = cfg;
    guarded.max_pending_accepts = 4;
    guarded.max_pending_per_address = 2;
    auto a = open_tcp(guarded), b = open_tcp(cfg);
    ASSERT_TRUE(a && b);
    const PeerId peers[] = {a->self(), b->self()};
    a->know_peers(peers, 2); // the job's map: 127.0.0.1 is a peer's address
    Recorder ra, rb;
    testing::internal::CaptureStderr();
    // Four from one stranger's address: its first two are pushed out by its last two.
    std::vector<int> one;
    for (int i = 0; i < 4; ++i) {
        one.push_back(silent_connection(0x7f000002, a->self()));
        a->wait(ra, 1000);
    }
    EXPECT_EQ(static_cast<int>(tcp::RefusalReason::Busy), refusal_on(one[0]));
    EXPECT_EQ(static_cast<int>(tcp::RefusalReason::Busy), refusal_on(one[1]));
    EXPECT_EQ(0, refusal_on(one[2]));
    EXPECT_EQ(0, refusal_on(one[3]));
    // Two more strangers fill the slots; a fifth pushes out the oldest of the address holding most.
    std::vector<int> many;
    for (uint32_t addr = 0x7f000003; addr < 0x7f000006; ++addr) {
        many.push_back(silent_connection(addr, a->self()));
        a->wait(ra, 1000);
    }
    EXPECT_EQ(static_cast<int>(tcp::RefusalReason::Busy), refusal_on(one[2]));
    EXPECT_EQ(0, refusal_on(many[0]));
    EXPECT_EQ(3u, a->refused_connections()) << "two pushed out by their own address, one by the others";
    ASSERT_NE(SendStatus::Unreachable, b->send(a->self(), message(), {}, 0, true));
    ASSERT_TRUE(poll_until([&] { return ra.frames > 0 || rb.failures > 0; },
                           [&] {
                               b->wait(rb, 1);
                               a->wait(ra, 1);
                           }));
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(1, ra.frames);
    EXPECT_EQ(0, rb.failures) << said;
    for (int fd : one) ::close(fd);
    for (int fd : many) ::close(fd);
}

// A connector with another secret: each side's log names the real cause.
TEST(TcpAccept, AnotherSecretIsNamedOnBothSides) {
    tcp::TcpConfig ca, cb;
    ca.secret = "job-a";
    cb.secret = "job-b";
    auto a = open_tcp(ca), b = open_tcp(cb);
    ASSERT_TRUE(a && b);
    Recorder ra, rb;
    testing::internal::CaptureStderr();
    ASSERT_NE(SendStatus::Unreachable, b->send(a->self(), message(), {}, 0, true));
    ASSERT_TRUE(poll_until([&] { return rb.failures > 0 && a->refused_connections() > 0; },
                           [&] {
                               b->wait(rb, 1);
                               a->wait(ra, 1);
                           }));
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(0, ra.frames);
    EXPECT_NE(std::string::npos, said.find("refused: the peer does not know the job secret")) << said;
    EXPECT_NE(std::string::npos, said.find("it refused our challenge: the two sides' job secrets differ")) << said;
    EXPECT_EQ(std::string::npos, said.find("wrong job secret?")) << said;
}

// Who holds a TCP port (the PTL_PID_IN_USE message of a pid whose port is taken): the user and,
// where visible, the process; a range is summed up per user.
TEST(PortHolders, APortsUserAndProcessAreNamed) {
    std::vector<int> held;
    uint32_t first = 0;
    for (uint32_t base = 9000 + static_cast<uint32_t>(getpid()) % 1000 * 4; held.size() < 3 && base < 14000;
         base += 4) {
        for (int fd : held) ::close(fd);
        held.clear();
        first = base;
        for (uint32_t port = base; port < base + 3; ++port) {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(kLoopback);
            a.sin_port = htons(static_cast<uint16_t>(port));
            if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0) {
                ::close(fd);
                break;
            }
            held.push_back(fd);
        }
    }
    ASSERT_EQ(3u, held.size()) << "no three free ports in a row";
    const std::string me = "uid " + std::to_string(geteuid());
    const std::string one = tcp::port_holder(first + 1);
    EXPECT_EQ(0u, one.find(me)) << one;
    EXPECT_NE(std::string::npos, one.find("process " + std::to_string(getpid()) + " (unit_tests)")) << one;
    const std::string range = tcp::port_range_holders(first, 3);
    EXPECT_EQ(0u, range.find(me)) << range;
    EXPECT_NE(std::string::npos, range.find(" holds 3 of them")) << range;
    for (int fd : held) ::close(fd);
    EXPECT_EQ("", tcp::port_holder(first + 1));
}
