// SPDX-License-Identifier: BSD-3-Clause
// Runs portico-run as a user would and checks its exit code and what it says on stderr: exit
// code propagation, killing the job when a rank fails, --timeout, PMI abort, signals to the
// launcher, bad command lines, programs that cannot be run; remote ranks (--hosts) started through
// stand-ins for ssh that run the command on this machine (fake_rsh.sh, fake_rsh_detached.sh).
//
// Every run has a hard deadline (SIGTERM, then SIGKILL to the launcher); it is a safety net, not
// synchronisation: a run only ends when the launcher has exited and every process holding its
// stdout/stderr (ranks and their children) has closed them, which proves they are gone.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PORTICO_RUN_PATH
#error "PORTICO_RUN_PATH must be defined"
#endif
#ifndef LAUNCHER_HELPER_PATH
#error "LAUNCHER_HELPER_PATH must be defined"
#endif
#if !defined(FAKE_RSH_PATH) || !defined(FAKE_RSH_DETACHED_PATH) || !defined(PMI_JOB_TEST_PATH)
#error "FAKE_RSH_PATH, FAKE_RSH_DETACHED_PATH and PMI_JOB_TEST_PATH must be defined"
#endif

namespace {

const std::string kRun = PORTICO_RUN_PATH;
const std::string kHelper = LAUNCHER_HELPER_PATH;
const std::string kPortalsRank = PORTALS_RANK_PATH;
const std::string kPortalsExitOrder = PORTALS_EXIT_ORDER_PATH;
const std::string kFakeRsh = FAKE_RSH_PATH;
const std::string kFakeRshDetached = FAKE_RSH_DETACHED_PATH;
const std::string kPmiJobTest = PMI_JOB_TEST_PATH;

struct Spec {
    std::vector<std::string> args; // portico-run's arguments
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> unset_env;
    std::string cwd; // "" = the test's own
    bool feed_stdin = false;
    std::string stdin_data;
    // Called whenever stdout grows; may signal the launcher.
    std::function<void(pid_t launcher, const std::string &out)> on_stdout;
    int deadline_seconds = 60;
};

struct Result {
    bool exited = false;
    int code = -1;  // exit code when exited
    int signal = 0; // terminating signal otherwise
    bool hit_deadline = false;
    std::string out, err;
};

std::ostream &operator<<(std::ostream &os, const Result &r) {
    return os << "[exit " << r.code << ", signal " << r.signal << (r.hit_deadline ? ", HIT THE DEADLINE" : "")
              << "]\n--- stdout ---\n"
              << r.out << "--- stderr ---\n"
              << r.err;
}

Result run(const Spec &spec) {
    Result res;
    int out[2], err[2], in[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
        (spec.feed_stdin && ::pipe2(in, O_CLOEXEC) != 0)) {
        ADD_FAILURE() << "pipe: " << std::strerror(errno);
        return res;
    }
    std::vector<std::string> argv_s{kRun};
    argv_s.insert(argv_s.end(), spec.args.begin(), spec.args.end());
    std::vector<char *> argv;
    for (std::string &s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) {
        ADD_FAILURE() << "fork: " << std::strerror(errno);
        return res;
    }
    if (pid == 0) {
        int stdin_fd = spec.feed_stdin ? in[0] : ::open("/dev/null", O_RDONLY);
        ::dup2(stdin_fd, 0);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::unsetenv("PORTICO_TIMEOUT");
        for (const char *k : {"PORTICO_RSH", "PORTICO_PMI_ADDR", "PORTICO_IFACE"}) ::unsetenv(k);
        for (const std::string &k : spec.unset_env) ::unsetenv(k.c_str());
        if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) ::_exit(126);
        for (const auto &[k, v] : spec.env) ::setenv(k.c_str(), v.c_str(), 1);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    if (spec.feed_stdin) {
        ::close(in[0]);
        if (!spec.stdin_data.empty() && ::write(in[1], spec.stdin_data.data(), spec.stdin_data.size()) < 0)
            ADD_FAILURE() << "write(stdin): " << std::strerror(errno);
        ::close(in[1]);
    }
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
        ADD_FAILURE() << "pidfd_open: " << std::strerror(errno);
        return res;
    }

