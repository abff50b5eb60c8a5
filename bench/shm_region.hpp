// SPDX-License-Identifier: BSD-3-Clause
// A shared-memory region mapped by some ranks of the job, for the raw physical baselines.
//
// Rank 0 creates it with shm_open("/portico-bench-<tag>-<job>-<random>", O_CREAT|O_EXCL, 0600),
// publishes the name over PMI, the other participating ranks map it, and the name is unlinked as
// soon as every participant has mapped it, so nothing is left behind (rank 0's destructor unlinks
// too, on errors; ENOENT is ignored). An anonymous MAP_SHARED mapping would not do: the launcher
// fork/execs the ranks. Ranks that do not participate still take part in the collective calls.
#pragma once

#include <cstddef>
#include <string>

namespace portico::bench {

class Job;

class SharedRegion {
public:
    // Collective over the whole job. Ranks 0..participants-1 map `bytes` (zero-filled); the
    // others get data() == nullptr.
    SharedRegion(Job &job, const std::string &tag, size_t bytes, int participants);
    ~SharedRegion();
    SharedRegion(const SharedRegion &) = delete;
    SharedRegion &operator=(const SharedRegion &) = delete;

    void *data() const { return mem_; }
    size_t size() const { return bytes_; }

private:
    void *mem_ = nullptr;
    size_t bytes_;
    std::string name_;
    bool unlinked_ = true;
};

} // namespace portico::bench
