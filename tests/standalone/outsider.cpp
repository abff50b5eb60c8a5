// An outsider to a Portico job, for the tests of what outsiders cannot do (outsiders_test.cpp):
// another user when started with --uid (it drops root's privileges first), or a stranger process
// of the same user. It does one thing, says so on stdout, and holds on until its stdin closes.
//
//   outsider [--uid U] squat-abstract NID FIRST COUNT
//       binds the abstract socket names portico/<NID hex>/<pid> for COUNT pids from FIRST (where
//       shared-memory endpoints met until 2026-11), prints "SQUATTING <n>": how many of them are
//       now taken, by it or by somebody else already
//   outsider [--uid U] squat-dir DIR
//       makes directory DIR (mode 0777), prints "MADE"
//   outsider [--uid U] try-bind PATH
//       tries to bind a Unix socket at PATH, prints "BIND OK" or "BIND <errno name>"
//   outsider [--uid U] squat-port PORT
//       listens on TCP port PORT (every address), prints "HOLDING" or "BUSY"
#include <arpa/inet.h>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <grp.h>
#include <netinet/in.h>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace {

void say(const std::string &line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "outsider: %s: %s\n", what.c_str(), std::strerror(errno));
    std::exit(1);
}

// Holds on until stdin closes (the test is done with us).
int hold_on() {
    char b[64];
    while (read(0, b, sizeof b) > 0) {
    }
    return 0;
}

std::string errno_name(int err) {
    switch (err) {
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EADDRINUSE: return "EADDRINUSE";
    case ENOENT: return "ENOENT";
    default: return std::to_string(err);
    }
}

void become(uid_t uid) {
    // As many descriptors as the hard limit allows (a squatter needs thousands), then the user.
    rlimit fds{};
    getrlimit(RLIMIT_NOFILE, &fds);
    fds.rlim_cur = fds.rlim_max;
    setrlimit(RLIMIT_NOFILE, &fds);
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)
        die("cannot become uid " + std::to_string(uid));
}

int squat_abstract(uint32_t nid, uint32_t first, uint32_t count) {
    std::vector<int> held;
    size_t in_use = 0; // held by somebody else already: blocked all the same
    for (uint32_t pid = first; pid < first + count; ++pid) {
        const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) die("socket");
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const int n = std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "portico/%08x/%u", nid, pid);
        const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
        if (bind(s, reinterpret_cast<sockaddr *>(&a), len) == 0 && listen(s, 1) == 0) {
            held.push_back(s);
            continue;
        }
        if (errno != EADDRINUSE) die("bind");
        close(s);
        ++in_use;
    }
    say("SQUATTING " + std::to_string(held.size() + in_use));
    return hold_on();
}

int squat_dir(const std::string &dir) {
    if (mkdir(dir.c_str(), 0777) != 0 || chmod(dir.c_str(), 0777) != 0) die("mkdir " + dir);
    say("MADE");
    return hold_on();
}

int try_bind(const std::string &path) {
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0) {
        unlink(path.c_str());
        say("BIND OK");
    } else {
        say("BIND " + errno_name(errno));
    }
    return hold_on();
}

int squat_port(uint32_t port) {
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || listen(s, 16) != 0) {
        say("BUSY");
        return 0;
    }
    say("HOLDING");
    return hold_on();
}

} // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() >= 2 && args[0] == "--uid") {
        become(static_cast<uid_t>(std::stoul(args[1])));
        args.erase(args.begin(), args.begin() + 2);
    }
    if (args.size() == 4 && args[0] == "squat-abstract")
        return squat_abstract(static_cast<uint32_t>(std::stoul(args[1], nullptr, 16)),
                              static_cast<uint32_t>(std::stoul(args[2])), static_cast<uint32_t>(std::stoul(args[3])));
    if (args.size() == 2 && args[0] == "squat-dir") return squat_dir(args[1]);
    if (args.size() == 2 && args[0] == "try-bind") return try_bind(args[1]);
    if (args.size() == 2 && args[0] == "squat-port") return squat_port(static_cast<uint32_t>(std::stoul(args[1])));
    std::fprintf(stderr, "usage: outsider [--uid U] squat-abstract NID FIRST COUNT | squat-dir DIR | try-bind PATH | "
                         "squat-port PORT\n");
    return 2;
}