    int fds[2] = {out[0], err[0]};
    std::string *bufs[2] = {&res.out, &res.err};
    bool reaped = false;
    int kill_stage = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(spec.deadline_seconds);
    while (fds[0] >= 0 || fds[1] >= 0 || !reaped) {
        std::vector<pollfd> pfds;
        for (int fd : fds)
            if (fd >= 0) pfds.push_back({fd, POLLIN, 0});
        if (!reaped) pfds.push_back({pidfd, POLLIN, 0});
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        int n = ::poll(pfds.data(), pfds.size(), static_cast<int>(std::max<long long>(left, 0)));
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) { // safety net: the launcher failed to end the job
            res.hit_deadline = true;
            if (reaped || kill_stage == 2) break; // something else keeps our pipes open: give up on it
            ::kill(pid, kill_stage == 0 ? SIGTERM : SIGKILL);
            ++kill_stage;
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            continue;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i] < 0) continue;
            pollfd *p = nullptr;
            for (pollfd &q : pfds)
                if (q.fd == fds[i]) p = &q;
            if (p == nullptr || p->revents == 0) continue;
            char buf[4096];
            ssize_t got = ::read(fds[i], buf, sizeof buf);
            if (got > 0) {
                bufs[i]->append(buf, static_cast<std::size_t>(got));
                if (i == 0 && spec.on_stdout && !reaped) spec.on_stdout(pid, res.out);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                ::close(fds[i]);
                fds[i] = -1;
            }
        }
        if (!reaped && pfds.back().fd == pidfd && pfds.back().revents != 0) {
            int st = 0;
            if (::waitpid(pid, &st, 0) == pid) {
                reaped = true;
                res.exited = WIFEXITED(st);
                res.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                res.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
            }
        }
    }
    for (int fd : fds)
        if (fd >= 0) ::close(fd);
    if (!reaped) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    ::close(pidfd);
    return res;
}

Result run_args(std::vector<std::string> args) {
    Spec s;
    s.args = std::move(args);
    return run(s);
}

bool has(const std::string &hay, const std::string &needle) { return hay.find(needle) != std::string::npos; }

#define EXPECT_EXIT_CODE(r, c)                                                                                         \
    do {                                                                                                               \
        EXPECT_FALSE((r).hit_deadline) << (r);                                                                         \
        EXPECT_TRUE((r).exited) << (r);                                                                                \
        EXPECT_EQ((r).code, (c)) << (r);                                                                               \
    } while (0)
#define EXPECT_HAS(text, needle, r) EXPECT_TRUE(has((text), (needle))) << "missing '" << (needle) << "'\n" << (r)

// ---------------------------------------------------------------------------------------------
// Command line

TEST(CommandLine, Version) {
    Result r = run_args({"--version"});
    EXPECT_EXIT_CODE(r, 0);
    EXPECT_EQ(r.out, "portico-run (Portico) 0.1.0\n");
}

TEST(CommandLine, Help) {
    Result r = run_args({"--help"});
    EXPECT_EXIT_CODE(r, 0);
    EXPECT_HAS(r.out, "Usage: portico-run", r);
    EXPECT_HAS(r.out, "124", r);
}

