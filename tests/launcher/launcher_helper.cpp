// SPDX-License-Identifier: BSD-3-Clause
// A rank program with scripted misbehaviour, started by launcher_driver_test through portico-run.
// Ranks that must be killed by the launcher block in a PMI barrier (or in pause()) forever, so a
// test only finishes if portico-run really terminates them; a barrier that ends instead (a PMIx
// fence, once a rank is gone) ends its rank with exit status 98 (failed) or 97 (completed). No
// sleeps anywhere.
//
//   exit-rank R CODE        rank R exits with CODE at once; the others block in a barrier
//   signal-rank R SIG       rank R kills itself with SIG; the others block in a barrier
//   abort-rank R CODE MSG   rank R calls PMI abort(CODE, MSG); the others block in a barrier
//   hang                    every rank blocks in pause() (no PMI)
//   barrier-hang            rank 0 blocks in pause(), the others in a barrier
//   ready-hang              rank 0 prints "ready" to stdout, then every rank blocks in pause()
//   grandchild-fail         rank 0 forks a child that blocks forever; after a barrier, rank 1
//                           exits with code 3 (the grandchild must be killed with the job)
//   stdin                   rank 0 must read exactly "hello\n" from stdin, the others EOF
//   early-exit CODE         rank 0 exits 0 right after a barrier; rank 1 waits until rank 0's
//                           process is gone, uses PMI once more, then exits with CODE
//   lonely-barrier          rank 0 exits 0 without using PMI; the others enter a barrier
//   print-args ARGS...      prints "cwd=HEX", "arg=HEX" per argument and "env=HEX" (the value of
//                           QUOTE_TEST, "unset" when unset), hex-encoded, one per line (rank 0)
//   intruder                (remote ranks, PMI_PORT) after a barrier rank 0 opens extra TCP
//                           connections to the PMI port that the launcher must refuse: none sends
//                           anything, its own token again (PMI_ID, in use), the rank numbers 0
//                           and 1 and N (no rank's token), pmiid abc, a request other than
//                           initack, and a new process of this program whose PmiClient must fail
//                           with the launcher's refusal of its PMI_ID (expect-refused); then
//                           every rank checks the job still works
//   guess-tokens            (remote ranks, PMI_PORT) after a barrier rank 0 sends 16 handshakes
//                           with wrong tokens; the launcher must then take no connection at all
//                           (connect fails); every rank checks the job still works
//   expect-refused          PmiClient::from_environment() must throw "... refused PMI_ID=<id>:
//                           pmiid_in_use"
//   knock-from CMD ARGS...  (remote ranks) after a barrier rank 0 runs CMD (which runs
//                           `knock-refused` from elsewhere) and requires it to exit 0; then every
//                           rank checks the job still works
//   knock-refused           (no PMI) connects to PMI_PORT, sends "cmd=initack pmiid=0" and exits
//                           0 if the launcher closes the connection without a reply
//   watch-launcher          after a barrier the last rank exits with code 3; the others wait
//                           for a hang-up on the PMI connection (PmiClient::fd()), print
//                           "rank R: launcher gone" and exit 0
#include "bootstrap/pmi_client.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <netdb.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

using portico::bootstrap::PmiClient;

