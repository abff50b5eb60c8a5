// SPDX-License-Identifier: BSD-3-Clause
// Processes started without any launcher (no PMI in their environment), connected only by the
// physical ids they print, as existing Portals clients do it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <utility>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "child.hpp"
#include "transport/shm/rendezvous.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/transport.hpp"
#include "wire/protocol.hpp"

namespace {

const char *peer_binary() { return PEER_BINARY; }

// A standalone_peer process.
class Child : public portico::test::Child {
public:
    explicit Child(std::vector<std::string> args, const std::vector<std::string> &extra_env = {})
        : portico::test::Child(peer_binary(), std::move(args), extra_env) {}
};

// Reads each child's "ID nid pid" and tells it the other's; returns the two ids.
std::pair<std::string, std::string> introduce(Child &a, Child &b) {
    std::string ia = a.line(), ib = b.line();
    EXPECT_EQ(0u, ia.rfind("ID ", 0)) << ia;
    EXPECT_EQ(0u, ib.rfind("ID ", 0)) << ib;
    a.send("PEER " + ib.substr(3));
    b.send("PEER " + ia.substr(3));
    return {ia.substr(3), ib.substr(3)};
}

// A connection to a shared-memory endpoint ("nid pid") that says nothing; -1 if the endpoint's
// backlog is full (non-blocking: the test itself must never wait for the endpoint).
int silent_shm_connection(const std::string &id) {
    unsigned nid = 0, pid = 0;
    if (std::sscanf(id.c_str(), "%u %u", &nid, &pid) != 2) return -1;
    sockaddr_un a{};
    const socklen_t len =
        portico::transport::shm::rendezvous_address(portico::transport::shm::endpoint_directory(""), {nid, pid}, &a);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<sockaddr *>(&a), len) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

} // namespace

TEST(Standalone, TwoIndependentProcessesExchangePuts) {
    Child a({"pingpong", "0"}), b({"pingpong", "1"});
    introduce(a, b);
    ASSERT_EQ("READY", a.line());
    ASSERT_EQ("READY", b.line());
    a.send("GO");
    b.send("GO");
    EXPECT_EQ("DONE", a.line());
    EXPECT_EQ("DONE", b.line());
    a.send("BYE");
    b.send("BYE");
    EXPECT_EQ(0, a.wait_exit());
    EXPECT_EQ(0, b.wait_exit());
}

// A local process that connects to an endpoint's socket and says nothing, or a storm of such
// connections, must not stall the endpoint's progress (the hello is read without waiting) nor
// lose anything: a ping-pong under both completes with every event, and each silent connection
// is refused and counted (PTL_SR_REFUSED_CONNECTIONS) once it hangs up or times out.
TEST(Standalone, SilentConnectionsAndAStormNeitherStallNorLoseTraffic) {
    rlimit fds{};
    getrlimit(RLIMIT_NOFILE, &fds);
    fds.rlim_cur = fds.rlim_max;
    setrlimit(RLIMIT_NOFILE, &fds);
    const long storm = std::min<long>(2000, static_cast<long>(fds.rlim_cur) - 64);
    Child a({"rounds", "0", "3000"}), b({"rounds", "1", "3000"});
    const auto [ida, idb] = introduce(a, b);
    ASSERT_EQ("READY", a.line());
    ASSERT_EQ("READY", b.line());
    std::vector<int> held;
    long made[2] = {0, 0};
    // Structured bindings are captured by init-capture: clang 14 (clang-tidy) cannot capture them.
    auto connect_once = [&, ida = ida, idb = idb](int which) {
        const int fd = silent_shm_connection(which == 0 ? ida : idb);
        if (fd < 0) return;
        held.push_back(fd);
        ++made[which];
    };
    // The storm: connections kept open, none of them says a word; half of it waits in the
    // endpoints' backlogs when the ping-pong starts, half comes during it.
    for (long i = 0; i < storm / 2; ++i) connect_once(static_cast<int>(i & 1));
    a.send("GO");
    b.send("GO");
    for (long i = storm / 2; i < storm; ++i) connect_once(static_cast<int>(i & 1));
    EXPECT_EQ("DONE", a.line());
    EXPECT_EQ("DONE", b.line());
    for (int fd : held) close(fd);
    a.send("REFUSED " + std::to_string(made[0]));
    b.send("REFUSED " + std::to_string(made[1]));
    EXPECT_EQ("OK", a.line()) << made[0] << " silent connections to be refused";
    EXPECT_EQ("OK", b.line()) << made[1] << " silent connections to be refused";
    a.send("BYE");
    b.send("BYE");
    EXPECT_EQ(0, a.wait_exit());
    EXPECT_EQ(0, b.wait_exit());
}

TEST(Standalone, DeadPeerBecomesFailureEventsNotAHang) {
    Child victim({"victim"}), survivor({"survivor"});
    introduce(victim, survivor);
    ASSERT_EQ("READY", victim.line());
    victim.stop_now(); // a hung peer: the get stays unanswered until the peer dies
    survivor.send("GO");
    ASSERT_EQ("SENT", survivor.line());
    victim.kill_now();
    EXPECT_EQ("OK", survivor.line());
    EXPECT_EQ(0, survivor.wait_exit());
}

