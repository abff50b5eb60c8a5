// SPDX-License-Identifier: BSD-3-Clause
// Multi-machine launching, the parts without processes or sockets: host lists and host files, the
// placement of ranks on hosts, PMI_process_mapping, and the shell command line a remote rank is
// started with (`RSH host 'cd DIR 2>/dev/null; read -r PMI_ID ...; exec env VAR=value ... PROGRAM ARGS'`).
// Everything here is pure and unit-tested (tests/launcher/launcher_units_test.cpp).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace portico::run {

// A bad host list, host file or placement request; what() is the message for the user.
class HostError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct HostEntry {
    std::string name;
    int slots = 0; // from "host:slots" in a host file; 0 = not given
};

// "h1,h2,..." (a host may appear several times). Throws HostError.
std::vector<HostEntry> parse_host_list(std::string_view list);
// Host file text: one host per line, optional ":slots", '#' starts a comment, blank lines are
// ignored. `origin` names the file in messages. Throws HostError.
std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string &origin);
// Reads and parses a host file. Throws HostError.
std::vector<HostEntry> read_hostfile(const std::string &path);
// Empty when `name` is usable as a host name for the remote shell, else the reason.
std::string host_name_problem(std::string_view name);

// Number of ranks when -n is not given: per host entry --ppn, else its slots, else 1.
int default_nprocs(const std::vector<HostEntry> &hosts, int ppn);

struct Placement {
    std::vector<std::string> host;           // per rank
    std::vector<int> local_rank;             // per rank: index among the ranks on the same host (by name)
    std::vector<int> local_size;             // per rank: number of ranks on its host
    std::vector<std::string> distinct_hosts; // in order of first use
    std::string process_mapping;             // MPICH's PMI_process_mapping, "(vector,(node,count,ppn),...)"
};

// Blocks of ranks in host order: each entry takes `ppn` ranks (ppn > 0), else its slots, else
// ceil(nprocs / entries); when the entries are used up before nprocs ranks are placed, placement
// starts again at the first entry. A host that appears several times is one host (one node).
Placement place_ranks(const std::vector<HostEntry> &hosts, int nprocs, int ppn);

// The node layout of a job whose rank r runs on node node_of_rank[r] (node ids 0, 1, ... in
// order of first appearance), in MPICH's PMI_process_mapping syntax.
std::string process_mapping(const std::vector<int> &node_of_rank);

// `s` single-quoted for a POSIX shell ('it'\''s'); always quoted, '' for the empty string.
std::string shell_quote(std::string_view s);
// Splits a command on spaces and tabs (no quoting rules): "ssh -o BatchMode=yes".
std::vector<std::string> split_words(std::string_view s);
// A valid environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(std::string_view name);

// The command string handed to the remote shell: `cd 'DIR' 2>/dev/null; exec env 'K=V'...
// 'PROG' 'ARG'...` (no cd when `cwd` is empty). Each variable of `from_stdin` is first read from
// the command's stdin, one line each, and exported (`read -r NAME || exit 125`): values that must
// not appear on a command line, which `ps` shows to every user (the rank's PMI token).
std::string remote_command(const std::string &cwd, const std::vector<std::pair<std::string, std::string>> &env,
                           const std::vector<std::string> &argv, const std::vector<std::string> &from_stdin = {});

} // namespace portico::run
