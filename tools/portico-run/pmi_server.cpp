// SPDX-License-Identifier: BSD-3-Clause
// PMI-1 "simple" wire protocol server. Replies use the exact spellings of MPICH's hydra:
//   cmd=init pmi_version=1 pmi_subversion=1 -> cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0
//   cmd=get_maxes                  -> cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024
//                                     portico_vallen_max=196608 (ours: see PmiLimits)
//   cmd=get_appnum                 -> cmd=appnum appnum=0
//   cmd=get_universe_size          -> cmd=universe_size size=N
//   cmd=get_my_kvsname             -> cmd=my_kvsname kvsname=NAME
//   cmd=put kvsname= key= value=   -> cmd=put_result rc=0 msg=success
//   cmd=get kvsname= key=          -> cmd=get_result rc=0 msg=success value=V
//                                     cmd=get_result rc=-1 msg=key_not_found value=unknown
//   cmd=barrier_in                 -> cmd=barrier_out (to every rank once all N arrived)
//   cmd=finalize                   -> cmd=finalize_ack
//   cmd=abort exitcode=N [message=TEXT...]  (no reply; the launcher kills the job)
//   cmd=initack pmiid=T            -> cmd=initack rc=0, cmd=set size=N, cmd=set rank=R,
//                                     cmd=set debug=0 (four lines; the first request of a
//                                     connection made with PMI_PORT/PMI_ID, T rank R's token:
//                                     see the header)
// Name publishing, KVS creation/iteration and spawn are answered with their response command and
// rc=-1; any other command with "cmd=error rc=-1 msg=unknown_command_<name>".
#include "pmi_server.hpp"

#include "bootstrap/pmi_wire.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::run {
namespace {

std::string_view find_token(const std::vector<std::pair<std::string_view, std::string_view>> &t, std::string_view key,
                            bool *present = nullptr) {
    for (const auto &[k, v] : t)
        if (k == key) {
            if (present != nullptr) *present = true;
            return v;
        }
    if (present != nullptr) *present = false;
    return {};
}

// A token usable as a msg= value in a reply (no spaces: clients split on them).
std::string sanitize(std::string_view s, std::size_t max = 64) {
    std::string out;
    for (char c : s.substr(0, max)) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                  c == '.';
        out += ok ? c : '_';
    }
    return out.empty() ? std::string("_") : out;
}

// For warnings printed to the user.
std::string printable(std::string_view s, std::size_t max = 120) {
    std::string out;
    for (char c : s.substr(0, max)) {
        unsigned char u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    if (s.size() > max) out += "...";
    return out;
}

bool parse_int(std::string_view s, long &out) {
    std::string tmp(s);
    if (tmp.empty()) return false;
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(tmp.c_str(), &end, 10);
    if (errno != 0 || end == tmp.c_str() || *end != '\0') return false;
    out = v;
    return true;
}

// Longest first line accepted from a connection that has not identified itself.
constexpr std::size_t kMaxHandshakeLine = 1024;

std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        out += s[i];
    }
    return out;
}

} // namespace

PmiServer::PmiServer(int size, std::string kvsname, PmiObserver &observer, PmiLimits limits)
    : size_(size), kvsname_(std::move(kvsname)), observer_(observer), limits_(limits),
      conns_(static_cast<std::size_t>(size)), ever_attached_(static_cast<std::size_t>(size), false) {
    // MPICH asks for the node layout: every rank on one node ("(vector,(first_node,nodes,ppn))").
    kvs_["PMI_process_mapping"] = "(vector,(0,1," + std::to_string(size) + "))";
}

PmiServer::~PmiServer() {
    for (Conn &c : conns_)
        if (c.fd >= 0) ::close(c.fd);
    for (const auto &u : unidentified_) ::close(u.first);
}

void PmiServer::attach(int rank, int fd) {
    Conn &c = conns_[rank];
    if (c.fd >= 0) ::close(c.fd);
    int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    c = Conn{};
    c.fd = fd;
    ever_attached_[rank] = true;
}

