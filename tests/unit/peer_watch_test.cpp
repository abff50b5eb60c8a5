// SPDX-License-Identifier: BSD-3-Clause
// The peer watch (bootstrap/peer_watch.hpp) with real processes: forked "ranks" that form a ring,
// each with its own watch, and end in the ways a rank can end.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "bootstrap/peer_watch.hpp"

using portico::bootstrap::LocalMember;
using portico::bootstrap::PeerWatch;

namespace {

// What a child rank does once every rank watches.
enum class Does { Wait, Exit, LeaveThenExit0, LeaveWithCode, ForkChildThatExits0ThenWait };
struct Behaviour {
    Does does = Does::Wait;
    int code = 0;
};

struct Ring {
    std::vector<pid_t> pids;
    std::string reports; // "<reporter>:<code>:<message>\n" per death seen ("<reporter>~<code>:..." for a
                         // rank that left with a code, which the reporter follows)
    std::vector<int> statuses;
};

std::string read_line(int fd) {
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
    return line;
}

uint64_t job_nonce() { return (uint64_t(::getpid()) << 20) ^ uint64_t(::time(nullptr)); }

// Forks n ranks (job ranks first_rank, first_rank + 1, ...: the ranks of one machine), starts
// their watches, then lets each do what it is told; kill_after_start lists the ranks the parent
// kills with SIGKILL. Waits for every rank to end.
Ring run_ring(const std::vector<Behaviour> &behaviours, const std::vector<size_t> &kill_after_start = {},
              int first_rank = 10, uint64_t nonce = job_nonce()) {
    const size_t n = behaviours.size();
    int report[2];
    EXPECT_EQ(::pipe(report), 0);
    std::vector<int> go(n);
    Ring ring;
    for (size_t i = 0; i < n; ++i) {
        int p[2];
        EXPECT_EQ(::pipe(p), 0);
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::close(p[1]);
            ::close(report[0]);
            std::vector<LocalMember> members(n);
            for (size_t j = 0; j < n; ++j) {
                members[j].rank = first_rank + int(j);
                if (::read(p[0], &members[j].os_pid, sizeof(int)) != sizeof(int)) ::_exit(90);
            }
            const int out = report[1];
            std::string why;
            auto w = PeerWatch::start(
                members, i, nonce,
                [out, i, first_rank](PeerWatch::Ending how, int code, const std::string &what) {
                    const bool follows = how == PeerWatch::Ending::LeftWithCode;
                    const std::string line = std::to_string(first_rank + int(i)) + (follows ? "~" : ":") +
                                             std::to_string(code) + ":" + what + "\n";
                    [[maybe_unused]] ssize_t k = ::write(out, line.data(), line.size());
                    if (follows)
                        PeerWatch::current()->leaving(code); // as Job::exit_process does
                    else
                        PeerWatch::current()->aborting(code); // as Job::abort does
                    ::_exit(code);
                },
                &why);
            if (!w) {
                std::fprintf(stderr, "child %zu: %s\n", i, why.c_str());
                ::_exit(91);
            }
            const std::string started = "started\n";
            [[maybe_unused]] ssize_t k = ::write(out, started.data(), started.size());
            char cmd;
            if (::read(p[0], &cmd, 1) != 1) ::_exit(92);
            switch (behaviours[i].does) {
            case Does::Exit: w->exiting(behaviours[i].code); ::_exit(behaviours[i].code);
            case Does::LeaveThenExit0: w->left(); ::_exit(0);
            case Does::LeaveWithCode: w->leaving(behaviours[i].code); ::_exit(behaviours[i].code);
            case Does::ForkChildThatExits0ThenWait: {
                const pid_t child = ::fork();
                if (child == 0) {
                    w->exiting(0); // the rank's slot is not the child's to write
                    ::_exit(0);
                }
                ::waitpid(child, nullptr, 0);
                const std::string forked = "forked\n";
                k = ::write(out, forked.data(), forked.size());
                for (;;) ::pause();
            }
            case Does::Wait:
                for (;;) ::pause();
            }
        }
        ::close(p[0]);
        go[i] = p[1];
        ring.pids.push_back(pid);
    }
    ::close(report[1]);
    for (size_t i = 0; i < n; ++i)
        for (pid_t pid : ring.pids) {
            EXPECT_EQ(::write(go[i], &pid, sizeof(int)), ssize_t(sizeof(int)));
        }
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(read_line(report[0]), "started");
    // Every rank has mapped the board, so the last one unlinked it.
    char name[96];
    std::snprintf(name, sizeof name, "/dev/shm/portico-%u-%016llx-%d", unsigned(::geteuid()), (unsigned long long)nonce,
                  first_rank);
    struct stat st;
    EXPECT_NE(::stat(name, &st), 0) << name << " is still there";
    // The ranks act one after another, in rank order: a rank that ends by itself has ended before
    // the next one acts.
    ring.statuses.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(::write(go[i], "g", 1), 1);
        if (behaviours[i].does == Does::ForkChildThatExits0ThenWait) {
            EXPECT_EQ(read_line(report[0]), "forked");
        }
        if (behaviours[i].does == Does::Exit || behaviours[i].does == Does::LeaveThenExit0 ||
            behaviours[i].does == Does::LeaveWithCode)
            ::waitpid(ring.pids[i], &ring.statuses[i], 0);
    }
    for (size_t i : kill_after_start) ::kill(ring.pids[i], SIGKILL);
    for (size_t i = 0; i < n; ++i) {
        if (ring.statuses[i] == -1) ::waitpid(ring.pids[i], &ring.statuses[i], 0);
    }
    for (std::string line; !(line = read_line(report[0])).empty();) ring.reports += line + "\n";
    ::close(report[0]);
    for (int fd : go) ::close(fd);
    return ring;
}

