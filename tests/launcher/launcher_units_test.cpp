// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of portico-run's pure parts: host lists and files, placement of ranks on hosts,
// PMI_process_mapping, shell quoting of the remote command (checked by running it with /bin/sh),
// and the PMI-over-TCP peer allow list.
#include "remote.hpp"
#include "tcp.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace portico::run;

std::vector<std::string> names(const std::vector<HostEntry> &h) {
    std::vector<std::string> out;
    for (const HostEntry &e : h) out.push_back(e.name + (e.slots > 0 ? ":" + std::to_string(e.slots) : ""));
    return out;
}

std::string error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const HostError &e) {
        return e.what();
    }
    return "(no error)";
}

TEST(HostList, Parses) {
    EXPECT_EQ(names(parse_host_list("a")), (std::vector<std::string>{"a"}));
    EXPECT_EQ(names(parse_host_list("n1,user@n2,n1,10.0.0.1")),
              (std::vector<std::string>{"n1", "user@n2", "n1", "10.0.0.1"}));
    EXPECT_NE(error_of([] { parse_host_list("a,"); }).find("empty host name"), std::string::npos);
    EXPECT_NE(error_of([] { parse_host_list("-x"); }).find("cannot start with '-'"), std::string::npos);
    EXPECT_NE(error_of([] { parse_host_list("a;b"); }).find("invalid character"), std::string::npos);
    EXPECT_NE(error_of([] { parse_host_list("a'b"); }).find("invalid character"), std::string::npos);
}

TEST(HostFile, Entries) {
    EXPECT_EQ(names(parse_hostfile("# cluster\n\nnode1\nnode2:4  # four\n\t node3 \n"
                                   "[fe80::1%eth0]:2\n[::2]\n::1\n10.1.2.3:1\r\n",
                                   "f")),
              (std::vector<std::string>{"node1", "node2:4", "node3", "fe80::1%eth0:2", "::2", "::1", "10.1.2.3:1"}));
}

TEST(HostFile, Errors) {
    EXPECT_EQ(error_of([] { parse_hostfile("# nothing\n\n", "hf"); }), "hf: no hosts in the host file");
    EXPECT_NE(error_of([] { parse_hostfile("a\nb:0\n", "hf"); }).find("hf:2: invalid slot count '0'"),
              std::string::npos);
    EXPECT_NE(error_of([] { parse_hostfile("b:x\n", "hf"); }).find("hf:1: invalid slot count 'x'"), std::string::npos);
    EXPECT_NE(error_of([] { parse_hostfile("b:\n", "hf"); }).find("invalid slot count ''"), std::string::npos);
    EXPECT_NE(error_of([] { parse_hostfile("b:99999999999\n", "hf"); }).find("invalid slot count"), std::string::npos);
    EXPECT_NE(error_of([] { parse_hostfile("a b\n", "hf"); }).find("hf:1: invalid host 'a b'"), std::string::npos);
    EXPECT_NE(error_of([] { parse_hostfile("[::1\n", "hf"); }).find("missing ']'"), std::string::npos);
    EXPECT_NE(error_of([] {
                  read_hostfile("/nonexistent/hostfile");
              }).find("cannot read host file '/nonexistent/hostfile': No such file or directory"),
              std::string::npos);
}