TEST(CommandLine, BadArgumentsExit2) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"-n", "0", "true"}, "invalid number of processes '0'"},
        {{"-n", "4097", "true"}, "invalid number of processes '4097'"},
        {{"-n", "abc", "true"}, "invalid number of processes 'abc'"},
        {{"-n", "2x", "true"}, "invalid number of processes '2x'"},
        {{"-n", "-3", "true"}, "invalid number of processes '-3'"},
        {{"-np", "", "true"}, "invalid number of processes ''"},
        {{"-n"}, "option '-n' needs a value"},
        {{"--timeout", "-1", "true"}, "invalid timeout '-1'"},
        {{"--timeout", "soon", "true"}, "invalid timeout 'soon'"},
        {{"--timeout=nan", "true"}, "invalid timeout 'nan'"},
        {{"--bogus", "true"}, "unknown option '--bogus'"},
        {{}, "no program to run"},
        {{"-n", "2"}, "no program to run"},
        {{"-n", "2", "--"}, "no program to run"},
        {{"--hosts", "", "true"}, "invalid host '' in host list ''"},
        {{"--hosts", "a,,b", "true"}, "invalid host '' in host list 'a,,b': empty host name"},
        {{"--hosts", "-oProxyCommand=x", "true"},
         "invalid host '-oProxyCommand=x' in host list '-oProxyCommand=x': a host name cannot "
         "start with '-'"},
        {{"--hosts", "a b", "true"}, "invalid host 'a b' in host list 'a b': invalid character"},
        {{"--hosts", "a", "--hostfile", "f", "true"}, "use either --hosts or --hostfile, not both"},
        {{"--hostfile", "/nonexistent/hosts", "true"},
         "cannot read host file '/nonexistent/hosts': No such file or directory"},
        {{"--ppn", "2", "true"}, "--ppn needs --hosts or --hostfile"},
        {{"--rsh", "ssh", "true"}, "--rsh needs --hosts or --hostfile"},
        {{"--pmi-addr", "127.0.0.1", "true"}, "--pmi-addr needs --hosts or --hostfile"},
        {{"--hosts", "a", "--ppn", "0", "true"}, "invalid --ppn '0'"},
        {{"--hosts", "a", "--rsh", " ", "true"}, "empty remote shell command (--rsh)"},
        {{"--hosts", "a", "--ppn", "4096", "--hosts=a,b", "true"}, "the hosts give 8192 ranks"},
        {{"--env", "1X=2", "true"}, "invalid variable name '1X' in --env '1X=2'"},
        {{"-x", "A-B", "true"}, "invalid variable name 'A-B' in -x 'A-B'"},
        {{"--env", "PMI_RANK=3", "true"}, "--env PMI_RANK: portico-run sets PMI_RANK itself"},
    };
    for (const auto &[args, text] : cases) {
        Result r = run_args(args);
        EXPECT_EXIT_CODE(r, 2);
        EXPECT_HAS(r.err, "portico-run: " + text, r);
        EXPECT_HAS(r.err, "--help", r);
    }
    Spec s;
    s.args = {"true"};
    s.env = {{"PORTICO_TIMEOUT", "later"}};
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 2);
    EXPECT_HAS(r.err, "invalid PORTICO_TIMEOUT 'later'", r);
}

TEST(CommandLine, OptionSpellings) {
    for (std::vector<std::string> opts :
         {std::vector<std::string>{"-n", "3"}, {"-np", "3"}, {"-n3"}, {"-n=3"}, {"-np=3"}}) {
        opts.insert(opts.end(), {"--timeout=30", "sh", "-c", "test \"$PMI_SIZE\" = 3"});
        Result r = run_args(opts);
        EXPECT_EXIT_CODE(r, 0);
    }
}

TEST(CommandLine, OptionsEndAtTheProgram) {
    // Everything after the program belongs to it, even things that look like our options.
    Result r = run_args({"-n", "1", "sh", "-c", "test \"$1\" = -n && test \"$2\" = --bogus", "sh", "-n", "--bogus"});
    EXPECT_EXIT_CODE(r, 0);
    r = run_args({"-n", "1", "--", "sh", "-c", "exit 4"});
    EXPECT_EXIT_CODE(r, 4);
    EXPECT_HAS(r.err, "rank 0 (pid", r);
    EXPECT_HAS(r.err, "exited with code 4", r);
}

TEST(CommandLine, DefaultIsOneRank) {
    Result r = run_args({"sh", "-c", "test \"$PMI_SIZE\" = 1 && test \"$PMI_RANK\" = 0"});
    EXPECT_EXIT_CODE(r, 0);
}

// ---------------------------------------------------------------------------------------------
// Starting the program

TEST(Start, NonexistentProgram) {
    Result r = run_args({"-n", "2", "/nonexistent/dir/prog"});
    EXPECT_EXIT_CODE(r, 127);
    EXPECT_HAS(r.err, "portico-run: cannot run '/nonexistent/dir/prog': No such file or directory", r);
    r = run_args({"-n", "2", "portico-no-such-command-xyz"});
    EXPECT_EXIT_CODE(r, 127);
    EXPECT_HAS(r.err, "cannot run 'portico-no-such-command-xyz': command not found", r);
}

TEST(Start, NotExecutable) {
    char path[] = "/tmp/portico-run-test-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    ::chmod(path, 0644);
    Result r = run_args({"-n", "2", path});
    ::unlink(path);
    EXPECT_EXIT_CODE(r, 126);
    EXPECT_HAS(r.err, std::string("cannot run '") + path + "': Permission denied", r);
}

