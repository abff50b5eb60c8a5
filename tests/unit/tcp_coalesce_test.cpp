// SPDX-License-Identifier: BSD-3-Clause
// TCP coalescing (tcp_transport.hpp): requests sent with Hold::Burst to a peer that was sent one
// moments ago, and that do not answer something the peer sent since, wait, copied, for the next
// poll, and then leave together in one write; a lone one leaves at once. What must hold whatever the timing: every frame arrives once, in the order sent,
// with the bytes it had when it was sent; nothing waits past a poll; an unreadable payload is a
// SourceFault that sends nothing. The window is set to a second or to a nanosecond so that which
// frames wait does not depend on how fast this machine runs.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "common/guarded_copy.hpp"
#include "free_endpoint.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace {

using namespace portico::transport;

constexpr uint32_t kLoopback = 0x7f000001;
constexpr uint64_t kLongWindow = 1'000'000'000; // every request after the first waits
constexpr uint64_t kNoWindow = 1;               // no request finds the link streaming

struct Frames final : Receiver {
    struct Got {
        uint64_t id;
        std::vector<std::byte> payload;
    };
    std::vector<Got> got;
    void on_frame(Link &, const FrameHeader &h, const std::byte *payload) override {
        uint64_t id;
        std::memcpy(&id, h.protocol, sizeof id);
        got.push_back({id, std::vector<std::byte>(payload, payload + h.t.frame_payload)});
    }
    void on_link_failed(Link &, bool) override {}
    void on_send_complete(uint64_t, bool, bool) override {}
    std::vector<uint64_t> ids() const {
        std::vector<uint64_t> v;
        for (const Got &g : got) v.push_back(g.id);
        return v;
    }
};

FrameHeader message(uint64_t id) {
    FrameHeader h{};
    h.t.protocol = Protocol::Portals;
    std::memcpy(h.protocol, &id, sizeof id);
    h.t.protocol_bytes = sizeof id;
    return h;
}

struct Pair {
    std::unique_ptr<tcp::TcpTransport> a, b;
    Frames ra, rb;

    explicit Pair(uint64_t window) {
        tcp::TcpConfig cfg;
        cfg.secret = "tcp-coalesce-test";
        cfg.coalesce_ns = window;
        auto make = [&](uint32_t pid) { return std::make_unique<tcp::TcpTransport>(kLoopback, pid, cfg); };
        a = portico::test::open_free(make);
        b = portico::test::open_free(make);
        // Bring the link from a to b up with a message that is never held.
        EXPECT_NE(SendStatus::Unreachable, a->send(b->self(), message(0), {}, 0, true));
        EXPECT_TRUE(poll_b_until(1));
        rb.got.clear();
    }
    // Polls both until b has n frames (a generous bound on turns, not on time).
    bool poll_b_until(size_t n) {
        for (long i = 0; i < 20'000'000 && rb.got.size() < n; ++i) {
            a->poll(ra);
            b->poll(rb);
        }
        return rb.got.size() >= n;
    }
    // Polls b alone: what a holds cannot arrive, whatever b does.
    void poll_b_only(int turns) {
        for (int i = 0; i < turns; ++i) b->poll(rb);
    }
    SendStatus send(uint64_t id, const void *p, size_t n, bool bundle = false, Hold hold = Hold::Burst) {
        iovec iov{const_cast<void *>(p), n};
        return a->send(b->self(), message(id), {&iov, 1, n}, 0, true, bundle, hold);
    }
};

