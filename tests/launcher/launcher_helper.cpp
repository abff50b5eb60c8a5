// A rank program with scripted misbehaviour, started by launcher_driver_test through portico-run.
// Ranks that must be killed by the launcher block in a PMI barrier (or in pause()) forever, so a
// test only finishes if portico-run really terminates them. No sleeps anywhere.
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
#include "bootstrap/pmi_client.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

using portico::bootstrap::PmiClient;

namespace {

[[noreturn]] void die(const std::string &msg) {
    std::fprintf(stderr, "launcher_helper: %s\n", msg.c_str());
    std::_Exit(99);
}

[[noreturn]] void block_forever() {
    for (;;)
        ::pause();
}

// Blocks in a barrier that can only complete if every rank enters it.
[[noreturn]] void barrier_forever(PmiClient &pmi) {
    pmi.barrier();
    die("rank " + std::to_string(pmi.rank()) + ": a barrier completed that should not have");
}

std::unique_ptr<PmiClient> connect() {
    auto pmi = PmiClient::from_environment();
    if (!pmi)
        die("not started by a PMI-1 launcher");
    return pmi;
}

int arg_int(const std::vector<std::string> &a, std::size_t i) {
    if (i >= a.size())
        die("missing argument");
    return std::atoi(a[i].c_str());
}

int my_rank() {
    const char *r = std::getenv("PMI_RANK");
    if (r == nullptr)
        die("PMI_RANK not set");
    return std::atoi(r);
}

} // namespace

int main(int argc, char **argv) {
    std::vector<std::string> a(argv + 1, argv + argc);
    if (a.empty())
        die("no mode");
    const std::string &mode = a[0];
    // Signals that would dump core must not leave core files behind.
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

    if (mode == "exit-rank") {
        auto pmi = connect();
        if (pmi->rank() == arg_int(a, 1))
            std::_Exit(arg_int(a, 2));
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
            for (std::size_t i = 3; i < a.size(); ++i)
                msg += (i > 3 ? " " : "") + a[i];
            pmi->abort(arg_int(a, 2), msg);
        }
        barrier_forever(*pmi);
    }
    if (mode == "hang")
        block_forever();
    if (mode == "barrier-hang") {
        auto pmi = connect();
        if (pmi->rank() == 0)
            block_forever();
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
            if (pid < 0)
                die("fork failed");
            if (pid == 0)
                block_forever(); // keeps stdout/stderr open until it is killed
        }
        pmi->barrier();
        if (pmi->rank() == 1)
            std::_Exit(3);
        block_forever();
    }
    if (mode == "stdin") {
        std::string in;
        char buf[256];
        for (;;) {
            ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                die(std::string("read(stdin): ") + std::strerror(errno));
            if (n == 0)
                break;
            in.append(buf, static_cast<std::size_t>(n));
        }
        std::string want = my_rank() == 0 ? "hello\n" : "";
        if (in != want)
            die("rank " + std::to_string(my_rank()) + " read '" + in + "' from stdin, expected '" +
                want + "'");
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
            if (!pid_s)
                die("pid.0 missing");
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
        if (my_rank() == 0)
            return 0;
        auto pmi = connect();
        barrier_forever(*pmi);
    }
    die("unknown mode '" + mode + "'");
}