void PmiServer::expect_tokens(std::vector<long> tokens) {
    tokens_ = std::move(tokens);
    rank_of_token_.clear();
    for (std::size_t r = 0; r < tokens_.size(); ++r) rank_of_token_[tokens_[r]] = static_cast<int>(r);
}

void PmiServer::attach_unidentified(int fd, std::string peer) {
    int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    unidentified_[fd] = Unidentified{std::move(peer), {}, arrivals_++};
}

void PmiServer::drop_oldest_unidentified() {
    auto oldest = unidentified_.end();
    for (auto it = unidentified_.begin(); it != unidentified_.end(); ++it)
        if (oldest == unidentified_.end() || it->second.order < oldest->second.order) oldest = it;
    if (oldest == unidentified_.end()) return;
    const int fd = oldest->first;
    handle_unidentified(fd, POLLIN);
    if (unidentified_.count(fd) != 0)
        refuse(fd, "crowded_out", "no request yet, and newer connections wait (the oldest silent one is dropped)");
}

std::vector<int> PmiServer::unidentified_fds() const {
    std::vector<int> out;
    out.reserve(unidentified_.size());
    for (const auto &u : unidentified_) out.push_back(u.first);
    return out;
}

void PmiServer::handle_unidentified(int fd, short revents) {
    auto it = unidentified_.find(fd);
    if (it == unidentified_.end() || revents == 0) return;
    char buf[2048];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            it->second.in.append(buf, static_cast<std::size_t>(n));
            if (it->second.in.find('\n') != std::string::npos || it->second.in.size() > kMaxHandshakeLine) break;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; // the rest of the line comes later
        refuse(fd, "",
               n == 0 ? (it->second.in.empty() ? "closed the connection without a request"
                                               : "closed the connection in the middle of its first request '" +
                                                     printable(it->second.in) + "'")
                      : std::string("read error: ") + std::strerror(errno));
        return;
    }
    std::string &in = it->second.in;
    std::size_t nl = in.find('\n');
    if (nl > kMaxHandshakeLine) { // also no newline at all (npos): the read stopped at the limit
        refuse(fd, "line_too_long", "first request longer than " + std::to_string(kMaxHandshakeLine) + " bytes");
        return;
    }
    std::string line = in.substr(0, nl);
    std::string rest = in.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    Tokens t = bootstrap::pmi_tokenize(line);
    bool has_id = false;
    std::string_view id_s = find_token(t, "pmiid", &has_id);
    if (t.empty() || t.front().first != "cmd" || t.front().second != "initack" || !has_id) {
        refuse(fd, "expected_initack", "first request '" + printable(line) + "' is not 'cmd=initack pmiid=N'");
        return;
    }
    long id = -1;
    int rank = -1;
    if (parse_int(id_s, id)) {
        if (tokens_.empty() && id >= 0 && id < size_) rank = static_cast<int>(id);
        if (auto known = rank_of_token_.find(id); !tokens_.empty() && known != rank_of_token_.end())
            rank = known->second;
    }
    if (rank < 0) {
        // The observer hears of guessing before the guesser hears its answer.
        if (!tokens_.empty() && ++wrong_tokens_ == kMaxWrongTokens) observer_.pmi_guessing(wrong_tokens_);
        refuse(fd, "invalid_pmiid",
               tokens_.empty()
                   ? "pmiid '" + printable(id_s) + "' is not a rank of this job (0.." + std::to_string(size_ - 1) + ")"
                   : "pmiid '" + printable(id_s) + "' is not the token of a rank of this job");
        return;
    }
    // (Messages name the rank, not its token.)
    const std::string whose =
        tokens_.empty() ? "pmiid " + std::to_string(rank) : "rank " + std::to_string(rank) + "'s token";
    if (ever_attached_[rank]) {
        refuse(fd, "pmiid_in_use",
               whose + ": rank " + std::to_string(rank) +
                   (conns_[rank].fd >= 0 ? " is already connected" : " was connected before"));
        return;
    }
    std::string why;
    if (!observer_.pmi_may_identify(rank, why)) {
        refuse(fd, "pmiid_refused", whose + ": " + why);
        return;
    }
    identify(fd, rank, std::move(rest));
}

