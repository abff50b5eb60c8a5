// Multi-process test of the PMI-1 client library (portico_bootstrap) against the launcher it runs
// under (portico-run; the program also runs under MPICH's mpiexec.hydra, where the
// portico-run-specific checks are skipped). Every rank runs the same checks; any failure exits
// non-zero, which makes portico-run terminate the job and report the rank.
#include "bootstrap/pmi_client.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using portico::bootstrap::PmiClient;
using portico::bootstrap::PmiError;

namespace {

int g_rank = -1;

[[noreturn]] void fail(const char *file, int line, const std::string &what) {
    std::fprintf(stderr, "pmi_job_test rank %d: %s:%d: FAILED: %s\n", g_rank, file, line,
                 what.c_str());
    std::fflush(stderr);
    std::_Exit(1);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__FILE__, __LINE__, #cond);                                                       \
    } while (0)
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        auto va_ = (a);                                                                            \
        auto vb_ = (b);                                                                            \
        if (!(va_ == vb_))                                                                         \
            fail(__FILE__, __LINE__, std::string(#a " == " #b));                                   \
    } while (0)

template <class F> void expect_pmi_error(F &&f, const char *what) {
    try {
        f();
    } catch (const PmiError &e) {
        if (std::strlen(e.what()) == 0)
            fail(__FILE__, __LINE__, std::string("empty PmiError message for ") + what);
        return;
    }
    fail(__FILE__, __LINE__, std::string("no PmiError thrown for ") + what);
}

bool is_hex(const std::string &s, std::size_t len) {
    if (s.size() != len)
        return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

std::string env_or(const char *name, const char *dflt = "") {
    const char *v = std::getenv(name);
    return v != nullptr ? v : dflt;
}

} // namespace

int main() {
    std::unique_ptr<PmiClient> pmi;
    try {
        pmi = PmiClient::from_environment();
    } catch (const PmiError &e) {
        std::fprintf(stderr, "pmi_job_test: %s\n", e.what());
        return 1;
    }
    if (!pmi) {
        std::fprintf(stderr, "pmi_job_test: not started by a PMI-1 launcher (no PMI_FD)\n");
        return 1;
    }
    const int rank = pmi->rank(), size = pmi->size();
    g_rank = rank;
    CHECK_EQ(std::to_string(rank), env_or("PMI_RANK"));
    CHECK_EQ(std::to_string(size), env_or("PMI_SIZE"));
    CHECK(!pmi->kvsname().empty());
    CHECK(pmi->max_value_length() >= 256);

    const bool under_portico = std::getenv("PORTICO_JOB_ID") != nullptr;
    if (under_portico) {
        CHECK_EQ(pmi->kvsname(), env_or("PMI_JOBID"));
        CHECK_EQ(pmi->max_value_length(), 1023); // vallen_max=1024, a buffer size
        CHECK(is_hex(env_or("PORTICO_JOB_ID"), 16));
        CHECK(is_hex(env_or("PORTICO_JOB_SECRET"), 32));
        CHECK_EQ(env_or("PORTICO_LOCAL_RANK"), std::to_string(rank));
        CHECK_EQ(env_or("PORTICO_LOCAL_SIZE"), std::to_string(size));
        CHECK_EQ(env_or("MPI_LOCALRANKID"), std::to_string(rank));
        CHECK_EQ(env_or("MPI_LOCALNRANKS"), std::to_string(size));
    }

    // Argument validation happens before anything is sent.
    expect_pmi_error([&] { pmi->put("bad key", "v"); }, "a key with a space");
    expect_pmi_error([&] { pmi->put("", "v"); }, "an empty key");
    expect_pmi_error([&] { pmi->put(std::string(64, 'k'), "v"); }, "a key of keylen_max characters");
    pmi->put(std::string(63, 'k'), "longest-key"); // keylen_max - 1 is fine
    expect_pmi_error([&] { pmi->put("k", "two words"); }, "a value with a space");
    expect_pmi_error([&] { pmi->put("k", "line\nbreak"); }, "a value with a newline");
    expect_pmi_error([&] { pmi->put("k", "back\\slash"); }, "a value with a backslash");
    expect_pmi_error([&] { pmi->put("k", std::string("nul\0byte", 8)); }, "a value with a NUL");
    expect_pmi_error([&] { pmi->put("k", ""); }, "an empty value");
    expect_pmi_error([&] { pmi->put("k", std::string(pmi->max_value_length() + 1, 'v')); },
                     "a value longer than max_value_length()");
    expect_pmi_error([&] { pmi->get("bad\nkey"); }, "a get with a newline in the key");

    // Identity of the job, as every rank sees it.
    const std::string me = std::to_string(rank);
    pmi->put("ident." + me, env_or("PORTICO_JOB_ID", "none") + ":" +
                                env_or("PORTICO_JOB_SECRET", "none") + ":" + pmi->kvsname());
    // A value of the maximum length, and one with every printable non-space character.
    std::string big(static_cast<std::size_t>(pmi->max_value_length()), 'a');
    for (std::size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>('a' + (i + static_cast<std::size_t>(rank)) % 26);
    pmi->put("big." + me, big);
    std::string punct;
    for (char c = '!'; c <= '~'; ++c)
        if (c != '\\')
            punct += c;
    pmi->put("punct." + me, punct + me);
    pmi->put("tab." + me, "a\tb" + me); // only spaces separate tokens
    // Puts become visible at the next barrier, not before (also for the putting rank).
    CHECK(!pmi->get("ident." + me).has_value());
    CHECK(!pmi->get("no.such.key").has_value());

    pmi->barrier();

    const std::string my_ident = *pmi->get("ident." + me);
    for (int r = 0; r < size; ++r) {
        const std::string rs = std::to_string(r);
        auto ident = pmi->get("ident." + rs);
        CHECK(ident.has_value());
        CHECK_EQ(*ident, my_ident); // same job id, secret and kvsname everywhere
        std::string expect(static_cast<std::size_t>(pmi->max_value_length()), 'a');
        for (std::size_t i = 0; i < expect.size(); ++i)
            expect[i] = static_cast<char>('a' + (i + static_cast<std::size_t>(r)) % 26);
        CHECK(pmi->get("big." + rs) == expect);
        CHECK(pmi->get("punct." + rs) == punct + rs);
        CHECK(pmi->get("tab." + rs) == "a\tb" + rs);
    }
    CHECK(!pmi->get("no.such.key").has_value());

    // Repeated barriers: round k's values are visible after barrier k, and round k+1's are not
    // visible before barrier k+1 (this rank has not entered it, so it cannot have completed).
    const int rounds = 20;
    for (int k = 0; k < rounds; ++k) {
        const std::string key = "round." + std::to_string(k) + ".";
        pmi->put(key + me, std::to_string(k * 1000 + rank));
        pmi->barrier();
        for (int r = 0; r < size; ++r) {
            auto v = pmi->get(key + std::to_string(r));
            CHECK(v.has_value());
            CHECK_EQ(*v, std::to_string(k * 1000 + r));
            CHECK(!pmi->get("round." + std::to_string(k + 1) + "." + std::to_string(r)).has_value());
        }
    }

    // Concurrent use from several threads (one request/response at a time on the socket).
    {
        std::atomic<int> bad{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < 50; ++i) {
                    int r = (rank + t + i) % size;
                    auto v = pmi->get("round.3." + std::to_string(r));
                    if (!v || *v != std::to_string(3000 + r))
                        ++bad;
                }
            });
        for (std::thread &th : threads)
            th.join();
        CHECK_EQ(bad.load(), 0);
    }

    // A last barrier so that nobody finalizes while others still read, then finalize twice.
    pmi->barrier();
    pmi->finalize();
    pmi->finalize();
    expect_pmi_error([&] { pmi->put("after", "finalize"); }, "put after finalize");
    expect_pmi_error([&] { pmi->barrier(); }, "barrier after finalize");
    if (rank == 0)
        std::printf("pmi_job_test: %d ranks OK\n", size);
    return 0;
}
