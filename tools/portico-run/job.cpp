// SPDX-License-Identifier: BSD-3-Clause
// portico-run's process management: fork/exec the ranks into one process group, serve them
// PMI-1, and watch everything from a single poll() loop (PMI sockets, a signalfd for SIGCHLD and
// the signals we forward, timerfds for --timeout and the kill grace period). No sleeps, no busy
// waiting: the loop blocks in poll() until something happens.
//
// With --hosts every rank is started as `RSH host 'command'` (the RSH process is the rank as far as
// exit statuses go, as with ssh) and the ranks reach the PMI server over TCP (see tcp.hpp).
#include "job.hpp"

#include "bootstrap/bootstrap_settings.hpp"
#include "bootstrap/job_secret.hpp"
#include "common/common_settings.hpp"
#include "common/random.hpp"

#include "pmi_server.hpp"
#include "remote.hpp"
#include "tcp.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <deque>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace portico::run {
namespace {

constexpr int kGraceSeconds = 2;  // SIGTERM (or the forwarded signal) -> SIGKILL
constexpr int kGiveUpSeconds = 5; // SIGKILL -> stop waiting for ranks that cannot die
// A remote rank's RSH process has exited but its PMI connection is still open: wait this long for
// the rank's last words (an abort, say) to arrive before reporting the exit.
constexpr auto kLinger = std::chrono::milliseconds(1000);
constexpr unsigned kMaxRefusalReports = 20;

// Variables a rank must not inherit from the launcher's own environment (we set our own, and a
// stale PMI_PORT/PMI_ID would send MPICH clients elsewhere).
const char *const kStrippedEnv[] = {
    "PMI_FD",
    "PMI_RANK",
    "PMI_SIZE",
    "PMI_JOBID",
    "PMI_PORT",
    "PMI_ID",
    "PMI_SPAWNED",
    settings::kJobId.name,
    settings::kJobSecret.name,
    settings::kLocalRank.name,
    settings::kLocalSize.name,
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
};

// Forwarded PORTICO_* variables exclude PORTICO_NID as well: one forced nid for every host is
// never right (set it per host with PORTICO_IFACE instead, or explicitly with --env).
bool forwarded_to_remote(std::string_view name) {
    return name.substr(0, 8) == "PORTICO_" && !is_launcher_variable(name) && name != settings::kNid.name;
}

void say(const std::string &msg) {
    std::string line = "portico-run: " + msg + "\n";
    const char *p = line.data();
    std::size_t left = line.size();
    while (left > 0) { // one write for the whole line (no interleaving with the ranks' output)
        ssize_t n = ::write(STDERR_FILENO, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

// "0-3, 5, 7-8"
std::string rank_list(const std::vector<int> &ranks) {
    std::string out;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (!out.empty()) out += ", ";
        out += std::to_string(ranks[i]);
        if (j > i) out += "-" + std::to_string(ranks[j]);
        i = j + 1;
    }
    return out;
}

std::string ranks_word(const std::vector<int> &ranks) {
    return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

std::string signal_text(int sig) {
    const char *name = ::strsignal(sig);
    return "signal " + std::to_string(sig) + " (" + (name != nullptr ? name : "unknown") + ")";
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return "killed by " + signal_text(WTERMSIG(status)) + (WCOREDUMP(status) ? ", core dumped" : "");
    return "ended with wait status " + std::to_string(status);
}

int status_code(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

// Exit status for a PMI abort exit code (the same rule as the client library's _exit()).
int abort_status(int code) {
    if (code >= 0 && code <= 255) return code;
    int s = code & 0xff;
    return s == 0 ? 1 : s;
}

std::string format_seconds(double s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

// Fds 0-2 must be open, or a socket could land on them and be clobbered in the child.
void ensure_std_fds() {
    for (int fd = 0; fd <= 2; ++fd)
        if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int n = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (n >= 0 && n != fd) {
                ::dup2(n, fd);
                ::close(n);
            }
        }
}

void arm_timer(int fd, double seconds) {
    itimerspec its{};
    double whole = std::floor(seconds);
    its.it_value.tv_sec = static_cast<time_t>(whole);
    its.it_value.tv_nsec = static_cast<long>((seconds - whole) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    ::timerfd_settime(fd, 0, &its, nullptr);
}

void drain_timer(int fd) {
    std::uint64_t expirations;
    while (::read(fd, &expirations, sizeof expirations) < 0 && errno == EINTR) {
    }
}

std::string current_dir() {
    std::vector<char> buf(4096);
    for (;;) {
        if (::getcwd(buf.data(), buf.size()) != nullptr) return buf.data();
        if (errno != ERANGE || buf.size() > (1u << 20)) return {};
        buf.resize(buf.size() * 2);
    }
}

std::string base_name(const std::string &path) {
    std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Sets NAME=VALUE in an environment list, replacing an existing NAME.
void set_env(std::vector<std::string> &env, const std::string &name, const std::string &value) {
    for (std::string &e : env)
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
            e = name + "=" + value;
            return;
        }
    env.push_back(name + "=" + value);
}

// portico-run sees every rank's exit status itself: the ranks need not watch each other
// (bootstrap/peer_watch.hpp), unless the user asks for it.
void default_peer_watch_off(std::vector<std::string> &env) {
    const std::string prefix = std::string(settings::kPeerWatch.name) + "=";
    for (const std::string &e : env)
        if (e.compare(0, prefix.size(), prefix) == 0) return;
    env.push_back(prefix + "off");
}

void tune_tcp(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); // request/response latency
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one); // a vanished host is noticed
    int idle = 60, intvl = 10, cnt = 6;
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

class Job final : public PmiObserver {
public:
    explicit Job(const JobOptions &options)
        : opt_(options), ranks_(options.nprocs), remote_(options.remote.has_value()) {}
    ~Job() override;

    int run();

    void pmi_abort(int rank, int exit_code, const std::string &message) override;
    void pmi_warning(int rank, const std::string &what) override;
    bool pmi_may_identify(int rank, std::string &why) override;
    void pmi_refused(const std::string &peer, const std::string &why) override;
    void pmi_guessing(int wrong_tokens) override;

private:
    enum class End { None, RankFailed, Abort, Timeout, Signal, Deadlock, SpawnFailed, Internal };
    struct Rank {
        pid_t pid = -1;
        bool waited = false;    // waitpid() returned its status: the pid is no longer ours
        bool lingering = false; // waited, exit not processed yet (remote: PMI last words)
        std::chrono::steady_clock::time_point linger_until{};
        bool reaped = false; // exit processed
        int status = 0;
    };

    bool setup();
    bool setup_remote();
    void spawn_all();
    bool spawn(int rank, const std::vector<std::string> &base_env);
    std::vector<std::string> local_env(int rank, int pmi_fd, const std::vector<std::string> &base_env) const;
    std::vector<std::string> rank_command(int rank) const;
    bool await_exec(int status_fd, const std::string &prog);
    std::vector<std::pair<std::string, std::string>> remote_env(int rank) const;
    [[noreturn]] void exec_child(int rank, int child_fd, int stdin_fd, int status_fd, char **argv, char **envp);
    // Copies our stdin into to_rank0 (after the token line there) from a process of the job's
    // process group, which may read the terminal when the job has it.
    void start_stdin_relay(int to_rank0);
    void event_loop();
    int poll_timeout_ms() const;
    void process_exits();
    void accept_connections();
    void cut_remote_connections();
    void read_signals();
    void reap(const std::vector<pid_t> &exit_order);
    void on_rank_exit(int rank, int status);
    void on_rank_stopped(int sig);
    void on_signal(int sig);
    void on_timeout();
    void on_grace();
    void check_deadlock();
    void terminate(End why, int sig, int code);
    void signal_job(int sig);
    std::vector<int> live_ranks() const;
    int exit_code() const;
    std::string who(int rank) const {
        if (remote_)
            return "rank " + std::to_string(rank) + " on host " + opt_.remote->rank_host[rank] + " (via " + rsh_name_ +
                   ")";
        return "rank " + std::to_string(rank) + " (pid " + std::to_string(ranks_[rank].pid) + ")";
    }

    JobOptions opt_;
    std::string job_id_, secret_, kvsname_;
    std::vector<Rank> ranks_;
    std::unordered_map<pid_t, int> by_pid_;
    int live_ = 0;
    pid_t pgid_ = 0;
    // Ranks that have exited (waited) but whose exit is not processed yet, in the order they
    // exited.
    std::deque<int> exits_;
    sigset_t orig_mask_{};
    bool mask_set_ = false;
    int sigfd_ = -1, timeout_fd_ = -1, grace_fd_ = -1;
    int grace_stage_ = 0; // 1: waiting to SIGKILL, 2: SIGKILL sent, waiting to give up
    bool gave_up_ = false;
    bool hand_tty_ = false;
    std::unique_ptr<PmiServer> server_;
    End end_ = End::None;
    int end_code_ = 0;
    int first_failure_ = 0; // the code of the first rank to exit non-zero
    // Remote ranks (--hosts).
    bool remote_ = false;
    std::string rsh_name_; // for messages: "via ssh"
    std::string cwd_;      // the remote command cd's there ("" = unknown)
    std::string pmi_port_; // "addr:port" given to the ranks
    PmiListener listener_;
    PeerAllowList allow_;
    int reserve_fd_ = -1; // closed to accept (and drop) a connection when out of fds
    bool cut_ = false;    // remote connections closed after the job ended
    unsigned refused_ = 0;
    // Each remote rank's PMI_ID: a secret number (1..INT_MAX, distinct) that proves the rank to
    // the PMI port. It reaches the rank on the remote shell's stdin, never on a command line.
    std::vector<long> tokens_;
    pid_t relay_pid_ = -1; // start_stdin_relay's process, until it is reaped
};

Job::~Job() {
    server_.reset();
    for (int fd : {sigfd_, timeout_fd_, grace_fd_, listener_.fd, reserve_fd_})
        if (fd >= 0) ::close(fd);
    if (mask_set_) ::sigprocmask(SIG_SETMASK, &orig_mask_, nullptr);
}

bool Job::setup() {
    // A SIGCHLD disposition of SIG_IGN inherited from our parent would make the kernel reap the
    // ranks behind our back; we need their statuses.
    ::signal(SIGCHLD, SIG_DFL);

    sigset_t handled;
    sigemptyset(&handled);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&handled, s);
    sigset_t block = handled;
    sigaddset(&block, SIGPIPE); // a closed stderr must not kill the launcher
    sigaddset(&block, SIGTTOU); // giving the terminal back from the background
    if (::sigprocmask(SIG_BLOCK, &block, &orig_mask_) != 0) {
        say(std::string("sigprocmask: ") + std::strerror(errno));
        return false;
    }
    mask_set_ = true;
    sigfd_ = ::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
    grace_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (sigfd_ < 0 || grace_fd_ < 0) {
        say(std::string("cannot create signalfd/timerfd: ") + std::strerror(errno));
        return false;
    }
    if (opt_.timeout_seconds > 0) {
        timeout_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (timeout_fd_ < 0) {
            say(std::string("cannot create timerfd: ") + std::strerror(errno));
            return false;
        }
        arm_timer(timeout_fd_, opt_.timeout_seconds);
    }

    // One socket per rank stays open in the launcher (remote: and as many connections that have
    // not identified themselves yet), and a rank keeps a socket per peer it talks to: as other
    // launchers do, the launcher and its ranks run with the soft limit on open files raised to the
    // hard one (or to what the launcher needs, when the hard limit is infinite).
    const rlim_t need = static_cast<rlim_t>(opt_.nprocs) * (remote_ ? 2 : 1) + 128;
    rlimit nofile{};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
        rlimit raised = nofile;
        raised.rlim_cur = nofile.rlim_max == RLIM_INFINITY ? std::max(need, nofile.rlim_cur) : nofile.rlim_max;
        if (raised.rlim_cur > nofile.rlim_cur) ::setrlimit(RLIMIT_NOFILE, &raised);
    }

    try {
        job_id_ = bootstrap::draw_job_id();
        secret_ = bootstrap::draw_job_secret();
    } catch (const std::exception &e) {
        say(std::string("cannot draw the job id and secret: ") + e.what());
        return false;
    }
    kvsname_ = "portico_" + job_id_;
    return !remote_ || setup_remote();
}

bool Job::setup_remote() {
    const RemoteOptions &ro = *opt_.remote;
    rsh_name_ = base_name(ro.rsh.front());
    cwd_ = current_dir();
    // Taken as given (raw): the PMI port of a multi-host job must not fall back to another
    // interface than the one the user named; open_pmi_listener refuses an unusable one.
    const char *named_iface = settings::kIface.raw();
    const std::string iface = named_iface ? named_iface : "";
    std::vector<std::string> warnings;
    try {
        int backlog = std::min(opt_.nprocs + 16, SOMAXCONN);
        listener_ = open_pmi_listener(ro.pmi_addr, iface, backlog, warnings);
    } catch (const NetError &e) {
        say(std::string("cannot open the PMI port for remote ranks: ") + e.what());
        return false;
    }
    for (const std::string &w : warnings) say("warning: " + w);
    pmi_port_ = listener_.address + ":" + std::to_string(listener_.port);
    try {
        std::unordered_map<long, bool> drawn;
        while (tokens_.size() < static_cast<std::size_t>(opt_.nprocs)) {
            uint32_t bits = 0;
            random_bytes(&bits, sizeof bits);
            const long token = static_cast<long>(bits & 0x7fffffffu); // what MPICH's client sends: an int
            if (token != 0 && !drawn[token]) {
                drawn[token] = true;
                tokens_.push_back(token);
            }
        }
    } catch (const std::exception &e) {
        say(std::string("cannot draw the ranks' PMI tokens: ") + e.what());
        return false;
    }
    allow_.add_local_addresses();
    for (const std::string &h : ro.hosts) {
        std::string why;
        if (!allow_.add_host(h, why))
            say("warning: host '" + h + "' does not resolve to an IPv4 address here (" + why +
                "); PMI connections of its ranks will be refused unless they come from an "
                "address of this machine");
    }
    reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return true;
}

int Job::run() {
    ensure_std_fds();
    if (!setup()) return kExitLauncherError;
    server_ = std::make_unique<PmiServer>(opt_.nprocs, kvsname_, *this);
    if (remote_) {
        server_->preset("PMI_process_mapping", opt_.remote->process_mapping);
        server_->expect_tokens(tokens_);
    }
    // Remote ranks take the job secret from here, not from their command line, where `ps` on
    // their machine would show it to every user.
    server_->preset("portico.secret", secret_);
    // Rank 0 gets the terminal (stdin) when we have it: make the job's process group the
    // foreground group, or rank 0 would be stopped by SIGTTIN on its first read.
    hand_tty_ = ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
    spawn_all();
    event_loop();
    if (end_ != End::None && pgid_ > 0) ::kill(-pgid_, SIGKILL); // grandchildren that outlived their rank
    if (relay_pid_ > 0) {                                        // still reading our stdin for a rank that is gone
        ::kill(relay_pid_, SIGKILL);
        while (::waitpid(relay_pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
        relay_pid_ = -1;
    }
    if (hand_tty_) ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    if (refused_ > 0)
        say(std::to_string(refused_) + " PMI connection" + (refused_ == 1 ? " was" : "s were") + " refused");
    return exit_code();
}

void Job::spawn_all() {
    std::vector<std::string> base_env;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view kv(*e);
        std::string_view name = kv.substr(0, kv.find('='));
        bool drop = false;
        for (const char *s : kStrippedEnv) drop = drop || name == s;
        if (!drop) base_env.emplace_back(kv);
    }
    for (int r = 0; r < opt_.nprocs; ++r)
        if (!spawn(r, base_env)) break;
}

std::vector<std::pair<std::string, std::string>> Job::remote_env(int rank) const {
    const RemoteOptions &ro = *opt_.remote;
    const std::string n = std::to_string(opt_.nprocs), r = std::to_string(rank);
    const std::string lr = std::to_string(ro.local_rank[rank]);
    const std::string ls = std::to_string(ro.local_size[rank]);
    std::vector<std::pair<std::string, std::string>> env = {
        {"PMI_PORT", pmi_port_}, // PMI_ID, the rank's token, comes on stdin (rank_command)
        {"PMI_RANK", r},
        {"PMI_SIZE", n},
        {"PMI_JOBID", kvsname_},
        {settings::kJobId.name, job_id_},
        {settings::kLocalRank.name, lr},
        {settings::kLocalSize.name, ls},
        {"MPI_LOCALRANKID", lr},
        {"MPI_LOCALNRANKS", ls},
    };
    auto named_by_option = [&](std::string_view name) {
        for (const auto &kv : opt_.env)
            if (kv.first == name) return true;
        return false;
    };
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view kv(*e);
        std::size_t eq = kv.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view name = kv.substr(0, eq);
        if (forwarded_to_remote(name) && !named_by_option(name))
            env.emplace_back(std::string(name), std::string(kv.substr(eq + 1)));
    }
    env.insert(env.end(), opt_.env.begin(), opt_.env.end());
    if (!named_by_option(settings::kPeerWatch.name) && !settings::kPeerWatch.is_set())
        env.emplace_back(settings::kPeerWatch.name, "off");
    return env;
}

// A local rank's environment: ours without the launcher's variables (base_env), then --env, then
// its PMI variables; PMI_FD is its end of the socket pair.
std::vector<std::string> Job::local_env(int rank, int pmi_fd, const std::vector<std::string> &base_env) const {
    std::vector<std::string> env = base_env;
    const std::string n = std::to_string(opt_.nprocs), r = std::to_string(rank);
    for (const auto &[k, v] : opt_.env) set_env(env, k, v);
    env.push_back("PMI_FD=" + std::to_string(pmi_fd));
    env.push_back("PMI_RANK=" + r);
    env.push_back("PMI_SIZE=" + n);
    env.push_back("PMI_JOBID=" + kvsname_);
    env.push_back(std::string(settings::kJobId.name) + "=" + job_id_);
    env.push_back(std::string(settings::kJobSecret.name) + "=" + secret_);
    env.push_back(std::string(settings::kLocalRank.name) + "=" + r);
    env.push_back(std::string(settings::kLocalSize.name) + "=" + n);
    env.push_back("MPI_LOCALRANKID=" + r);
    env.push_back("MPI_LOCALNRANKS=" + n);
    default_peer_watch_off(env);
    return env;
}

// What is executed for a rank: the program itself, or for a remote rank
// RSH host 'cd DIR 2>/dev/null; read -r PMI_ID ...; exec env VAR=value ... PROGRAM ARGS', run in
// our own environment (minus the PMI variables): exactly what `ssh host 'command'` gets. PMI_ID,
// the rank's token, is the first line of the remote shell's stdin (spawn).
std::vector<std::string> Job::rank_command(int rank) const {
    if (!remote_) return opt_.argv;
    std::vector<std::string> args = opt_.remote->rsh;
    args.push_back(opt_.remote->rank_host[rank]);
    args.push_back(remote_command(cwd_, remote_env(rank), opt_.argv, {"PMI_ID"}));
    return args;
}

bool Job::spawn(int rank, const std::vector<std::string> &base_env) {
    auto fail = [&](const std::string &what) {
        say("cannot start " + std::string(rank == 0 ? "the job" : "rank " + std::to_string(rank)) + ": " + what + ": " +
            std::strerror(errno));
        terminate(End::SpawnFailed, SIGTERM, kExitLauncherError);
        return false;
    };
    int sv[2] = {-1, -1};
    if (!remote_ && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return fail("socketpair");
    auto close_pair = [&] {
        for (int fd : sv)
            if (fd >= 0) ::close(fd);
    };
    int ep[2];
    if (::pipe2(ep, O_CLOEXEC) != 0) {
        int e = errno;
        close_pair();
        errno = e;
        return fail("pipe");
    }
    // A remote rank's stdin: its token (the remote command reads the first line), then for rank 0
    // our own stdin.
    int in[2] = {-1, -1};
    if (remote_ && ::pipe2(in, O_CLOEXEC) != 0) {
        int e = errno;
        ::close(ep[0]);
        ::close(ep[1]);
        errno = e;
        return fail("pipe");
    }
    auto close_in = [&] {
        for (int fd : in)
            if (fd >= 0) ::close(fd);
    };

    std::vector<std::string> env = remote_ ? base_env : local_env(rank, sv[1], base_env);
    std::vector<std::string> args = rank_command(rank);
    std::vector<char *> envp, argv;
    for (std::string &s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (std::string &s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) {
        int e = errno;
        close_pair();
        close_in();
        ::close(ep[0]);
        ::close(ep[1]);
        errno = e;
        return fail("fork");
    }
    if (pid == 0) exec_child(rank, sv[1], in[0], ep[1], argv.data(), envp.data());

    // Parent. Set the group here too (whichever of parent and child runs first wins the race).
    ::setpgid(pid, pgid_ != 0 ? pgid_ : pid);
    if (rank == 0) {
        pgid_ = pid;
        if (hand_tty_) ::tcsetpgrp(STDIN_FILENO, pgid_);
    }
    ranks_[rank].pid = pid;
    by_pid_[pid] = rank;
    ++live_;
    ::close(ep[1]);
    if (!remote_) {
        ::close(sv[1]);
        server_->attach(rank, sv[0]);
    } else {
        ::close(in[0]);
        // A line in an empty pipe: the write cannot block. If the remote shell is gone already
        // (it could not be run), its exit status tells; the SIGPIPE of the failed write (blocked
        // here) is taken back, or it would kill us when the signal mask is restored at the end.
        const std::string line = std::to_string(tokens_[static_cast<std::size_t>(rank)]) + "\n";
        if (::write(in[1], line.data(), line.size()) < 0 && errno == EPIPE) {
            sigset_t pipe_signal;
            sigemptyset(&pipe_signal);
            sigaddset(&pipe_signal, SIGPIPE);
            const timespec now{};
            while (::sigtimedwait(&pipe_signal, nullptr, &now) < 0 && errno == EINTR) {
            }
        }
        if (rank == 0) start_stdin_relay(in[1]);
        ::close(in[1]);
    }
    return await_exec(ep[0], args[0]);
}

void Job::start_stdin_relay(int to_rank0) {
    const pid_t pid = ::fork();
    if (pid < 0) {
        say(std::string("cannot pass stdin on to rank 0: fork: ") + std::strerror(errno));
        return;
    }
    if (pid > 0) {
        ::setpgid(pid, pgid_);
        relay_pid_ = pid;
        return;
    }
    ::setpgid(0, pgid_);
    // Nothing of the launcher's stays open here (a PMI connection held by this process would not
    // close when the launcher closes it): only stdin, stderr and the pipe.
    const int out = ::fcntl(to_rank0, F_DUPFD_CLOEXEC, 3);
    if (out < 0) ::_exit(1);
    ::close_range(3, static_cast<unsigned>(out) - 1, 0);
    ::close_range(static_cast<unsigned>(out) + 1, ~0u, 0);
    ::signal(SIGPIPE, SIG_IGN);
    ::sigprocmask(SIG_SETMASK, &orig_mask_, nullptr);
    char buf[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(out, buf + done, static_cast<std::size_t>(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) ::_exit(0); // the remote shell is gone
            done += w;
        }
    }
    ::_exit(0);
}

// The status pipe closes on a successful exec; otherwise the child sends its errno, and the job
// ends before the next rank is started. Closes status_fd.
bool Job::await_exec(int status_fd, const std::string &prog) {
    int err = 0;
    ssize_t got;
    do got = ::read(status_fd, &err, sizeof err);
    while (got < 0 && errno == EINTR);
    ::close(status_fd);
    if (got != static_cast<ssize_t>(sizeof err)) return true;
    std::string why = std::strerror(err);
    if (err == ENOENT && prog.find('/') == std::string::npos) why = "command not found (searched PATH)";
    say("cannot run " + std::string(remote_ ? "the remote shell " : "") + "'" + prog + "': " + why);
    terminate(End::SpawnFailed, SIGTERM, err == ENOENT ? kExitNotFound : kExitCannotExec);
    return false;
}

void Job::exec_child(int rank, int child_fd, int stdin_fd, int status_fd, char **argv, char **envp) {
    ::setpgid(0, pgid_ != 0 ? pgid_ : 0);
    if (rank == 0 && hand_tty_) ::tcsetpgrp(STDIN_FILENO, ::getpid()); // SIGTTOU is still blocked here
    ::sigprocmask(SIG_SETMASK, &orig_mask_, nullptr);
    if (stdin_fd >= 0) {
        ::dup2(stdin_fd, STDIN_FILENO); // the copy is not close-on-exec
    } else if (rank != 0) {
        int dn = ::open("/dev/null", O_RDONLY);
        if (dn >= 0 && dn != STDIN_FILENO) {
            ::dup2(dn, STDIN_FILENO);
            ::close(dn);
        }
    }
    if (child_fd >= 0) {
        int fl = ::fcntl(child_fd, F_GETFD);
        if (fl >= 0) ::fcntl(child_fd, F_SETFD, fl & ~FD_CLOEXEC);
    }
    ::execvpe(argv[0], argv, envp);
    int e = errno;
    ssize_t ignored = ::write(status_fd, &e, sizeof e);
    (void)ignored;
    ::_exit(kExitNotFound);
}

void Job::event_loop() {
    enum : int { kSignals = -1, kTimeout = -2, kGrace = -3, kListener = -4, kUnidentified = -5 };
    std::vector<pollfd> pfds;
    std::vector<int> owner; // rank, or one of the k* values above
    while (live_ > 0 && !gave_up_) {
        pfds.clear();
        owner.clear();
        pfds.push_back({sigfd_, POLLIN, 0});
        owner.push_back(kSignals);
        if (timeout_fd_ >= 0) {
            pfds.push_back({timeout_fd_, POLLIN, 0});
            owner.push_back(kTimeout);
        }
        if (grace_stage_ > 0) {
            pfds.push_back({grace_fd_, POLLIN, 0});
            owner.push_back(kGrace);
        }
        if (listener_.fd >= 0) {
            pfds.push_back({listener_.fd, POLLIN, 0});
            owner.push_back(kListener);
        }
        for (int fd : server_->unidentified_fds()) {
            pfds.push_back({fd, POLLIN, 0});
            owner.push_back(kUnidentified);
        }
        for (int r = 0; r < opt_.nprocs; ++r) {
            int fd = server_->fd(r);
            if (fd >= 0) {
                pfds.push_back({fd, server_->poll_events(r), 0});
                owner.push_back(r);
            }
        }
        int n = ::poll(pfds.data(), pfds.size(), poll_timeout_ms());
        if (n < 0) {
            if (errno == EINTR) continue;
            say(std::string("poll: ") + std::strerror(errno) + "; killing the job");
            terminate(End::Internal, SIGKILL, kExitLauncherError);
            for (;;) { // every rank got SIGKILL: wait for them without the loop
                int st;
                pid_t p = ::waitpid(-1, &st, 0);
                if (p < 0 && errno == EINTR) continue;
                if (p < 0) break;
            }
            return;
        }
        // PMI traffic first, so that a rank's last words (abort, barrier_in) are seen before its
        // exit status.
        for (std::size_t i = 0; i < pfds.size(); ++i)
            if (owner[i] >= 0 && pfds[i].revents != 0) server_->handle(owner[i], pfds[i].revents);
        for (std::size_t i = 0; i < pfds.size(); ++i)
            if (owner[i] == kUnidentified && pfds[i].revents != 0)
                server_->handle_unidentified(pfds[i].fd, pfds[i].revents);
        bool accept_now = false;
        for (std::size_t i = 0; i < pfds.size(); ++i) {
            if (pfds[i].revents == 0 || owner[i] >= 0) continue;
            if (owner[i] == kSignals)
                read_signals();
            else if (owner[i] == kTimeout)
                on_timeout();
            else if (owner[i] == kGrace)
                on_grace();
            else if (owner[i] == kListener)
                accept_now = true;
        }
        process_exits();
        // New connections last: their fds may reuse numbers that this round's pfds still name.
        if (accept_now && listener_.fd >= 0) accept_connections();
        check_deadlock();
        if (end_ != End::None && remote_ && !cut_) cut_remote_connections();
    }
}

int Job::poll_timeout_ms() const {
    auto first = std::chrono::steady_clock::time_point::max();
    for (const Rank &rk : ranks_)
        if (rk.lingering) first = std::min(first, rk.linger_until);
    if (first == std::chrono::steady_clock::time_point::max()) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(first - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<long long>(left.count(), 0, INT_MAX));
}

// Processes the exits waited for, in the order the ranks exited. A remote rank whose RSH process
// has exited is processed once its PMI connection has closed too (or the wait is over, or the
// job is being torn down anyway); the exits after it wait for it, so that the first rank to exit
// still decides.
void Job::process_exits() {
    auto now = std::chrono::steady_clock::now();
    while (!exits_.empty()) {
        int r = exits_.front();
        Rank &rk = ranks_[r];
        if (rk.lingering && end_ == End::None && !server_->closed(r) && now < rk.linger_until) return;
        rk.lingering = false;
        exits_.pop_front();
        on_rank_exit(r, rk.status);
    }
}

void Job::accept_connections() {
    const std::size_t max_unidentified = static_cast<std::size_t>(opt_.nprocs) + 64;
    for (;;) {
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        int fd = ::accept4(listener_.fd, reinterpret_cast<sockaddr *>(&peer), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            if ((errno == EMFILE || errno == ENFILE) && reserve_fd_ >= 0) {
                // Out of descriptors: take the connection with the reserve fd and drop it, or
                // poll() would report the listener readable forever.
                ::close(reserve_fd_);
                len = sizeof peer;
                fd = ::accept4(listener_.fd, reinterpret_cast<sockaddr *>(&peer), &len, SOCK_CLOEXEC);
                if (fd >= 0) ::close(fd);
                reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd >= 0) pmi_refused(format_peer(peer), "portico-run is out of file descriptors");
                if (reserve_fd_ >= 0) continue;
            }
            say(std::string("cannot accept PMI connections: ") + std::strerror(errno) + "; no longer accepting any");
            ::close(listener_.fd);
            listener_.fd = -1;
            return;
        }
        std::string who_peer = format_peer(peer);
        if (!allow_.allowed(peer)) {
            ::close(fd);
            pmi_refused(who_peer, "not an address of this machine or of a host of the job");
            continue;
        }
        // The newest is kept: a rank sends its handshake as soon as it has connected.
        while (server_->unidentified_count() >= max_unidentified) server_->drop_oldest_unidentified();
        tune_tcp(fd);
        server_->attach_unidentified(fd, who_peer);
    }
}

// The job has ended: remote ranks learn it from their PMI connection closing (killing the local
// RSH process does not kill the remote program), and nobody may connect any more.
void Job::cut_remote_connections() {
    cut_ = true;
    if (listener_.fd >= 0) {
        ::close(listener_.fd);
        listener_.fd = -1;
    }
    server_->close_unidentified();
    for (int r = 0; r < opt_.nprocs; ++r) server_->disconnect(r);
}

bool Job::pmi_may_identify(int rank, std::string &why) {
    const Rank &rk = ranks_[rank];
    if (end_ != End::None)
        why = "the job is being terminated";
    else if (rk.pid <= 0)
        why = "rank " + std::to_string(rank) + " has not been started";
    else if (rk.waited)
        why = "rank " + std::to_string(rank) + " has already exited";
    else
        return true;
    return false;
}

void Job::pmi_guessing(int wrong_tokens) {
    say(std::to_string(wrong_tokens) +
        " PMI connections presented a token that is no rank's: somebody is guessing; the PMI port "
        "takes no more connections (ranks that have not connected yet cannot join)");
    if (listener_.fd >= 0) {
        ::close(listener_.fd);
        listener_.fd = -1;
    }
}

void Job::pmi_refused(const std::string &peer, const std::string &why) {
    ++refused_;
    if (refused_ <= kMaxRefusalReports)
        say("refused a PMI connection from " + peer + ": " + why);
    else if (refused_ == kMaxRefusalReports + 1)
        say("further refused PMI connections are not reported");
}

void Job::read_signals() {
    signalfd_siginfo si;
    std::vector<pid_t> exit_order;
    for (;;) {
        ssize_t n = ::read(sigfd_, &si, sizeof si);
        if (n < 0 && errno == EINTR) continue;
        if (n != static_cast<ssize_t>(sizeof si)) break;
        if (si.ssi_signo != SIGCHLD)
            on_signal(static_cast<int>(si.ssi_signo));
        else if (si.ssi_code == CLD_EXITED || si.ssi_code == CLD_KILLED || si.ssi_code == CLD_DUMPED)
            exit_order.push_back(static_cast<pid_t>(si.ssi_pid));
    }
    reap(exit_order);
}

// Collects the children named in exit_order first, then every other exited or stopped child.
// SIGCHLDs coalesce: a SIGCHLD that is pending when more children exit keeps the information of
// the first, so exit_order names the child that exited first since we last looked, whereas
// waitpid(-1) returns exited children in the order they were started. Taking that one first is
// what lets the first rank to exit decide the job's status when we find several exits at once
// (a busy machine).
void Job::reap(const std::vector<pid_t> &exit_order) {
    std::size_t next = 0;
    for (;;) {
        int st = 0;
        pid_t p;
        if (next < exit_order.size()) {
            p = ::waitpid(exit_order[next++], &st, WNOHANG);
            if (p <= 0) continue; // already collected
        } else {
            p = ::waitpid(-1, &st, WNOHANG | (hand_tty_ ? WUNTRACED : 0));
        }
        if (p == 0) break;
        if (p < 0) {
            if (errno == EINTR) continue;
            if (errno == ECHILD) { // cannot happen with SIGCHLD at SIG_DFL
                bool lost = false;
                for (Rank &rk : ranks_)
                    if (rk.pid > 0 && !rk.waited && !rk.reaped) {
                        rk.waited = rk.reaped = true;
                        --live_;
                        lost = true;
                    }
                if (lost) say("lost track of the ranks (no children left)");
            }
            break;
        }
        if (p == relay_pid_ && !WIFSTOPPED(st)) relay_pid_ = -1; // stdin ended
        auto it = by_pid_.find(p);
        if (it == by_pid_.end()) continue;
        if (WIFSTOPPED(st)) {
            on_rank_stopped(WSTOPSIG(st));
            continue;
        }
        int rank = it->second;
        by_pid_.erase(it);
        Rank &rk = ranks_[rank];
        rk.waited = true;
        server_->drain(rank);
        rk.status = st;
        if (remote_ && end_ == End::None && !server_->closed(rank)) {
            // ssh may report the exit before the rank's last PMI bytes arrive over the network.
            rk.lingering = true;
            rk.linger_until = std::chrono::steady_clock::now() + kLinger;
        }
        exits_.push_back(rank);
    }
    process_exits();
}

// Job control when the job owns the terminal: Ctrl-Z stops the ranks (they are the foreground
// group), so stop the launcher as well, which hands control back to the shell; on `fg` give the
// terminal back to the job and continue it (on `bg` just continue it).
void Job::on_rank_stopped(int sig) {
    if (!hand_tty_ || end_ != End::None || (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)) return;
    ::kill(-pgid_, SIGSTOP); // the whole job, not just the ranks that got the signal
    ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    ::raise(SIGTSTP); // returns when the shell continues us
    if (::tcgetpgrp(STDIN_FILENO) == ::getpgrp()) ::tcsetpgrp(STDIN_FILENO, pgid_);
    ::kill(-pgid_, SIGCONT);
}

void Job::on_rank_exit(int rank, int status) {
    Rank &rk = ranks_[rank];
    rk.reaped = true;
    rk.status = status;
    --live_;
    if (end_ != End::None) return; // killed by us (or irrelevant now that the job is being torn down)
    int code = status_code(status);
    if (code == 0) return; // finishing early is fine
    if (first_failure_ == 0) first_failure_ = code;
    std::string msg = who(rank) + " " + describe_status(status);
    if (remote_ && rsh_name_ == "ssh" && WIFEXITED(status) && WEXITSTATUS(status) == 255)
        msg += " (255 is also ssh's own error code: host unreachable, authentication failed, ...)";
    if (live_ > 0) {
        say(msg + "; terminating the job");
        terminate(End::RankFailed, SIGTERM, code);
    } else {
        say(msg);
    }
}

void Job::pmi_abort(int rank, int exit_code, const std::string &message) {
    if (end_ != End::None) return;
    int status = abort_status(exit_code);
    std::string msg = who(rank) + " called PMI abort with exit code " + std::to_string(exit_code);
    if (status != exit_code) msg += " (exit status " + std::to_string(status) + ")";
    if (!message.empty()) msg += ": " + message;
    say(msg + "; terminating the job");
    terminate(End::Abort, SIGTERM, status);
}

void Job::pmi_warning(int rank, const std::string &what) { say("rank " + std::to_string(rank) + ": PMI: " + what); }

void Job::on_signal(int sig) {
    if (end_ != End::None) {
        if (grace_stage_ < 2) { // impatient user: no more grace
            say("received " + signal_text(sig) + " again; killing the job");
            signal_job(SIGKILL);
            grace_stage_ = 2;
            arm_timer(grace_fd_, kGiveUpSeconds);
        }
        return;
    }
    say("received " + signal_text(sig) + "; terminating the job");
    terminate(End::Signal, sig, 128 + sig);
}

void Job::on_timeout() {
    drain_timer(timeout_fd_);
    ::close(timeout_fd_);
    timeout_fd_ = -1;
    if (end_ != End::None) return;
    say("job timed out after " + format_seconds(opt_.timeout_seconds) + " s; killing it");
    std::vector<int> live = live_ranks(), waiting;
    for (int r = 0; r < opt_.nprocs; ++r)
        if (server_->in_barrier(r)) waiting.push_back(r);
    std::string detail = "still running: " + ranks_word(live);
    if (!waiting.empty())
        detail += "; waiting in PMI barrier #" + std::to_string(server_->barriers_completed() + 1) + ": " +
                  ranks_word(waiting);
    say(detail);
    terminate(End::Timeout, SIGTERM, kExitTimeout);
}

void Job::on_grace() {
    drain_timer(grace_fd_);
    std::vector<int> live = live_ranks();
    if (live.empty()) return;
    if (grace_stage_ == 1) {
        say(ranks_word(live) + " still running " + std::to_string(kGraceSeconds) +
            " s after being signalled; sending SIGKILL");
        signal_job(SIGKILL);
        grace_stage_ = 2;
        arm_timer(grace_fd_, kGiveUpSeconds);
    } else if (grace_stage_ == 2) {
        say(ranks_word(live) + " did not exit after SIGKILL; giving up on them");
        gave_up_ = true;
    }
}

// Ranks waiting in a barrier that a departed rank can never enter would wait forever.
void Job::check_deadlock() {
    if (end_ != End::None || server_->barrier_count() == 0) return;
    for (int r = 0; r < opt_.nprocs; ++r) {
        // Only a rank whose exit status we hold counts: a closed PMI socket alone may just mean
        // the process is dying, and its exit status (a failure, say) must be reported first.
        if (server_->in_barrier(r) || !ranks_[r].reaped) continue;
        std::vector<int> waiting;
        for (int w = 0; w < opt_.nprocs; ++w)
            if (server_->in_barrier(w)) waiting.push_back(w);
        std::string why = describe_status(ranks_[r].status);
        say(ranks_word(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in a PMI barrier that " + who(r) +
            " can never enter (it " + why + "); terminating the job");
        terminate(End::Deadlock, SIGTERM, kExitDeadlock);
        return;
    }
}

void Job::terminate(End why, int sig, int code) {
    if (end_ != End::None) return; // the first reason decides the exit code
    end_ = why;
    end_code_ = code;
    signal_job(sig);
    if (sig != SIGKILL) {
        signal_job(SIGCONT); // stopped ranks must be able to act on the signal
        grace_stage_ = 1;
        arm_timer(grace_fd_, kGraceSeconds);
    } else {
        grace_stage_ = 2;
        arm_timer(grace_fd_, kGiveUpSeconds);
    }
}

void Job::signal_job(int sig) {
    bool any = false;
    for (const Rank &rk : ranks_)
        if (rk.pid > 0 && !rk.waited) {
            ::kill(rk.pid, sig); // also reaches a rank that left the job's process group
            any = true;
        }
    if (any && pgid_ > 0) ::kill(-pgid_, sig); // and the processes the ranks started
}

std::vector<int> Job::live_ranks() const {
    std::vector<int> out;
    for (int r = 0; r < opt_.nprocs; ++r)
        if (ranks_[r].pid > 0 && !ranks_[r].reaped) out.push_back(r);
    return out;
}

int Job::exit_code() const {
    // A rank that failed first ended the job with its own code (end_code_ == first_failure_).
    return end_ == End::None ? first_failure_ : end_code_;
}

} // namespace

bool is_launcher_variable(std::string_view name) {
    for (const char *s : kStrippedEnv)
        if (name == s) return true;
    return false;
}

int run_job(const JobOptions &options) {
    Job job(options);
    return job.run();
}

} // namespace portico::run
