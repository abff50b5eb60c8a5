// SPDX-License-Identifier: BSD-3-Clause
// The test job: rank, size and out-of-band collectives through Portico's job service
// (portico_runtime.h, the launcher's connection, never the Portals engine under test), and the
// GoogleTest main() shared by every multi-process test binary.
//
// Failure handling: a listener ends the whole job at the first failed assertion on any rank. It
// prints the failure with the rank, flushes and _exit(1)s; the launcher then kills the other
// ranks, so no rank is left waiting in a barrier for a peer that gave up.
//
// Hang diagnosis: when the launcher terminates the job (timeout, or a failed peer), every rank
// prints the test it was in and, if set, the C string portico_test_wait_note: test helpers write
// there where they are about to block (e.g. "PtlEQWait at putget.cpp:123"). It is extern "C" so
// that helpers can declare it without a header of ours.
//
// Without a PMI launcher (no PMI_FD) the job is a single process: rank 0 of 1.
#include "mpjob.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include <portals4.h>
#include <portico_runtime.h>

#include "clientkit.hpp"

extern "C" {
char portico_test_wait_note[256] = "";
}

namespace portico::test {
namespace {

bool g_launched = false;
bool g_started = false;
int g_rank = 0;
int g_size = 1;
// Name of the running test, for the termination handler (written outside any signal handler).
char g_current_test[512] = "(no test started)";

void write_all(int fd, const char *s) {
    size_t n = 0;
    while (s[n] != '\0') ++n;
    while (n > 0) {
        ssize_t w = ::write(fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= static_cast<size_t>(w);
    }
}

void write_int(int fd, int v) {
    char buf[16];
    int i = sizeof buf - 1;
    buf[i] = '\0';
    unsigned u = v < 0 ? 0u - static_cast<unsigned>(v) : static_cast<unsigned>(v);
    do {
        buf[--i] = static_cast<char>('0' + u % 10);
        u /= 10;
    } while (u != 0 && i > 1);
    if (v < 0) buf[--i] = '-';
    write_all(fd, buf + i);
}

// SIGTERM/SIGINT from the launcher (timeout or a failed peer): say which test this rank was in.
// Only async-signal-safe calls here.
void on_terminate(int sig) {
    write_all(2, "[rank ");
    write_int(2, g_rank);
    write_all(2, "] terminated by signal ");
    write_int(2, sig);
    write_all(2, " in test ");
    write_all(2, g_current_test);
    if (portico_test_wait_note[0] != '\0') {
        portico_test_wait_note[sizeof portico_test_wait_note - 1] = '\0';
        write_all(2, ", blocked in ");
        write_all(2, portico_test_wait_note);
    }
    write_all(2, "\n");
    _exit(128 + sig);
}

class EndJobOnFailure : public ::testing::EmptyTestEventListener {
public:
    void OnTestStart(const ::testing::TestInfo &info) override {
        std::snprintf(g_current_test, sizeof g_current_test, "%s.%s", info.test_suite_name(), info.name());
    }
    void OnTestPartResult(const ::testing::TestPartResult &result) override {
        if (!result.failed()) return;
        std::fflush(stdout);
        std::fprintf(stderr, "[rank %d of %d] FAILED in %s\n%s:%d: Failure\n%s\n", g_rank, g_size, g_current_test,
                     result.file_name() ? result.file_name() : "?", result.line_number(), result.message());
        std::fflush(stderr);
        _exit(1);
    }
};

} // namespace

Job &Job::get() {
    static Job job;
    if (!g_started) {
        std::fprintf(stderr, "portico::test::Job::get() called before run_all_tests()\n");
        std::abort();
    }
    return job;
}

int Job::rank() const { return g_rank; }
int Job::size() const { return g_size; }

namespace {
// Notes a blocking call for the termination handler while it runs.
class WaitNote {
public:
    explicit WaitNote(const char *what) {
        std::snprintf(portico_test_wait_note, sizeof portico_test_wait_note, "%s", what);
    }
    ~WaitNote() { portico_test_wait_note[0] = '\0'; }
};
} // namespace

static void check_job(int rc, const char *what) {
    if (rc != PTL_OK && rc != PTL_IGNORED)
        throw std::runtime_error(std::string(what) + " failed (the launcher misbehaved)");
}

void Job::barrier() {
    WaitNote note("a job barrier");
    check_job(portico_runtime_barrier(), "portico_runtime_barrier");
}

std::vector<std::string> Job::allgather(const std::string &mine) {
    WaitNote note("a job allgather");
    return clientkit::allgather(mine);
}

int run_all_tests(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const int rc = portico_runtime_rank(&g_rank);
    if (rc != PTL_OK && rc != PTL_IGNORED) {
        std::fprintf(stderr, "cannot join the job (see the message above)\n");
        return 2;
    }
    g_launched = rc == PTL_OK;
    if (portico_runtime_size(&g_size) != rc) {
        std::fprintf(stderr, "cannot read the job's size\n");
        return 2;
    }
    g_started = true;

    struct sigaction sa {};
    sa.sa_handler = on_terminate;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);

    ::testing::TestEventListeners &listeners = ::testing::UnitTest::GetInstance()->listeners();
    // One progress report per job is enough: rank 0 keeps GoogleTest's printer, the other ranks
    // report only their failures (through the listener below). PORTICO_TEST_ALL_RANKS=1 keeps the
    // printer on every rank.
    const char *all_ranks = std::getenv("PORTICO_TEST_ALL_RANKS");
    if (g_rank != 0 && !(all_ranks && all_ranks[0] == '1'))
        delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new EndJobOnFailure);

    const int result = RUN_ALL_TESTS();
    std::fflush(stdout);
    if (g_launched) {
        // Nobody leaves while a peer still runs its last test.
        if (portico_runtime_barrier() != PTL_OK || portico_runtime_finalize() != PTL_OK) {
            std::fprintf(stderr, "[rank %d] leaving the job failed\n", g_rank);
            return 2;
        }
    }
    return result;
}

} // namespace portico::test
