// SPDX-License-Identifier: BSD-3-Clause
// The transports' promise about failed links (transport.hpp, Receiver::on_link_failed): two
// endpoints that send to each other before either has heard from the other open a link each, and
// each sends on its own. When one of them goes away, the end of the first link is reported with
// last = false, every frame the peer sent on the other link is delivered, and only then comes the
// report with last = true (the engine fails the peer's pending operations on that one alone).
// Both endpoints live in this process and are polled by hand, so the order of events is fixed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "free_endpoint.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace {

using namespace portico;
using namespace portico::transport;

constexpr uint32_t kLoopback = 0x7f000001; // 127.0.0.1: every TCP endpoint here listens on it

struct Recorder final : Receiver {
    std::vector<std::string> seen; // "frame <cookie>", "end", "end, last"
    std::vector<bool> goodbyes;    // Link::said_goodbye at each end
    void on_frame(Link &, const FrameHeader &h, const std::byte *) override {
        uint64_t cookie;
        std::memcpy(&cookie, h.protocol, sizeof cookie);
        seen.push_back("frame " + std::to_string(cookie));
    }
    void on_link_failed(Link &l, bool last) override {
        seen.push_back(last ? "end, last" : "end");
        goodbyes.push_back(l.said_goodbye);
    }
    void on_send_complete(uint64_t, bool, bool) override {}
    bool has(const std::string &s) const { return std::find(seen.begin(), seen.end(), s) != seen.end(); }
};

std::unique_ptr<Transport> open_free(const std::function<std::unique_ptr<Transport>(uint32_t)> &make) {
    return portico::test::open_free(make);
}

// A message whose protocol header starts with `cookie`.
FrameHeader message(uint64_t cookie) {
    FrameHeader h{};
    h.t.protocol = Protocol::Portals;
    std::memcpy(h.protocol, &cookie, sizeof cookie);
    h.t.protocol_bytes = sizeof cookie;
    return h;
}

// Polls until pred() holds; false if it never does within a generous number of turns.
bool poll_until(const std::function<bool()> &pred, const std::function<void()> &turn) {
    for (long i = 0; i < 50'000'000; ++i) {
        if (pred()) return true;
        turn();
    }
    return pred();
}

void two_links_then_peer_exits(const std::function<std::unique_ptr<Transport>(uint32_t)> &make) {
    std::unique_ptr<Transport> a = open_free(make), b = open_free(make);
    ASSERT_TRUE(a && b);
    Recorder ra, rb;
    // Both send before either polls: each opens its own link to the other.
    ASSERT_NE(SendStatus::Unreachable, a->send(b->self(), message(1), {}, 0, true));
    ASSERT_NE(SendStatus::Unreachable, b->send(a->self(), message(2), {}, 0, true));
    ASSERT_TRUE(poll_until([&] { return ra.has("frame 2") && rb.has("frame 1"); },
                           [&] {
                               a->poll(ra);
                               b->poll(rb);
                           }));
    // b's answer goes on the link b opened; then b goes away, closing both.
    ASSERT_EQ(SendStatus::Sent, b->send(a->self(), message(3), {}, 0, true));
    b.reset();
    ASSERT_TRUE(poll_until([&] { return ra.has("end, last"); }, [&] { a->poll(ra); }))
        << "a never saw the end of its last link to b";
    const std::vector<std::string> want_a = {"frame 2", "frame 3", "end", "end, last"};
    std::vector<std::string> got = ra.seen;
    // The two links end in whichever order a looks at them; b's frame 3 always before the last.
    const auto last = std::find(got.begin(), got.end(), "end, last");
    EXPECT_EQ(got.end() - 1, last) << "nothing after the last link's end";
    EXPECT_TRUE(std::find(got.begin(), last, "frame 3") != last) << "frame 3 came after the last link's end";
    EXPECT_EQ(1, std::count(got.begin(), got.end(), "end")) << "the first link's end is not the last";
    std::sort(got.begin(), got.end());
    std::vector<std::string> want = want_a;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(want, got);
}

TEST(TransportLinks, TcpPeerAnswersOnItsOwnLinkUntilItsLastEnds) {
    tcp::TcpConfig cfg;
    cfg.secret = "transport-links-test";
    two_links_then_peer_exits([&](uint32_t pid) { return std::make_unique<tcp::TcpTransport>(kLoopback, pid, cfg); });
}