TEST(Placement, BlocksOfCeilNOverHosts) {
    auto h = parse_host_list("a,b,c");
    Placement p = place_ranks(h, 7, 0); // ceil(7/3) = 3
    EXPECT_EQ(p.host, (std::vector<std::string>{"a", "a", "a", "b", "b", "b", "c"}));
    EXPECT_EQ(p.local_rank, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
    EXPECT_EQ(p.local_size, (std::vector<int>{3, 3, 3, 3, 3, 3, 1}));
    EXPECT_EQ(p.distinct_hosts, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(p.process_mapping, "(vector,(0,2,3),(2,1,1))");
    p = place_ranks(h, 2, 0); // fewer ranks than hosts
    EXPECT_EQ(p.host, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(p.process_mapping, "(vector,(0,2,1))");
}

TEST(Placement, PpnAndWrapAround) {
    auto h = parse_host_list("a,b");
    Placement p = place_ranks(h, 6, 2); // more ranks than 2 x 2: start again at a
    EXPECT_EQ(p.host, (std::vector<std::string>{"a", "a", "b", "b", "a", "a"}));
    EXPECT_EQ(p.local_rank, (std::vector<int>{0, 1, 0, 1, 2, 3}));
    EXPECT_EQ(p.local_size, (std::vector<int>{4, 4, 2, 2, 4, 4}));
    EXPECT_EQ(p.process_mapping, "(vector,(0,2,2),(0,1,2))");
    EXPECT_EQ(default_nprocs(h, 3), 6);
    EXPECT_EQ(default_nprocs(h, 0), 2);
}

TEST(Placement, RepeatedHostIsOneNode) {
    Placement p = place_ranks(parse_host_list("localhost,localhost"), 4, 0);
    EXPECT_EQ(p.local_rank, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(p.local_size, (std::vector<int>{4, 4, 4, 4}));
    EXPECT_EQ(p.process_mapping, "(vector,(0,1,4))"); // as for a job on one machine
}

TEST(Placement, Slots) {
    auto h = parse_hostfile("a:1\nb:3\nc\n", "f");
    EXPECT_EQ(default_nprocs(h, 0), 5);
    Placement p = place_ranks(h, 5, 0); // c has no slots: ceil(5/3) = 2
    EXPECT_EQ(p.host, (std::vector<std::string>{"a", "b", "b", "b", "c"}));
    EXPECT_EQ(p.process_mapping, "(vector,(0,1,1),(1,1,3),(2,1,1))");
    p = place_ranks(h, 4, 1); // --ppn overrides the slots
    EXPECT_EQ(p.host, (std::vector<std::string>{"a", "b", "c", "a"}));
}

TEST(ProcessMapping, Merges) {
    EXPECT_EQ(process_mapping({0, 0, 0, 0}), "(vector,(0,1,4))");
    EXPECT_EQ(process_mapping({0, 1, 2, 3}), "(vector,(0,4,1))");
    EXPECT_EQ(process_mapping({0, 0, 1, 1, 2}), "(vector,(0,2,2),(2,1,1))");
    EXPECT_EQ(process_mapping({0, 1, 0, 1}), "(vector,(0,2,1),(0,2,1))");
}

// Runs `sh -c CMD` and returns its stdout (and exit status in *status).
std::string run_sh(const std::string &cmd, int *status) {
    int p[2];
    if (::pipe(p) != 0) return "(pipe failed)";
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(p[1], 1);
        ::close(p[0]);
        ::close(p[1]);
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char *>(nullptr));
        ::_exit(127);
    }
    ::close(p[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(p[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(p[0]);
    ::waitpid(pid, status, 0);
    return out;
}

TEST(ShellQuote, RoundTripsThroughSh) {
    const std::vector<std::string> words = {"",
                                            "plain",
                                            "with space",
                                            "it's",
                                            "'",
                                            "''",
                                            "\"",
                                            "$HOME",
                                            "${x:-y}",
                                            "`id`",
                                            "$(id)",
                                            "a\\b",
                                            "trailing\\",
                                            "new\nline",
                                            "\ttab",
                                            "*",
                                            "?",
                                            "[a]",
                                            "~",
                                            "~root",
                                            "a;b&c|d",
                                            "<>",
                                            "#",
                                            "!",
                                            "-n",
                                            "--",
                                            "%s",
                                            "\xc3\xa9",
                                            std::string(1000, 'x')};
    std::string cmd = "printf '%s\\0'";
    for (const std::string &w : words) cmd += " " + shell_quote(w);
    int status = -1;
    std::string out = run_sh(cmd, &status);
    EXPECT_EQ(status, 0);
    std::string want;
    for (const std::string &w : words) want += w + std::string(1, '\0');
    EXPECT_EQ(out, want);
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
    EXPECT_EQ(shell_quote(""), "''");
}

TEST(RemoteCommand, MissingDirectoryIsIgnored) {
    int status = -1;
    std::string cmd =
        remote_command("/nonexistent/dir 'x'", {{"A", "1 2"}, {"B", "it's"}},
                       {"sh", "-c", "printf '%s|%s|%s|%s' \"$A\" \"$B\" \"$1\" \"$(pwd)\"", "sh", "$arg"});
    EXPECT_EQ(cmd.rfind("cd '/nonexistent/dir '\\''x'\\''' 2>/dev/null; exec env 'A=1 2' ", 0), 0u) << cmd;
    std::string out = run_sh("cd / && " + cmd, &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(out, "1 2|it's|$arg|/");
    out = run_sh(remote_command("/tmp", {}, {"pwd"}), &status);
    EXPECT_EQ(out, "/tmp\n");
    out = run_sh(remote_command("", {}, {"sh", "-c", "exit 7"}), &status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7);
}

// A rank's PMI token reaches it on the remote shell's stdin, never on the command line (which ps
// shows every user): the command reads one line per variable and leaves the rest of stdin to the
// program; without that line it ends with 125 and says why.
TEST(RemoteCommand, TokensComeFromStdinNotTheCommandLine) {
    const std::string cmd =
        remote_command("", {{"A", "1"}}, {"sh", "-c", "printf '%s|%s|%s' \"$PMI_ID\" \"$A\" \"$(cat)\""}, {"PMI_ID"});
    EXPECT_EQ(cmd.find("PMI_ID="), std::string::npos) << cmd;
    int status = -1;
    std::string out = run_sh("printf '1234567\\nthe rest\\n' | { " + cmd + "; }", &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(out, "1234567|1|the rest");
    out = run_sh("{ " + cmd + "; } < /dev/null 2>&1", &status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 125) << status;
    EXPECT_EQ(out, "portico-run: no PMI_ID on the remote command's stdin\n");
}

TEST(Words, SplitAndNames) {
    EXPECT_EQ(split_words("  ssh -o  BatchMode=yes\t-q "),
              (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-q"}));
    EXPECT_TRUE(split_words(" \t ").empty());
    EXPECT_TRUE(valid_env_name("_A1"));
    EXPECT_FALSE(valid_env_name("1A"));
    EXPECT_FALSE(valid_env_name(""));
    EXPECT_FALSE(valid_env_name("A-B"));
    EXPECT_FALSE(valid_env_name("A=B"));
}

sockaddr_storage v4(const char *addr, int port) {
    sockaddr_storage ss{};
    auto *s = reinterpret_cast<sockaddr_in *>(&ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, addr, &s->sin_addr);
    return ss;
}

TEST(AllowList, LocalAndHosts) {
    PeerAllowList allow;
    allow.add_local_addresses();
    EXPECT_TRUE(allow.allowed(v4("127.0.0.1", 1)));
    EXPECT_TRUE(allow.allowed(v4("127.45.6.7", 1)));
    EXPECT_FALSE(allow.allowed(v4("203.0.113.9", 1)));
    std::string why;
    EXPECT_TRUE(allow.add_host("user@203.0.113.9", why)) << why;
    EXPECT_TRUE(allow.allowed(v4("203.0.113.9", 1)));
    EXPECT_FALSE(allow.allowed(v4("203.0.113.10", 1)));
    EXPECT_FALSE(allow.add_host("no-such-host.invalid", why));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(format_peer(v4("10.1.2.3", 4567)), "10.1.2.3:4567");
}

} // namespace
