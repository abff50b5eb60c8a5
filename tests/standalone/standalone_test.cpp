// Processes started without any launcher (no PMI in their environment), connected only by the
// physical ids they print, as existing Portals clients do it.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace {

const char *peer_binary() { return PEER_BINARY; }

// A child process with its stdin and stdout on pipes; lines are read with a deadline.
class Child {
public:
    explicit Child(std::vector<std::string> args) {
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        std::vector<char *> argv;
        args.insert(args.begin(), peer_binary());
        for (auto &a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        // No launcher: drop whatever PMI variables the test runner may have.
        std::vector<std::string> env_store;
        std::vector<char *> env;
        for (char **e = environ; *e; ++e)
            if (std::strncmp(*e, "PMI_", 4) != 0) env_store.emplace_back(*e);
        for (auto &e : env_store) env.push_back(e.data());
        env.push_back(nullptr);
        if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), env.data()) != 0)
            throw std::runtime_error("spawn");
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        to_ = in[1];
        from_ = out[0];
    }
    ~Child() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        close(to_);
        close(from_);
    }
    void send(const std::string &line) {
        std::string l = line + "\n";
        ASSERT_EQ(static_cast<ssize_t>(l.size()), write(to_, l.data(), l.size()));
    }
    // Next line of output, or "TIMEOUT"/"EOF". The deadline turns a hang into a failure.
    std::string line(int timeout_ms = 60000) {
        for (;;) {
            size_t nl = buf_.find('\n');
            if (nl != std::string::npos) {
                std::string l = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return l;
            }
            pollfd p{from_, POLLIN, 0};
            if (poll(&p, 1, timeout_ms) <= 0) return "TIMEOUT";
            char b[256];
            ssize_t n = read(from_, b, sizeof b);
            if (n <= 0) return "EOF";
            buf_.append(b, static_cast<size_t>(n));
        }
    }
    void kill_now() {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    int wait_exit() {
        int st = 0;
        waitpid(pid_, &st, 0);
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }

private:
    pid_t pid_ = -1;
    int to_ = -1, from_ = -1;
    std::string buf_;
};

// Reads each child's "ID nid pid" and tells it the other's.
void introduce(Child &a, Child &b) {
    std::string ia = a.line(), ib = b.line();
    ASSERT_EQ(0u, ia.rfind("ID ", 0)) << ia;
    ASSERT_EQ(0u, ib.rfind("ID ", 0)) << ib;
    a.send("PEER " + ib.substr(3));
    b.send("PEER " + ia.substr(3));
}

} // namespace

TEST(Standalone, TwoIndependentProcessesExchangePuts) {
    Child a({"pingpong", "0"}), b({"pingpong", "1"});
    introduce(a, b);
    ASSERT_EQ("READY", a.line());
    ASSERT_EQ("READY", b.line());
    a.send("GO");
    b.send("GO");
    EXPECT_EQ("DONE", a.line());
    EXPECT_EQ("DONE", b.line());
    a.send("BYE");
    b.send("BYE");
    EXPECT_EQ(0, a.wait_exit());
    EXPECT_EQ(0, b.wait_exit());
}

TEST(Standalone, DeadPeerBecomesFailureEventsNotAHang) {
    Child victim({"victim"}), survivor({"survivor"});
    introduce(victim, survivor);
    ASSERT_EQ("READY", victim.line());
    ASSERT_EQ("SENT", survivor.line());
    victim.kill_now();
    EXPECT_EQ("OK", survivor.line());
    EXPECT_EQ(0, survivor.wait_exit());
}