TEST(Standalone, FiredPutWhoseTargetLeftTheMapEndsWithFailureEvents) {
    Child c({"lostrank"});
    EXPECT_EQ("OK", c.line());
    EXPECT_EQ(0, c.wait_exit());
}

TEST(Standalone, PortalsWorksFromAnAtexitHandler) {
    Child c({"atexit"});
    std::string id = c.line();
    ASSERT_EQ(0u, id.rfind("ID ", 0)) << id;
    c.send("PEER " + id.substr(3)); // its own id
    EXPECT_EQ("READY", c.line());
    EXPECT_EQ("ATEXIT OK", c.line());
    EXPECT_EQ(0, c.wait_exit());
}

// The same over TCP, forced between two processes of this machine.
const std::vector<std::string> kTcp{"PORTICO_TRANSPORT=tcp", "PORTICO_JOB_SECRET=standalone-secret"};

TEST(StandaloneTcp, TwoIndependentProcessesExchangePuts) {
    Child a({"pingpong", "0"}, kTcp), b({"pingpong", "1"}, kTcp);
    introduce(a, b);
    ASSERT_EQ("READY", a.line());
    ASSERT_EQ("READY", b.line());
    a.send("GO");
    b.send("GO");
    EXPECT_EQ("DONE", a.line());
    EXPECT_EQ("DONE", b.line());
    a.send("BYE");
    b.send("BYE");
    EXPECT_EQ(0, a.wait_exit());
    EXPECT_EQ(0, b.wait_exit());
}

TEST(StandaloneTcp, DeadPeerBecomesFailureEventsNotAHang) {
    Child victim({"victim"}, kTcp), survivor({"survivor"}, kTcp);
    introduce(victim, survivor);
    ASSERT_EQ("READY", victim.line());
    victim.stop_now(); // a hung peer: the get stays unanswered until the peer dies
    survivor.send("GO");
    ASSERT_EQ("SENT", survivor.line());
    victim.kill_now();
    EXPECT_EQ("OK", survivor.line());
    EXPECT_EQ(0, survivor.wait_exit());
}

TEST(StandaloneTcp, PeerWithAnotherSecretIsRefusedAndCounted) {
    Child guard({"guard", "1", "0"}, kTcp);
    Child intruder({"intruder"}, {"PORTICO_TRANSPORT=tcp", "PORTICO_JOB_SECRET=guessed"});
    introduce(guard, intruder);
    ASSERT_EQ("READY", guard.line());
    EXPECT_EQ("OK", intruder.line()) << "the intruder's put must fail";
    EXPECT_EQ("OK", guard.line()) << "the guard must count one refusal and see no put";
    guard.send("BYE");
    EXPECT_EQ(0, guard.wait_exit());
    EXPECT_EQ(0, intruder.wait_exit());
}

// A process started without a launcher or PORTICO_JOB_SECRET draws a secret of its own: another
// process cannot know it, so the two are not peers (the guard refuses the connection).
TEST(StandaloneTcp, ProcessesThatShareNoSecretAreNotPeers) {
    Child guard({"guard", "1", "0"}, kTcp);
    Child intruder({"intruder"}, {"PORTICO_TRANSPORT=tcp"});
    introduce(guard, intruder);
    ASSERT_EQ("READY", guard.line());
    EXPECT_EQ("OK", intruder.line());
    EXPECT_EQ("OK", guard.line());
    guard.send("BYE");
    EXPECT_EQ(0, guard.wait_exit());
}

namespace {
using portico::transport::PeerId;
namespace tcp = portico::transport::tcp;

int connect_to(uint32_t nid, uint32_t pid) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(nid);
    a.sin_port = htons(static_cast<uint16_t>(16384 + pid));
    EXPECT_EQ(0, connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a)) << std::strerror(errno);
    return fd;
}

bool write_all(int fd, const void *p, size_t n) { return send(fd, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n); }

bool read_all(int fd, void *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        pollfd q{fd, POLLIN, 0};
        if (poll(&q, 1, 60000) <= 0) return false;
        ssize_t r = recv(fd, static_cast<char *>(p) + got, n - got, 0);
        if (r <= 0) return false;
        got += static_cast<size_t>(r);
    }
    return true;
}

// Authenticates like a real peer of the job (it knows the secret), as (nid, 77).
int authenticated_connection(uint32_t nid, uint32_t pid, const std::string &secret) {
    int fd = connect_to(nid, pid);
    uint8_t nonce[16];
    tcp::random_nonce(nonce);
    const PeerId me{nid, 77}, target{nid, pid};
    tcp::HandshakeMessage hello = tcp::make_hello(me, target, nonce), challenge;
    EXPECT_TRUE(write_all(fd, &hello, sizeof hello));
    EXPECT_TRUE(read_all(fd, &challenge, sizeof challenge));
    EXPECT_TRUE(tcp::challenge_authentic(secret, hello, challenge));
    tcp::HandshakeMessage proof = tcp::make_proof(secret, me, hello, challenge);
    EXPECT_TRUE(write_all(fd, &proof, sizeof proof));
    return fd;
}

