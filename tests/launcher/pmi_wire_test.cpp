// SPDX-License-Identifier: BSD-3-Clause
// Speaks the PMI-1 wire protocol by hand (no client library) and checks portico-run's replies
// byte for byte: the spellings MPICH's simple PMI client expects, error replies to malformed or
// unknown requests (the launcher must survive them), partial and pipelined writes.
// Run by every rank of a portico-run job: over PMI_FD, or (remote ranks) over a TCP connection to
// PMI_PORT that starts with the "cmd=initack pmiid=R" handshake.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

int g_fd = -1;
int g_rank = -1;
std::string g_buf;

[[noreturn]] void fail(int line, const std::string &what) {
    std::fprintf(stderr, "pmi_wire_test rank %d: line %d: FAILED: %s\n", g_rank, line, what.c_str());
    std::_Exit(1);
}

void send_raw(int line, const std::string &s) {
    std::size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::write(g_fd, s.data() + off, s.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(line, std::string("write: ") + std::strerror(errno));
        off += static_cast<std::size_t>(n);
    }
}

std::string recv_line(int line) {
    for (;;) {
        std::size_t nl = g_buf.find('\n');
        if (nl != std::string::npos) {
            std::string l = g_buf.substr(0, nl);
            g_buf.erase(0, nl + 1);
            return l;
        }
        char tmp[4096];
        ssize_t n = ::read(g_fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(line, "connection closed or read error while waiting for a reply");
        g_buf.append(tmp, static_cast<std::size_t>(n));
    }
}

void expect_reply(int line, const std::string &got, const std::string &want) {
    if (got != want) fail(line, "expected reply '" + want + "', got '" + got + "'");
}

void expect_prefix(int line, const std::string &got, const std::string &prefix) {
    if (got.rfind(prefix, 0) != 0) fail(line, "expected a reply starting with '" + prefix + "', got '" + got + "'");
}

// One request, one exact reply.
#define EXCHANGE(req, want) expect_reply(__LINE__, (send_raw(__LINE__, req), recv_line(__LINE__)), want)
#define EXCHANGE_PREFIX(req, prefix) expect_prefix(__LINE__, (send_raw(__LINE__, req), recv_line(__LINE__)), prefix)

// Connects to PMI_PORT ("host:port").
int connect_port(const std::string &hostport) {
    std::size_t colon = hostport.rfind(':');
    if (colon == std::string::npos) fail(__LINE__, "PMI_PORT='" + hostport + "' is not host:port");
    std::string host = hostport.substr(0, colon), port = hostport.substr(colon + 1);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr)
        fail(__LINE__, "cannot resolve " + hostport);
    int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, res->ai_addr, res->ai_addrlen) != 0)
        fail(__LINE__, "cannot connect to " + hostport + ": " + std::strerror(errno));
    ::freeaddrinfo(res);
    return fd;
}

} // namespace