void PmiServer::close_unidentified() {
    for (const auto &u : unidentified_) ::close(u.first);
    unidentified_.clear();
}

void PmiServer::identify(int fd, int rank, std::string rest) {
    unidentified_.erase(fd);
    attach(rank, fd);
    reply(rank, "cmd=initack rc=0");
    reply(rank, "cmd=set size=" + std::to_string(size_));
    reply(rank, "cmd=set rank=" + std::to_string(rank));
    reply(rank, "cmd=set debug=0");
    conns_[rank].in = std::move(rest); // requests sent right behind the handshake
    process_input(rank);
    if (conns_[rank].fd >= 0) flush(rank);
}

void PmiServer::refuse(int fd, const std::string &reply_msg, const std::string &why) {
    auto it = unidentified_.find(fd);
    std::string peer = it != unidentified_.end() ? it->second.peer : std::string("?");
    if (!reply_msg.empty()) {
        std::string line = "cmd=error rc=-1 msg=" + reply_msg + "\n";
        ssize_t ignored = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)ignored;
    }
    ::close(fd);
    if (it != unidentified_.end()) unidentified_.erase(it);
    observer_.pmi_refused(peer, why);
}

short PmiServer::poll_events(int rank) const {
    const Conn &c = conns_[rank];
    if (c.fd < 0) return 0;
    short ev = 0;
    std::size_t pending = c.out.size() - c.out_off;
    if (pending > 0 && !c.write_broken) ev |= POLLOUT;
    if (c.write_broken || pending < limits_.max_pending_output) ev |= POLLIN;
    return ev;
}

void PmiServer::handle(int rank, short revents) {
    Conn &c = conns_[rank];
    if (c.fd < 0 || revents == 0) return;
    if (revents & POLLNVAL) {
        close_conn(rank);
        return;
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) read_available(rank);
    if (conns_[rank].fd >= 0) flush(rank);
}

void PmiServer::drain(int rank) {
    if (conns_[rank].fd >= 0) {
        read_available(rank);
        if (conns_[rank].fd >= 0) flush(rank);
    }
}

