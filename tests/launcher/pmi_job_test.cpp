// SPDX-License-Identifier: BSD-3-Clause
// Multi-process test of the PMI-1 client library (portico_bootstrap) against the launcher it runs
// under (portico-run, with PMI_FD or with PMI_PORT/PMI_ID over TCP for remote ranks; the program
// also runs under MPICH's mpiexec.hydra, where the portico-run-specific checks are skipped, and,
// in builds with PMIx support, under PMIx launchers such as Open MPI's mpirun, where the client is
// the PMIx one and the checks specific to the PMI-1 wire protocol are skipped). Every
// rank runs the same checks; any failure exits non-zero, which makes portico-run terminate the job
// and report the rank.
//
// Optional expectations (set by the tests that place ranks on several "hosts"):
//   PMI_JOB_TEST_LOCAL=lr:ls,lr:ls,...  rank r's PORTICO_LOCAL_RANK:PORTICO_LOCAL_SIZE
//   PMI_JOB_TEST_MAPPING=(vector,...)   the job's PMI_process_mapping
#include "bootstrap/pmi_client.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>

using portico::bootstrap::PmiClient;
using portico::bootstrap::PmiError;

namespace {

int g_rank = -1;

[[noreturn]] void fail(const char *file, int line, const std::string &what) {
    std::fprintf(stderr, "pmi_job_test rank %d: %s:%d: FAILED: %s\n", g_rank, file, line, what.c_str());
    std::fflush(stderr);
    std::_Exit(1);
}

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) fail(__FILE__, __LINE__, #cond);                                                                  \
    } while (0)
