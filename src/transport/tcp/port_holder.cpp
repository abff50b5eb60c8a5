// SPDX-License-Identifier: BSD-3-Clause
#include "transport/tcp/port_holder.hpp"

#include <dirent.h>
#include <fstream>
#include <map>
#include <pwd.h>
#include <sstream>
#include <unistd.h>
#include <vector>

namespace portico::transport::tcp {

namespace {

struct PortUse {
    uint32_t port;
    bool listening;
    uid_t uid;
    unsigned long inode;
};

// Every IPv4 and IPv6 TCP socket of this network namespace with its local port.
std::vector<PortUse> port_uses() {
    std::vector<PortUse> uses;
    for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line); // the column names
        while (std::getline(in, line)) {
            // "0: 0100007F:4000 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 12345 ..."
            std::istringstream words(line);
            std::string slot, local, remote, state, queues, timer, retransmits;
            unsigned long uid = 0, timeout = 0, inode = 0;
            words >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
            const size_t colon = local.rfind(':');
            if (!words || colon == std::string::npos) continue;
            PortUse u{};
            u.port = static_cast<uint32_t>(std::stoul(local.substr(colon + 1), nullptr, 16));
            u.listening = state == "0A";
            u.uid = static_cast<uid_t>(uid);
            u.inode = inode;
            uses.push_back(u);
        }
    }
    return uses;
}

std::string uid_text(uid_t uid) {
    passwd pw{}, *found = nullptr;
    char buf[1024];
    const bool named = getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found;
    return "uid " + std::to_string(uid) + (named ? " (" + std::string(found->pw_name) + ")" : "");
}

// The process with socket inode open, if this user may see it: "process 1234 (name)".
std::string process_with_socket(unsigned long inode) {
    const std::string want = "socket:[" + std::to_string(inode) + "]";
    DIR *proc = opendir("/proc");
    if (!proc) return {};
    std::string found;
    while (dirent *p = readdir(proc)) {
        const std::string pid = p->d_name;
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string fds = "/proc/" + pid + "/fd";
        DIR *d = opendir(fds.c_str());
        if (!d) continue; // another user's process: not ours to look into
        while (dirent *f = readdir(d)) {
            char target[64];
            const std::string link = fds + "/" + f->d_name;
            const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
            if (n <= 0) continue;
            target[n] = '\0';
            if (want == target) {
                std::ifstream comm("/proc/" + pid + "/comm");
                std::string name;
                std::getline(comm, name);
                found = "process " + pid + (name.empty() ? "" : " (" + name + ")");
                break;
            }
        }
        closedir(d);
        if (!found.empty()) break;
    }
    closedir(proc);
    return found;
}

} // namespace

std::string port_holder(uint32_t port) {
    const PortUse *best = nullptr;
    const std::vector<PortUse> uses = port_uses();
    for (const PortUse &u : uses)
        if (u.port == port && (!best || (u.listening && !best->listening))) best = &u;
    if (!best) return {};
    const std::string process = best->inode ? process_with_socket(best->inode) : std::string{};
    return uid_text(best->uid) + (process.empty() ? "" : ", " + process);
}

std::string port_range_holders(uint32_t first, uint32_t count) {
    std::map<uid_t, std::map<uint32_t, bool>> ports_of; // uid -> ports it uses
    for (const PortUse &u : port_uses())
        if (u.port >= first && u.port - first < count) ports_of[u.uid][u.port] = true;
    std::string text;
    for (const auto &[uid, ports] : ports_of)
        text += (text.empty() ? "" : ", ") + uid_text(uid) + " holds " + std::to_string(ports.size());
    return text.empty() ? text : text + " of them";
}

} // namespace portico::transport::tcp
