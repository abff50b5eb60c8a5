// SPDX-License-Identifier: BSD-3-Clause
// What outsiders cannot do to Portico's processes (the trust model in tools/portico-run/README.md,
// *Trust model: transports*, names these tests beside its sentences).
// The outsiders are real processes (outsider.cpp): another user where the point is another user
// (those tests need root to become uid 65534, and are skipped with that reason without it), or a
// stranger process of the same user.
#include <gtest/gtest.h>

#include <portals4.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "child.hpp"
#include "common/netif.hpp"
#include "transport/shm/rendezvous.hpp"

namespace {

using portico::test::Child;
using portico::test::file_text;

const char *kNobody = "65534";

std::string peer_binary() { return PEER_BINARY; }
std::string outsider_binary() { return OUTSIDER_BINARY; }
std::string portico_run() { return PORTICO_RUN; }
std::string flood_rank() { return FLOOD_RANK; }
std::string mpiexec_hydra() { return MPIEXEC_HYDRA; }

#define REQUIRE_ROOT(why)                                                                                              \
    do {                                                                                                               \
        if (geteuid() != 0) GTEST_SKIP() << "needs root, to run an outsider as another user (uid 65534): " << (why);   \
    } while (0)

// A directory of this test's own under /tmp, removed at the end.
class TempDir {
public:
    TempDir() {
        char name[] = "/tmp/portico-outsiders-XXXXXX";
        if (!mkdtemp(name)) throw std::runtime_error("mkdtemp");
        path_ = name;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

// Two standalone processes (physical NIs, PTL_PID_ANY, ids exchanged by the test) exchange puts of
// 8 B to 1 MiB with every event checked: the proof that a job could start and run. a's stderr goes
// to stderr_a when given.
void two_processes_exchange_puts(const std::vector<std::string> &env, const std::string &stderr_a = {}) {
    Child a(peer_binary(), {"pingpong", "0"}, env, stderr_a), b(peer_binary(), {"pingpong", "1"}, env);
    const std::string ia = a.line(), ib = b.line();
    ASSERT_EQ(0u, ia.rfind("ID ", 0)) << ia;
    ASSERT_EQ(0u, ib.rfind("ID ", 0)) << ib;
    a.send("PEER " + ib.substr(3));
    b.send("PEER " + ia.substr(3));
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

// The end of a long text (a job's stderr), where its last words are.
std::string tail_of(const std::string &text) { return text.size() > 4000 ? text.substr(text.size() - 4000) : text; }

// A squatter of the 15,360 names or ports of PTL_PID_ANY's range needs a descriptor for each: why
// it cannot have them here, or empty.
std::string squatter_lacks_descriptors() {
    rlimit fds{};
    getrlimit(RLIMIT_NOFILE, &fds);
    if (fds.rlim_max >= 15360 + 64) return {};
    return "the squatter needs 15,424 descriptors; the hard limit is " + std::to_string(fds.rlim_max);
}

std::string hex_nid() {
    char text[16];
    std::snprintf(text, sizeof text, "%08x", portico::local_nid());
    return text;
}

} // namespace

// Until 2026-11 shared-memory endpoints met on abstract socket names, which carry no permissions:
// another user who bound the 15,360 names of PTL_PID_ANY's range made every PTL_PID_ANY on the
// machine fail with PTL_PID_IN_USE. Now they meet in a directory only their user may enter: the
// same squat blocks nothing, and the squatter cannot even make a socket in that directory.
TEST(SharedMemoryNames, AnotherUserBindingEveryNameDoesNotBlockPidAny) {
    REQUIRE_ROOT("the squatter of every name");
    if (const std::string why = squatter_lacks_descriptors(); !why.empty()) GTEST_SKIP() << why;
    Child squatter(outsider_binary(), {"--uid", kNobody, "squat-abstract", hex_nid(), "1024", "15360"});
    ASSERT_EQ("SQUATTING 15360", squatter.line());
    const std::string dir = portico::transport::shm::endpoint_directory("");
    Child intruder(outsider_binary(), {"--uid", kNobody, "try-bind", dir + "/" + hex_nid() + ".1024"});
    EXPECT_EQ("BIND EACCES", intruder.line()) << "another user made a socket in " << dir;
    two_processes_exchange_puts({});
}

// Another user cannot even connect to an endpoint of this user on shared memory: its socket lies
// in a directory only this user may enter.
TEST(SharedMemoryNames, AnotherUserCannotConnectToAnEndpoint) {
    REQUIRE_ROOT("the one who tries to connect");
    Child endpoint(peer_binary(), {"hold"});
    const std::string id = endpoint.line();
    unsigned nid = 0, pid = 0;
    ASSERT_EQ(2, std::sscanf(id.c_str(), "ID %u %u", &nid, &pid)) << id;
    char name[32];
    std::snprintf(name, sizeof name, "/%08x.%u", nid, pid);
    const std::string path = portico::transport::shm::endpoint_directory("") + name;
    Child same_user(outsider_binary(), {"try-connect", path});
    EXPECT_EQ("CONNECT OK", same_user.line()) << "the endpoint is not where the test looks";
    Child other_user(outsider_binary(), {"--uid", kNobody, "try-connect", path});
    EXPECT_EQ("CONNECT EACCES", other_user.line());
    endpoint.send("BYE");
    EXPECT_EQ(0, endpoint.wait_exit());
}

// Another user who makes the endpoint directory first (here: PORTICO_SHM_DIR's, in a directory
// anyone may write) cannot hold the job's endpoints: shared memory is left out, with a message
// naming the directory's owner, and the processes talk over TCP instead.
TEST(SharedMemoryNames, AnEndpointDirectoryOfAnotherUserIsNotUsed) {
    REQUIRE_ROOT("the maker of the directory");
    TempDir tmp;
    ASSERT_EQ(0, chmod(tmp.path().c_str(), 01777));
    const std::string dir = tmp.path() + "/shm";
    Child squatter(outsider_binary(), {"--uid", kNobody, "squat-dir", dir});
    ASSERT_EQ("MADE", squatter.line());
    const std::string err = tmp.path() + "/a.err";
    two_processes_exchange_puts({"PORTICO_SHM_DIR=" + dir, "PORTICO_JOB_SECRET=outsiders"}, err);
    const std::string said = file_text(err);
    EXPECT_NE(std::string::npos, said.find("belongs to uid 65534")) << said;
    EXPECT_NE(std::string::npos, said.find("shm transport is disabled")) << said;
}

// A pid whose TCP port another user holds is in use (PTL_PID_IN_USE), and the message says who
// holds it.
TEST(SharedMemoryNames, APidWhosePortAnotherUserHoldsNamesTheHolder) {
    REQUIRE_ROOT("the holder of the port");
    TempDir tmp;
    // A pid whose port is free: the holder tells.
    for (uint32_t pid = 40000 + static_cast<uint32_t>(getpid()) % 5000, tries = 0; tries < 50; ++pid, ++tries) {
        Child holder(outsider_binary(), {"--uid", kNobody, "squat-port", std::to_string(16384 + pid)});
        if (holder.line() != "HOLDING") continue;
        const std::string err = tmp.path() + "/open.err";
        Child opener(peer_binary(), {"openpid", std::to_string(pid)}, {}, err);
        EXPECT_EQ("RC " + std::to_string(PTL_PID_IN_USE), opener.line());
        EXPECT_EQ(0, opener.wait_exit());
        const std::string said = file_text(err);
        EXPECT_NE(std::string::npos, said.find("pid " + std::to_string(pid) + " is in use")) << said;
        EXPECT_NE(std::string::npos, said.find("uid 65534 (nobody)")) << said;
        EXPECT_NE(std::string::npos, said.find("process " + std::to_string(holder.pid()))) << said;
        return;
    }
    FAIL() << "no free port to hold";
}

// Another user who holds every TCP port of PTL_PID_ANY's range (a TCP endpoint listens on
// PORTICO_TCP_PORT_BASE + pid) used to deny every PTL_PID_ANY NI on the machine that opens TCP,
// which is every NI under the default transport choice. TCP is now left out of such a process,
// with a message naming the holder, and shared memory serves: two processes still exchange puts.
// The ports are moved (base 1024: ports 2048..17407) away from the ones other tests use.
TEST(SharedMemoryNames, AnotherUserHoldingEveryTcpPortDoesNotBlockPidAny) {
    REQUIRE_ROOT("the squatter of every port");
    if (const std::string why = squatter_lacks_descriptors(); !why.empty()) GTEST_SKIP() << why;
    Child squatter(outsider_binary(), {"--uid", kNobody, "squat-ports", "2048", "15360"});
    ASSERT_EQ("SQUATTING 15360", squatter.line());
    TempDir tmp;
    const std::string err = tmp.path() + "/a.err";
    two_processes_exchange_puts({"PORTICO_TCP_PORT_BASE=1024"}, err);
    const std::string said = file_text(err);
    EXPECT_NE(std::string::npos, said.find("the tcp transport is disabled for this process: no pid in 1024..16383"))
        << said;
    EXPECT_NE(std::string::npos, said.find("uid 65534 (nobody)")) << said;
}

// A pid another endpoint of this user holds: the message names its process.
TEST(SharedMemoryNames, APidAnotherEndpointHoldsNamesItsProcess) {
    TempDir tmp;
    Child first(peer_binary(), {"hold"});
    const std::string id = first.line();
    unsigned nid = 0, pid = 0;
    ASSERT_EQ(2, std::sscanf(id.c_str(), "ID %u %u", &nid, &pid)) << id;
    const std::string err = tmp.path() + "/open.err";
    Child second(peer_binary(), {"openpid", std::to_string(pid)}, {}, err);
    EXPECT_EQ("RC " + std::to_string(PTL_PID_IN_USE), second.line());
    EXPECT_EQ(0, second.wait_exit());
    const std::string said = file_text(err);
    EXPECT_NE(std::string::npos, said.find("pid " + std::to_string(pid) + " is in use")) << said;
    EXPECT_NE(std::string::npos, said.find("process " + std::to_string(first.pid()) + " (standalone_peer)")) << said;
    first.send("BYE");
    EXPECT_EQ(0, first.wait_exit());
}

// A flood of unauthenticated connections — silent, slow, garbage and half-open ones, from the
// machine's own address and from 150 others, 420 on each rank's port, every one the rank closes
// opened again — never stops a job's own links (300 silent connections per port used
// to keep the 256 "waiting to authenticate" slots full, every new link of the job was
// refused, and each refusal was logged). A 4-rank TCP job opens all its links during the flood;
// every put, ack and event is checked by the ranks (flood_rank.cpp). The flooder is another user
// when the test runs as root; the flood does not depend on the uid, so without root it is a
// process of the same user.
TEST(TcpFlood, EveryNewLinkOfAJobComesUpWhileOutsidersFloodItsPorts) {
    std::vector<std::string> args;
    if (geteuid() == 0) args = {"--uid", kNobody};
    TempDir tmp;
    const std::string job_err = tmp.path() + "/job.err";
    Child job(portico_run(), {"-n", "4", "--timeout", "120", flood_rank()}, {"PORTICO_TRANSPORT=tcp"}, job_err);
    uint32_t nid = 0;
    std::vector<std::string> ports(4);
    for (int i = 0; i < 4; ++i) {
        const std::string line = job.line();
        int rank = -1;
        unsigned n = 0, pid = 0;
        ASSERT_EQ(3, std::sscanf(line.c_str(), "ID %d %u %u", &rank, &n, &pid)) << line;
        ASSERT_TRUE(rank >= 0 && rank < 4) << line;
        nid = n;
        ports[static_cast<size_t>(rank)] = std::to_string(16384 + pid);
    }
    args.insert(args.end(), {"flood", portico::ipv4_text(nid)});
    args.insert(args.end(), ports.begin(), ports.end());
    Child flooder(outsider_binary(), args);
    ASSERT_EQ("FLOODING 1680", flooder.line(60000)) << "the flooder could not connect";
    job.send("GO");
    std::vector<bool> done(4);
    for (int i = 0; i < 4; ++i) {
        const std::string line = job.line(130000);
        int rank = -1;
        long refused = -1;
        ASSERT_EQ(2, std::sscanf(line.c_str(), "DONE %d refused=%ld", &rank, &refused)) << line << "\n"
                                                                                        << tail_of(file_text(job_err));
        ASSERT_TRUE(rank >= 0 && rank < 4 && !done[static_cast<size_t>(rank)]) << line;
        done[static_cast<size_t>(rank)] = true;
        EXPECT_GT(refused, 0) << "rank " << rank << " never saw the flood";
    }
    EXPECT_EQ(0, job.wait_exit()) << tail_of(file_text(job_err));
    flooder.close_stdin();
    EXPECT_EQ(0, flooder.wait_exit());
    // Refusals are counted always and logged at powers of two: a handful of lines per rank.
    const std::string said = file_text(job_err);
    size_t lines = 0;
    for (size_t at = said.find("refused"); at != std::string::npos; at = said.find("refused", at + 1)) ++lines;
    EXPECT_LE(lines, 4u * 48u) << tail_of(said);
    EXPECT_EQ(std::string::npos, said.find("wrong job secret")) << "a flood was blamed on the secret";
}

namespace {

// A rank of a job started by `launcher` (its arguments before the program) guards its inbox:
// a process started by hand without any secret, and a rank of another portico-run job, each put
// to it (over the transports env selects: shared memory by default on one machine). Both puts must fail (their links refused: the intruders check it)
// and the rank must count both refusals and see no put (standalone_peer guard).
void strangers_get_nothing_in(const std::vector<std::string> &launcher, const std::vector<std::string> &env) {
    std::vector<std::string> args(launcher.begin() + 1, launcher.end());
    args.insert(args.end(), {peer_binary(), "guard", "2", "0"});
    Child job(launcher[0], args, env);
    const std::string guard_id = job.line();
    ASSERT_EQ(0u, guard_id.rfind("ID ", 0)) << guard_id;
    Child stranger(peer_binary(), {"intruder"}, env);
    Child other_job(portico_run(), {"-n", "1", peer_binary(), "intruder"}, env);
    const std::string stranger_id = stranger.line(), other_id = other_job.line();
    ASSERT_EQ(0u, stranger_id.rfind("ID ", 0)) << stranger_id;
    ASSERT_EQ(0u, other_id.rfind("ID ", 0)) << other_id;
    job.send("PEER " + stranger_id.substr(3)); // its entry takes the stranger's puts, if any came
    ASSERT_EQ("READY", job.line());
    stranger.send("PEER " + guard_id.substr(3));
    EXPECT_EQ("OK", stranger.line()) << "the stranger's put was not refused";
    other_job.send("PEER " + guard_id.substr(3));
    EXPECT_EQ("OK", other_job.line()) << "the other job's put was not refused";
    EXPECT_EQ("OK", job.line()) << "the rank did not count two refused links, or saw a put";
    job.send("BYE");
    EXPECT_EQ(0, job.wait_exit());
    EXPECT_EQ(0, stranger.wait_exit());
    EXPECT_EQ(0, other_job.wait_exit());
}

} // namespace

// The ranks of a job have a secret their shared-memory links prove; a process of the same user
// outside the job — started by hand, or a rank of another job — cannot link with them.
TEST(SharedMemoryJobs, NoProcessOutsideAPorticoRunJobLinksWithItsRanks) {
    strangers_get_nothing_in({portico_run(), "-n", "1"}, {});
}

// Under MPICH's mpiexec (hydra) the ranks agree on a secret through the PMI when TCP is selected
// too; with shared memory alone they prove the launcher's name for the job (no collective).
TEST(SharedMemoryJobs, NoProcessOutsideAHydraJobLinksWithItsRanks) {
    if (std::string(MPIEXEC_HYDRA).empty()) GTEST_SKIP() << "MPICH's mpiexec.hydra is not installed";
    strangers_get_nothing_in({mpiexec_hydra(), "-n", "1"}, {});
    strangers_get_nothing_in({mpiexec_hydra(), "-n", "1"}, {"PORTICO_TRANSPORT=shm"});
}

// Over TCP every connection proves the job secret: a process started by hand (a secret of its
// own) and a rank of another job (another secret) are refused, and both sides say so.
TEST(TcpJobs, NoProcessOutsideAPorticoRunJobLinksWithItsRanks) {
    strangers_get_nothing_in({portico_run(), "-n", "1"}, {"PORTICO_TRANSPORT=tcp"});
}

TEST(TcpJobs, NoProcessOutsideAHydraJobLinksWithItsRanks) {
    if (std::string(MPIEXEC_HYDRA).empty()) GTEST_SKIP() << "MPICH's mpiexec.hydra is not installed";
    strangers_get_nothing_in({mpiexec_hydra(), "-n", "1"}, {"PORTICO_TRANSPORT=tcp"});
}
