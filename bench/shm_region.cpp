// SPDX-License-Identifier: BSD-3-Clause
#include "shm_region.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.hpp"
#include "job.hpp"
#include "timing.hpp"

namespace portico::bench {

namespace {

std::string sys_error(const std::string &what) { return what + ": " + std::strerror(errno); }

std::string random_hex() {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r))
        r = (static_cast<uint64_t>(getpid()) << 32) ^ now_ns(); // still unique enough with O_EXCL
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
    return buf;
}

void *map_region(int fd, size_t bytes) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : p;
}

} // namespace

SharedRegion::SharedRegion(Job &job, const std::string &tag, size_t bytes, int participants) : bytes_(bytes) {
    if (participants > job.size())
        throw Error("a shared-memory baseline needs " + std::to_string(participants) + " processes");
    const int rank = job.rank();
    std::string error;
    if (rank == 0) {
        name_ = "/portico-bench-" + tag + "-" + job.id() + "-" + random_hex();
        const int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            error = sys_error("shm_open(" + name_ + ")");
        } else {
            unlinked_ = false;
            if (ftruncate(fd, static_cast<off_t>(bytes)) != 0)
                error = sys_error("ftruncate(" + name_ + ")");
            else if (!(mem_ = map_region(fd, bytes)))
                error = sys_error("mmap(" + name_ + ")");
            close(fd);
        }
    }
    // Rank 0 publishes the name (or its failure); the other participants map it.
    const auto names = job.allgather(error.empty() ? "n" + name_ : std::string("error"));
    if (!error.empty()) throw Error(error);
    if (names[0] == "error") throw Error("rank 0 could not create the shared-memory region");
    if (rank > 0 && rank < participants) {
        name_ = names[0].substr(1);
        const int fd = shm_open(name_.c_str(), O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) {
            error = sys_error("shm_open(" + name_ + ")");
        } else {
            if (!(mem_ = map_region(fd, bytes))) error = sys_error("mmap(" + name_ + ")");
            close(fd);
        }
    }
    const auto status = job.allgather(error.empty() ? "ok" : "error");
    if (rank == 0 && !unlinked_) {
        shm_unlink(name_.c_str());
        unlinked_ = true;
    }
    if (!error.empty()) throw Error(error);
    for (size_t r = 0; r < status.size(); ++r)
        if (status[r] != "ok") throw Error("rank " + std::to_string(r) + " could not map the shared-memory region");
}

SharedRegion::~SharedRegion() {
    if (!unlinked_) shm_unlink(name_.c_str());
    if (mem_) munmap(mem_, bytes_);
}

} // namespace portico::bench
