// SPDX-License-Identifier: BSD-3-Clause
// The PMI-1 client against a launcher that behaves as Slurm's pmi2 plugin does when it answers
// PMI-1: it never answers a second cmd=init on a connection, and reads each request in one read
// of 1024 bytes (the rest of a longer line is lost). The fake launcher here closes the connection
// on a second init (so that a client that sends one fails at once instead of waiting for ever)
// and records the longest request line.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/pmi_client.hpp"
#include "bootstrap/pmi_internal.hpp"

namespace {

using portico::bootstrap::PmiClient;

class FakeLauncher {
public:
    // answer_barriers false: a barrier never completes, as when a rank of the job died and the
    // launcher lets the others wait.
    // answer_finalize false: a launcher that has stopped answering (SIGSTOP, a hung host).
    explicit FakeLauncher(bool answer_barriers = true, bool answer_finalize = true)
        : answer_barriers_(answer_barriers), answer_finalize_(answer_finalize) {
        int sv[2];
        EXPECT_EQ(0, ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
        server_ = sv[0];
        client_ = sv[1];
        setenv("PMI_FD", std::to_string(client_).c_str(), 1);
        setenv("PMI_RANK", "0", 1);
        setenv("PMI_SIZE", "1", 1);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeLauncher() {
        ::shutdown(server_, SHUT_RDWR);
        thread_.join();
        ::close(server_);
        ::close(client_); // PMI_FD is the process's: the clients leave it open
        unsetenv("PMI_FD");
    }
    int client_fd() const { return client_; }
    int inits() const { return inits_.load(); }
    int finalizes() const { return finalizes_.load(); }
    int barriers() const { return barriers_.load(); }
    size_t longest_request() const { return longest_.load(); }

private:
    void reply(const std::string &s) {
        const std::string line = s + "\n";
        ASSERT_EQ(static_cast<ssize_t>(line.size()), ::write(server_, line.data(), line.size()));
    }
    void serve() {
        std::string buf;
        char chunk[4096];
        for (;;) {
            const ssize_t n = ::read(server_, chunk, sizeof chunk);
            if (n <= 0) return;
            buf.append(chunk, static_cast<size_t>(n));
            size_t nl;
            while ((nl = buf.find('\n')) != std::string::npos) {
                const std::string line = buf.substr(0, nl + 1);
                buf.erase(0, nl + 1);
                if (line.size() > longest_) longest_ = line.size();
                if (line.rfind("cmd=init ", 0) == 0) {
                    if (++inits_ > 1) { // Slurm would never answer: hang up so the test ends
                        ::shutdown(server_, SHUT_RDWR);
                        return;
                    }
                    reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
                } else if (line == "cmd=get_maxes\n") {
                    reply("cmd=maxes kvsname_max=256 keylen_max=256 vallen_max=1024");
                } else if (line == "cmd=get_my_kvsname\n") {
                    reply("cmd=my_kvsname kvsname=kvs_4242_0");
                } else if (line.rfind("cmd=put ", 0) == 0) {
                    reply(line.size() <= 1024 ? "cmd=put_result rc=0" : "cmd=put_result rc=0 (the rest is lost)");
                } else if (line == "cmd=barrier_in\n") {
                    ++barriers_;
                    if (answer_barriers_) reply("cmd=barrier_out");
                } else if (line == "cmd=finalize\n") {
                    ++finalizes_;
                    if (answer_finalize_) reply("cmd=finalize_ack");
                } else {
                    reply("cmd=unknown rc=-1");
                }
            }
        }
    }
    bool answer_barriers_;
    bool answer_finalize_;
    int server_ = -1, client_ = -1;
    std::atomic<int> inits_{0};
    std::atomic<int> finalizes_{0};
    std::atomic<int> barriers_{0};
    std::atomic<size_t> longest_{0};
    std::thread thread_;
};

TEST(PmiClient, ASecondClientOfTheProcessDoesNotInitAgain) {
    FakeLauncher launcher;
    auto first = PmiClient::from_environment();
    ASSERT_TRUE(first);
    auto second = PmiClient::from_environment(); // the engine's and a program's, say
    ASSERT_TRUE(second);
    EXPECT_EQ(1, launcher.inits());
    EXPECT_EQ("kvs_4242_0", second->kvsname());
    EXPECT_EQ(first->max_value_length(), second->max_value_length());
    second->barrier(); // the shared connection still works
}

TEST(PmiClient, EveryPutFitsInA1024ByteRequest) {
    FakeLauncher launcher;
    auto pmi = PmiClient::from_environment();
    ASSERT_TRUE(pmi);
    // keylen_max 256 leaves less than vallen_max for the value once the line is counted.
    EXPECT_LT(pmi->max_value_length(), 1023);
    pmi->put(std::string(255, 'k'), std::string(static_cast<size_t>(pmi->max_value_length()), 'v'));
    EXPECT_LE(launcher.longest_request(), 1024u);
}

TEST(PmiClient, AnUnansweredRequestEndsAtItsDeadline) {
    FakeLauncher launcher(false);
    auto pmi = PmiClient::from_environment();
    ASSERT_TRUE(pmi);
    setenv("PORTICO_PMI_TIMEOUT_S", "1", 1);
    try {
        pmi->barrier();
        FAIL() << "a barrier nobody answers returned";
    } catch (const portico::bootstrap::PmiError &e) {
        EXPECT_NE(std::string::npos, std::string(e.what()).find("PORTICO_PMI_TIMEOUT_S")) << e.what();
        EXPECT_NE(std::string::npos, std::string(e.what()).find("barrier_in")) << e.what();
    }
    unsetenv("PORTICO_PMI_TIMEOUT_S");
}

// The job service and a program's PMI calls (libpmi) are two clients of one connection: the first
// to finalize must not cut the other off; the launcher's finalize is the last one's.
TEST(PmiClient, TheLauncherFinalizeWaitsForTheLastUser) {
    FakeLauncher launcher;
    auto job_service = PmiClient::from_environment();
    auto program = PmiClient::from_environment();
    ASSERT_TRUE(job_service && program);
    job_service->finalize();
    EXPECT_EQ(0, launcher.finalizes());
    EXPECT_THROW(job_service->barrier(), portico::bootstrap::PmiError);
    program->barrier(); // still served
    EXPECT_GE(program->fd(), 0);
    program->finalize();
    EXPECT_EQ(1, launcher.finalizes());
    EXPECT_TRUE(program->finalizing());
    program->finalize(); // idempotent
    EXPECT_EQ(1, launcher.finalizes());
}

TEST(PmiClient, AClientDestroyedWithoutFinalizeStopsCounting) {
    FakeLauncher launcher;
    auto first = PmiClient::from_environment();
    auto second = PmiClient::from_environment();
    ASSERT_TRUE(first && second);
    second.reset();
    first->finalize();
    EXPECT_EQ(1, launcher.finalizes());
}

// PMI_FD is the process's descriptor, not the client's: another PMI client of the program (GASNet's,
// an MPI library's) may still speak on it after Portico's finalize, and its number must not be
// reused for a file meanwhile.
TEST(PmiClient, FinalizeLeavesThePmiFdOpen) {
    FakeLauncher launcher;
    auto pmi = PmiClient::from_environment();
    ASSERT_TRUE(pmi);
    pmi->finalize();
    EXPECT_EQ(1, launcher.finalizes());
    EXPECT_EQ(-1, pmi->fd());
    pmi.reset();
    ASSERT_NE(-1, ::fcntl(launcher.client_fd(), F_GETFD)) << "PMI_FD was closed";
    const char line[] = "cmd=barrier_in\n"; // and the other client's requests are still served
    ASSERT_EQ(static_cast<ssize_t>(sizeof line - 1), ::write(launcher.client_fd(), line, sizeof line - 1));
    char reply[64] = {};
    ASSERT_GT(::read(launcher.client_fd(), reply, sizeof reply - 1), 0);
    EXPECT_STREQ("cmd=barrier_out\n", reply);
}

// An exit sends the launcher's finalize for the users that have not: the job service of a program
// whose PtlInit and PtlFini do not balance (Open MPI's osc/portals4), a PMI program without
// PMI_Finalize.
TEST(PmiClient, LeavingAtExitFinalizesForEveryUser) {
    FakeLauncher launcher;
    auto job_service = PmiClient::from_environment();
    auto program = PmiClient::from_environment();
    ASSERT_TRUE(job_service && program);
    EXPECT_TRUE(PmiClient::leave_at_exit(std::chrono::seconds(30)));
    EXPECT_EQ(1, launcher.finalizes());
    EXPECT_TRUE(PmiClient::leave_at_exit(std::chrono::seconds(30))); // nothing more to do
    EXPECT_EQ(1, launcher.finalizes());
    job_service->finalize(); // late finalizes are no-ops
    program->finalize();
    EXPECT_EQ(1, launcher.finalizes());
}

// Exit must not wait for a launcher that does not answer, nor for a barrier another thread waits
// in: a rank that left the job (gasnet_exit between init and attach) never enters it, and an exit
// that waited for that thread left without finalizing, which hydra reported as a failure.
TEST(PmiClient, LeavingAtExitIsBounded) {
    {
        FakeLauncher silent(true, false);
        auto pmi = PmiClient::from_environment();
        ASSERT_TRUE(pmi);
        EXPECT_FALSE(PmiClient::leave_at_exit(std::chrono::milliseconds(300)));
        EXPECT_EQ(1, silent.finalizes());
    }
    {
        // A barrier that never completes. The launcher's finalize_ack would be read by the
        // waiter, which then waits for the process to end; this launcher keeps it, so that the
        // waiter can be joined, and the exit gives up on the ack at its bound.
        FakeLauncher stuck(false, false);
        auto pmi = PmiClient::from_environment();
        ASSERT_TRUE(pmi);
        std::thread waiter([&] {
            try {
                pmi->barrier();
            } catch (const portico::bootstrap::PmiError &) { // the launcher goes away at the end
            }
        });
        // The waiter holds the channel once its barrier_in is out; leave_at_exit finalizes beside it.
        while (stuck.barriers() == 0) std::this_thread::yield();
        EXPECT_FALSE(PmiClient::leave_at_exit(std::chrono::milliseconds(300)));
        while (stuck.finalizes() == 0) std::this_thread::yield(); // the launcher reads it after we return
        ::shutdown(stuck.client_fd(), SHUT_RDWR);                 // ends the waiter's read
        waiter.join();
    }
}

using portico::bootstrap::detail::nodes_of_ranks;

TEST(PmiProcessMapping, BlocksOfRanksPerNode) {
    EXPECT_EQ(std::vector<int>({0, 0, 0, 0}), nodes_of_ranks("(vector,(0,1,4))", 4));
    EXPECT_EQ(std::vector<int>({0, 0, 1, 1}), nodes_of_ranks("(vector,(0,2,2))", 4));
    EXPECT_EQ(std::vector<int>({0, 0, 1, 2, 2}), nodes_of_ranks("(vector,(0,1,2),(1,1,1),(2,1,2))", 5));
    EXPECT_EQ(std::vector<int>({3, 4}), nodes_of_ranks(" ( vector , ( 3 , 2 , 1 ) ) ", 2));
}

TEST(PmiProcessMapping, RepeatsUntilEveryRankHasANode) {
    EXPECT_EQ(std::vector<int>({0, 1, 0, 1, 0}), nodes_of_ranks("(vector,(0,2,1))", 5));
}

TEST(PmiProcessMapping, RejectsWhatIsNotAMapping) {
    for (const char *bad : {"", "(vector)", "(vector,(0,0,1))", "(vector,(0,1,0))", "(vector,(0,1,2)",
                            "(other,(0,1,1))", "(vector,(0,1,x))", "(vector,(0,1,1)) tail", "(vector,(-1,1,1))"})
        EXPECT_EQ(std::nullopt, nodes_of_ranks(bad, 4)) << bad;
    EXPECT_EQ(std::nullopt, nodes_of_ranks("(vector,(0,1,1))", 0));
}

} // namespace
