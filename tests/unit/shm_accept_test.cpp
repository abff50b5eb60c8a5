// SPDX-License-Identifier: BSD-3-Clause
// How a shared-memory endpoint takes its connections (transport/shm): the hello of a connection
// is read without waiting, and a connection whose hello is already there is never dropped for
// being late — however long the acceptor itself was kept from looking (42 of a 256-rank job's
// own connections were refused "no hello in time" by descheduled acceptors). A
// process with a job secret proves it in every hello, and takes only links proven with its own
// (docs/ARCHITECTURE.md, *The job secret on every link*): links of another job are refused,
// counted, and both sides say why.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "free_endpoint.hpp"
#include "transport/shm/hello.hpp"
#include "transport/shm/rendezvous.hpp"
#include "transport/shm/shm_transport.hpp"

namespace {

using namespace portico::transport;

constexpr uint32_t kLoopback = 0x7f000001;
// A pid no endpoint of these tests takes: what a hand-made connector claims to be.
constexpr uint32_t kClaimedPid = 65001;

struct Quiet final : Receiver {
    int frames = 0, failures = 0;
    void on_frame(Link &, const FrameHeader &, const std::byte *) override { ++frames; }
    void on_link_failed(Link &, bool) override { ++failures; }
    void on_send_complete(uint64_t, bool, bool) override {}
};

std::unique_ptr<shm::ShmTransport> open_endpoint(const shm::ShmConfig &cfg) {
    return portico::test::open_free(
        [&](uint32_t pid) { return std::make_unique<shm::ShmTransport>(kLoopback, pid, cfg); });
}

// A connection to endpoint a that has said nothing yet.
int connect_silently(const shm::ShmTransport &a) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr;
    const socklen_t len = shm::rendezvous_address(a.directory(), a.self(), &addr);
    EXPECT_EQ(0, ::connect(s, reinterpret_cast<sockaddr *>(&addr), len)) << std::strerror(errno);
    return s;
}

// A link segment as a connector makes it: rings of ring_bytes, all empty (zeroed), with room to spare.
int make_segment(uint64_t ring_bytes) {
    const int mfd = memfd_create("shm-accept-test", MFD_CLOEXEC);
    EXPECT_GE(mfd, 0);
    EXPECT_EQ(0, ftruncate(mfd, static_cast<off_t>(4 * ring_bytes)));
    return mfd;
}

FrameHeader message() {
    FrameHeader h{};
    h.t.protocol = Protocol::Portals;
    h.t.protocol_bytes = 8;
    return h;
}

} // namespace

TEST(ShmAccept, AHelloThatArrivedIsReadEvenWhenTheAcceptorLooksAfterItsDeadline) {
    shm::ShmConfig cfg;
    cfg.single_copy = false;
    // The acceptor's clock says every waiting hello is overdue as soon as it next looks: an
    // acceptor descheduled for longer than the real timeout, made deterministic.
    cfg.hello_timeout_ns = 0;
    auto a = open_endpoint(cfg);
    ASSERT_TRUE(a);
    Quiet r;
    const int s = connect_silently(*a);
    a->wait(r, 10000); // accepts it: no hello yet, so it waits
    ASSERT_EQ(0u, a->refused_connections()) << "a connection that has just come is not late";
    // The hello comes now; when the acceptor next looks it is both in the socket and overdue.
    const uint64_t ring_bytes = 16 * 1024;
    const int mfd = make_segment(ring_bytes);
    const shm::Hello hello = shm::make_hello({kLoopback, kClaimedPid}, a->self(), ring_bytes, "", {});
    ASSERT_TRUE(shm::send_hello(s, hello, mfd));
    ::close(mfd);
    a->wait(r, 10000);
    EXPECT_EQ(0u, a->refused_connections()) << "a hello that had arrived was dropped as late";
    // The link exists: the acceptor sends to the connector on it (there is no endpoint to connect to).
    EXPECT_EQ(SendStatus::Sent, a->send(PeerId{kLoopback, kClaimedPid}, message(), {}, 0, true));
    EXPECT_EQ(0, r.failures);
    ::close(s);
}

TEST(ShmAccept, AConnectionThatNeverSaysHelloIsRefusedOnceLate) {
    shm::ShmConfig cfg;
    cfg.single_copy = false;
    cfg.hello_timeout_ns = 0;
    auto a = open_endpoint(cfg);
    ASSERT_TRUE(a);
    Quiet r;
    const int silent = connect_silently(*a);
    a->wait(r, 10000); // accepted; waits for its hello
    // Anything that makes the acceptor look again (here a second connection) finds the first overdue.
    const int second = connect_silently(*a);
    a->wait(r, 10000);
    EXPECT_EQ(1u, a->refused_connections());
    ::close(silent);
    ::close(second);
}

