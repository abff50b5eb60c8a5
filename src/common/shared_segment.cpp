// SPDX-License-Identifier: BSD-3-Clause
#include "common/shared_segment.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace portico {

namespace {
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_SEAL;
constexpr size_t kMaxKept = 4096;

std::string errno_text(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

using Key = std::tuple<int32_t, int32_t, uint64_t, uint64_t>; // pid, fd, inode, boot
Key key_of(const SharedSegmentId &id) { return {id.pid, id.fd, id.inode, id.boot}; }

// What this process created and attached, so that destroy and detach refuse what is not theirs,
// and the engine finds a segment by address (initiator) or by id (target) in one lookup.
struct Mappings {
    std::mutex mutex;
    std::map<void *, SharedSegmentId> created, attached;
    struct Mapped {
        char *addr;
        uint64_t length;
    };
    std::map<Key, Mapped> created_by_id;
    // The engine's own mappings of peers' segments; never unmapped.
    std::map<Key, Mapped> kept;
    // created.size() + attached.size(): with none, the engine's per-message question needs no lock.
    std::atomic<size_t> live{0};
};
Mappings &mappings() {
    static auto *m = new Mappings; // never destroyed: segments may be released from exit handlers
    return *m;
}

bool same(const SharedSegmentId &a, const SharedSegmentId &b) {
    return a.pid == b.pid && a.fd == b.fd && a.inode == b.inode && a.length == b.length && a.boot == b.boot;
}

// The first 64 bits of this boot's id (a random UUID the kernel draws at boot); 0 if unknown.
uint64_t boot_id() {
    static const uint64_t id = [] {
        char text[64] = {};
        const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return uint64_t{0};
        const ssize_t n = ::read(fd, text, sizeof text - 1);
        ::close(fd);
        uint64_t v = 0;
        int digits = 0;
        for (ssize_t i = 0; i < n && digits < 16; ++i) {
            const char c = text[i];
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) continue; // the dashes
            v = v << 4 | static_cast<uint64_t>(d);
            ++digits;
        }
        return v;
    }();
    return id;
}
} // namespace

void *shared_segment_create(size_t length, void *hint, SharedSegmentId *id, std::string *error) {
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    if (length == 0 || length % page != 0) {
        *error = "a shared segment's length must be a non-zero multiple of the page size";
        return nullptr;
    }
    // Close-on-exec: a program the owner execs must not keep it; peers open it through /proc.
    const int fd = ::memfd_create("portico-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        *error = errno_text("memfd_create");
        return nullptr;
    }
    // Sealed against shrinking: a peer's copy from a mapping past the end of its file would die
    // of SIGBUS, so no process, the owner included, may ever make the file shorter than the id says.
    struct stat st {};
    if (::ftruncate(fd, static_cast<off_t>(length)) != 0 || ::fcntl(fd, F_ADD_SEALS, kSeals) != 0 ||
        ::fstat(fd, &st) != 0) {
        *error = errno_text("ftruncate/seal");
        ::close(fd);
        return nullptr;
    }
    const int prot = PROT_READ | PROT_WRITE;
    void *p = MAP_FAILED;
    if (hint) p = ::mmap(hint, length, prot, MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, fd, 0);
    if (p == MAP_FAILED) p = ::mmap(nullptr, length, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
        *error = errno_text("mmap");
        ::close(fd);
        return nullptr;
    }
    *id = {static_cast<int32_t>(::getpid()), fd, static_cast<uint64_t>(st.st_ino), length, boot_id()};
    Mappings &m = mappings();
    std::lock_guard g(m.mutex);
    m.created[p] = *id;
    m.created_by_id[key_of(*id)] = {static_cast<char *>(p), length};
    m.live.fetch_add(1);
    return p;
}

