// SPDX-License-Identifier: BSD-3-Clause
// Host lists, placement and the remote command line (see remote.hpp).
#include "remote.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace portico::run {
namespace {

constexpr int kMaxSlots = 1 << 20;

bool is_host_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_' || c == '@' || c == ':' || c == '[' || c == ']' || c == '%';
}

std::string trim(std::string_view s) {
    std::size_t b = 0, e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
    return std::string(s.substr(b, e - b));
}

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

} // namespace

std::string host_name_problem(std::string_view name) {
    if (name.empty()) return "empty host name";
    if (name[0] == '-') return "a host name cannot start with '-'";
    for (char c : name)
        if (!is_host_char(c)) return "invalid character in host name (allowed: letters, digits and . - _ @ : [ ] %)";
    return {};
}

std::vector<HostEntry> parse_host_list(std::string_view list) {
    std::vector<HostEntry> out;
    std::size_t i = 0;
    for (;;) {
        std::size_t comma = list.find(',', i);
        std::string_view item = list.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i);
        std::string problem = host_name_problem(item);
        if (!problem.empty())
            throw HostError("invalid host '" + std::string(item) + "' in host list '" + std::string(list) +
                            "': " + problem);
        out.push_back(HostEntry{std::string(item), 0});
        if (comma == std::string_view::npos) break;
        i = comma + 1;
    }
    return out;
}

std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string &origin) {
    std::vector<HostEntry> out;
    std::size_t pos = 0;
    int lineno = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++lineno;
        if (std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        std::string item = trim(line);
        if (item.empty()) continue;
        auto where = [&] { return origin + ":" + std::to_string(lineno) + ": "; };
        HostEntry e;
        e.name = item;
        // "host:slots"; "[v6addr]" or "[v6addr]:slots" for IPv6 addresses (a bare address
        // with several colons has no slot count).
        std::string_view slots;
        bool has_slots = false;
        if (item[0] == '[') {
            std::size_t close = item.find(']');
            if (close == std::string::npos) throw HostError(where() + "missing ']' in '" + item + "'");
            e.name = item.substr(1, close - 1);
            std::string_view rest = std::string_view(item).substr(close + 1);
            if (!rest.empty()) {
                if (rest[0] != ':')
                    throw HostError(where() + "unexpected '" + std::string(rest) + "' after ']' in '" + item + "'");
                slots = rest.substr(1);
                has_slots = true;
            }
        } else if (std::size_t colon = item.find(':');
                   colon != std::string::npos && item.find(':', colon + 1) == std::string::npos) {
            e.name = item.substr(0, colon);
            slots = std::string_view(item).substr(colon + 1);
            has_slots = true;
        }
        if (has_slots) {
            errno = 0;
            long n = all_digits(slots) ? std::strtol(std::string(slots).c_str(), nullptr, 10) : -1;
            if (errno != 0 || n < 1 || n > kMaxSlots)
                throw HostError(where() + "invalid slot count '" + std::string(slots) + "' in '" + item +
                                "' (expected host or host:slots, slots 1.." + std::to_string(kMaxSlots) + ")");
            e.slots = static_cast<int>(n);
        }
        std::string problem = host_name_problem(e.name);
        if (!problem.empty()) throw HostError(where() + "invalid host '" + e.name + "': " + problem);
        out.push_back(std::move(e));
    }
    if (out.empty()) throw HostError(origin + ": no hosts in the host file");
    return out;
}

std::vector<HostEntry> read_hostfile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        int e = errno;
        throw HostError("cannot read host file '" + path + "': " + std::strerror(e != 0 ? e : ENOENT));
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw HostError("cannot read host file '" + path + "'");
    return parse_hostfile(ss.str(), path);
}

int default_nprocs(const std::vector<HostEntry> &hosts, int ppn) {
    long n = 0;
    for (const HostEntry &h : hosts) n += ppn > 0 ? ppn : (h.slots > 0 ? h.slots : 1);
    return n > INT_MAX ? INT_MAX : static_cast<int>(n);
}

Placement place_ranks(const std::vector<HostEntry> &hosts, int nprocs, int ppn) {
    if (hosts.empty()) throw HostError("no hosts to place the ranks on");
    Placement p;
    const int entries = static_cast<int>(hosts.size());
    const int even = (nprocs + entries - 1) / entries;
    while (static_cast<int>(p.host.size()) < nprocs) {
        for (const HostEntry &h : hosts) {
            int take = ppn > 0 ? ppn : (h.slots > 0 ? h.slots : even);
            for (int k = 0; k < take && static_cast<int>(p.host.size()) < nprocs; ++k) p.host.push_back(h.name);
            if (static_cast<int>(p.host.size()) >= nprocs) break;
        }
    }
    std::unordered_map<std::string, int> node_id, count;
    std::vector<int> node_of_rank;
    for (const std::string &h : p.host) {
        auto [it, inserted] = node_id.emplace(h, static_cast<int>(p.distinct_hosts.size()));
        if (inserted) p.distinct_hosts.push_back(h);
        node_of_rank.push_back(it->second);
        p.local_rank.push_back(count[h]++);
    }
    for (const std::string &h : p.host) p.local_size.push_back(count[h]);
    p.process_mapping = process_mapping(node_of_rank);
    return p;
}

std::string process_mapping(const std::vector<int> &node_of_rank) {
    // Blocks of consecutive ranks on one node: (node, 1, block size); then consecutive blocks of
    // the same size on consecutive nodes merge into (first node, node count, block size).
    struct Block {
        int node, nodes, size;
    };
    std::vector<Block> blocks;
    for (std::size_t r = 0; r < node_of_rank.size();) {
        std::size_t e = r;
        while (e < node_of_rank.size() && node_of_rank[e] == node_of_rank[r]) ++e;
        Block b{node_of_rank[r], 1, static_cast<int>(e - r)};
        if (!blocks.empty() && blocks.back().size == b.size && blocks.back().node + blocks.back().nodes == b.node)
            ++blocks.back().nodes;
        else
            blocks.push_back(b);
        r = e;
    }
    std::string out = "(vector";
    for (const Block &b : blocks)
        out += ",(" + std::to_string(b.node) + "," + std::to_string(b.nodes) + "," + std::to_string(b.size) + ")";
    return out + ")";
}

std::string shell_quote(std::string_view s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

std::vector<std::string> split_words(std::string_view s) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
        std::size_t b = i;
        while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
        if (i > b) out.emplace_back(s.substr(b, i - b));
    }
    return out;
}

bool valid_env_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
}

std::string remote_command(const std::string &cwd, const std::vector<std::pair<std::string, std::string>> &env,
                           const std::vector<std::string> &argv, const std::vector<std::string> &from_stdin) {
    std::string cmd;
    if (!cwd.empty()) cmd = "cd " + shell_quote(cwd) + " 2>/dev/null; ";
    // read takes one line and no more (a shell reads a pipe byte by byte for it): the rest of
    // stdin is the program's.
    for (const std::string &name : from_stdin)
        cmd += "read -r " + name + " || { echo " +
               shell_quote("portico-run: no " + name + " on the remote command's stdin") +
               " >&2; exit 125; }; export " + name + "; ";
    cmd += "exec env";
    for (const auto &[k, v] : env) cmd += " " + shell_quote(k + "=" + v);
    for (const std::string &a : argv) cmd += " " + shell_quote(a);
    return cmd;
}

} // namespace portico::run