TEST(Start, Environment) {
    // The launcher's own PMI variables (say it runs under another launcher) must not leak.
    Spec s;
    const std::string script = "test \"$PMI_SIZE\" = 2 && test \"$PMI_RANK\" = \"$PORTICO_LOCAL_RANK\" && "
                               "test \"$PORTICO_LOCAL_SIZE\" = 2 && test -z \"$PMI_PORT\" && test -z \"$PMI_ID\" && "
                               "test \"$PMI_FD\" != 99 && test \"$PMI_JOBID\" = \"portico_$PORTICO_JOB_ID\" && "
                               "test ${#PORTICO_JOB_ID} = 16 && test ${#PORTICO_JOB_SECRET} = 32";
    s.args = {"-n", "2", "sh", "-c", script};
    s.env = {{"PMI_FD", "99"},       {"PMI_RANK", "5"}, {"PMI_SIZE", "9"},
             {"PMI_PORT", "host:1"}, {"PMI_ID", "3"},   {"PORTICO_JOB_ID", "0000000000000000"}};
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 0);
}

TEST(Start, JobIdsDifferBetweenJobs) {
    Result a = run_args({"sh", "-c", "echo $PORTICO_JOB_ID $PORTICO_JOB_SECRET"});
    Result b = run_args({"sh", "-c", "echo $PORTICO_JOB_ID $PORTICO_JOB_SECRET"});
    EXPECT_EXIT_CODE(a, 0);
    EXPECT_EXIT_CODE(b, 0);
    EXPECT_EQ(a.out.size(), 16u + 1 + 32 + 1) << a;
    EXPECT_EQ(b.out.size(), 16u + 1 + 32 + 1) << b;
    EXPECT_NE(a.out.substr(0, 16), b.out.substr(0, 16)); // the job ids
    EXPECT_NE(a.out.substr(17), b.out.substr(17));       // and the secrets
}

TEST(Start, StdinGoesToRankZeroOnly) {
    Spec s;
    s.args = {"-n", "3", kHelper, "stdin"};
    s.feed_stdin = true;
    s.stdin_data = "hello\n";
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 0);
}

// ---------------------------------------------------------------------------------------------
// Exit codes and failing ranks

TEST(Exit, RankExitCodeViaShell) {
    Result r = run_args({"-n", "4", "sh", "-c", "if [ \"$PMI_RANK\" = 3 ]; then exit 3; fi; exec sleep 3600"});
    EXPECT_EXIT_CODE(r, 3);
    EXPECT_HAS(r.err, "portico-run: rank 3 (pid ", r);
    EXPECT_HAS(r.err, ") exited with code 3; terminating the job", r);
}

TEST(Exit, RankExitCodeWhileOthersWaitInBarrier) {
    Result r = run_args({"-n", "3", kHelper, "exit-rank", "1", "42"});
    EXPECT_EXIT_CODE(r, 42);
    EXPECT_HAS(r.err, "portico-run: rank 1 (pid ", r);
    EXPECT_HAS(r.err, "exited with code 42; terminating the job", r);
}

TEST(Exit, RankKilledBySignal) {
    Result r = run_args({"-n", "4", kHelper, "signal-rank", "2", "11"});
    EXPECT_EXIT_CODE(r, 128 + 11);
    EXPECT_HAS(r.err, "portico-run: rank 2 (pid ", r);
    EXPECT_HAS(r.err, "killed by signal 11 (Segmentation fault); terminating the job", r);
    // The ranks the launcher killed are not reported as failures.
    EXPECT_FALSE(has(r.err, "signal 15")) << r;
}

TEST(Exit, EarlyExitZeroDoesNotKillTheOthers) {
    Result r = run_args({"-n", "2", kHelper, "early-exit", "0"});
    EXPECT_EXIT_CODE(r, 0);
    EXPECT_EQ(r.err, "");
}

TEST(Exit, LastRankExitCodeCounts) {
    Result r = run_args({"-n", "2", kHelper, "early-exit", "5"});
    EXPECT_EXIT_CODE(r, 5);
    EXPECT_HAS(r.err, "portico-run: rank 1 (pid ", r);
    EXPECT_HAS(r.err, "exited with code 5", r);
}

// The first rank to exit non-zero decides the job's status, also when the launcher finds several
// exits at once (portals_exit_order stops it meanwhile): rank 2 exits with 8, then rank 0 is
// killed by SIGKILL; rank 0 is the older child, which waitpid(-1) would return first.
void expect_first_exit_decides(const std::string &transport) {
    char tmpl[] = "/tmp/portico-exit-order-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    const std::string dir = tmpl;
    Spec s;
    s.args = {"-n", "3", "--timeout", "60", kPortalsExitOrder, dir};
    s.env = {{"PORTICO_TRANSPORT", transport}};
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 8);
    EXPECT_HAS(r.err, "portico-run: rank 2 (pid ", r);
    EXPECT_HAS(r.err, ") exited with code 8; terminating the job", r);
    EXPECT_FALSE(has(r.err, "signal 9")) << r;
    for (int rank = 0; rank < 3; ++rank) ::unlink((dir + "/pid." + std::to_string(rank)).c_str());
    ::rmdir(dir.c_str());
}