TEST(TcpCoalescing, BurstLeavesTogetherAtTheNextPollInOrderWithTheBytesSent) {
    Pair p(kLongWindow);
    ASSERT_TRUE(p.a && p.b);
    uint64_t value = 101;
    // The first request goes at once (no request was sent before); the second is the first held
    // (Held: the caller must make a poll come); the rest join it.
    ASSERT_EQ(SendStatus::Sent, p.send(1, &value, sizeof value));
    ASSERT_TRUE(p.poll_b_until(1));
    value = 102;
    ASSERT_EQ(SendStatus::Held, p.send(2, &value, sizeof value));
    EXPECT_TRUE(p.a->holds_frames());
    for (uint64_t id = 3; id <= 20; ++id) {
        value = 100 + id;
        ASSERT_EQ(SendStatus::Sent, p.send(id, &value, sizeof value)) << id;
    }
    value = 0; // the frames were copied when sent
    p.poll_b_only(10000);
    EXPECT_EQ(std::vector<uint64_t>{1}, p.rb.ids()) << "held frames left without a poll of the sender";
    p.a->poll(p.ra); // writes what was held
    EXPECT_FALSE(p.a->holds_frames());
    ASSERT_TRUE(p.poll_b_until(20));
    ASSERT_EQ(20u, p.rb.got.size());
    for (uint64_t i = 0; i < 20; ++i) {
        EXPECT_EQ(i + 1, p.rb.got[i].id);
        ASSERT_EQ(sizeof(uint64_t), p.rb.got[i].payload.size());
        uint64_t v;
        std::memcpy(&v, p.rb.got[i].payload.data(), sizeof v);
        EXPECT_EQ(101 + i, v) << "frame " << i + 1;
    }
}

TEST(TcpCoalescing, ALoneRequestIsNeverHeld) {
    Pair p(kNoWindow);
    ASSERT_TRUE(p.a && p.b);
    const uint64_t value = 7;
    for (uint64_t id = 1; id <= 5; ++id) {
        EXPECT_EQ(SendStatus::Sent, p.send(id, &value, sizeof value));
        EXPECT_FALSE(p.a->holds_frames());
    }
    p.poll_b_only(1);
    ASSERT_TRUE(p.poll_b_until(5));
    EXPECT_EQ((std::vector<uint64_t>{1, 2, 3, 4, 5}), p.rb.ids());
}

TEST(TcpCoalescing, ARequestAnsweringThePeerIsNotHeld) {
    Pair p(kLongWindow);
    ASSERT_TRUE(p.a && p.b);
    const uint64_t value = 4;
    ASSERT_EQ(SendStatus::Sent, p.send(1, &value, sizeof value));
    ASSERT_EQ(SendStatus::Held, p.send(2, &value, sizeof value));
    p.a->poll(p.ra);
    ASSERT_TRUE(p.poll_b_until(2));
    // b answers (on the connection a opened); a's next request answers that: a ping-pong.
    ASSERT_NE(SendStatus::Unreachable, p.b->send(p.a->self(), message(50), {}, 0, true));
    for (long i = 0; i < 20'000'000 && p.ra.got.empty(); ++i) {
        p.a->poll(p.ra);
        p.b->poll(p.rb);
    }
    ASSERT_EQ(std::vector<uint64_t>{50}, p.ra.ids());
    EXPECT_EQ(SendStatus::Sent, p.send(3, &value, sizeof value));
    EXPECT_EQ(SendStatus::Held, p.send(4, &value, sizeof value)) << "the one after it is a stream again";
    p.a->poll(p.ra);
    ASSERT_TRUE(p.poll_b_until(4));
    EXPECT_EQ((std::vector<uint64_t>{1, 2, 3, 4}), p.rb.ids());
}

TEST(TcpCoalescing, AStreamWithEarlierRequestsUnansweredIsHeldWhateverComesBack) {
    // A window of puts whose acks come back while it is still being sent: what comes in answers
    // the earlier puts, the next put answers nothing, and it joins the burst (Hold::Stream).
    Pair p(kLongWindow);
    ASSERT_TRUE(p.a && p.b);
    const uint64_t value = 5;
    ASSERT_EQ(SendStatus::Sent, p.send(1, &value, sizeof value, false, Hold::Stream));
    ASSERT_TRUE(p.poll_b_until(1));
    ASSERT_NE(SendStatus::Unreachable, p.b->send(p.a->self(), message(60), {}, 0, true)); // "an ack"
    for (long i = 0; i < 20'000'000 && p.ra.got.empty(); ++i) {
        p.a->poll(p.ra);
        p.b->poll(p.rb);
    }
    ASSERT_EQ(std::vector<uint64_t>{60}, p.ra.ids());
    EXPECT_EQ(SendStatus::Held, p.send(2, &value, sizeof value, false, Hold::Stream))
        << "a stream's request is held although something came back since the last one";
    EXPECT_EQ(SendStatus::Sent, p.send(3, &value, sizeof value, false, Hold::Stream));
    p.poll_b_only(10000);
    EXPECT_EQ(std::vector<uint64_t>{1}, p.rb.ids()) << "held frames left without a poll of the sender";
    p.a->poll(p.ra);
    ASSERT_TRUE(p.poll_b_until(3));
    EXPECT_EQ((std::vector<uint64_t>{1, 2, 3}), p.rb.ids());
}