#define CHECK_EQ(a, b)                                                                                                 \
    do {                                                                                                               \
        const auto &va_ = (a);                                                                                         \
        const auto &vb_ = (b);                                                                                         \
        if (!(va_ == vb_)) fail(__FILE__, __LINE__, std::string(#a " == " #b));                                        \
    } while (0)

template <class F> void expect_pmi_error(F &&f, const char *what) {
    try {
        f();
    } catch (const PmiError &e) {
        if (std::strlen(e.what()) == 0) fail(__FILE__, __LINE__, std::string("empty PmiError message for ") + what);
        return;
    }
    fail(__FILE__, __LINE__, std::string("no PmiError thrown for ") + what);
}

bool is_hex(const std::string &s, std::size_t len) {
    if (s.size() != len) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
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
        std::fprintf(stderr, "pmi_job_test: not started by a PMI-1 launcher (no PMI_FD or PMI_PORT)\n");
        return 1;
    }
    const int rank = pmi->rank(), size = pmi->size();
    g_rank = rank;
    const bool pmix = std::string(pmi->protocol()) == "PMIx";
    // PMI-1 over TCP (PMI_PORT/PMI_ID) rather than an inherited socket (PMI_FD).
    const bool over_tcp = !pmix && std::getenv("PMI_FD") == nullptr;
    if (pmix) {
        // Chosen only without PMI_FD/PMI_PORT, under a PMIx server.
        CHECK(PmiClient::pmix_supported());
        CHECK(std::getenv("PMI_FD") == nullptr && std::getenv("PMI_PORT") == nullptr);
        CHECK_EQ(pmi->kvsname(), env_or("PMIX_NAMESPACE", pmi->kvsname().c_str()));
        if (std::getenv("PMIX_RANK") != nullptr) CHECK_EQ(std::to_string(rank), env_or("PMIX_RANK"));
        if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) // Open MPI's mpirun
            CHECK_EQ(std::to_string(size), env_or("OMPI_COMM_WORLD_SIZE"));
    } else {
        CHECK_EQ(std::string(pmi->protocol()), std::string("PMI-1"));
        // hydra -pmi-port sets only PMI_PORT and PMI_ID (the rank comes from the handshake).
        if (std::getenv("PMI_RANK") != nullptr || !over_tcp) CHECK_EQ(std::to_string(rank), env_or("PMI_RANK"));
        if (std::getenv("PMI_SIZE") != nullptr || !over_tcp) CHECK_EQ(std::to_string(size), env_or("PMI_SIZE"));
        // PMI_ID over TCP: hydra's is the rank; portico-run's (it sets PORTICO_JOB_ID) a token.
        if (over_tcp && std::getenv("PORTICO_JOB_ID") == nullptr) CHECK_EQ(std::to_string(rank), env_or("PMI_ID"));
        if (over_tcp && std::getenv("PORTICO_JOB_ID") != nullptr)
            CHECK(std::strtol(env_or("PMI_ID").c_str(), nullptr, 10) > 0);
    }
    CHECK(rank >= 0 && rank < size);
    CHECK(!pmi->kvsname().empty());
    CHECK(pmi->max_value_length() >= 256);

    // The connection is a socket that has not hung up (the launcher is alive). A PMIx client has
    // no connection of its own to watch.
    if (pmix) {
        CHECK_EQ(pmi->fd(), -1);
        CHECK(!pmi->finalizing());
    } else {
        CHECK(pmi->fd() >= 0);
        pollfd p{pmi->fd(), POLLRDHUP, 0};
        int n;
        while ((n = ::poll(&p, 1, 0)) < 0 && errno == EINTR) {
        }
        CHECK_EQ(n, 0);
    }

    const bool under_portico = std::getenv("PORTICO_JOB_ID") != nullptr;
    if (under_portico) {
        CHECK_EQ(pmi->kvsname(), env_or("PMI_JOBID"));
        // portico-run takes long values from clients that read its portico_vallen_max (a buffer
        // size, NUL included) and reads whole request lines.
        CHECK_EQ(pmi->max_value_length(), 192 * 1024 - 1);
        CHECK(is_hex(env_or("PORTICO_JOB_ID"), 16));
        // Local ranks get the secret in their environment, remote ones only from the
        // key-value space (never on a command line); both see the same value there.
        const auto published = pmi->get("portico.secret");
        CHECK(published.has_value());
        CHECK(is_hex(*published, 32));
        if (!env_or("PORTICO_JOB_SECRET").empty()) CHECK_EQ(env_or("PORTICO_JOB_SECRET"), *published);
        const std::string lr = env_or("PORTICO_LOCAL_RANK"), ls = env_or("PORTICO_LOCAL_SIZE");
        const std::string expect = env_or("PMI_JOB_TEST_LOCAL");
        if (!expect.empty()) {
            // The rank-th comma-separated item.
            std::size_t b = 0;
            for (int r = 0; r < rank && b != std::string::npos; ++r) {
                b = expect.find(',', b);
                b = b == std::string::npos ? b : b + 1;
            }
            CHECK(b != std::string::npos);
            CHECK_EQ(expect.substr(b, expect.find(',', b) - b), lr + ":" + ls);
        } else if (!over_tcp) {
            CHECK_EQ(lr, std::to_string(rank)); // all ranks on this machine
            CHECK_EQ(ls, std::to_string(size));
        }
        CHECK(std::atoi(lr.c_str()) >= 0 && std::atoi(lr.c_str()) < std::atoi(ls.c_str()));
        CHECK(std::atoi(ls.c_str()) <= size);
        CHECK_EQ(env_or("MPI_LOCALRANKID"), lr);
        CHECK_EQ(env_or("MPI_LOCALNRANKS"), ls);
        if (over_tcp) CHECK(std::getenv("PMI_FD") == nullptr);
    }
    if (const char *mapping = std::getenv("PMI_JOB_TEST_MAPPING"); mapping != nullptr) {
        auto m = pmi->get("PMI_process_mapping");
        CHECK(m.has_value());
        CHECK_EQ(*m, std::string(mapping));
    }

    // A second client of the same process shares the connection (a TCP launcher accepts one
    // connection per rank); destroying it leaves the first one working.
    {
        auto second = PmiClient::from_environment();
        CHECK(second != nullptr);
        CHECK_EQ(second->rank(), rank);
        CHECK_EQ(second->size(), size);
        CHECK_EQ(second->fd(), pmi->fd());
        CHECK_EQ(second->kvsname(), pmi->kvsname());
        second->put("second." + std::to_string(rank), "s" + std::to_string(rank));
    }

    // Argument validation happens before anything is sent.
    expect_pmi_error([&] { pmi->put("bad key", "v"); }, "a key with a space");
    expect_pmi_error([&] { pmi->put("", "v"); }, "an empty key");
    expect_pmi_error([&] { pmi->put(std::string(64, 'k'), "v"); }, "a key of keylen_max characters");
    pmi->put(std::string(63, 'k'), "longest-key"); // keylen_max - 1 is fine
    expect_pmi_error([&] { pmi->put("k", "two words"); }, "a value with a space");
    expect_pmi_error([&] { pmi->put("k", "line\nbreak"); }, "a value with a newline");
    expect_pmi_error([&] { pmi->put("k", std::string("nul\0byte", 8)); }, "a value with a NUL");
    expect_pmi_error([&] { pmi->put("k", ""); }, "an empty value");
    expect_pmi_error([&] { pmi->put("k", std::string(pmi->max_value_length() + 1, 'v')); },
                     "a value longer than max_value_length()");
    expect_pmi_error([&] { pmi->get("bad\nkey"); }, "a get with a newline in the key");

    // Identity of the job, as every rank sees it.
    const std::string me = std::to_string(rank);
    pmi->put("ident." + me, env_or("PORTICO_JOB_ID", "none") + ":" + pmi->get("portico.secret").value_or("none") + ":" +
                                pmi->kvsname());
    // A value of the maximum length, and one with every printable non-space character.
    std::string big(static_cast<std::size_t>(pmi->max_value_length()), 'a');
    for (std::size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>('a' + (i + static_cast<std::size_t>(rank)) % 26);
    pmi->put("big." + me, big);
    std::string punct;
    for (char c = '!'; c <= '~'; ++c) punct += c;
    pmi->put("punct." + me, punct + me);
    // Backslashes travel escaped and come back as they were (GASNet's pmi-spawner encodes its data
    // in Ascii85, which has them), also doubled and last.
    const std::string backslashes = "\\" + me + "\\\\x\\";
    pmi->put("backslash." + me, backslashes);
    pmi->put("tab." + me, "a\tb" + me); // only spaces separate tokens
    // Puts become visible at the next barrier, not before (also for the putting rank, under
    // PMI-1; PMIx shows a process its own puts at once).
    if (!pmix) CHECK(!pmi->get("ident." + me).has_value());
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
        CHECK(pmi->get("backslash." + rs) == "\\" + rs + "\\\\x\\");
        CHECK(pmi->get("tab." + rs) == "a\tb" + rs);
        CHECK(pmi->get("second." + rs) == "s" + rs);
    }
    CHECK(!pmi->get("no.such.key").has_value());

    // Repeated barriers: round k's values are visible after barrier k, and (portico-run) round
    // k+1's are not visible before barrier k+1 (this rank has not entered it, so it cannot have
    // completed). hydra with several proxies (hosts) publishes a proxy's puts as soon as all of
    // ITS ranks entered the barrier, so other hosts may see them early: not checked there.
    const int rounds = 20;
    for (int k = 0; k < rounds; ++k) {
        const std::string key = "round." + std::to_string(k) + ".";
        pmi->put(key + me, std::to_string(k * 1000 + rank));
        pmi->barrier();
        for (int r = 0; r < size; ++r) {
            auto v = pmi->get(key + std::to_string(r));
            CHECK(v.has_value());
            CHECK_EQ(*v, std::to_string(k * 1000 + r));
            if (under_portico) CHECK(!pmi->get("round." + std::to_string(k + 1) + "." + std::to_string(r)).has_value());
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
                    if (!v || *v != std::to_string(3000 + r)) ++bad;
                }
            });
        for (std::thread &th : threads) th.join();
        CHECK_EQ(bad.load(), 0);
    }

    // A last barrier so that nobody finalizes while others still read, then finalize twice.
    pmi->barrier();
    pmi->finalize();
    pmi->finalize();
    CHECK_EQ(pmi->fd(), -1);
    CHECK(pmi->finalizing());
    expect_pmi_error([&] { pmi->put("after", "finalize"); }, "put after finalize");
    expect_pmi_error([&] { pmi->barrier(); }, "barrier after finalize");
    if (rank == 0) std::printf("pmi_job_test: %d ranks OK\n", size);
    return 0;
}
