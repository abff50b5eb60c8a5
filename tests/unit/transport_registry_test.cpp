// SPDX-License-Identifier: BSD-3-Clause
// The transport registry (transport/registry.hpp) and the endpoint over what it selects
// (transport/endpoint.hpp): what PORTICO_TRANSPORT's values select, that each peer goes to the first
// selected transport that reaches it, that a pid taken on any transport moves the search on, and
// that a transport the user did not name may fail to open without taking the endpoint with it.
// The transports here are fakes registered by the test; the built-in ones are shm and tcp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "transport/endpoint.hpp"
#include "transport/registry.hpp"

namespace {

using namespace portico::transport;

std::vector<std::string> names(const std::vector<const TransportInfo *> &ts) {
    std::vector<std::string> out;
    for (const TransportInfo *t : ts) out.push_back(t->name);
    return out;
}

TEST(TransportRegistry, BuiltInTransportsAreRegisteredByPriority) {
    std::vector<std::string> all; // the built-in ones, whatever other tests added
    for (const std::string &n : names(registered()))
        if (n.rfind("test-", 0) != 0) all.push_back(n);
    ASSERT_GE(all.size(), 2u);
    EXPECT_EQ("shm", all[0]); // this machine first
    EXPECT_NE(all.end(), std::find(all.begin(), all.end(), "tcp"));
    ASSERT_NE(nullptr, find_transport("tcp"));
    EXPECT_TRUE(find_transport("tcp")->reaches({1, 1}, {2, 2}));
    EXPECT_TRUE(find_transport("shm")->reaches({1, 1}, {1, 2}));
    EXPECT_FALSE(find_transport("shm")->reaches({1, 1}, {2, 1}));
    EXPECT_EQ(nullptr, find_transport("carrier-pigeon"));
}

TEST(TransportRegistry, SelectionTakesAutoOrAListInOrderOfPreference) {
    Selection s;
    std::string error;
    ASSERT_TRUE(select_transports("auto", &s, &error));
    EXPECT_FALSE(s.named);
    EXPECT_EQ(names(registered()), names(s.transports));
    ASSERT_TRUE(select_transports("", &s, &error));
    EXPECT_EQ(names(registered()), names(s.transports));
    ASSERT_TRUE(select_transports("tcp", &s, &error));
    EXPECT_TRUE(s.named);
    EXPECT_EQ((std::vector<std::string>{"tcp"}), names(s.transports));
    ASSERT_TRUE(select_transports("tcp,shm", &s, &error));
    EXPECT_EQ((std::vector<std::string>{"tcp", "shm"}), names(s.transports));
}

TEST(TransportRegistry, UnknownOrRepeatedNamesAreRefusedWithTheList) {
    Selection s;
    std::string error;
    EXPECT_FALSE(select_transports("shm,carrier-pigeon", &s, &error));
    EXPECT_NE(std::string::npos, error.find("carrier-pigeon")) << error;
    EXPECT_NE(std::string::npos, error.find("shm, ")) << error; // the registered ones are listed
    error.clear();
    EXPECT_FALSE(select_transports("shm,shm", &s, &error));
    EXPECT_NE(std::string::npos, error.find("twice")) << error;
    EXPECT_FALSE(select_transports("shm,,tcp", &s, &error));
    EXPECT_THROW(open_endpoint({1, UINT32_MAX, "carrier-pigeon", {}, {}}), std::invalid_argument);
}

// ---- fakes --------------------------------------------------------------------------------------

// A transport that sends nowhere and records where it was asked to send.
class Fake final : public Transport {
public:
    Fake(const char *name, uint32_t nid, uint32_t pid) : name_(name), self_{nid, pid} {}
    PeerId self() const override { return self_; }
    const char *name() const override { return name_; }
    size_t max_frame_payload() const override { return 1000; }
    SendStatus send(PeerId to, const FrameHeader &, const Gather &, uint64_t, bool, bool, Hold) override {
        sent_to.push_back(to);
        return SendStatus::Sent;
    }
    int poll(Receiver &) override { return 0; }
    void arm_sleep() override {}
    void disarm_sleep() override {}
    void wait(Receiver &, int) override {}
    bool has_pending() const override { return false; }
    void interrupt() override {}
    void flush(Receiver &, int) override {}
    uint64_t malformed_frames() const override { return 1; }
    uint64_t refused_connections() const override { return 2; }
    std::vector<PeerId> sent_to;

private:
    const char *name_;
    PeerId self_;
};

std::set<uint32_t> g_near_taken; // pids the "near" fake refuses as taken
int g_far_opens = 0;
bool g_broken_fails = true;
std::vector<Fake *> g_opened;

std::unique_ptr<Transport> open_fake(const char *name, const OpenRequest &req) {
    auto f = std::make_unique<Fake>(name, req.nid, req.pid);
    g_opened.push_back(f.get());
    return f;
}

const TransportInfo kNear{"test-near",
                          1000,
                          "reaches nid 1 only",
                          [](PeerId, PeerId p) { return p.nid == 1; },
                          [](const OpenRequest &r) -> std::unique_ptr<Transport> {
                              if (g_near_taken.count(r.pid))
                                  throw std::system_error(EADDRINUSE, std::generic_category());
                              return open_fake("test-near", r);
                          },
                          [](uint32_t, uint32_t first, uint32_t count) {
                              return count == 1 ? "the holder of pid " + std::to_string(first)
                                                : "somebody holds " + std::to_string(count) + " of them";
                          }};
const TransportInfo kFar{"test-far", -1000, "reaches every peer", [](PeerId, PeerId) { return true; },
                         [](const OpenRequest &r) {
                             ++g_far_opens;
                             return open_fake("test-far", r);
                         }};
// Reaches nid 3 only; cannot run here unless told otherwise; asks for the job secret.
const TransportInfo kBroken{"test-broken", -2000, "cannot run here", [](PeerId, PeerId p) { return p.nid == 3; },
                            [](const OpenRequest &r) -> std::unique_ptr<Transport> {
                                if (g_broken_fails)
                                    throw std::system_error(EADDRNOTAVAIL, std::generic_category(), "not here");
                                if (r.job_secret) r.job_secret();
                                return open_fake("test-broken", r);
                            }};

class TransportEndpoint : public ::testing::Test {
protected:
    void SetUp() override {
        add_transport(&kNear);
        add_transport(&kFar);
        add_transport(&kBroken);
        add_transport(&kNear); // a second registration of the same name is ignored
        g_near_taken.clear();
        g_opened.clear();
        g_far_opens = 0;
        g_broken_fails = true;
    }
};

TEST_F(TransportEndpoint, EachPeerGoesToTheFirstTransportThatReachesIt) {
    auto ep = open_endpoint({1, 7, "test-near,test-far", {}, {}});
    ASSERT_EQ(2u, g_opened.size());
    EXPECT_STREQ("test-near+test-far", ep->name());
    EXPECT_EQ((PeerId{1, 7}), ep->self());
    EXPECT_EQ(1000u, ep->max_frame_payload());
    EXPECT_EQ(SendStatus::Sent, ep->send({1, 9}, {}, {}, 0, false));
    EXPECT_EQ(SendStatus::Sent, ep->send({2, 9}, {}, {}, 0, false));
    ASSERT_EQ(1u, g_opened[0]->sent_to.size());
    EXPECT_EQ((PeerId{1, 9}), g_opened[0]->sent_to[0]);
    ASSERT_EQ(1u, g_opened[1]->sent_to.size());
    EXPECT_EQ((PeerId{2, 9}), g_opened[1]->sent_to[0]);
    // Counters add up over the members.
    EXPECT_EQ(2u, ep->malformed_frames());
    EXPECT_EQ(4u, ep->refused_connections());
}

TEST_F(TransportEndpoint, APeerNoSelectedTransportReachesIsUnreachable) {
    auto one = open_endpoint({1, 7, "test-near", {}, {}});
    EXPECT_STREQ("test-near", one->name()); // one transport: no router in between
    g_broken_fails = false;
    auto ep = open_endpoint({1, 8, "test-near,test-broken", {}, {}});
    EXPECT_EQ(SendStatus::Sent, ep->send({3, 1}, {}, {}, 0, false));
    EXPECT_EQ(SendStatus::Unreachable, ep->send({2, 9}, {}, {}, 0, false));
    ASSERT_EQ(3u, g_opened.size());
    EXPECT_EQ(1u, g_opened[2]->sent_to.size());
    EXPECT_FALSE(ep->direct_access({2, 9}, 1 << 20));
}

TEST_F(TransportEndpoint, APidTakenOnAnyTransportMovesTheSearchOn) {
    // PTL_PID_ANY starts at a per-process point; take every pid but one on the near transport.
    for (uint32_t p = kFirstAnyPid; p < kFirstAnyPid + kAnyPidCount; ++p) g_near_taken.insert(p);
    const uint32_t free_pid = kFirstAnyPid + 4321;
    g_near_taken.erase(free_pid);
    auto ep = open_endpoint({1, UINT32_MAX, "test-far,test-near", {}, {}});
    EXPECT_EQ(free_pid, ep->self().pid);
    try {
        open_endpoint({1, 5000, "test-far,test-near", {}, {}}); // a pid asked for is not searched from
        FAIL() << "a taken pid was opened";
    } catch (const std::system_error &e) {
        EXPECT_EQ(EADDRINUSE, e.code().value());
    }
}

// A pid that cannot be had says who holds it, and an exhausted PTL_PID_ANY search says how many
// pids each transport refused and who holds them (the transport's holders()): a user denied by
// another user's sockets learns it.
TEST_F(TransportEndpoint, APidInUseNamesItsHolder) {
    g_near_taken.insert(5000);
    try {
        open_endpoint({1, 5000, "test-far,test-near", {}, {}});
        FAIL() << "a taken pid was opened";
    } catch (const std::system_error &e) {
        EXPECT_EQ(EADDRINUSE, e.code().value());
        EXPECT_NE(nullptr,
                  std::strstr(e.what(), "pid 5000 is in use on this machine (test-near: the holder of pid 5000)"))
            << e.what();
    }
    for (uint32_t p = kFirstAnyPid; p < kFirstAnyPid + kAnyPidCount; ++p) g_near_taken.insert(p);
    try {
        open_endpoint({1, UINT32_MAX, "test-far,test-near", {}, {}});
        FAIL() << "every pid is taken, yet one was opened";
    } catch (const std::system_error &e) {
        EXPECT_EQ(EADDRINUSE, e.code().value());
        EXPECT_NE(nullptr,
                  std::strstr(e.what(),
                              "no free pid in 1024..16383: 15360 taken on test-near (somebody holds 15360 of them)"))
            << e.what();
    }
}

// Under `auto`, a transport on which every pid of the PTL_PID_ANY range is held (another user can
// hold every TCP port of the range) is left out and the search runs again on the others: the
// process still opens an endpoint, reaching the peers the other transports reach. A named
// transport is never left out: the search then fails as above.
TEST_F(TransportEndpoint, UnderAutoATransportWithNoFreePidIsLeftOutAndTheOthersServe) {
    for (uint32_t p = kFirstAnyPid; p < kFirstAnyPid + kAnyPidCount; ++p) g_near_taken.insert(p);
    auto ep = open_endpoint({1, UINT32_MAX, "auto", {}, {}});
    EXPECT_GE(ep->self().pid, kFirstAnyPid);
    EXPECT_LT(ep->self().pid, kFirstAnyPid + kAnyPidCount);
    EXPECT_EQ(nullptr, std::strstr(ep->name(), "test-near")) << ep->name();
    EXPECT_NE(nullptr, std::strstr(ep->name(), "test-far")) << ep->name();
    EXPECT_THROW(open_endpoint({1, UINT32_MAX, "test-near,test-far", {}, {}}), std::system_error);
}

TEST_F(TransportEndpoint, OnlyANamedTransportThatCannotRunFailsTheEndpoint) {
    // Named: the endpoint fails with the transport's reason.
    try {
        open_endpoint({1, 11, "test-near,test-broken", {}, {}});
        FAIL() << "a named transport that cannot run was left out";
    } catch (const std::system_error &e) {
        EXPECT_EQ(EADDRNOTAVAIL, e.code().value());
    }
    // Under auto it is left out; the others serve (as TCP is when PORTICO_NID is not ours).
    g_opened.clear();
    auto ep = open_endpoint({1, 12, "auto", {}, {}});
    std::set<std::string> opened;
    for (Fake *f : g_opened) opened.insert(f->name());
    EXPECT_EQ(1u, opened.count("test-near"));
    EXPECT_EQ(1u, opened.count("test-far"));
    EXPECT_EQ(0u, opened.count("test-broken"));
    EXPECT_EQ(nullptr, std::strstr(ep->name(), "test-broken"));
}

TEST_F(TransportEndpoint, TheJobSecretIsAskedOnlyByTransportsThatOpen) {
    int asked = 0;
    auto secret = [&] {
        ++asked;
        return std::string("s");
    };
    auto a = open_endpoint({1, 13, "test-near", secret, {}});
    EXPECT_EQ(0, asked); // the near fake does not authenticate
    g_broken_fails = false;
    auto b = open_endpoint({1, 14, "test-near,test-broken", secret, {}});
    EXPECT_EQ(1, asked);
}

} // namespace
