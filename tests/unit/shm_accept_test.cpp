// How a shared-memory endpoint takes its connections (transport/shm): the hello of a connection
// is read without waiting, and a connection whose hello is already there is never dropped for
// being late — however long the acceptor itself was kept from looking (issue 30, item 8: 42 of a
// 256-rank job's own connections were refused "no hello in time" by descheduled acceptors).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

std::unique_ptr<shm::ShmTransport> open_acceptor(const shm::ShmConfig &cfg) {
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
    auto a = open_acceptor(cfg);
    ASSERT_TRUE(a);
    Quiet r;
    const int s = connect_silently(*a);
    a->wait(r, 10000); // accepts it: no hello yet, so it waits
    ASSERT_EQ(0u, a->refused_connections()) << "a connection that has just come is not late";
    // The hello comes now; when the acceptor next looks it is both in the socket and overdue.
    const uint64_t ring_bytes = 16 * 1024;
    const int mfd = make_segment(ring_bytes);
    ASSERT_TRUE(shm::send_hello(
        s, shm::Hello{shm::kHelloMagic, shm::kSegmentVersion, kLoopback, kClaimedPid, ring_bytes}, mfd));
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
    auto a = open_acceptor(cfg);
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