TEST(Exit, FirstRankToExitDecides) { expect_first_exit_decides("shm"); }
TEST(Exit, FirstRankToExitDecidesOverTcp) { expect_first_exit_decides("tcp"); }

TEST(Exit, GrandchildrenAreKilledWithTheJob) {
    // Rank 0's child holds stdout/stderr open: run() returns only once it is gone too.
    Result r = run_args({"-n", "2", kHelper, "grandchild-fail"});
    EXPECT_EXIT_CODE(r, 3);
    EXPECT_HAS(r.err, "rank 1 (pid ", r);
}

TEST(Exit, BarrierThatCanNeverComplete) {
    Result r = run_args({"-n", "3", kHelper, "lonely-barrier"});
    EXPECT_EXIT_CODE(r, 1);
    // Rank 1, rank 2 or both may already wait when rank 0's exit is seen.
    EXPECT_HAS(r.err, " in a PMI barrier that rank 0 (pid ", r);
    EXPECT_HAS(r.err, "can never enter (it exited with code 0); terminating the job", r);
}

// ---------------------------------------------------------------------------------------------
// PMI abort

TEST(Abort, ExitCodeAndMessage) {
    Result r = run_args({"-n", "3", kHelper, "abort-rank", "1", "7", "test", "abort", "message"});
    EXPECT_EXIT_CODE(r, 7);
    EXPECT_HAS(r.err, "called PMI abort with exit code 7: test abort message; terminating the job", r);
    EXPECT_HAS(r.err, "portico-run: rank 1 (pid ", r);
}

TEST(Abort, ExitCodeOutOfRange) {
    Result r = run_args({"-n", "2", kHelper, "abort-rank", "0", "300", "big"});
    EXPECT_EXIT_CODE(r, 300 & 0xff);
    EXPECT_HAS(r.err, "abort with exit code 300 (exit status 44): big", r);
    r = run_args({"-n", "2", kHelper, "abort-rank", "0", "256"});
    EXPECT_EXIT_CODE(r, 1);
}

// ---------------------------------------------------------------------------------------------
// Timeouts and signals

TEST(Timeout, HungJobIsKilled) {
    Result r = run_args({"-n", "2", "--timeout", "1", kHelper, "hang"});
    EXPECT_EXIT_CODE(r, 124);
    EXPECT_HAS(r.err, "portico-run: job timed out after 1 s; killing it", r);
    EXPECT_HAS(r.err, "still running: ranks 0-1", r);
}

TEST(Timeout, FromEnvironment) {
    Spec s;
    s.args = {"-n", "3", kHelper, "barrier-hang"};
    s.env = {{"PORTICO_TIMEOUT", "0.5"}};
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 124);
    EXPECT_HAS(r.err, "portico-run: job timed out after 0.5 s; killing it", r);
}

TEST(Timeout, CommandLineOverridesEnvironment) {
    Spec s;
    s.args = {"--timeout", "0", "sh", "-c", "exit 0"}; // 0: no limit
    s.env = {{"PORTICO_TIMEOUT", "bogus"}};            // not even parsed
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 0);
}

TEST(Timeout, RankIgnoringSigtermGetsSigkill) {
    Result r = run_args({"-n", "2", "--timeout", "0.5", "sh", "-c", "trap '' TERM; exec sleep 3600"});
    EXPECT_EXIT_CODE(r, 124);
    EXPECT_HAS(r.err, "portico-run: ranks 0-1 still running 2 s after being signalled; sending SIGKILL", r);
}

Result run_and_signal(int sig) {
    Spec s;
    s.args = {"-n", "3", kHelper, "ready-hang"};
    bool sent = false;
    s.on_stdout = [&sent, sig](pid_t launcher, const std::string &out) {
        if (!sent && has(out, "ready\n")) {
            ::kill(launcher, sig);
            sent = true;
        }
    };
    return run(s);
}

