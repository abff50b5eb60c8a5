// SPDX-License-Identifier: BSD-3-Clause
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
//   outsider [--uid U] try-connect PATH
//       tries to connect to the Unix socket at PATH, prints "CONNECT OK" or "CONNECT <errno name>"
//   outsider [--uid U] squat-port PORT
//       listens on TCP port PORT (every address), prints "HOLDING" or "BUSY"
//   outsider [--uid U] squat-ports FIRST COUNT
//       listens on the COUNT TCP ports from FIRST (every address), prints "SQUATTING <n>": how many
//       of them are now taken, by it or by somebody else already
//   outsider [--uid U] flood ADDR PORT...
//       holds a flood of unauthenticated connections on each TCP port at ADDR: 150 silent ones
//       from the machine's own address, 150 silent ones from as many loopback addresses (127.0.0.2
//       and up), 40 slow ones (a plausible hello, one byte every 100 ms, never finished), 40 of
//       garbage (4 KiB of noise, then silence) and 40 half-open ones (connect, then shut down
//       their sending side). Every connection the endpoint closes is opened again. Prints
//       "FLOODING <n>" once all n have connected, then keeps the flood until stdin closes.
#include <arpa/inet.h>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <fcntl.h>
#include <ctime>
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

int try_connect(const std::string &path) {
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    say(connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 ? "CONNECT OK" : "CONNECT " + errno_name(errno));
    return hold_on();
}

// Listens on `port` at every address: the socket, or -1 with errno when it cannot.
int listen_on(uint32_t port) {
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) die("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 && listen(s, 16) == 0) return s;
    const int err = errno;
    close(s);
    errno = err;
    return -1;
}

int squat_port(uint32_t port) {
    if (listen_on(port) < 0) {
        say("BUSY");
        return 0;
    }
    say("HOLDING");
    return hold_on();
}

int squat_ports(uint32_t first, uint32_t count) {
    uint32_t held = 0; // held by somebody else already: blocked all the same
    for (uint32_t port = first; port < first + count; ++port) {
        if (listen_on(port) < 0 && errno != EADDRINUSE) die("bind " + std::to_string(port));
        ++held;
    }
    say("SQUATTING " + std::to_string(held));
    return hold_on();
}

enum class Kind { Silent, SilentElsewhere, Slow, Garbage, HalfOpen };

struct FloodConn {
    Kind kind;
    uint32_t addr, port, source; // host order; source 0: the kernel's choice
    int fd = -1;
    bool connected = false;
    size_t trickled = 0; // bytes of the slow hello sent
};

uint64_t now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

void open_conn(FloodConn &c) {
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c.fd < 0) die("socket");
    c.connected = false;
    c.trickled = 0;
    if (c.source != 0) {
        sockaddr_in src{};
        src.sin_family = AF_INET;
        src.sin_addr.s_addr = htonl(c.source);
        if (bind(c.fd, reinterpret_cast<sockaddr *>(&src), sizeof src) != 0) c.source = 0; // the kernel's, then
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(c.addr);
    to.sin_port = htons(static_cast<uint16_t>(c.port));
    if (connect(c.fd, reinterpret_cast<sockaddr *>(&to), sizeof to) != 0 && errno != EINPROGRESS) {
        close(c.fd);
        c.fd = -1; // tried again on the next round
    }
}

// What a connection does once it is connected.
void on_connected(FloodConn &c) {
    c.connected = true;
    if (c.kind == Kind::Garbage) {
        char noise[4096];
        for (size_t i = 0; i < sizeof noise; ++i) noise[i] = static_cast<char>(i * 7919u >> 3);
        [[maybe_unused]] ssize_t n = send(c.fd, noise, sizeof noise, MSG_NOSIGNAL);
    } else if (c.kind == Kind::HalfOpen) {
        shutdown(c.fd, SHUT_WR);
    }
}

int flood(uint32_t addr, const std::vector<uint32_t> &ports) {
    std::vector<FloodConn> conns;
    for (uint32_t port : ports) {
        const auto add = [&](Kind k, int n, bool elsewhere) {
            for (int i = 0; i < n; ++i)
                conns.push_back({k, addr, port, elsewhere ? 0x7f000002u + static_cast<uint32_t>(i) : 0u});
        };
        add(Kind::Silent, 150, false);
        add(Kind::SilentElsewhere, 150, true);
        add(Kind::Slow, 40, false);
        add(Kind::Garbage, 40, false);
        add(Kind::HalfOpen, 40, false);
    }
    for (FloodConn &c : conns) open_conn(c);
    // A plausible start of a hello (the handshake's magic, "POCP"), then zeros: never finished.
    const char slow_hello[71] = {'P', 'O', 'C', 'P'};
    std::vector<bool> ever(conns.size());
    size_t connected_once = 0;
    bool said = false;
    uint64_t next_trickle = now_ms() + 100;
    std::vector<pollfd> fds;
    for (;;) {
        fds.clear();
        fds.push_back({0, POLLIN, 0});
        for (FloodConn &c : conns)
            fds.push_back({c.fd, static_cast<short>(c.fd < 0 ? 0 : c.connected ? POLLIN : POLLOUT), 0});
        if (poll(fds.data(), fds.size(), 20) < 0 && errno != EINTR) die("poll");
        if (fds[0].revents) return 0; // stdin closed (or said something): the test is done with us
        for (size_t i = 0; i < conns.size(); ++i) {
            FloodConn &c = conns[i];
            const short rev = fds[i + 1].revents;
            if (c.fd < 0) {
                open_conn(c);
                continue;
            }
            if (!rev) continue;
            if (!c.connected) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err == 0 && (rev & POLLOUT)) {
                    on_connected(c);
                    if (!ever[i]) {
                        ever[i] = true;
                        ++connected_once;
                    }
                    continue;
                }
            } else {
                char sink[4096];
                const ssize_t n = recv(c.fd, sink, sizeof sink, MSG_DONTWAIT);
                if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) continue;
            }
            close(c.fd); // the endpoint closed it (or it failed): open it again
            open_conn(c);
        }
        if (!said && connected_once == conns.size()) {
            say("FLOODING " + std::to_string(conns.size()));
            said = true;
        }
        if (now_ms() >= next_trickle) {
            next_trickle = now_ms() + 100;
            for (FloodConn &c : conns)
                if (c.kind == Kind::Slow && c.connected && c.trickled < sizeof slow_hello &&
                    send(c.fd, slow_hello + c.trickled, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
                    ++c.trickled;
        }
    }
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
    if (args.size() == 2 && args[0] == "try-connect") return try_connect(args[1]);
    if (args.size() == 2 && args[0] == "squat-port") return squat_port(static_cast<uint32_t>(std::stoul(args[1])));
    if (args.size() == 3 && args[0] == "squat-ports")
        return squat_ports(static_cast<uint32_t>(std::stoul(args[1])), static_cast<uint32_t>(std::stoul(args[2])));
    if (args.size() >= 3 && args[0] == "flood") {
        in_addr a{};
        if (inet_pton(AF_INET, args[1].c_str(), &a) != 1) die("not an IPv4 address: " + args[1]);
        std::vector<uint32_t> ports;
        for (size_t i = 2; i < args.size(); ++i) ports.push_back(static_cast<uint32_t>(std::stoul(args[i])));
        return flood(ntohl(a.s_addr), ports);
    }
    std::fprintf(stderr, "usage: outsider [--uid U] squat-abstract NID FIRST COUNT | squat-dir DIR | try-bind PATH | "
                         "try-connect PATH | squat-port PORT | squat-ports FIRST COUNT | flood ADDR PORT...\n");
    return 2;
}