namespace {

[[noreturn]] void die(const std::string &msg) {
    std::fprintf(stderr, "launcher_helper: %s\n", msg.c_str());
    std::_Exit(99);
}

[[noreturn]] void block_forever() {
    for (;;) ::pause();
}

// The exit statuses of a rank whose barrier ended although a rank of the job never entered it.
// portico-run kills the waiting ranks instead; Open MPI's PMIx server ends the fence, with an
// error (PARTIAL SUCCESS) or now and then with success. Neither is a crash's status (134 for an
// uncaught PmiError) nor die()'s, so that launcher.pmix.exit_rank can tell them from mpirun's
// crash and from a rank that never reached PMI.
constexpr int kBarrierFailed = 98;
constexpr int kBarrierCompleted = 97;

// Blocks in a barrier that can only complete if every rank enters it.
[[noreturn]] void barrier_forever(PmiClient &pmi) {
    try {
        pmi.barrier();
    } catch (const portico::bootstrap::PmiError &e) {
        std::fprintf(stderr, "launcher_helper: rank %d: the barrier failed: %s\n", pmi.rank(), e.what());
        std::_Exit(kBarrierFailed);
    }
    std::fprintf(stderr, "launcher_helper: rank %d: a barrier completed that should not have\n", pmi.rank());
    std::_Exit(kBarrierCompleted);
}

std::unique_ptr<PmiClient> connect() {
    auto pmi = PmiClient::from_environment();
    if (!pmi) die("not started by a PMI-1 launcher");
    return pmi;
}

int arg_int(const std::vector<std::string> &a, std::size_t i) {
    if (i >= a.size()) die("missing argument");
    return std::atoi(a[i].c_str());
}

int my_rank() {
    const char *r = std::getenv("PMI_RANK");
    if (r == nullptr) die("PMI_RANK not set");
    return std::atoi(r);
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

// Opens a TCP connection to PMI_PORT, sends `request` (if any) and returns everything the
// launcher sends until it closes the connection.
// Whether the PMI port still takes a TCP connection.
bool can_connect() {
    const char *port_s = std::getenv("PMI_PORT");
    if (port_s == nullptr) die("PMI_PORT not set");
    std::string hp = port_s;
    const std::size_t colon = hp.rfind(':');
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (colon == std::string::npos ||
        ::getaddrinfo(hp.substr(0, colon).c_str(), hp.substr(colon + 1).c_str(), &hints, &res) != 0 || res == nullptr)
        die("cannot resolve " + hp);
    int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool ok = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0;
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(res);
    return ok;
}

std::string knock(const std::string &request) {
    const char *port_s = std::getenv("PMI_PORT");
    if (port_s == nullptr) die("PMI_PORT not set");
    std::string hp = port_s;
    std::size_t colon = hp.rfind(':');
    if (colon == std::string::npos) die("bad PMI_PORT " + hp);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (::getaddrinfo(hp.substr(0, colon).c_str(), hp.substr(colon + 1).c_str(), &hints, &res) != 0 || res == nullptr)
        die("cannot resolve " + hp);
    int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, res->ai_addr, res->ai_addrlen) != 0)
        die("cannot connect to " + hp + ": " + std::strerror(errno));
    ::freeaddrinfo(res);
    if (request.empty()) {
        ::close(fd);
        return {};
    }
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
        die("send to the PMI port failed");
    std::string got;
    char buf[512];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // EOF (or a reset): the launcher closed it
        got.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return got;
}

} // namespace