int code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

} // namespace

TEST(PeerWatch, ARankThatExitsWithACodeEndsTheRing) {
    const Ring r = run_ring({{Does::Wait}, {Does::Exit, 3}, {Does::Wait}});
    // Rank 10 watches rank 11 and reports it; rank 12 watches rank 10 and follows its abort
    // quietly (rank 10 has said why).
    EXPECT_NE(r.reports.find("10:3:rank 11 (pid " + std::to_string(r.pids[1]) + " on this machine) exited with code 3"),
              std::string::npos)
        << r.reports;
    EXPECT_NE(r.reports.find("12:3:\n"), std::string::npos) << r.reports;
    for (int s : r.statuses) EXPECT_EQ(code_of(s), 3);
}

// A job-wide exit (gasnet_exit(4) on one rank, announced to the job by that rank): the others
// follow it with its code, each through the watch of its own neighbour, and none aborts the job
// (hydra reported an abort that raced GASNet's own exit message as a bad termination).
TEST(PeerWatch, ARankThatLeavesWithACodeIsFollowedWithoutAnAbort) {
    const Ring r = run_ring({{Does::Wait}, {Does::LeaveWithCode, 4}, {Does::Wait}});
    EXPECT_NE(r.reports.find("10~4:rank 11 (pid " + std::to_string(r.pids[1]) +
                             " on this machine) left the job "
                             "with code 4"),
              std::string::npos)
        << r.reports;
    EXPECT_NE(r.reports.find("12~4:rank 10 (pid "), std::string::npos) << r.reports;
    EXPECT_EQ(r.reports.find(":4:\n"), std::string::npos) << r.reports;
    for (int s : r.statuses) EXPECT_EQ(code_of(s), 4);
}

TEST(PeerWatch, AKilledRankEndsTheRing) {
    const Ring r = run_ring({{Does::Wait}, {Does::Wait}, {Does::Wait}}, {2});
    EXPECT_NE(r.reports.find("11:1:rank 12 (pid " + std::to_string(r.pids[2]) +
                             " on this machine) ended without leaving the job and without exit() (killed by a "
                             "signal, crashed, or _exit)"),
              std::string::npos)
        << r.reports;
    EXPECT_EQ(code_of(r.statuses[0]), 1);
    EXPECT_EQ(code_of(r.statuses[1]), 1);
    EXPECT_EQ(code_of(r.statuses[2]), 128 + SIGKILL);
}

TEST(PeerWatch, CleanEndsPassTheWatchOn) {
    // Ranks 11 and 12 end cleanly (left; code 0): rank 10's watch moves past them to rank 13.
    const Ring r = run_ring({{Does::Wait}, {Does::LeaveThenExit0}, {Does::Exit, 0}, {Does::Exit, 5}});
    EXPECT_EQ(r.reports.find("rank 11"), std::string::npos) << r.reports;
    EXPECT_EQ(r.reports.find("rank 12"), std::string::npos) << r.reports;
    EXPECT_NE(r.reports.find("10:5:rank 13"), std::string::npos) << r.reports;
    EXPECT_EQ(code_of(r.statuses[0]), 5);
    EXPECT_EQ(code_of(r.statuses[1]), 0);
    EXPECT_EQ(code_of(r.statuses[2]), 0);
    EXPECT_EQ(code_of(r.statuses[3]), 5);
}

TEST(PeerWatch, AForkedChildDoesNotSpeakForItsRank) {
    const Ring r = run_ring({{Does::Wait}, {Does::ForkChildThatExits0ThenWait}}, {1});
    EXPECT_NE(r.reports.find("10:1:rank 11"), std::string::npos) << r.reports;
    EXPECT_EQ(code_of(r.statuses[0]), 1);
}

TEST(PeerWatch, TwoRanksThatBothEndCleanlyReportNothing) {
    const Ring r = run_ring({{Does::Exit, 0}, {Does::LeaveThenExit0}});
    EXPECT_EQ(r.reports, "");
    for (int s : r.statuses) EXPECT_EQ(code_of(s), 0);
}

// Two machines of one job that share /dev/shm and the pids (network namespaces on one host, as in
// the multihost tests): each machine's ring has its own board. With one board per job, slot 0 was
// both rings' first rank, and a rank took its neighbour for a stranger (another process's start
// time in the slot) and ended a healthy job.
TEST(PeerWatch, TwoMachinesOfOneJobSharingDevShmDoNotMixTheirBoards) {
    const uint64_t nonce = job_nonce();
    for (int round = 0; round < 5; ++round) {
        // The second machine's ring runs from a forked process of its own (no thread: forking
        // from a threaded process is what TSan cannot follow), at the same time as the first's.
        const pid_t other = ::fork();
        if (other == 0) {
            const Ring b = run_ring({{Does::LeaveThenExit0}, {Does::LeaveThenExit0}}, {}, 20, nonce + round);
            bool clean = b.reports.empty();
            for (int s : b.statuses) clean = clean && code_of(s) == 0;
            ::_exit(clean ? 0 : 1);
        }
        const Ring a = run_ring({{Does::LeaveThenExit0}, {Does::LeaveThenExit0}}, {}, 10, nonce + round);
        int status = -1;
        ::waitpid(other, &status, 0);
        EXPECT_EQ(a.reports, "") << "round " << round;
        for (int s : a.statuses) EXPECT_EQ(code_of(s), 0);
        EXPECT_EQ(code_of(status), 0) << "round " << round << ": the other machine's ranks reported a death";
    }
}