void PmiServer::read_available(int rank) {
    char buf[16384];
    for (;;) {
        Conn &c = conns_[rank];
        if (c.fd < 0) return;
        if (!c.write_broken && c.out.size() - c.out_off >= limits_.max_pending_output)
            return; // back-pressure: this rank does not read its replies
        ssize_t n = ::read(c.fd, buf, sizeof buf);
        if (n > 0) {
            c.in.append(buf, static_cast<std::size_t>(n));
            process_input(rank);
            if (static_cast<std::size_t>(n) < sizeof buf)
                return; // a short read on a stream socket: nothing more queued right now
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        // EOF or a hard error: the rank is gone (or closed PMI). A trailing partial line is lost.
        if (!c.in.empty() && !c.discarding && !c.in_mcmd)
            warn(rank, "connection closed in the middle of a line '" + printable(c.in) + "'");
        close_conn(rank);
        return;
    }
}

void PmiServer::process_input(int rank) {
    std::size_t start = 0;
    for (;;) {
        Conn &c = conns_[rank];
        if (c.fd < 0) return;
        std::size_t nl = c.in.find('\n', start);
        if (nl == std::string::npos) break;
        std::string line = c.in.substr(start, nl - start);
        start = nl + 1;
        if (c.discarding) {
            c.discarding = false; // end of an over-long line, already answered
            continue;
        }
        if (line.size() > limits_.max_line) {
            reject_long_line(rank);
            continue;
        }
        process_line(rank, line);
    }
    Conn &c = conns_[rank];
    if (c.fd < 0) return;
    c.in.erase(0, start);
    if (c.in.size() > limits_.max_line) { // no newline yet: answer now, drop the rest of it
        if (!c.discarding) reject_long_line(rank);
        c.discarding = true;
        c.in.clear();
    }
}

void PmiServer::reject_long_line(int rank) {
    warn(rank, "request line longer than " + std::to_string(limits_.max_line) + " bytes; ignored");
    reply(rank, "cmd=error rc=-1 msg=line_too_long");
}

void PmiServer::process_line(int rank, std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Conn &c = conns_[rank];

    if (c.in_mcmd) { // PMI_Spawn_multiple: "mcmd=spawn\nkey=value\n...endcmd\n"
        if (line == "endcmd") {
            c.in_mcmd = false;
            warn(rank, "PMI spawn is not supported by portico-run");
            reply(rank, "cmd=spawn_result rc=-1 errcodes=-1 msg=spawn_not_supported");
        }
        return;
    }
    if (line.rfind("mcmd=", 0) == 0) {
        c.in_mcmd = true;
        return;
    }

    Tokens t = bootstrap::pmi_tokenize(line);
    if (t.empty()) return; // blank line: nothing to answer

    if (t.front().first != "cmd" || t.front().second.empty()) {
        warn(rank, "malformed request '" + printable(line) + "' (expected cmd=NAME ...)");
        reply(rank, "cmd=error rc=-1 msg=malformed_request");
        return;
    }
    std::string_view cmd = t.front().second;

    if (cmd == "init") {
        on_init(rank, t);
    } else if (cmd == "initack") {
        on_initack(rank, t);
    } else if (cmd == "get_maxes") {
        reply(rank, "cmd=maxes kvsname_max=" + std::to_string(limits_.kvsname_max) + " keylen_max=" +
                        std::to_string(limits_.keylen_max) + " vallen_max=" + std::to_string(limits_.vallen_max) +
                        " portico_vallen_max=" + std::to_string(limits_.long_vallen_max));
    } else if (cmd == "get_appnum") {
        reply(rank, "cmd=appnum appnum=0");
    } else if (cmd == "get_universe_size") {
        reply(rank, "cmd=universe_size size=" + std::to_string(size_));
    } else if (cmd == "get_my_kvsname") {
        reply(rank, "cmd=my_kvsname kvsname=" + kvsname_);
    } else if (cmd == "put") {
        on_put(rank, t);
    } else if (cmd == "get") {
        on_get(rank, t);
    } else if (cmd == "barrier_in") {
        on_barrier_in(rank);
    } else if (cmd == "finalize") {
        c.finalized = true;
        reply(rank, "cmd=finalize_ack");
    } else if (cmd == "abort") {
        on_abort(rank, line, t);
    } else if (cmd == "publish_name" || cmd == "unpublish_name" || cmd == "lookup_name") {
        std::string resp = cmd == "publish_name"     ? "publish_result"
                           : cmd == "unpublish_name" ? "unpublish_result"
                                                     : "lookup_result";
        warn(rank, "PMI name publishing (" + std::string(cmd) + ") is not supported");
        reply(rank, "cmd=" + resp + " rc=-1 info=not_supported msg=name_service_not_supported");
    } else if (cmd == "create_kvs") {
        reply(rank, "cmd=newkvs rc=-1 msg=kvs_creation_not_supported");
    } else if (cmd == "destroy_kvs") {
        reply(rank, "cmd=kvs_destroyed rc=-1 msg=kvs_destruction_not_supported");
    } else if (cmd == "getbyidx") {
        reply(rank, "cmd=getbyidx_results rc=-1 reason=not_supported msg=kvs_iteration_not_supported");
    } else if (cmd == "spawn") {
        warn(rank, "PMI spawn is not supported by portico-run");
        reply(rank, "cmd=spawn_result rc=-1 errcodes=-1 msg=spawn_not_supported");
    } else {
        warn(rank, "unknown PMI command '" + printable(cmd) + "' in '" + printable(line) + "'");
        reply(rank, "cmd=error rc=-1 msg=unknown_command_" + sanitize(cmd));
    }
}

void PmiServer::on_init(int rank, const Tokens &t) {
    bool has_ver = false, has_sub = false;
    std::string_view ver = find_token(t, "pmi_version", &has_ver);
    std::string_view sub = find_token(t, "pmi_subversion", &has_sub);
    long v = -1, s = 0;
    bool ok = has_ver && parse_int(ver, v) && v == 1 && (!has_sub || (parse_int(sub, s) && s >= 0 && s <= 1));
    if (ok) {
        reply(rank, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    } else {
        warn(rank, "client asked for PMI version " + printable(ver) + "." + printable(sub) +
                       "; portico-run serves PMI-1.1 (the simple wire protocol) only");
        reply(rank, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 "
                    "msg=unsupported_pmi_version");
    }
}

void PmiServer::on_initack(int rank, const Tokens &t) {
    // The handshake of PMI_PORT connections, sent again (or on a PMI_FD connection): harmless
    // when it names this connection's own rank.
    bool has_id = false;
    std::string_view id_s = find_token(t, "pmiid", &has_id);
    long id = -1;
    if (!has_id || !parse_int(id_s, id) || id != pmiid_of(rank)) {
        warn(rank, "initack with pmiid '" + printable(id_s) + "' on the connection of rank " + std::to_string(rank));
        reply(rank, "cmd=error rc=-1 msg=pmiid_mismatch");
        return;
    }
    reply(rank, "cmd=initack rc=0");
    reply(rank, "cmd=set size=" + std::to_string(size_));
    reply(rank, "cmd=set rank=" + std::to_string(rank));
    reply(rank, "cmd=set debug=0");
}

void PmiServer::on_put(int rank, const Tokens &t) {
    bool has_key = false, has_kvs = false;
    std::string_view key = find_token(t, "key", &has_key);
    std::string_view kvs = find_token(t, "kvsname", &has_kvs);
    std::string_view value = find_token(t, "value");
    if (!has_key || key.empty()) {
        warn(rank, "put without a key");
        reply(rank, "cmd=put_result rc=-1 msg=missing_key");
    } else if (has_kvs && kvs != kvsname_) {
        warn(rank, "put into unknown kvs '" + printable(kvs) + "' (this job's is '" + kvsname_ + "')");
        reply(rank, "cmd=put_result rc=-1 msg=unknown_kvsname");
    } else if (key.size() >= static_cast<std::size_t>(limits_.keylen_max)) {
        // The maxes are C buffer sizes, NUL included (as in MPICH's client and hydra).
        warn(rank, "put of a key of " + std::to_string(key.size()) + " characters (at most " +
                       std::to_string(limits_.keylen_max - 1) + "): '" + printable(key) + "'");
        reply(rank, "cmd=put_result rc=-1 msg=key_too_long");
    } else if (value.size() >= static_cast<std::size_t>(std::max(limits_.vallen_max, limits_.long_vallen_max))) {
        warn(rank, "put of a value of " + std::to_string(value.size()) + " characters (at most " +
                       std::to_string(std::max(limits_.vallen_max, limits_.long_vallen_max) - 1) + ") for key '" +
                       printable(key) + "'");
        reply(rank, "cmd=put_result rc=-1 msg=value_too_long");
    } else {
        conns_[rank].staged.emplace_back(std::string(key), std::string(value));
        reply(rank, "cmd=put_result rc=0 msg=success");
    }
}

void PmiServer::on_get(int rank, const Tokens &t) {
    bool has_key = false, has_kvs = false;
    std::string_view key = find_token(t, "key", &has_key);
    std::string_view kvs = find_token(t, "kvsname", &has_kvs);
    if (!has_key || key.empty()) {
        warn(rank, "get without a key");
        reply(rank, "cmd=get_result rc=-1 msg=missing_key value=unknown");
        return;
    }
    if (has_kvs && kvs != kvsname_) {
        warn(rank, "get from unknown kvs '" + printable(kvs) + "' (this job's is '" + kvsname_ + "')");
        reply(rank, "cmd=get_result rc=-1 msg=unknown_kvsname value=unknown");
        return;
    }
    auto it = kvs_.find(std::string(key));
    if (it == kvs_.end())
        reply(rank, "cmd=get_result rc=-1 msg=key_not_found value=unknown");
    else
        reply(rank, "cmd=get_result rc=0 msg=success value=" + it->second);
}

void PmiServer::on_barrier_in(int rank) {
    Conn &c = conns_[rank];
    if (c.in_barrier) {
        warn(rank, "barrier_in while already waiting in the barrier; ignored");
        return;
    }
    c.in_barrier = true;
    if (++barrier_count_ < size_) return;
    // Everyone arrived: publish the staged puts (rank order), then release all ranks.
    for (Conn &k : conns_) {
        for (auto &[key, value] : k.staged) kvs_[std::move(key)] = std::move(value);
        k.staged.clear();
    }
    barrier_count_ = 0;
    ++barriers_completed_;
    for (int r = 0; r < size_; ++r) {
        conns_[r].in_barrier = false;
        if (conns_[r].fd >= 0) {
            reply(r, "cmd=barrier_out");
            if (r != rank) flush(r);
        }
    }
}

void PmiServer::on_abort(int rank, std::string_view line, const Tokens &t) {
    bool has_code = false;
    std::string_view code_s = find_token(t, "exitcode", &has_code);
    long code = 1;
    if (!has_code || !parse_int(code_s, code) || code < INT_MIN || code > INT_MAX) {
        if (has_code) warn(rank, "abort with an invalid exitcode '" + printable(code_s) + "'; using 1");
        code = 1;
    }
    // The message may contain spaces (MPICH >= 4 sends it unescaped): take the rest of the line.
    std::string message;
    for (std::string_view key : {" message=", " error_msg=", " msg="}) {
        std::size_t pos = line.find(key);
        if (pos != std::string_view::npos) {
            message = unescape(line.substr(pos + key.size()));
            break;
        }
    }
    observer_.pmi_abort(rank, static_cast<int>(code), message);
}

void PmiServer::reply(int rank, const std::string &line) {
    Conn &c = conns_[rank];
    if (c.fd < 0 || c.write_broken) return;
    if (c.out_off == c.out.size()) {
        c.out.clear();
        c.out_off = 0;
    }
    c.out += line;
    c.out += '\n';
}

void PmiServer::flush(int rank) {
    Conn &c = conns_[rank];
    while (c.fd >= 0 && !c.write_broken && c.out_off < c.out.size()) {
        ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c.out_off += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        // The peer is gone; keep reading what it sent before (an abort, say) until EOF.
        c.write_broken = true;
    }
    if (c.out_off == c.out.size() || c.write_broken) {
        c.out.clear();
        c.out_off = 0;
    }
}

void PmiServer::close_conn(int rank) {
    Conn &c = conns_[rank];
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
    c.in.clear();
    c.out.clear();
    c.out_off = 0;
    // in_barrier and staged puts stay: a rank that entered the barrier and then closed still
    // counts as arrived, and what it put before is published when the barrier completes.
}

void PmiServer::warn(int rank, const std::string &what) {
    Conn &c = conns_[rank];
    ++c.warnings;
    if (c.warnings <= limits_.max_warnings_per_rank)
        observer_.pmi_warning(rank, what);
    else if (c.warnings == limits_.max_warnings_per_rank + 1)
        observer_.pmi_warning(rank, "further PMI warnings for this rank are suppressed");
}

} // namespace portico::run