// Maps id without registering the mapping anywhere.
static void *map_segment(const SharedSegmentId &id, std::string *error) {
    if (id.pid <= 0 || id.fd < 0 || id.length == 0) {
        *error = "not a shared segment";
        return nullptr;
    }
    if (id.boot != boot_id()) {
        *error = "a segment of another machine";
        return nullptr;
    }
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%d", id.pid, id.fd);
    const int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        *error = errno_text(path);
        return nullptr;
    }
    struct stat st {};
    const int seals = ::fcntl(fd, F_GET_SEALS);
    if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_ino) != id.inode ||
        static_cast<uint64_t>(st.st_size) < id.length || seals < 0 || (seals & kSeals) != kSeals) {
        *error = std::string(path) + " is not the segment (another machine's, or its owner is gone)";
        ::close(fd);
        return nullptr;
    }
    void *p = ::mmap(nullptr, id.length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    ::close(fd); // the mapping keeps the file
    if (p == MAP_FAILED) {
        *error = errno_text("mmap");
        return nullptr;
    }
    return p;
}

void *shared_segment_attach(const SharedSegmentId &id, std::string *error) {
    void *p = map_segment(id, error);
    if (!p) return nullptr;
    Mappings &m = mappings();
    std::lock_guard g(m.mutex);
    m.attached[p] = id;
    m.live.fetch_add(1);
    return p;
}

bool shared_segment_detach(void *addr, const SharedSegmentId &id) {
    Mappings &m = mappings();
    std::lock_guard g(m.mutex);
    auto it = m.attached.find(addr);
    if (it == m.attached.end() || !same(it->second, id)) return false;
    m.attached.erase(it);
    m.live.fetch_sub(1);
    return ::munmap(addr, id.length) == 0;
}

bool shared_segment_destroy(void *addr, const SharedSegmentId &id) {
    Mappings &m = mappings();
    std::lock_guard g(m.mutex);
    auto it = m.created.find(addr);
    if (it == m.created.end() || !same(it->second, id)) return false;
    m.created.erase(it);
    m.created_by_id.erase(key_of(id));
    m.live.fetch_sub(1);
    const bool unmapped = ::munmap(addr, id.length) == 0;
    return ::close(id.fd) == 0 && unmapped;
}

bool shared_segment_find(const void *addr, size_t length, SharedSegmentId *id, uint64_t *offset) {
    Mappings &m = mappings();
    if (m.live.load(std::memory_order_relaxed) == 0) return false;
    const auto a = reinterpret_cast<uintptr_t>(addr);
    std::lock_guard g(m.mutex);
    for (auto *table : {&m.created, &m.attached}) {
        auto it = table->upper_bound(const_cast<void *>(addr));
        if (it == table->begin()) continue;
        --it;
        const auto base = reinterpret_cast<uintptr_t>(it->first);
        if (a - base <= it->second.length && length <= it->second.length - (a - base)) {
            *id = it->second;
            *offset = a - base;
            return true;
        }
    }
    return false;
}

char *shared_segment_mapping(const SharedSegmentId &id, uint64_t *mapped_length) {
    Mappings &m = mappings();
    const Key key = key_of(id);
    {
        std::lock_guard g(m.mutex);
        for (auto *table : {&m.created_by_id, &m.kept})
            if (auto it = table->find(key); it != table->end()) {
                *mapped_length = it->second.length;
                return it->second.addr;
            }
        // Ids come from peers: a bounded number of segments is kept mapped, the rest are not
        // mapped at all (the engine then copies as it does without segments).
        if (m.kept.size() >= kMaxKept) return nullptr;
    }
    std::string error;
    void *p = map_segment(id, &error);
    if (!p) return nullptr;
    std::lock_guard g(m.mutex);
    auto [it, fresh] = m.kept.emplace(key, Mappings::Mapped{static_cast<char *>(p), id.length});
    if (!fresh) ::munmap(p, id.length); // another thread mapped it meanwhile
    *mapped_length = it->second.length;
    return it->second.addr;
}

} // namespace portico
