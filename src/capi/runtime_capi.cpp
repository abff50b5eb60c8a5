// SPDX-License-Identifier: BSD-3-Clause
// The C ABI of portico_runtime.h (the job service, bootstrap/job.hpp) and portico_ext.h.
#include <portals4.h>
#include <portico_ext.h>
#include <portico_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>
#include <unistd.h>

#include "bootstrap/job.hpp"
#include "common/log.hpp"
#include "common/shared_segment.hpp"
#include "engine/engine.hpp"

using portico::bootstrap::Job;

#define PORTICO_API extern "C" __attribute__((visibility("default")))

namespace {

// Runs f on the process's job, mapping the job service's outcomes to Portals return codes.
template <class F> int on_job(const char *what, F &&f) {
    Job *job = Job::process();
    if (!job) return PTL_FAIL;
    if (!portico::engine::Engine::instance().initialized()) job->claim_for_program();
    try {
        f(*job);
    } catch (const std::exception &e) {
        log_error("%s: %s", what, e.what());
        return PTL_FAIL;
    }
    return job->launched() ? PTL_OK : PTL_IGNORED;
}

} // namespace

PORTICO_API int portico_runtime_rank(int *rank) {
    if (!rank) return PTL_ARG_INVALID;
    return on_job("portico_runtime_rank", [&](Job &j) { *rank = j.rank(); });
}
PORTICO_API int portico_runtime_size(int *size) {
    if (!size) return PTL_ARG_INVALID;
    return on_job("portico_runtime_size", [&](Job &j) { *size = j.size(); });
}
PORTICO_API int portico_runtime_local(int *local_rank, int *local_size) {
    if (!local_rank || !local_size) return PTL_ARG_INVALID;
    return on_job("portico_runtime_local", [&](Job &j) {
        const std::vector<int> &local = j.local_ranks();
        int index = 0;
        while (local[static_cast<size_t>(index)] != j.rank()) ++index;
        *local_rank = index;
        *local_size = static_cast<int>(local.size());
    });
}
PORTICO_API int portico_set_job_secret(const char *secret) {
    if (!secret || !*secret) return PTL_ARG_INVALID;
    Job *job = Job::process();
    if (!job) return PTL_FAIL;
    return job->propose_secret(secret) ? PTL_OK : PTL_IGNORED;
}

PORTICO_API int portico_runtime_barrier(void) {
    return on_job("portico_runtime_barrier", [](Job &j) { j.barrier(); });
}
PORTICO_API int portico_runtime_allgather(const void *mine, size_t len, void *all) {
    if (len > 0 && (!mine || !all)) return PTL_ARG_INVALID;
    return on_job("portico_runtime_allgather", [&](Job &j) { j.allgather(mine, len, all); });
}
PORTICO_API int portico_runtime_allgatherv(const void *mine, size_t len, size_t *lens, void **all) {
    if ((len > 0 && !mine) || !lens || !all) return PTL_ARG_INVALID;
    *all = nullptr;
    return on_job("portico_runtime_allgatherv", [&](Job &j) {
        const std::vector<std::string> parts =
            j.allgather(len ? std::string(static_cast<const char *>(mine), len) : "");
        size_t total = 0;
        for (const std::string &part : parts) total += part.size();
        // At least one byte: a job whose contributions are all empty still gets a buffer to free.
        char *out = static_cast<char *>(std::malloc(std::max<size_t>(total, 1)));
        if (!out) throw std::bad_alloc();
        size_t at = 0;
        for (size_t r = 0; r < parts.size(); ++r) {
            lens[r] = parts[r].size();
            parts[r].copy(out + at, parts[r].size());
            at += parts[r].size();
        }
        *all = out;
    });
}
PORTICO_API int portico_runtime_broadcast(void *data, size_t len, int root) {
    if (len > 0 && !data) return PTL_ARG_INVALID;
    Job *job = Job::process();
    if (job && (root < 0 || root >= job->size())) return PTL_ARG_INVALID;
    return on_job("portico_runtime_broadcast", [&](Job &j) { j.broadcast(data, len, root); });
}
PORTICO_API int portico_runtime_finalize(void) {
    return on_job("portico_runtime_finalize", [](Job &j) { j.finalize(); });
}
PORTICO_API void portico_runtime_abort(int code, const char *message) {
    if (Job *job = Job::process()) job->abort(code, message ? message : "");
    std::_Exit(code);
}

PORTICO_API void portico_runtime_exiting(int code) { Job::exiting(code); }

PORTICO_API void portico_runtime_exit(int code) { Job::exit_process(code); }

// portico_ext.h
PORTICO_API int portico_set_wait_spin_us(unsigned us) { return portico::engine::Tunables::set_wait_spin_us(us); }
PORTICO_API int portico_set_transport(const char *transports) {
    return portico::engine::Tunables::set_transport(transports);
}

static_assert(sizeof(portico_segment_t) == sizeof(portico::SharedSegmentId), "the segment id is plain data");

namespace {
portico::SharedSegmentId segment_id(const portico_segment_t &s) { return std::bit_cast<portico::SharedSegmentId>(s); }
} // namespace

PORTICO_API int portico_segment_create(size_t length, void *hint, void **addr, portico_segment_t *segment) {
    if (!addr || !segment || length == 0 || length % static_cast<size_t>(::sysconf(_SC_PAGESIZE)) != 0)
        return PTL_ARG_INVALID;
    portico::SharedSegmentId id;
    std::string error;
    void *p = portico::shared_segment_create(length, hint, &id, &error);
    if (!p) {
        log_debug("portico_segment_create(%zu): %s", length, error.c_str());
        return PTL_NO_SPACE;
    }
    *segment = std::bit_cast<portico_segment_t>(id);
    *addr = p;
    return PTL_OK;
}

PORTICO_API int portico_segment_attach(const portico_segment_t *segment, void **addr) {
    if (!segment || !addr) return PTL_ARG_INVALID;
    std::string error;
    void *p = portico::shared_segment_attach(segment_id(*segment), &error);
    if (!p) {
        log_debug("portico_segment_attach: %s", error.c_str());
        return PTL_FAIL;
    }
    *addr = p;
    return PTL_OK;
}

PORTICO_API int portico_segment_detach(void *addr, const portico_segment_t *segment) {
    if (!addr || !segment) return PTL_ARG_INVALID;
    return portico::shared_segment_detach(addr, segment_id(*segment)) ? PTL_OK : PTL_ARG_INVALID;
}

PORTICO_API int portico_segment_destroy(void *addr, const portico_segment_t *segment) {
    if (!addr || !segment) return PTL_ARG_INVALID;
    return portico::shared_segment_destroy(addr, segment_id(*segment)) ? PTL_OK : PTL_ARG_INVALID;
}
