#include "shm_pingpong.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.hpp"
#include "job.hpp"
#include "timing.hpp"

namespace portico::bench {

struct ShmPingPong::Region {
    alignas(128) std::atomic<uint64_t> ping; // written by rank 0
    alignas(128) std::atomic<uint64_t> pong; // written by rank 1
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(ShmPingPong::Region) == 256);

namespace {

constexpr uint64_t kPeerTimeoutNs = 60ull * 1000000000ull;

std::string sys_error(const std::string &what) { return what + ": " + std::strerror(errno); }

std::string random_hex() {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r))
        r = (static_cast<uint64_t>(getpid()) << 32) ^ now_ns(); // still unique enough with O_EXCL
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
    return buf;
}

void *map_region(int fd) {
    void *p = mmap(nullptr, sizeof(ShmPingPong::Region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : p;
}

// Spins until `flag` holds `want`; gives up (throws) if the peer stays silent for a minute.
void spin_until(const std::atomic<uint64_t> &flag, uint64_t want) {
    unsigned spins = 0;
    uint64_t since = 0;
    while (flag.load(std::memory_order_acquire) != want) {
        cpu_pause();
        if ((++spins & 0xffff) == 0) {
            const uint64_t t = now_ns();
            if (since == 0) since = t;
            else if (t - since > kPeerTimeoutNs) throw Error("baseline ping-pong: the peer did not answer for 60 s");
        }
    }
}

} // namespace

ShmPingPong::ShmPingPong(Job &job) : rank_(job.rank()) {
    if (job.size() != 2) throw Error("the shared-memory baseline needs exactly 2 processes");
    int fd = -1;
    std::string error;
    if (rank_ == 0) {
        name_ = "/portico-bench-" + job.id() + "-" + random_hex();
        fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            error = sys_error("shm_open(" + name_ + ")");
        } else {
            unlinked_ = false;
            if (ftruncate(fd, sizeof(Region)) != 0) error = sys_error("ftruncate(" + name_ + ")");
            else if (!(region_ = static_cast<Region *>(map_region(fd)))) error = sys_error("mmap(" + name_ + ")");
            else new (region_) Region{};
            close(fd);
        }
    }
    // Rank 0 publishes the name (or its failure); rank 1 maps it and unlinks it at once.
    const auto names = job.allgather(error.empty() ? "n" + name_ : std::string("error"));
    if (!error.empty()) throw Error(error);
    if (names[0] == "error") throw Error("rank 0 could not create the shared-memory region");
    if (rank_ == 1) {
        name_ = names[0].substr(1);
        fd = shm_open(name_.c_str(), O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) {
            error = sys_error("shm_open(" + name_ + ")");
        } else {
            if (!(region_ = static_cast<Region *>(map_region(fd)))) error = sys_error("mmap(" + name_ + ")");
            close(fd);
        }
        shm_unlink(name_.c_str()); // ENOENT (rank 0 was first) is fine
    }
    const auto status = job.allgather(error.empty() ? "ok" : "error");
    if (rank_ == 0 && !unlinked_) {
        shm_unlink(name_.c_str());
        unlinked_ = true;
    }
    if (!error.empty()) throw Error(error);
    for (const std::string &s : status)
        if (s != "ok") throw Error("rank 1 could not map the shared-memory region");
}

ShmPingPong::~ShmPingPong() {
    if (!unlinked_) shm_unlink(name_.c_str());
    if (region_) munmap(region_, sizeof(Region));
}

double ShmPingPong::run(uint64_t iters) {
    const uint64_t base = seq_;
    seq_ += iters;
    if (rank_ == 0) {
        const uint64_t t0 = now_ns();
        for (uint64_t i = 1; i <= iters; ++i) {
            region_->ping.store(base + i, std::memory_order_release);
            spin_until(region_->pong, base + i);
        }
        const uint64_t t1 = now_ns();
        return iters ? static_cast<double>(t1 - t0) / 1000.0 / static_cast<double>(2 * iters) : 0;
    }
    for (uint64_t i = 1; i <= iters; ++i) {
        spin_until(region_->ping, base + i);
        region_->pong.store(base + i, std::memory_order_release);
    }
    return 0;
}

} // namespace portico::bench
