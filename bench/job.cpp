#include "job.hpp"

#include <cstdio>
#include <cstring>
#include <portals4.h>
#include <portico_runtime.h>
#include <unistd.h>

#include "bench.hpp"

namespace portico::bench {

namespace {
void check(int rc, const char *what) {
    if (rc != PTL_OK && rc != PTL_IGNORED) throw Error(std::string(what) + " failed (the launcher misbehaved)");
}
} // namespace

Job::Job() {
    const int rc = portico_runtime_rank(&rank_);
    if (rc != PTL_OK && rc != PTL_IGNORED) throw Error("cannot join the job (see the message above)");
    launched_ = rc == PTL_OK;
    check(portico_runtime_size(&size_), "portico_runtime_size");
    // Rank 0 names the job; the name must differ between jobs that run at the same time.
    char name[32] = {};
    if (rank_ == 0) std::snprintf(name, sizeof name, "pid%d", static_cast<int>(getpid()));
    check(portico_runtime_broadcast(name, sizeof name, 0), "portico_runtime_broadcast");
    name[sizeof name - 1] = '\0';
    id_ = name;
}

void Job::barrier() { check(portico_runtime_barrier(), "portico_runtime_barrier"); }

std::vector<std::string> Job::allgather(const std::string &mine) {
    // Two fixed-size rounds: the lengths, then every value padded to the longest.
    const uint64_t len = mine.size();
    std::vector<uint64_t> lens(static_cast<size_t>(size_));
    check(portico_runtime_allgather(&len, sizeof len, lens.data()), "portico_runtime_allgather");
    uint64_t longest = 0;
    for (uint64_t l : lens) longest = std::max(longest, l);
    std::string padded = mine;
    padded.resize(longest);
    std::string all(longest * static_cast<size_t>(size_), '\0');
    check(portico_runtime_allgather(padded.data(), longest, all.data()), "portico_runtime_allgather");
    std::vector<std::string> out;
    for (size_t r = 0; r < lens.size(); ++r) out.push_back(all.substr(r * longest, lens[r]));
    return out;
}

void Job::abort(int code, const std::string &message) {
    std::fflush(stdout);
    std::fflush(stderr);
    portico_runtime_abort(code, message.c_str());
}

void Job::finalize() { check(portico_runtime_finalize(), "portico_runtime_finalize"); }

} // namespace portico::bench