TEST(TcpCoalescing, AnAnswerOnThePeersOwnConnectionCountsToo) {
    // Two processes that first send to each other at the same moment keep a connection each, and
    // each answers on its own: what b sends arrives on the connection b opened, not on the one a
    // sends on. An answer must still be recognised as one (GASNet's blocking puts over TCP were
    // held and waited for a poll until it was).
    tcp::TcpConfig cfg;
    cfg.secret = "tcp-coalesce-test";
    cfg.coalesce_ns = kLongWindow;
    auto make = [&](uint32_t pid) { return std::make_unique<tcp::TcpTransport>(kLoopback, pid, cfg); };
    auto a = portico::test::open_free(make), b = portico::test::open_free(make);
    ASSERT_TRUE(a && b);
    Frames ra, rb;
    ASSERT_NE(SendStatus::Unreachable, a->send(b->self(), message(0), {}, 0, true));   // before either polls:
    ASSERT_NE(SendStatus::Unreachable, b->send(a->self(), message(100), {}, 0, true)); // a connection each
    for (long i = 0; i < 20'000'000 && (ra.got.empty() || rb.got.empty()); ++i) {
        a->poll(ra);
        b->poll(rb);
    }
    ASSERT_FALSE(ra.got.empty() || rb.got.empty());
    const uint64_t value = 6;
    iovec iov{const_cast<uint64_t *>(&value), sizeof value};
    const Gather g{&iov, 1, sizeof value};
    ASSERT_EQ(SendStatus::Sent, a->send(b->self(), message(1), g, 0, true, false, Hold::Burst));
    ASSERT_EQ(SendStatus::Held, a->send(b->self(), message(2), g, 0, true, false, Hold::Burst));
    a->poll(ra);
    for (long i = 0; i < 20'000'000 && rb.got.size() < 3; ++i) b->poll(rb);
    ASSERT_EQ(3u, rb.got.size());
    ASSERT_NE(SendStatus::Unreachable, b->send(a->self(), message(101), {}, 0, true)); // b's answer
    for (long i = 0; i < 20'000'000 && ra.got.size() < 2; ++i) a->poll(ra);
    ASSERT_EQ((std::vector<uint64_t>{100, 101}), ra.ids());
    EXPECT_EQ(SendStatus::Sent, a->send(b->self(), message(3), g, 0, true, false, Hold::Burst))
        << "a request answering the peer was held";
}

TEST(TcpCoalescing, HeldBytesBeyondTheBoundLeaveWithoutAPoll) {
    Pair p(kLongWindow);
    ASSERT_TRUE(p.a && p.b);
    std::vector<std::byte> chunk(3000, std::byte{0x5a});
    // 3096-byte frames: the 22nd held one passes 64 KiB, and everything held is written then.
    constexpr uint64_t kFrames = 30;
    for (uint64_t id = 1; id <= kFrames; ++id)
        ASSERT_NE(SendStatus::SourceFault, p.send(id, chunk.data(), chunk.size()));
    for (long i = 0; i < 20'000'000 && p.rb.got.size() < 2; ++i) p.b->poll(p.rb);
    EXPECT_GE(p.rb.got.size(), 2u) << "held bytes never left without a poll of the sender";
    ASSERT_TRUE(p.poll_b_until(kFrames));
    ASSERT_EQ(kFrames, p.rb.got.size());
    for (uint64_t i = 0; i < kFrames; ++i) {
        EXPECT_EQ(i + 1, p.rb.got[i].id);
        EXPECT_EQ(chunk, p.rb.got[i].payload);
    }
}

TEST(TcpCoalescing, UnreadablePayloadIsASourceFaultAndNothingOfItLeaves) {
    portico::install_fault_guard(); // as the engine does with its first NI
    Pair p(kLongWindow);
    ASSERT_TRUE(p.a && p.b);
    const long page = sysconf(_SC_PAGESIZE);
    void *hole = mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, hole);
    const uint64_t value = 9;
    ASSERT_EQ(SendStatus::Sent, p.send(1, &value, sizeof value));
    ASSERT_EQ(SendStatus::Held, p.send(2, &value, sizeof value));
    EXPECT_EQ(SendStatus::SourceFault, p.send(3, hole, 64));
    EXPECT_EQ(SendStatus::Sent, p.send(4, &value, sizeof value));
    p.a->poll(p.ra);
    ASSERT_TRUE(p.poll_b_until(3));
    p.poll_b_only(1000);
    EXPECT_EQ((std::vector<uint64_t>{1, 2, 4}), p.rb.ids());
    munmap(hole, static_cast<size_t>(page));
}