int main() {
    const char *fd_s = std::getenv("PMI_FD");
    const char *port_s = std::getenv("PMI_PORT");
    const char *rank_s = std::getenv("PMI_RANK");
    const char *size_s = std::getenv("PMI_SIZE");
    const char *jobid = std::getenv("PMI_JOBID");
    if ((fd_s == nullptr && port_s == nullptr) || rank_s == nullptr || size_s == nullptr || jobid == nullptr) {
        std::fprintf(stderr, "pmi_wire_test: PMI_FD or PMI_PORT, PMI_RANK, PMI_SIZE, PMI_JOBID "
                             "not set\n");
        return 1;
    }
    g_rank = std::atoi(rank_s);
    const int size = std::atoi(size_s);
    const std::string rank = rank_s, n = size_s, kvs = jobid;
    // Over TCP a rank identifies with its PMI_ID, a token portico-run gives it on stdin (not the
    // rank, which anybody could claim); on PMI_FD the socket says who it is, and pmiid is the rank.
    const char *pmi_id = std::getenv("PMI_ID");
    const std::string handshake =
        "cmd=initack pmiid=" + (port_s != nullptr && pmi_id != nullptr ? pmi_id : rank) + "\n";
    auto expect_initack_reply = [&](int line) {
        expect_reply(line, recv_line(line), "cmd=initack rc=0");
        expect_reply(line, recv_line(line), "cmd=set size=" + n);
        expect_reply(line, recv_line(line), "cmd=set rank=" + rank);
        expect_reply(line, recv_line(line), "cmd=set debug=0");
    };
    if (fd_s != nullptr) {
        g_fd = std::atoi(fd_s);
    } else {
        // The handshake must come first on a TCP connection; PMI_ID is the rank's token.
        if (pmi_id == nullptr || std::strtol(pmi_id, nullptr, 10) <= 0) fail(__LINE__, "no PMI_ID token");
        g_fd = connect_port(port_s);
        send_raw(__LINE__, handshake);
        expect_initack_reply(__LINE__);
    }
    // The handshake once more (or for the first time, on PMI_FD): the same answer for our own
    // rank, an error for another pmiid.
    send_raw(__LINE__, handshake);
    expect_initack_reply(__LINE__);
    EXCHANGE("cmd=initack pmiid=" + std::to_string(g_rank + 1) + "\n", "cmd=error rc=-1 msg=pmiid_mismatch");

    EXCHANGE("cmd=init pmi_version=1 pmi_subversion=1\n", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    EXCHANGE("cmd=get_maxes\n", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 portico_vallen_max=196608");
    EXCHANGE("cmd=get_appnum\n", "cmd=appnum appnum=0");
    EXCHANGE("cmd=get_universe_size\n", "cmd=universe_size size=" + n);
    EXCHANGE("cmd=get_my_kvsname\n", "cmd=my_kvsname kvsname=" + kvs);
    EXCHANGE("cmd=get kvsname=" + kvs + " key=PMI_process_mapping\n",
             "cmd=get_result rc=0 msg=success value=(vector,(0,1," + n + "))");

    // A put is acknowledged but not visible before the next barrier.
    EXCHANGE("cmd=put kvsname=" + kvs + " key=wire." + rank + " value=v" + rank + "=x,y\n",
             "cmd=put_result rc=0 msg=success");
    EXCHANGE("cmd=get kvsname=" + kvs + " key=wire." + rank + "\n",
             "cmd=get_result rc=-1 msg=key_not_found value=unknown");
    // Same key twice: the last value wins.
    EXCHANGE("cmd=put kvsname=" + kvs + " key=dup." + rank + " value=first\n", "cmd=put_result rc=0 msg=success");
    EXCHANGE("cmd=put kvsname=" + kvs + " key=dup." + rank + " value=second\n", "cmd=put_result rc=0 msg=success");
    // Limits: keylen_max and vallen_max are buffer sizes (NUL included), as in hydra; values may
    // be as long as portico_vallen_max says (clients that do not read it keep to vallen_max).
    EXCHANGE("cmd=put kvsname=" + kvs + " key=" + std::string(63, 'k') + " value=x\n",
             "cmd=put_result rc=0 msg=success");
    EXCHANGE("cmd=put kvsname=" + kvs + " key=" + std::string(64, 'k') + " value=x\n",
             "cmd=put_result rc=-1 msg=key_too_long");
    EXCHANGE("cmd=put kvsname=" + kvs + " key=long." + rank + " value=" + std::string(196608, 'v') + "\n",
             "cmd=put_result rc=-1 msg=value_too_long");
    EXCHANGE("cmd=put kvsname=" + kvs + " key=long." + rank + " value=" + std::string(196607, 'v') + "\n",
             "cmd=put_result rc=0 msg=success");
    EXCHANGE("cmd=put kvsname=other_kvs key=a value=b\n", "cmd=put_result rc=-1 msg=unknown_kvsname");
    EXCHANGE("cmd=put kvsname=" + kvs + " value=b\n", "cmd=put_result rc=-1 msg=missing_key");
    EXCHANGE("cmd=get kvsname=" + kvs + "\n", "cmd=get_result rc=-1 msg=missing_key value=unknown");

    // Malformed and unknown requests get an error reply; the launcher keeps serving.
    EXCHANGE("cmd=frobnicate a=b\n", "cmd=error rc=-1 msg=unknown_command_frobnicate");
    EXCHANGE("hello world\n", "cmd=error rc=-1 msg=malformed_request");
    EXCHANGE("=\n", "cmd=error rc=-1 msg=malformed_request");
    EXCHANGE("cmd=\n", "cmd=error rc=-1 msg=malformed_request");
    EXCHANGE("cmd=init pmi_version=2 pmi_subversion=0\n",
             "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=unsupported_pmi_version");
    EXCHANGE_PREFIX("cmd=publish_name service=s port=p\n", "cmd=publish_result rc=-1 ");
    EXCHANGE_PREFIX("cmd=lookup_name service=s\n", "cmd=lookup_result rc=-1 ");
    EXCHANGE_PREFIX("mcmd=spawn\nnprocs=1\nexecname=/bin/true\nargcnt=0\nendcmd\n", "cmd=spawn_result rc=-1 ");
    { // An over-long line is rejected as a whole (one error reply), then service resumes.
        send_raw(__LINE__, "cmd=put kvsname=" + kvs + " key=huge value=" + std::string(270000, 'h'));
        send_raw(__LINE__, std::string(10000, 'h') + "\n");
        expect_reply(__LINE__, recv_line(__LINE__), "cmd=error rc=-1 msg=line_too_long");
        EXCHANGE("cmd=get_appnum\n", "cmd=appnum appnum=0");
    }

    // Framing: a request split over several writes, pipelined requests, CRLF, blank lines.
    send_raw(__LINE__, "cmd=get_");
    send_raw(__LINE__, "appn");
    EXCHANGE("um\n", "cmd=appnum appnum=0");
    send_raw(__LINE__, "cmd=get_appnum\ncmd=get_universe_size\n\ncmd=get_my_kvsname\n");
    expect_reply(__LINE__, recv_line(__LINE__), "cmd=appnum appnum=0");
    expect_reply(__LINE__, recv_line(__LINE__), "cmd=universe_size size=" + n);
    expect_reply(__LINE__, recv_line(__LINE__), "cmd=my_kvsname kvsname=" + kvs);
    EXCHANGE("cmd=get_appnum\r\n", "cmd=appnum appnum=0");
    EXCHANGE("cmd=get_appnum   \n", "cmd=appnum appnum=0");

    EXCHANGE("cmd=barrier_in\n", "cmd=barrier_out");
    for (int r = 0; r < size; ++r) {
        const std::string rs = std::to_string(r);
        EXCHANGE("cmd=get kvsname=" + kvs + " key=wire." + rs + "\n",
                 "cmd=get_result rc=0 msg=success value=v" + rs + "=x,y");
        EXCHANGE("cmd=get kvsname=" + kvs + " key=dup." + rs + "\n", "cmd=get_result rc=0 msg=success value=second");
        EXCHANGE("cmd=get key=long." + rs + "\n", // kvsname is optional
                 "cmd=get_result rc=0 msg=success value=" + std::string(196607, 'v'));
    }
    EXCHANGE("cmd=get kvsname=" + kvs + " key=huge\n", "cmd=get_result rc=-1 msg=key_not_found value=unknown");
    EXCHANGE("cmd=barrier_in\n", "cmd=barrier_out");
    EXCHANGE("cmd=finalize\n", "cmd=finalize_ack");
    ::close(g_fd);
    if (g_rank == 0) std::printf("pmi_wire_test: %d ranks OK\n", size);
    return 0;
}