TEST(Signals, SigtermToLauncherKillsJob) {
    Result r = run_and_signal(SIGTERM);
    EXPECT_EXIT_CODE(r, 128 + SIGTERM);
    EXPECT_HAS(r.err, "portico-run: received signal 15 (Terminated); terminating the job", r);
}

TEST(Signals, SigintToLauncherKillsJob) {
    Result r = run_and_signal(SIGINT);
    EXPECT_EXIT_CODE(r, 128 + SIGINT);
    EXPECT_HAS(r.err, "portico-run: received signal 2 (Interrupt); terminating the job", r);
}

// ---------------------------------------------------------------------------------------------
// Remote ranks (--hosts): started through fake_rsh.sh, which runs `sh -c COMMAND` on this machine
// in a fresh environment, as ssh would on the host. PMI goes over TCP (PMI_PORT/PMI_ID).

std::vector<std::string> remote_args(const std::string &hosts, int n, const std::string &rsh = kFakeRsh) {
    return {"--hosts", hosts, "--rsh", rsh, "-n", std::to_string(n), "--timeout", "60"};
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A remote rank's stdin starts with its PMI token, which the remote command reads; rank 0's
// program then reads the launcher's stdin, the others EOF.
TEST(Remote, StdinGoesToRankZeroOnly) {
    Spec s;
    s.args = remote_args("localhost,127.0.0.1", 3) + std::vector<std::string>{kHelper, "stdin"};
    s.feed_stdin = true;
    s.stdin_data = "hello\n";
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 0);
}

TEST(Remote, RankExitCodeNamesTheHost) {
    Result r =
        run_args(remote_args("localhost,127.0.0.1", 4) + std::vector<std::string>{kHelper, "exit-rank", "3", "3"});
    EXPECT_EXIT_CODE(r, 3);
    EXPECT_HAS(r.err,
               "portico-run: rank 3 on host 127.0.0.1 (via fake_rsh.sh) exited with code 3; "
               "terminating the job",
               r);
}

TEST(Remote, RankKilledBySignalNamesTheHost) {
    Result r =
        run_args(remote_args("localhost,127.0.0.1", 2) + std::vector<std::string>{kHelper, "signal-rank", "0", "11"});
    EXPECT_EXIT_CODE(r, 128 + 11);
    EXPECT_HAS(r.err,
               "portico-run: rank 0 on host localhost (via fake_rsh.sh) killed by signal 11 "
               "(Segmentation fault); terminating the job",
               r);
}

TEST(Remote, AbortOverTcpNamesTheHost) {
    Result r = run_args(remote_args("localhost,127.0.0.1", 2) +
                        std::vector<std::string>{kHelper, "abort-rank", "1", "7", "remote", "abort"});
    EXPECT_EXIT_CODE(r, 7);
    EXPECT_HAS(r.err,
               "portico-run: rank 1 on host 127.0.0.1 (via fake_rsh.sh) called PMI abort with "
               "exit code 7: remote abort; terminating the job",
               r);
}

TEST(Remote, TimeoutKillsRemoteRanks) {
    Result r = run_args({"--hosts", "localhost", "--ppn", "2", "--rsh", kFakeRsh, "--timeout", "0.5", kHelper, "hang"});
    EXPECT_EXIT_CODE(r, 124);
    EXPECT_HAS(r.err, "still running: ranks 0-1", r);
}

TEST(Remote, RanksExitWhenTheLauncherGoesAway) {
    // As with ssh, killing the remote shell does not kill the remote program: the ranks must see
    // their PMI connection hang up. run() returns only when they have closed stdout/stderr.
    Result r = run_args(remote_args("localhost,127.0.0.1", 3, kFakeRshDetached) +
                        std::vector<std::string>{kHelper, "watch-launcher"});
    EXPECT_EXIT_CODE(r, 3);
    EXPECT_HAS(r.err, "rank 2 on host 127.0.0.1 (via fake_rsh_detached.sh) exited with code 3", r);
    EXPECT_HAS(r.out, "rank 0: launcher gone\n", r);
    EXPECT_HAS(r.out, "rank 1: launcher gone\n", r);
}

TEST(Remote, PortalsRanksExitWhenTheLauncherGoesAway) {
    // The same for Portals programs blocked in PtlEQWait: the engine watches the PMI connection
    // and ends the process when it hangs up.
    Result r = run_args(remote_args("localhost,127.0.0.1", 3, kFakeRshDetached) +
                        std::vector<std::string>{kPortalsRank, "2", "3"});
    EXPECT_EXIT_CODE(r, 3);
    EXPECT_HAS(r.err, "rank 2 on host 127.0.0.1 (via fake_rsh_detached.sh) exited with code 3", r);
    EXPECT_HAS(r.err, "the launcher's connection closed", r);
}

