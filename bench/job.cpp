// SPDX-License-Identifier: BSD-3-Clause
#include "job.hpp"

#include <cstdio>
#include <cstring>
#include <portals4.h>
#include <portico_runtime.h>
#include <unistd.h>

#include "bench.hpp"
#include "clientkit.hpp"

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

std::vector<std::string> Job::allgather(const std::string &mine) { return clientkit::allgather(mine); }

void Job::abort(int code, const std::string &message) {
    std::fflush(stdout);
    std::fflush(stderr);
    portico_runtime_abort(code, message.c_str());
}

void Job::finalize() { check(portico_runtime_finalize(), "portico_runtime_finalize"); }

} // namespace portico::bench
