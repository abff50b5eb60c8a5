// SPDX-License-Identifier: BSD-3-Clause
#include "transport/shm/rendezvous.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <pwd.h>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <system_error>
#include <unistd.h>

namespace portico::transport::shm {

namespace {

std::string user_name(uid_t uid) {
    passwd pw{}, *found = nullptr;
    char buf[1024];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return found->pw_name;
    return {};
}

std::string uid_text(uid_t uid) {
    const std::string name = user_name(uid);
    return "uid " + std::to_string(uid) + (name.empty() ? "" : " (" + name + ")");
}

std::string endpoint_name(PeerId id) {
    char name[32];
    std::snprintf(name, sizeof name, "%08x.%u", id.nid, id.pid);
    return name;
}

// "process 1234 (name)": what /proc says about pid.
std::string describe_process(pid_t pid) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    return "process " + std::to_string(pid) + (name.empty() ? "" : " (" + name + ")");
}

// The process holding the flock on the file open as fd, from /proc/locks; empty if none is seen.
std::string lock_holder(int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return {};
    char want[64];
    std::snprintf(want, sizeof want, "%02x:%02x:%lu", major(st.st_dev), minor(st.st_dev),
                  static_cast<unsigned long>(st.st_ino));
    std::ifstream locks("/proc/locks");
    std::string line;
    while (std::getline(locks, line)) {
        // "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; waiters ("1: -> FLOCK ...") hold nothing.
        std::istringstream words(line);
        std::string index, kind, mode, access, pid, file;
        words >> index >> kind >> mode >> access >> pid >> file;
        if (kind == "FLOCK" && file == want) return describe_process(static_cast<pid_t>(std::stol(pid)));
    }
    return {};
}

[[noreturn]] void fail(int err, const std::string &what) {
    throw std::system_error(err, std::generic_category(), what);
}

} // namespace

std::string endpoint_directory(const std::string &configured) {
    std::string dir = configured;
    if (dir.empty()) {
        struct stat st {};
        const bool dev_shm = ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode);
        dir = std::string(dev_shm ? "/dev/shm" : "/tmp") + "/portico-" + std::to_string(geteuid());
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        fail(errno, "shm: cannot make the endpoint directory " + dir);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) fail(errno, "shm: cannot look at the endpoint directory " + dir);
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
        fail(ENOTDIR, "shm: the endpoint directory " + dir + " is not a directory" +
                          (S_ISLNK(st.st_mode) ? " (a symbolic link, made by " + uid_text(st.st_uid) + ")" : ""));
    if (st.st_uid != geteuid())
        fail(EACCES, "shm: the endpoint directory " + dir + " belongs to " + uid_text(st.st_uid) +
                         ", not to this user (" + uid_text(geteuid()) +
                         "): another user made it first, and this user's endpoints cannot live there. "
                         "Have it removed (by its owner or root), or set PORTICO_SHM_DIR to a directory of "
                         "your own (the same in every process)");
    // Ours: nobody else may enter it, or others could take our names or connect to our sockets.
    if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
        fail(errno, "shm: cannot make the endpoint directory " + dir + " private");
    return dir;
}

socklen_t rendezvous_address(const std::string &dir, PeerId id, sockaddr_un *addr) {
    std::memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    const std::string path = dir + "/" + endpoint_name(id);
    if (path.size() >= sizeof addr->sun_path) return 0;
    std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
}

Reservation::Reservation(const std::string &dir, PeerId id) {
    sockaddr_un addr;
    const socklen_t len = rendezvous_address(dir, id, &addr);
    if (len == 0)
        fail(ENAMETOOLONG, "shm: the endpoint directory " + dir + " is too long for a socket address (at most " +
                               std::to_string(sizeof addr.sun_path - 16) + " characters)");
    socket_path_ = addr.sun_path;
    lock_path_ = socket_path_ + ".lock";
    for (int attempt = 0;; ++attempt) {
        lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock_fd_ < 0) fail(errno, "shm: cannot open " + lock_path_);
        if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            ::close(lock_fd_);
            lock_fd_ = -1;
            if (err == EWOULDBLOCK) fail(EADDRINUSE, "shm: endpoint " + endpoint_name(id) + " is taken");
            fail(err, "shm: cannot lock " + lock_path_);
        }
        // The endpoint that held it may have removed the file between our open and our lock: a
        // lock on a file that has no name any more reserves nothing.
        struct stat held {
        }, named{};
        if (::fstat(lock_fd_, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
            held.st_dev == named.st_dev)
            break;
        ::close(lock_fd_);
        lock_fd_ = -1;
        if (attempt == 100) fail(EAGAIN, "shm: the lock " + lock_path_ + " keeps being replaced");
    }
    owner_ = getpid();
    ::unlink(socket_path_.c_str()); // ours now: a socket left by a killed process goes
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr *>(&addr), len) != 0 ||
        ::listen(listen_fd_, 1024) != 0) {
        const int err = errno;
        release();
        fail(err, "shm: cannot listen on " + socket_path_);
    }
}

Reservation::~Reservation() { release(); }

void Reservation::release() {
    // Names first, while the lock is still ours: whoever takes the pid next finds them gone or
    // takes the lock after us (and checks that the file it locked still has its name).
    if (owner_ == getpid()) {
        ::unlink(socket_path_.c_str());
        ::unlink(lock_path_.c_str());
    }
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    listen_fd_ = lock_fd_ = -1;
    owner_ = 0;
}

std::string holder_of(const std::string &dir, PeerId id) {
    sockaddr_un addr;
    if (rendezvous_address(dir, id, &addr) == 0) return {};
    const std::string lock = std::string(addr.sun_path) + ".lock";
    const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return {};
    std::string who = lock_holder(fd);
    ::close(fd); // flock belongs to the open file: closing ours leaves the holder's alone
    return who;
}

} // namespace portico::transport::shm