TEST(Remote, RefusesBadAndDuplicatePmiids) {
    Result r = run_args(remote_args("localhost,127.0.0.1", 3) + std::vector<std::string>{kHelper, "intruder"});
    EXPECT_EXIT_CODE(r, 0);
    for (const char *why :
         {"closed the connection without a request", "rank 0's token: rank 0 is already connected",
          "pmiid '0' is not the token of a rank of this job", "pmiid '1' is not the token of a rank of this job",
          "pmiid '3' is not the token of a rank of this job", "pmiid 'abc' is not the token of a rank of this job",
          "first request 'cmd=get_maxes' is not 'cmd=initack pmiid=N'"})
        EXPECT_HAS(r.err, std::string(why), r);
    EXPECT_HAS(r.err, "portico-run: refused a PMI connection from ", r);
    // Seven raw connections, and the client library claiming rank 0's token from a second process.
    EXPECT_HAS(r.err, "portico-run: 8 PMI connections were refused\n", r);
}

// A rank's token is 31 random bits: after 16 wrong ones the PMI port closes, before a guesser
// gets anywhere near; the connected ranks go on.
TEST(Remote, GuessingTokensClosesThePmiPort) {
    Result r = run_args(remote_args("localhost,127.0.0.1", 3) + std::vector<std::string>{kHelper, "guess-tokens"});
    EXPECT_EXIT_CODE(r, 0);
    EXPECT_HAS(r.err,
               "portico-run: 16 PMI connections presented a token that is no rank's: somebody is guessing; the "
               "PMI port takes no more connections",
               r);
}

std::string hex(const std::string &s) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

TEST(Remote, ArgumentsEnvironmentAndDirectoryAreQuoted) {
    char dir[] = "/tmp/portico-run q'uote $HOME `x` \"dq\" XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr) << std::strerror(errno);
    const std::vector<std::string> args = {
        "with space", "it's", "'",     "''",         "double\"quote",     "$HOME", "${HOME}", "back\\slash",
        "new\nline",  "",     "*",     "~",          "a;b|c&d>e<f",       "`id`",  "$(id)",   "-n",
        "tab\tx",     "!x",   "#hash", "trailing\\", "\xc3\xa9t\xc3\xa9", "%s%n",  "a=b"};
    const std::string weird = "v a'l\"u$e\n`x`\\";
    Spec s;
    s.args = remote_args("localhost", 1) +
             std::vector<std::string>{"--env", "QUOTE_TEST=" + weird, kHelper, "print-args"} + args;
    s.cwd = dir;
    Result r = run(s);
    ::rmdir(dir);
    EXPECT_EXIT_CODE(r, 0);
    std::string want = "cwd=" + hex(dir) + "\n";
    for (const std::string &a : args) want += "arg=" + hex(a) + "\n";
    want += "env=" + hex(weird) + "\n";
    EXPECT_EQ(r.out, want) << r;
}