// Waits for the peer to close the connection (it must, after a malformed frame).
bool closed_by_peer(int fd) {
    char b[64];
    for (;;) {
        pollfd q{fd, POLLIN, 0};
        if (poll(&q, 1, 60000) <= 0) return false;
        ssize_t r = recv(fd, b, sizeof b, 0);
        if (r <= 0) return true;
    }
}
} // namespace

TEST(StandaloneTcp, HostileTrafficIsDroppedCountedAndSurvived) {
    // Three refusals (garbage, silence then close, a wrong proof), three malformed frames (bad
    // version, a frame longer than allowed, a payload longer than its message: the transport
    // closes the connection) and two malformed messages in good frames (a Portals header of no
    // known kind, a protocol nobody speaks: the engine drops and counts them, the link stays).
    Child guard({"guard", "3", "5"}, kTcp);
    std::string id = guard.line();
    unsigned nid = 0, pid = 0;
    ASSERT_EQ(2, std::sscanf(id.c_str(), "ID %u %u", &nid, &pid)) << id;
    guard.send("PEER " + std::to_string(nid) + " 77");
    ASSERT_EQ("READY", guard.line());

    { // An HTTP request: not a Portico connection.
        int fd = connect_to(nid, pid);
        std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(100, 'A');
        ASSERT_TRUE(write_all(fd, junk.data(), junk.size()));
        EXPECT_TRUE(closed_by_peer(fd));
        close(fd);
    }
    { // Half a hello, then hang up.
        int fd = connect_to(nid, pid);
        ASSERT_TRUE(write_all(fd, "POCP", 4));
        close(fd);
    }
    { // A correct hello, then a proof made with the wrong secret.
        int fd = connect_to(nid, pid);
        uint8_t nonce[16];
        tcp::random_nonce(nonce);
        tcp::HandshakeMessage hello = tcp::make_hello({nid, 78}, {nid, pid}, nonce), challenge;
        ASSERT_TRUE(write_all(fd, &hello, sizeof hello));
        ASSERT_TRUE(read_all(fd, &challenge, sizeof challenge));
        EXPECT_FALSE(tcp::challenge_authentic("wrong", hello, challenge)) << "the guard proves it knows the secret";
        tcp::HandshakeMessage proof = tcp::make_proof("wrong", {nid, 78}, hello, challenge);
        ASSERT_TRUE(write_all(fd, &proof, sizeof proof));
        EXPECT_TRUE(closed_by_peer(fd));
        close(fd);
    }
    using portico::transport::FrameHeader;
    auto frame = [](auto mutate, size_t payload) {
        portico::wire::Header p{};
        p.kind = portico::wire::Kind::Put;
        FrameHeader first{};
        first.t.protocol = portico::transport::Protocol::Portals;
        first.t.protocol_bytes = static_cast<uint8_t>(portico::wire::encode(p, first.protocol));
        FrameHeader h = portico::transport::frame_header(first, payload, 0, static_cast<uint32_t>(payload));
        mutate(h);
        std::vector<char> bytes(portico::transport::wire_header_bytes(h) + payload, 'x');
        std::memcpy(bytes.data(), &h, portico::transport::wire_header_bytes(h));
        return bytes;
    };
    auto bad_frame = [&](auto mutate, size_t payload) {
        int fd = authenticated_connection(nid, pid, "standalone-secret");
        const auto bytes = frame(mutate, payload);
        write_all(fd, bytes.data(), bytes.size()); // the guard may close before it has read all
        EXPECT_TRUE(closed_by_peer(fd));
        close(fd);
    };
    bad_frame([](FrameHeader &h) { h.t.version = 9; }, 16);
    bad_frame([](FrameHeader &h) { h.t.frame_payload = 1u << 30; }, 0);
    bad_frame([](FrameHeader &h) { h.t.payload_total = 1; }, 16);
    { // Good frames, bad messages: dropped and counted by the engine, on a link that stays up.
        int fd = authenticated_connection(nid, pid, "standalone-secret");
        auto unknown_kind = frame([](FrameHeader &h) { h.protocol[0] = std::byte{5}; }, 16);
        auto unknown_protocol = frame([](FrameHeader &h) { h.t.protocol = portico::transport::Protocol{9}; }, 16);
        ASSERT_TRUE(write_all(fd, unknown_kind.data(), unknown_kind.size()));
        ASSERT_TRUE(write_all(fd, unknown_protocol.data(), unknown_protocol.size()));
        EXPECT_EQ("OK", guard.line()); // it counted both, and did not close the connection
        pollfd q{fd, POLLIN, 0};
        EXPECT_EQ(0, poll(&q, 1, 0)) << "revents " << q.revents;
        close(fd);
    }
    guard.send("BYE");
    EXPECT_EQ(0, guard.wait_exit());
}
