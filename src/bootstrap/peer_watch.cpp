// SPDX-License-Identifier: BSD-3-Clause
#include "bootstrap/peer_watch.hpp"

#include "common/log.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace portico::bootstrap {

namespace {

// kLeft: the rank left the job (code 0: finalized; any other code: a job-wide exit it announced).
// kAborted: the rank ends the job itself (Job::abort), and has said why.
enum State : uint32_t { kRunning = 0, kLeft = 1, kExited = 2, kAborted = 3 };

struct Slot {
    std::atomic<uint32_t> state;
    std::atomic<int32_t> code;
    std::atomic<int32_t> pid;
    uint32_t unused;
    std::atomic<uint64_t> start_ticks; // /proc/<pid>/stat's starttime: tells a reused pid apart
};
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the board is shared between processes");
constexpr size_t kBoardHeader = 64;

// The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), 0 if unknown.
uint64_t start_ticks_of(int pid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    const char *p = std::strrchr(buf, ')');
    if (!p) return 0;
    for (int field = 2; field < 22 && p; ++field) p = std::strchr(p + 1, ' ');
    return p ? std::strtoull(p + 1, nullptr, 10) : 0;
}

int pidfd_open(int pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Per job (rank 0's nonce) and per machine (its lowest rank): two "machines" that share
// /dev/shm and the pids (network namespaces, containers with the host's IPC) must not share a
// board, whose slots are numbered within the machine.
std::string board_name(uint64_t nonce, int first_rank) {
    char name[80];
    std::snprintf(name, sizeof name, "/portico-%u-%016llx-%d", static_cast<unsigned>(::geteuid()),
                  static_cast<unsigned long long>(nonce), first_rank);
    return name;
}

std::atomic<PeerWatch *> g_watch{nullptr};

} // namespace

struct PeerWatch::Board {
    std::atomic<uint32_t> opened; // local ranks that have mapped the board; the last one unlinks it
    Slot &slot(size_t i) {
        return *reinterpret_cast<Slot *>(reinterpret_cast<char *>(this) + kBoardHeader + i * sizeof(Slot));
    }
};

std::unique_ptr<PeerWatch> PeerWatch::start(const std::vector<LocalMember> &members, size_t self, uint64_t nonce,
                                            DeathHandler on_death, std::string *error) {
    std::unique_ptr<PeerWatch> w(new PeerWatch());
    w->members_ = members;
    w->self_ = self;
    w->on_death_ = std::move(on_death);
    w->owner_pid_ = ::getpid();
    w->name_ = board_name(nonce, members.front().rank);
    // A kernel without pidfd_open (before 5.3) cannot watch; say so rather than watch half.
    const int probe = pidfd_open(w->owner_pid_);
    if (probe < 0) {
        *error = std::string("pidfd_open: ") + std::strerror(errno);
        return nullptr;
    }
    ::close(probe);

    w->board_bytes_ = kBoardHeader + members.size() * sizeof(Slot);
    const int fd = ::shm_open(w->name_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        *error = "shm_open " + w->name_ + ": " + std::strerror(errno);
        return nullptr;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0 ||
        static_cast<size_t>(st.st_size) > w->board_bytes_) {
        ::close(fd);
        *error = "the departure board " + w->name_ + " is not this job's";
        return nullptr;
    }
    if (static_cast<size_t>(st.st_size) < w->board_bytes_ &&
        ::ftruncate(fd, static_cast<off_t>(w->board_bytes_)) != 0) {
        *error = std::string("ftruncate: ") + std::strerror(errno);
        ::close(fd);
        return nullptr;
    }
    void *map = ::mmap(nullptr, w->board_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) {
        *error = std::string("mmap: ") + std::strerror(errno);
        return nullptr;
    }
    w->board_ = static_cast<Board *>(map);
    Slot &mine = w->board_->slot(self);
    mine.start_ticks.store(start_ticks_of(w->owner_pid_), std::memory_order_relaxed);
    mine.pid.store(w->owner_pid_, std::memory_order_release);
    if (w->board_->opened.fetch_add(1) + 1 == members.size()) ::shm_unlink(w->name_.c_str());

    w->stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (w->stop_fd_ < 0) {
        *error = std::string("eventfd: ") + std::strerror(errno);
        return nullptr;
    }
    PeerWatch *raw = w.get();
    // Published before the watcher starts: its death handler ends the job through current().
    g_watch.store(raw, std::memory_order_release);
    w->thread_ = std::thread([raw] { raw->run(); });
    return w;
}

PeerWatch::~PeerWatch() {
    PeerWatch *self = this;
    g_watch.compare_exchange_strong(self, nullptr);
    stop();
    if (stop_fd_ >= 0) ::close(stop_fd_);
    if (board_) ::munmap(board_, board_bytes_);
}

void PeerWatch::stop() {
    if (!thread_.joinable()) return;
    if (thread_.get_id() == std::this_thread::get_id()) {
        thread_.detach(); // the watcher itself is ending the process
        return;
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
}

void PeerWatch::left() {
    uint32_t running = kRunning;
    board_->slot(self_).state.compare_exchange_strong(running, kLeft, std::memory_order_release);
    stop();
}

void PeerWatch::exiting(int code) { record_end(kExited, code); }
void PeerWatch::leaving(int code) { record_end(kLeft, code); }
void PeerWatch::aborting(int code) { record_end(kAborted, code); }

void PeerWatch::record_end(uint32_t state, int code) {
    // A child forked by the rank inherits the mapping and the exit handlers, not the rank's slot.
    if (::getpid() != owner_pid_) return;
    Slot &mine = board_->slot(self_);
    if (mine.state.load(std::memory_order_relaxed) == kAborted) return; // the exit that follows an abort
    mine.code.store(code, std::memory_order_relaxed);
    mine.state.store(state, std::memory_order_release);
}

PeerWatch *PeerWatch::current() { return g_watch.load(std::memory_order_acquire); }

// Is the process behind pidfd still the rank at members_[i] (and not a process that got its pid
// after the rank had gone)? A slot not written yet belongs to a rank that has just joined.
bool PeerWatch::same_process(size_t i) {
    Slot &s = board_->slot(i);
    const uint64_t recorded = s.start_ticks.load(std::memory_order_acquire);
    return recorded == 0 || recorded == start_ticks_of(members_[i].os_pid);
}

void PeerWatch::run() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    const size_t n = members_.size();
    for (size_t target = (self_ + 1) % n; target != self_; target = (target + 1) % n) {
        const int pid = members_[target].os_pid;
        int fd = pidfd_open(pid);
        if (fd < 0 && errno != ESRCH) {
            log_error("cannot watch rank %d (pidfd_open: %s); the job is not watched", members_[target].rank,
                      std::strerror(errno));
            return;
        }
        if (fd >= 0 && !same_process(target)) {
            ::close(fd);
            fd = -1;
        }
        if (fd >= 0) {
            pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
            for (;;) {
                if (::poll(p, 2, -1) < 0) continue;
                if (p[1].revents) {
                    ::close(fd);
                    return;
                }
                if (p[0].revents) break;
            }
            ::close(fd);
        }
        // The rank has ended: how?
        Slot &s = board_->slot(target);
        const uint32_t state = s.state.load(std::memory_order_acquire);
        const int code = s.code.load(std::memory_order_relaxed);
        if ((state == kLeft || state == kExited) && code == 0) continue; // its successor is ours now
        ::shm_unlink(name_.c_str());                                     // in case the dead rank never mapped it
        char what[256] = "";
        if (state == kLeft)
            std::snprintf(what, sizeof what, "rank %d (pid %d on this machine) left the job with code %d",
                          members_[target].rank, pid, code);
        else if (state == kExited)
            std::snprintf(what, sizeof what, "rank %d (pid %d on this machine) exited with code %d",
                          members_[target].rank, pid, code);
        else if (state == kRunning)
            std::snprintf(what, sizeof what,
                          "rank %d (pid %d on this machine) ended without leaving the job and without exit() "
                          "(killed by a signal, crashed, or _exit)",
                          members_[target].rank, pid);
        const Ending how = state == kLeft ? Ending::LeftWithCode : state == kAborted ? Ending::Aborted : Ending::Died;
        on_death_(how, state == kRunning ? 1 : code, what);
        return;
    }
}

} // namespace portico::bootstrap