TEST(Remote, Environment) {
    // fake_rsh.sh starts the command in an empty environment (PATH and HOME only), as a login
    // would: the ranks see the PMI variables, this launcher's PORTICO_* (not PORTICO_NID) and
    // what --env names, nothing else.
    Spec s;
    s.args = {"--hosts",
              "localhost,127.0.0.1",
              "--ppn",
              "2",
              "--rsh",
              kFakeRsh,
              "-n",
              "3",
              "--timeout",
              "60",
              "--env",
              "PASS_ME",
              "-x",
              "SET_ME=v 1",
              "--env",
              "UNSET_HERE",
              "sh",
              "-c",
              "set -e; test -z \"${PMI_FD+x}\"; case \"$PMI_ID\" in ''|*[!0-9]*) exit 13;; esac; "
              "test \"$PMI_SIZE\" = 3; test \"$PMI_JOBID\" = \"portico_$PORTICO_JOB_ID\"; "
              "test -z \"${PORTICO_JOB_SECRET+x}\"; " // in the PMI key-value space instead
              "case \"$PMI_PORT\" in *.*.*.*:[0-9]*) ;; *) exit 11;; esac; "
              "case \"$PMI_RANK:$FAKE_RSH_HOST:$PORTICO_LOCAL_RANK:$PORTICO_LOCAL_SIZE\" in "
              "0:localhost:0:2|1:localhost:1:2|2:127.0.0.1:0:1) ;; *) exit 12;; esac; "
              "test \"$MPI_LOCALRANKID:$MPI_LOCALNRANKS\" = \"$PORTICO_LOCAL_RANK:$PORTICO_LOCAL_SIZE\"; "
              "test \"$PORTICO_FORWARD_ME\" = 'f w'; test -z \"${PORTICO_NID+x}\"; "
              "test -z \"${OTHER_VAR+x}\"; test -z \"${UNSET_HERE+x}\"; "
              "test \"$PASS_ME\" = z; test \"$SET_ME\" = 'v 1'"};
    s.env = {{"PORTICO_FORWARD_ME", "f w"},
             {"PORTICO_NID", "10.9.8.7"},
             {"OTHER_VAR", "y"},
             {"PASS_ME", "z"},
             {"PMI_FD", "99"}};
    s.unset_env = {"UNSET_HERE"};
    Result r = run(s);
    EXPECT_EXIT_CODE(r, 0);

    // --env works for local ranks as well.
    r = run_args({"-n", "2", "--env", "SET_ME=v", "-x", "PATH", "sh", "-c", "test \"$SET_ME\" = v"});
    EXPECT_EXIT_CODE(r, 0);
}

TEST(Remote, HostfilePlacementAndMapping) {
    char path[] = "/tmp/portico-run-hosts-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    const std::string text = "# the job's hosts\nlocalhost:1\n\n  127.0.0.1:3   # three slots\n";
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
    // No -n: the slots give 4 ranks.
    Result r = run_args({"--hostfile", path, "--rsh", kFakeRsh, "--timeout", "60", "--env",
                         "PMI_JOB_TEST_LOCAL=0:1,0:3,1:3,2:3", "--env", "PMI_JOB_TEST_MAPPING=(vector,(0,1,1),(1,1,3))",
                         kPmiJobTest});
    ::unlink(path);
    EXPECT_EXIT_CODE(r, 0);
    EXPECT_HAS(r.out, "pmi_job_test: 4 ranks OK", r);
}

TEST(Remote, PmiAddress) {
    const std::string check = "case \"$PMI_PORT\" in 127.0.0.1:[0-9]*) ;; *) exit 9;; esac";
    Result r = run_args({"--hosts", "localhost", "--rsh", kFakeRsh, "--pmi-addr", "127.0.0.1", "sh", "-c", check});
    EXPECT_EXIT_CODE(r, 0);
    Spec s;
    s.args = {"--hosts", "localhost", "--rsh", kFakeRsh, "sh", "-c", check};
    s.env = {{"PORTICO_IFACE", "lo"}};
    r = run(s);
    EXPECT_EXIT_CODE(r, 0);
    s.env = {{"PORTICO_PMI_ADDR", "127.0.0.1"}, {"PORTICO_IFACE", "nonexistent0"}};
    r = run(s); // the address wins over the interface
    EXPECT_EXIT_CODE(r, 0);

    s.env = {{"PORTICO_IFACE", "nonexistent0"}};
    r = run(s);
    EXPECT_EXIT_CODE(r, 125);
    EXPECT_HAS(r.err,
               "portico-run: cannot open the PMI port for remote ranks: PORTICO_IFACE=nonexistent0: "
               "no such interface",
               r);
    r = run_args({"--hosts", "localhost", "--rsh", kFakeRsh, "--pmi-addr", "203.0.113.7", "true"});
    EXPECT_EXIT_CODE(r, 125);
    EXPECT_HAS(r.err, "cannot bind the PMI socket to 203.0.113.7: Cannot assign requested address", r);
}

TEST(Remote, RemoteShellNotFound) {
    Result r = run_args({"--hosts", "localhost", "--rsh", "/nonexistent/rsh -x", "true"});
    EXPECT_EXIT_CODE(r, 127);
    EXPECT_HAS(r.err, "cannot run the remote shell '/nonexistent/rsh': No such file or directory", r);
    Spec s;
    s.args = {"--hosts", "localhost", "true"};
    s.env = {{"PORTICO_RSH", "portico-no-such-rsh-xyz -q"}};
    r = run(s);
    EXPECT_EXIT_CODE(r, 127);
    EXPECT_HAS(r.err, "cannot run the remote shell 'portico-no-such-rsh-xyz': command not found", r);
}

} // namespace