TEST(TcpCoalescing, ALargeMessageLeavesAfterTheFramesHeldBeforeIt) {
    Pair p(kLongWindow);
    ASSERT_TRUE(p.a && p.b);
    const uint64_t value = 3;
    std::vector<std::byte> big(20000, std::byte{0x33});
    ASSERT_EQ(SendStatus::Sent, p.send(1, &value, sizeof value));
    ASSERT_EQ(SendStatus::Held, p.send(2, &value, sizeof value));
    ASSERT_EQ(SendStatus::Sent, p.send(3, &value, sizeof value));
    // Too large to hold: written at once, after what was held.
    EXPECT_EQ(SendStatus::Sent, p.send(4, big.data(), big.size()));
    ASSERT_TRUE(p.poll_b_until(4));
    EXPECT_EQ((std::vector<uint64_t>{1, 2, 3, 4}), p.rb.ids());
    EXPECT_EQ(big, p.rb.got[3].payload);
}

TEST(TcpCoalescing, ABundleHoldsEvenOnAQuietLinkUntilFlushWakeups) {
    Pair p(kNoWindow);
    ASSERT_TRUE(p.a && p.b);
    const uint64_t value = 5;
    ASSERT_EQ(SendStatus::Held, p.send(1, &value, sizeof value, true));
    ASSERT_EQ(SendStatus::Sent, p.send(2, &value, sizeof value, true));
    p.poll_b_only(10000);
    EXPECT_TRUE(p.rb.got.empty());
    p.a->flush_wakeups(); // PtlEndBundle
    EXPECT_FALSE(p.a->holds_frames());
    for (long i = 0; i < 20'000'000 && p.rb.got.size() < 2; ++i) p.b->poll(p.rb);
    EXPECT_EQ((std::vector<uint64_t>{1, 2}), p.rb.ids());
}

TEST(TcpCoalescing, AHeldAckWaitsPastFlushWakeupsForTheNextWrite) {
    // A thread about to wait calls flush_wakeups (for bundles); a held ack must not leave there in
    // a system call of its own: in a ping-pong the application's next put, right after the wait,
    // carries it.
    Pair p(kNoWindow);
    ASSERT_TRUE(p.a && p.b);
    ASSERT_EQ(SendStatus::Sent, p.a->send(p.b->self(), message(1), {}, 0, true, false, Hold::Ack));
    EXPECT_TRUE(p.a->holds_frames());
    p.a->flush_wakeups();
    EXPECT_TRUE(p.a->holds_frames());
    p.poll_b_only(10000);
    EXPECT_TRUE(p.rb.got.empty()) << "the ack left on its own";
    const uint64_t value = 2;
    ASSERT_EQ(SendStatus::Sent, p.send(2, &value, sizeof value)); // a lone request: written at once, after the ack
    for (long i = 0; i < 20'000'000 && p.rb.got.size() < 2; ++i) p.b->poll(p.rb);
    EXPECT_EQ((std::vector<uint64_t>{1, 2}), p.rb.ids());
}

TEST(TcpCoalescing, ArmingSleepWritesWhatIsHeld) {
    Pair p(kLongWindow);
    ASSERT_TRUE(p.a && p.b);
    const uint64_t value = 1;
    ASSERT_EQ(SendStatus::Sent, p.send(1, &value, sizeof value));
    ASSERT_EQ(SendStatus::Held, p.send(2, &value, sizeof value));
    p.a->arm_sleep(); // a thread about to sleep in wait(): nothing may stay held
    EXPECT_FALSE(p.a->holds_frames());
    p.a->disarm_sleep();
    for (long i = 0; i < 20'000'000 && p.rb.got.size() < 2; ++i) p.b->poll(p.rb);
    EXPECT_EQ((std::vector<uint64_t>{1, 2}), p.rb.ids());
}

} // namespace
