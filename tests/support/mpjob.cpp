// The test job: rank, size and out-of-band collectives over the launcher's PMI-1 key/value space,
// and the GoogleTest main() shared by every multi-process test binary.
//
// Collectives: barrier() is the PMI barrier. allgather() puts one key per rank and call,
// "t.<seq>.<rank>", barriers, then reads every rank's key. PMI values cannot hold spaces, newlines
// or binary data and must not be empty, so a value is "x" followed by the hex encoding of the
// payload; a payload too long for one value is split over "t.<seq>.<rank>.<i>" and the main key
// then holds "#<count>". All ranks call the collectives in the same order, so <seq> agrees.
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

#include "bootstrap/pmi_client.hpp"

extern "C" {
char portico_test_wait_note[256] = "";
}

namespace portico::test {
namespace {

std::unique_ptr<bootstrap::PmiClient> g_pmi;
bool g_started = false;
int g_rank = 0;
int g_size = 1;
unsigned long g_seq = 0;
// Name of the running test, for the termination handler (written outside any signal handler).
char g_current_test[512] = "(no test started)";

std::string hex_encode(const std::string &in) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(in.size() * 2);
    for (unsigned char c : in) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 0xf]);
    }
    return out;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error(std::string("allgather: bad hex digit '") + c + "'");
}

std::string hex_decode(const std::string &in) {
    if (in.size() % 2 != 0) throw std::runtime_error("allgather: odd-length hex value");
    std::string out;
    out.reserve(in.size() / 2);
    for (size_t i = 0; i < in.size(); i += 2)
        out.push_back(static_cast<char>(hex_digit(in[i]) << 4 | hex_digit(in[i + 1])));
    return out;
}

std::string must_get(const std::string &key) {
    std::optional<std::string> v = g_pmi->get(key);
    if (!v) throw std::runtime_error("allgather: key " + key + " missing after the barrier");
    return *v;
}

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

void Job::barrier() {
    if (g_pmi) {
        WaitNote note("a job barrier");
        g_pmi->barrier();
    }
}

std::vector<std::string> Job::allgather(const std::string &mine) {
    if (!g_pmi) return {mine};
    const std::string prefix = "t." + std::to_string(g_seq++) + ".";
    const std::string key = prefix + std::to_string(g_rank);
    const std::string value = "x" + hex_encode(mine);
    const size_t max_len = static_cast<size_t>(g_pmi->max_value_length());
    if (value.size() <= max_len) {
        g_pmi->put(key, value);
    } else {
        const size_t chunk = max_len;
        const size_t count = (value.size() + chunk - 1) / chunk;
        for (size_t i = 0; i < count; ++i) g_pmi->put(key + "." + std::to_string(i), value.substr(i * chunk, chunk));
        g_pmi->put(key, "#" + std::to_string(count));
    }
    {
        WaitNote note("a job allgather");
        g_pmi->barrier();
    }

    std::vector<std::string> all;
    all.reserve(static_cast<size_t>(g_size));
    for (int r = 0; r < g_size; ++r) {
        const std::string rkey = prefix + std::to_string(r);
        std::string v = must_get(rkey);
        if (!v.empty() && v[0] == '#') {
            const unsigned long count = std::stoul(v.substr(1));
            v.clear();
            for (unsigned long i = 0; i < count; ++i) v += must_get(rkey + "." + std::to_string(i));
        }
        if (v.empty() || v[0] != 'x') throw std::runtime_error("allgather: malformed value under " + rkey);
        all.push_back(hex_decode(v.substr(1)));
    }
    return all;
}

int run_all_tests(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    try {
        g_pmi = bootstrap::PmiClient::from_environment();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "cannot join the job: %s\n", e.what());
        return 2;
    }
    if (g_pmi) {
        g_rank = g_pmi->rank();
        g_size = g_pmi->size();
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
    if (g_pmi) {
        try {
            g_pmi->barrier(); // nobody leaves while a peer still runs its last test
            g_pmi->finalize();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "[rank %d] leaving the job failed: %s\n", g_rank, e.what());
            return 2;
        }
    }
    return result;
}

} // namespace portico::test
