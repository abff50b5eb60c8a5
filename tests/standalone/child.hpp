// SPDX-License-Identifier: BSD-3-Clause
// A child process for tests that start processes themselves (no launcher): stdin and stdout on
// pipes, lines read with a deadline (a hang becomes a failure), stderr optionally kept in a file.
#pragma once

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace portico::test {

class Child {
public:
    // Runs binary with args; its environment is ours without any launcher's variables
    // (PMI_*), PORTICO_TRANSPORT and PORTICO_JOB_SECRET, plus extra_env. With a stderr_path its
    // standard error goes to that file (truncated).
    Child(const std::string &binary, std::vector<std::string> args, const std::vector<std::string> &extra_env = {},
          const std::string &stderr_path = {}) {
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        if (!stderr_path.empty())
            posix_spawn_file_actions_addopen(&fa, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        std::vector<char *> argv;
        args.insert(args.begin(), binary);
        for (auto &a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        std::vector<std::string> env_store;
        std::vector<char *> env;
        for (char **e = environ; *e; ++e)
            if (std::strncmp(*e, "PMI_", 4) != 0 && std::strncmp(*e, "PORTICO_TRANSPORT=", 18) != 0 &&
                std::strncmp(*e, "PORTICO_JOB_SECRET=", 19) != 0)
                env_store.emplace_back(*e);
        for (const auto &e : extra_env) env_store.push_back(e);
        for (auto &e : env_store) env.push_back(e.data());
        env.push_back(nullptr);
        if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), env.data()) != 0) throw std::runtime_error("spawn");
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
        if (to_ >= 0) close(to_);
        close(from_);
    }
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;

    pid_t pid() const { return pid_; }
    void send(const std::string &line) {
        std::string l = line + "\n";
        ASSERT_EQ(static_cast<ssize_t>(l.size()), write(to_, l.data(), l.size()));
    }
    // End of input: children that wait for it end.
    void close_stdin() {
        if (to_ >= 0) close(to_);
        to_ = -1;
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
    // Returns once every thread of the child is stopped (SIGSTOP): it can no longer answer.
    void stop_now() {
        kill(pid_, SIGSTOP);
        int st = 0;
        ASSERT_EQ(pid_, waitpid(pid_, &st, WUNTRACED));
        ASSERT_TRUE(WIFSTOPPED(st));
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

// The whole of a file (a child's stderr).
inline std::string file_text(const std::string &path) {
    std::ifstream in(path);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
}

} // namespace portico::test