namespace {

shm::ShmConfig with_secret(const std::string &secret) {
    shm::ShmConfig cfg;
    cfg.single_copy = false;
    cfg.secret = secret;
    return cfg;
}

// Polls until pred() holds; false if it never does within a generous number of turns.
template <class Pred, class Turn> bool poll_until(Pred pred, Turn turn) {
    for (long i = 0; i < 20'000'000; ++i) {
        if (pred()) return true;
        turn();
    }
    return pred();
}

struct Outcome {
    int frames_at_target = 0;       // frames the target delivered
    uint64_t refused_by_target = 0; // its PTL_SR_REFUSED_CONNECTIONS
    int failures_at_sender = 0;     // link failures the sender saw
    uint64_t refused_at_sender = 0;
    std::string said; // stderr of both
};

// `from` sends one frame to `to`; both are polled until the frame arrives or the link fails.
Outcome one_frame(const std::string &from_secret, const std::string &to_secret) {
    auto from = open_endpoint(with_secret(from_secret));
    auto to = open_endpoint(with_secret(to_secret));
    EXPECT_TRUE(from && to);
    Quiet rf, rt;
    testing::internal::CaptureStderr();
    EXPECT_NE(SendStatus::Unreachable, from->send(to->self(), message(), {}, 0, true));
    EXPECT_TRUE(poll_until([&] { return rt.frames > 0 || rf.failures > 0; },
                           [&] {
                               to->poll(rt);
                               from->wait(rf, 0);
                           }));
    // Whatever else comes, it comes now: the target has settled the connection either way.
    for (int i = 0; i < 1000; ++i) to->poll(rt);
    Outcome o{rt.frames, to->refused_connections(), rf.failures, from->refused_connections(), {}};
    o.said = testing::internal::GetCapturedStderr();
    return o;
}

} // namespace

TEST(ShmJobSecret, LinksProvenWithTheSameSecretComeUp) {
    const Outcome o = one_frame("job-a", "job-a");
    EXPECT_EQ(1, o.frames_at_target);
    EXPECT_EQ(0u, o.refused_by_target);
    EXPECT_EQ(0, o.failures_at_sender);
}

TEST(ShmJobSecret, ProcessesWithoutSecretsLinkAsBefore) {
    const Outcome o = one_frame("", "");
    EXPECT_EQ(1, o.frames_at_target);
    EXPECT_EQ(0u, o.refused_by_target);
}

TEST(ShmJobSecret, ALinkOfAnotherJobIsRefusedCountedAndBothSidesSayWhy) {
    const Outcome o = one_frame("job-b", "job-a");
    EXPECT_EQ(0, o.frames_at_target) << "a frame of another job was delivered";
    EXPECT_EQ(1u, o.refused_by_target);
    EXPECT_EQ(1, o.failures_at_sender);
    EXPECT_EQ(1u, o.refused_at_sender);
    EXPECT_NE(std::string::npos, o.said.find("refused a link from a process of another job (its job secret differs)"))
        << o.said;
    EXPECT_NE(std::string::npos, o.said.find("refused our link: the peer belongs to another job")) << o.said;
}

TEST(ShmJobSecret, ASecretAndNoSecretDoNotMixEitherWay) {
    const Outcome unproven = one_frame("", "job-a");
    EXPECT_EQ(0, unproven.frames_at_target);
    EXPECT_EQ(1u, unproven.refused_by_target);
    EXPECT_EQ(1, unproven.failures_at_sender);
    EXPECT_NE(std::string::npos, unproven.said.find("this process has no job secret, and the peer's job has one"))
        << unproven.said;
    const Outcome proven = one_frame("job-a", "");
    EXPECT_EQ(0, proven.frames_at_target);
    EXPECT_EQ(1u, proven.refused_by_target);
    EXPECT_EQ(1, proven.failures_at_sender);
    EXPECT_NE(std::string::npos, proven.said.find("the peer has no job secret, and this process's job has one"))
        << proven.said;
}

// A proof is bound to the two processes the kernel says are on the socket: one made for another
// acceptor (a hello an impostor received) or by another connector (a hello recorded and replayed)
// is refused, even with the right secret.
TEST(ShmJobSecret, AProofIsGoodOnlyBetweenTheProcessesItWasMadeFor) {
    auto a = open_endpoint(with_secret("job-a"));
    ASSERT_TRUE(a);
    Quiet r;
    const pid_t me = getpid(); // the connector and the acceptor are both this process here
    const shm::LinkEnds other_acceptor{me, me + 1, geteuid()}, other_connector{me + 1, me, geteuid()},
        right{me, me, geteuid()};
    const shm::LinkEnds tried[] = {other_acceptor, other_connector, right};
    for (size_t i = 0; i < 3; ++i) {
        const int s = connect_silently(*a);
        const int mfd = make_segment(16 * 1024);
        ASSERT_TRUE(shm::send_hello(
            s, shm::make_hello({kLoopback, kClaimedPid}, a->self(), 16 * 1024, "job-a", tried[i]), mfd));
        ::close(mfd);
        a->wait(r, 10000);
        EXPECT_EQ(std::min<uint64_t>(i + 1, 2), a->refused_connections()) << "proof " << i;
        ::close(s);
    }
}