TEST(TransportLinks, ShmPeerAnswersOnItsOwnLinkUntilItsLastEnds) {
    shm::ShmConfig cfg;
    cfg.single_copy = false;
    two_links_then_peer_exits([&](uint32_t pid) { return std::make_unique<shm::ShmTransport>(kLoopback, pid, cfg); });
}

// Whether the end of a link says the peer went on purpose (Link::said_goodbye): yes when the
// peer closed its endpoint or said farewell before exiting, no when its process just ended.
enum class PeerEnds { Closes, FarewellThenExit, Exits };

void peer_ends(const std::function<std::unique_ptr<Transport>(uint32_t)> &make, PeerEnds how, bool expect_goodbye) {
    std::unique_ptr<Transport> a = open_free(make);
    ASSERT_TRUE(a);
    Recorder ra;
    if (how == PeerEnds::Closes) {
        std::unique_ptr<Transport> b = open_free(make);
        ASSERT_NE(SendStatus::Unreachable, b->send(a->self(), message(1), {}, 0, true));
        ASSERT_TRUE(poll_until([&] { return ra.has("frame 1"); },
                               [&] {
                                   a->poll(ra);
                                   b->poll(ra);
                               }));
        b.reset();
    } else {
        int seen[2];
        ASSERT_EQ(0, ::pipe(seen));
        const pid_t child = ::fork();
        if (child == 0) {
            ::close(seen[1]);
            ::fcntl(seen[0], F_SETFL, O_NONBLOCK);
            std::unique_ptr<Transport> b = open_free(make);
            Recorder rb;
            if (!b || b->send(a->self(), message(1), {}, 0, true) == SendStatus::Unreachable) ::_exit(2);
            char c;
            for (;;) { // until the parent has frame 1
                const ssize_t n = ::read(seen[0], &c, 1);
                if (n == 1) break;
                if (n == 0) ::_exit(3); // the parent is gone (failed, or killed at its timeout)
                b->poll(rb);
            }
            if (how == PeerEnds::FarewellThenExit) b->farewell();
            ::_exit(0); // no destructor: the kernel closes what b had open
        }
        ::close(seen[0]);
        ASSERT_TRUE(poll_until([&] { return ra.has("frame 1"); }, [&] { a->poll(ra); }));
        ASSERT_EQ(1, ::write(seen[1], "x", 1));
        ::close(seen[1]);
        int status = 0;
        ::waitpid(child, &status, 0);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ASSERT_TRUE(poll_until([&] { return ra.has("end, last"); }, [&] { a->poll(ra); }));
    ASSERT_FALSE(ra.goodbyes.empty());
    for (bool g : ra.goodbyes) EXPECT_EQ(expect_goodbye, g);
}

std::function<std::unique_ptr<Transport>(uint32_t)> tcp_maker() {
    return [](uint32_t pid) {
        tcp::TcpConfig cfg;
        cfg.secret = "transport-links-test";
        return std::make_unique<tcp::TcpTransport>(kLoopback, pid, cfg);
    };
}

std::function<std::unique_ptr<Transport>(uint32_t)> shm_maker() {
    return [](uint32_t pid) {
        shm::ShmConfig cfg;
        cfg.single_copy = false;
        return std::make_unique<shm::ShmTransport>(kLoopback, pid, cfg);
    };
}

TEST(TransportLinks, TcpPeerThatClosesSaysGoodbye) { peer_ends(tcp_maker(), PeerEnds::Closes, true); }
TEST(TransportLinks, TcpPeerThatSaysFarewellThenExitsSaysGoodbye) {
    peer_ends(tcp_maker(), PeerEnds::FarewellThenExit, true);
}
TEST(TransportLinks, TcpPeerThatJustExitsSaysNothing) { peer_ends(tcp_maker(), PeerEnds::Exits, false); }
TEST(TransportLinks, ShmPeerThatClosesSaysGoodbye) { peer_ends(shm_maker(), PeerEnds::Closes, true); }
TEST(TransportLinks, ShmPeerThatSaysFarewellThenExitsSaysGoodbye) {
    peer_ends(shm_maker(), PeerEnds::FarewellThenExit, true);
}
TEST(TransportLinks, ShmPeerThatJustExitsSaysNothing) { peer_ends(shm_maker(), PeerEnds::Exits, false); }

} // namespace