int main(int argc, char **argv) {
    std::vector<std::string> a(argv + 1, argv + argc);
    if (a.empty()) die("no mode");
    const std::string &mode = a[0];
    // Signals that would dump core must not leave core files behind.
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

    if (mode == "exit-rank") {
        auto pmi = connect();
        if (pmi->rank() == arg_int(a, 1)) std::_Exit(arg_int(a, 2));
        barrier_forever(*pmi);
    }
    if (mode == "signal-rank") {
        auto pmi = connect();
        if (pmi->rank() == arg_int(a, 1)) {
            int sig = arg_int(a, 2);
            std::signal(sig, SIG_DFL);
            ::raise(sig);
            die("survived signal " + std::to_string(sig));
        }
        barrier_forever(*pmi);
    }
    if (mode == "abort-rank") {
        auto pmi = connect();
        if (pmi->rank() == arg_int(a, 1)) {
            std::string msg;
            for (std::size_t i = 3; i < a.size(); ++i) msg += (i > 3 ? " " : "") + a[i];
            pmi->abort(arg_int(a, 2), msg);
        }
        barrier_forever(*pmi);
    }
    if (mode == "hang") block_forever();
    if (mode == "barrier-hang") {
        auto pmi = connect();
        if (pmi->rank() == 0) block_forever();
        barrier_forever(*pmi);
    }
    if (mode == "ready-hang") {
        if (my_rank() == 0) {
            std::printf("ready\n");
            std::fflush(stdout);
        }
        block_forever();
    }
    if (mode == "grandchild-fail") {
        auto pmi = connect();
        if (pmi->rank() == 0) {
            pid_t pid = ::fork();
            if (pid < 0) die("fork failed");
            if (pid == 0) block_forever(); // keeps stdout/stderr open until it is killed
        }
        pmi->barrier();
        if (pmi->rank() == 1) std::_Exit(3);
        block_forever();
    }
    if (mode == "stdin") {
        std::string in;
        char buf[256];
        for (;;) {
            ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) die(std::string("read(stdin): ") + std::strerror(errno));
            if (n == 0) break;
            in.append(buf, static_cast<std::size_t>(n));
        }
        std::string want = my_rank() == 0 ? "hello\n" : "";
        if (in != want)
            die("rank " + std::to_string(my_rank()) + " read '" + in + "' from stdin, expected '" + want + "'");
        return 0;
    }
    if (mode == "early-exit") {
        auto pmi = connect();
        if (pmi->rank() == 0) {
            pmi->put("pid.0", std::to_string(::getpid()));
            pmi->barrier();
            pmi->finalize();
            return 0;
        }
        pmi->barrier();
        if (pmi->rank() == 1) {
            auto pid_s = pmi->get("pid.0");
            if (!pid_s) die("pid.0 missing");
            int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, std::atoi(pid_s->c_str()), 0));
            if (pidfd >= 0) { // readable once rank 0 has exited
                pollfd p{pidfd, POLLIN, 0};
                while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
                }
                ::close(pidfd);
            } else if (errno != ESRCH) {
                die(std::string("pidfd_open: ") + std::strerror(errno));
            }
            if (pmi->get("pid.0") != pid_s) // the launcher still serves the survivors
                die("pid.0 changed");
            pmi->finalize();
            return arg_int(a, 1);
        }
        pmi->finalize();
        return 0;
    }
    if (mode == "lonely-barrier") {
        if (my_rank() == 0) return 0;
        auto pmi = connect();
        barrier_forever(*pmi);
    }
    if (mode == "print-args") {
        if (my_rank() != 0) return 0;
        char cwd[4096];
        if (::getcwd(cwd, sizeof cwd) == nullptr) die("getcwd failed");
        std::string out = "cwd=" + hex(cwd) + "\n";
        for (std::size_t i = 1; i < a.size(); ++i) out += "arg=" + hex(a[i]) + "\n";
        const char *q = std::getenv("QUOTE_TEST");
        out += "env=" + (q != nullptr ? hex(q) : std::string("unset")) + "\n";
        std::fputs(out.c_str(), stdout);
        return 0;
    }
    if (mode == "intruder") {
        auto pmi = connect();
        pmi->barrier(); // every rank is connected now
        const std::string me = std::to_string(pmi->rank());
        if (pmi->rank() == 0) {
            const std::string n = std::to_string(pmi->size());
            struct Case {
                std::string request, reply;
            };
            const std::string token = std::getenv("PMI_ID") != nullptr ? std::getenv("PMI_ID") : "?";
            const Case cases[] = {
                {"", ""},
                {"cmd=initack pmiid=" + token + "\n", "cmd=error rc=-1 msg=pmiid_in_use\n"},
                {"cmd=initack pmiid=0\n", "cmd=error rc=-1 msg=invalid_pmiid\n"},
                {"cmd=initack pmiid=1\n", "cmd=error rc=-1 msg=invalid_pmiid\n"},
                {"cmd=initack pmiid=" + n + "\n", "cmd=error rc=-1 msg=invalid_pmiid\n"},
                {"cmd=initack pmiid=abc\n", "cmd=error rc=-1 msg=invalid_pmiid\n"},
                {"cmd=get_maxes\n", "cmd=error rc=-1 msg=expected_initack\n"},
            };
            for (const Case &c : cases) {
                std::string got = knock(c.request);
                if (got != c.reply)
                    die("request '" + c.request + "': expected reply '" + c.reply + "', got '" + got + "'");
            }
            // A second process claiming rank 0 with the client library.
            std::fflush(stdout);
            pid_t pid = ::fork();
            if (pid < 0) die("fork failed");
            if (pid == 0) {
                char self[] = "/proc/self/exe", mode_arg[] = "expect-refused";
                char *args[] = {self, mode_arg, nullptr};
                ::execv(self, args);
                std::_Exit(127);
            }
            int st = 0;
            while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            }
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                die("expect-refused failed (wait status " + std::to_string(st) + ")");
        }
        // The job still works: keys, barriers.
        pmi->put("alive." + me, "yes" + me);
        pmi->barrier();
        for (int r = 0; r < pmi->size(); ++r)
            if (pmi->get("alive." + std::to_string(r)) != "yes" + std::to_string(r))
                die("rank " + me + ": alive." + std::to_string(r) + " missing after the intrusions");
        pmi->barrier();
        pmi->finalize();
        return 0;
    }
    if (mode == "guess-tokens") {
        auto pmi = connect();
        pmi->barrier(); // every rank is connected now
        const std::string me = std::to_string(pmi->rank());
        if (pmi->rank() == 0) {
            const long mine = std::strtol(std::getenv("PMI_ID") != nullptr ? std::getenv("PMI_ID") : "0", nullptr, 10);
            for (long guess = 1; guess <= 16; ++guess) {
                const long wrong = guess == mine ? 17 : guess; // never a token: only rank 0's own is known here
                const std::string got = knock("cmd=initack pmiid=" + std::to_string(wrong) + "\n");
                if (got != "cmd=error rc=-1 msg=invalid_pmiid\n" && got != "cmd=error rc=-1 msg=pmiid_in_use\n")
                    die("guess " + std::to_string(guess) + ": unexpected reply '" + got + "'");
            }
            if (can_connect()) die("the PMI port still takes connections after 16 wrong tokens");
        }
        pmi->put("alive." + me, "yes" + me);
        pmi->barrier();
        for (int r = 0; r < pmi->size(); ++r)
            if (pmi->get("alive." + std::to_string(r)) != "yes" + std::to_string(r))
                die("rank " + me + ": alive." + std::to_string(r) + " missing after the guesses");
        pmi->barrier();
        pmi->finalize();
        return 0;
    }
    if (mode == "expect-refused") {
        const std::string want =
            "refused PMI_ID=" + std::string(std::getenv("PMI_ID") != nullptr ? std::getenv("PMI_ID") : "?") +
            ": pmiid_in_use";
        try {
            auto pmi = PmiClient::from_environment();
        } catch (const portico::bootstrap::PmiError &e) {
            if (std::string(e.what()).find(want) == std::string::npos)
                die(std::string("expect-refused: unexpected error: ") + e.what());
            return 0;
        }
        die("expect-refused: the launcher accepted a second connection for PMI_ID " +
            std::string(std::getenv("PMI_ID") != nullptr ? std::getenv("PMI_ID") : "?"));
    }
    if (mode == "knock-refused") {
        std::string got = knock("cmd=initack pmiid=0\n");
        if (!got.empty()) die("the launcher answered a foreign connection: '" + got + "'");
        std::printf("knock-refused: the launcher closed the connection without a reply\n");
        return 0;
    }
    if (mode == "knock-from") {
        if (a.size() < 2) die("knock-from needs a command");
        auto pmi = connect();
        pmi->barrier();
        const std::string me = std::to_string(pmi->rank());
        if (pmi->rank() == 0) {
            std::fflush(stdout);
            pid_t pid = ::fork();
            if (pid < 0) die("fork failed");
            if (pid == 0) {
                std::vector<char *> args;
                for (std::size_t i = 1; i < a.size(); ++i) args.push_back(a[i].data());
                args.push_back(nullptr);
                ::execvp(args[0], args.data());
                std::_Exit(127);
            }
            int st = 0;
            while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            }
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                die("'" + a[1] + " ...' failed (wait status " + std::to_string(st) + ")");
        }
        pmi->put("alive." + me, "yes" + me);
        pmi->barrier();
        for (int r = 0; r < pmi->size(); ++r)
            if (pmi->get("alive." + std::to_string(r)) != "yes" + std::to_string(r))
                die("rank " + me + ": alive." + std::to_string(r) + " missing after the knock");
        pmi->finalize();
        return 0;
    }
    if (mode == "watch-launcher") {
        auto pmi = connect();
        pmi->barrier();
        if (pmi->rank() == pmi->size() - 1) std::_Exit(3);
        pollfd p{pmi->fd(), POLLRDHUP, 0};
        for (;;) {
            int n = ::poll(&p, 1, -1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) die(std::string("poll: ") + std::strerror(errno));
            if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) break;
        }
        std::printf("rank %d: launcher gone\n", pmi->rank());
        std::fflush(stdout);
        return 0;
    }
    die("unknown mode '" + mode + "'");
}
