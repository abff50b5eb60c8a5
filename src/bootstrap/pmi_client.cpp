// SPDX-License-Identifier: BSD-3-Clause
// Simple PMI-1 client: newline-terminated "key=value" lines over the socket named by PMI_FD, or
// over a TCP connection to PMI_PORT.
//
// Request/response pairs used (as spoken by MPICH's simple PMI client and served by hydra):
//   cmd=initack pmiid=ID                      -> cmd=initack [rc=0], then cmd=set size=N,
//                                                cmd=set rank=R, cmd=set debug=D  (PMI_PORT only)
//   cmd=init pmi_version=1 pmi_subversion=1   -> cmd=response_to_init ... rc=0
//   cmd=get_maxes                             -> cmd=maxes kvsname_max=K keylen_max=L vallen_max=V
//   cmd=get_my_kvsname                        -> cmd=my_kvsname kvsname=NAME
//   cmd=put kvsname=NAME key=K value=V        -> cmd=put_result rc=0 msg=success
//   cmd=get kvsname=NAME key=K                -> cmd=get_result rc=0 msg=success value=V  (rc!=0: absent)
//   cmd=barrier_in                            -> cmd=barrier_out
//   cmd=finalize                              -> cmd=finalize_ack
//   cmd=abort exitcode=N message=TEXT         (no response; the launcher kills the job)
#include "common/log.hpp"
#include "bootstrap/bootstrap_settings.hpp"
#include "bootstrap/pmi_client.hpp"
#include "bootstrap/pmi_internal.hpp"
#include "bootstrap/pmi_wire.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <atomic>
#include <chrono>
#include <mutex>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::bootstrap {
namespace {

// Longest response line accepted; anything longer means we are not talking to a PMI launcher.
constexpr std::size_t kMaxLine = std::size_t{1} << 20;
// MPICH's PMI servers read request lines into 1024-byte buffers; keep abort messages well below.
constexpr std::size_t kMaxAbortMessage = 768;
// How long connecting to PMI_PORT may take (an unreachable host would take minutes otherwise),
// and how long the answer to the initack handshake may take (a silent non-PMI service).
constexpr auto kConnectTimeout = std::chrono::seconds(30);
constexpr auto kHandshakeTimeout = std::chrono::seconds(60);

// A read_line whose deadline passed; the caller says what it was waiting for.
struct PmiTimeout : PmiError {
    using PmiError::PmiError;
};

struct Reply {
    std::vector<std::pair<std::string, std::string>> fields;

    const std::string *find(std::string_view key) const {
        for (const auto &[k, v] : fields)
            if (k == key) return &v;
        return nullptr;
    }
};

// A response line's tokens, copied (the line's buffer is reused).
Reply parse_reply(std::string_view line) {
    Reply r;
    for (const auto &[k, v] : pmi_tokenize(line)) r.fields.emplace_back(std::string(k), std::string(v));
    return r;
}

bool parse_long(const char *s, long lo, long hi, long &out) {
    if (s == nullptr || *s == '\0') return false;
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
    out = v;
    return true;
}

// For error messages: a printable, bounded rendering of untrusted text.
std::string printable(std::string_view s, std::size_t max = 80) {
    std::string out;
    for (char c : s.substr(0, max)) {
        unsigned char u = static_cast<unsigned char>(c);
        if (u == '\n')
            out += "\\n";
        else if (u == '\r')
            out += "\\r";
        else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else
            out += c;
    }
    if (s.size() > max) out += "...";
    return out;
}

std::string trim_newline(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    return std::string(s);
}

// The character that makes a key or value impossible to carry, or 0. A value may hold backslashes:
// the wire escapes them (escape_value), as MPICH's own client does, since MPICH's parsers (hydra's
// too) read "\\x" as "x". Clients encode binary data with every printable character but the space
// (GASNet's pmi-spawner: Ascii85, backslash included).
char forbidden_char(std::string_view s, bool value = false) {
    for (char c : s)
        if (c == ' ' || c == '\n' || c == '\r' || c == '\0' || (c == '\\' && !value)) return c;
    return 0;
}

std::string escape_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\') out += '\\';
        out += c;
    }
    return out;
}

std::string unescape_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) ++i;
        out += v[i];
    }
    return out;
}

const char *char_name(char c) {
    switch (c) {
    case ' ': return "a space";
    case '\n': return "a newline";
    case '\r': return "a carriage return";
    case '\0': return "a NUL byte";
    case '\\': return "a backslash";
    default: return "an invalid character";
    }
}

// Abort message as one PMI token: MPICH's parser unescapes "\x" to "x", portico-run takes the
// rest of the line and unescapes the same way.
std::string escape_message(std::string_view msg) {
    std::string out;
    for (char c : msg.substr(0, kMaxAbortMessage)) {
        if (c == ' ' || c == '\n' || c == '\r')
            out += "\\ ";
        else if (c == '\\')
            out += "\\\\";
        else if (static_cast<unsigned char>(c) < 0x20)
            out += '?';
        else
            out += c;
    }
    return out;
}

} // namespace

int detail::exit_status_for(int code) {
    if (code >= 0 && code <= 255) return code;
    int s = code & 0xff;
    return s == 0 ? 1 : s;
}

using detail::exit_status_for;

// The simple PMI-1 client.
class SimplePmiClient final : public PmiClient {
public:
    // nullptr when neither PMI_FD nor PMI_PORT is set.
    static std::unique_ptr<PmiClient> from_environment();
    ~SimplePmiClient() override;

    const char *protocol() const override { return "PMI-1"; }
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const std::string &kvsname() const override { return kvsname_; }
    int max_value_length() const override { return vallen_max_; }
    int max_key_length() const override { return keylen_max_; }
    int fd() const override;
    bool finalizing() const override;
    void put(const std::string &key, const std::string &value) override;
    std::optional<std::string> get(const std::string &key) override;
    void barrier() override;
    void put_then_barrier(const std::vector<std::pair<std::string, std::string>> &puts) override;
    std::vector<std::optional<std::string>> get_many(const std::vector<std::string> &keys) override;
    int universe_size() override;
    int appnum() override;
    std::optional<std::vector<int>> node_ranks() override;
    std::string request(const std::string &line, const std::string &expected_cmd) override;
    void finalize() override;
    [[noreturn]] void abort(int exit_code, const std::string &message) override;

    // The connection shared by the clients of a process.
    struct Channel;

private:
    explicit SimplePmiClient(std::shared_ptr<Channel> channel);
    std::string command(const std::string &line, const std::string &expected_cmd);
    // The replies to requests already sent, in order (channel mutex held).
    std::string reply_to(const std::string &line, const std::string &expected_cmd);
    // The barrier_out of a barrier_in already sent (channel mutex held).
    void await_barrier_out();
    std::string put_line(const std::string &key, const std::string &value) const;
    std::string get_line(const std::string &key) const;
    static void check_put_reply(const std::string &key, const std::string &resp);
    static std::optional<std::string> value_of_get_reply(const std::string &resp);
    // The init exchange (init, get_maxes, get_my_kvsname), into the channel; channel mutex held.
    void initialize();
    // The longest request line every server reads whole.
    static constexpr int kMaxRequestLine = 1024;
    void check_usable(const char *what) const; // channel mutex held
    void check_key(const std::string &key) const { detail::check_key(key, keylen_max_); }
    void check_value(const std::string &value) const { detail::check_value(value, vallen_max_); }

    std::shared_ptr<Channel> ch_;
    bool left_ = false; // this client has finalized (channel mutex)
    int rank_;
    int size_;
    int vallen_max_ = 1023; // longest value accepted: the launcher's vallen_max - 1
    int keylen_max_ = 63;   // longest key accepted: the launcher's keylen_max - 1
    int kvsname_max_ = 256; // as the launcher reported it
    std::string kvsname_;
};

// The connection to the launcher, shared by every SimplePmiClient of the process.
struct SimplePmiClient::Channel {
    std::atomic<int> fd{-1};
    int rank = -1;
    int size = 0;
    // PMI_PORT's socket is ours; PMI_FD is the process's (other PMI clients of the program may
    // use it after we are done: a finalize must leave it open, and its number unreused).
    bool owns_fd = false;
    std::string where;                   // "PMI_FD=5" or "PMI_PORT=host:port", for messages
    std::string rbuf;                    // bytes received after the last complete line (mutex)
    std::timed_mutex mutex;              // one request/response at a time; every call is thread-safe
    std::timed_mutex write_mutex;        // one line at a time on the socket (abort() takes only this one)
    bool finalized = false;              // the launcher's finalize is done (mutex)
    int users = 0;                       // clients that have not finalized (mutex)
    std::atomic<bool> finalizing{false}; // a finalize has started: the launcher may close now
    // A thread holds the mutex waiting for barrier_out, which never comes once a rank has left
    // the job: an exit then finalizes beside it (leave_at_exit) instead of waiting for the mutex.
    std::atomic<bool> awaiting_barrier{false};
    // The launcher's finalize_ack to such a finalize, as that thread read it: the exit waits for
    // it, since hydra's proxy fails the whole job when its ack meets a closed socket.
    std::atomic<bool> finalize_acked{false};
    // What the init exchange told, once per connection (mutex): a second client of the process
    // must not send cmd=init again (Slurm's pmi2 plugin never answers a second one).
    bool initialized = false;
    int kvsname_max = 0, keylen_max = 0, vallen_max = 0;
    // The launcher reads whole request lines, several in a row (portico-run says so with
    // portico_vallen_max); others, such as Slurm's pmi2 plugin, may lose a second request that
    // arrives in the same read, so they get one request at a time.
    bool pipelined = false;
    std::string kvsname;

    Channel() = default;
    Channel(const Channel &) = delete;
    Channel &operator=(const Channel &) = delete;
    ~Channel() { close_fd(); }

    // Done with the connection: closes it if it is ours, else only forgets its number.
    void close_fd() {
        std::lock_guard lk(write_mutex);
        int f = fd.exchange(-1);
        if (f >= 0 && owns_fd) ::close(f);
    }
    // Takes write_mutex. With a deadline, throws PmiError when the line cannot be written by then
    // (a launcher that stopped reading).
    void write_line(const std::string &line, std::optional<std::chrono::steady_clock::time_point> deadline = {});
    // The launcher's finalize and its ack (mutex held), within the deadline when there is one
    // (else PORTICO_PMI_TIMEOUT_S); then the connection is done with (close_fd).
    void finalize_locked(std::optional<std::chrono::steady_clock::time_point> deadline);
    // mutex held; with a deadline, throws PmiError when no complete line has arrived by then
    std::string read_line(std::optional<std::chrono::steady_clock::time_point> deadline = {});
};

namespace {

using Channel = SimplePmiClient::Channel;

// The process's live connection (a second from_environment() shares it). Never destroyed, so
// that clients destroyed at exit never touch a dead registry.
struct Registry {
    std::mutex mutex;
    std::weak_ptr<Channel> channel;
};
Registry &registry() {
    static Registry *r = new Registry;
    return *r;
}

std::weak_ptr<Channel> live_channel() {
    Registry &reg = registry();
    std::lock_guard g(reg.mutex);
    return reg.channel;
}

void tune_tcp(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); // request/response latency
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one); // a vanished launcher host
    int idle = 60, intvl = 10, cnt = 6;
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

// Connects to host:port (any address family), within kConnectTimeout. Returns the blocking,
// close-on-exec socket; throws PmiError.
int connect_tcp(const std::string &host, const std::string &port, const std::string &where) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo *res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0)
        throw PmiError("PMI: cannot resolve the launcher's host in " + where + ": " +
                       (rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : ::gai_strerror(rc)));
    const auto deadline = std::chrono::steady_clock::now() + kConnectTimeout;
    std::string last_error = "no address";
    int fd = -1;
    for (addrinfo *a = res; a != nullptr && fd < 0; a = a->ai_next) {
        int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (s < 0) {
            last_error = std::strerror(errno);
            continue;
        }
        int err = 0;
        if (::connect(s, a->ai_addr, a->ai_addrlen) != 0) {
            err = errno;
            while (err == EINPROGRESS || err == EINTR) {
                auto left =
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
                if (left.count() <= 0) {
                    err = ETIMEDOUT;
                    break;
                }
                pollfd p{s, POLLOUT, 0};
                int n = ::poll(&p, 1, static_cast<int>(left.count()));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) {
                    err = errno;
                    break;
                }
                if (n == 0) continue; // the loop notices the deadline
                socklen_t len = sizeof err;
                if (::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
                break;
            }
        }
        if (err != 0) {
            last_error = std::strerror(err);
            ::close(s);
            continue;
        }
        int fl = ::fcntl(s, F_GETFL);
        if (fl >= 0) ::fcntl(s, F_SETFL, fl & ~O_NONBLOCK);
        tune_tcp(s);
        fd = s;
    }
    ::freeaddrinfo(res);
    if (fd < 0) throw PmiError("PMI: cannot connect to the launcher at " + where + ": " + last_error);
    return fd;
}

std::shared_ptr<Channel> open_fd_channel(const char *fd_s) {
    long fd = -1, rank = -1, size = -1;
    if (!parse_long(fd_s, 0, INT_MAX, fd))
        throw PmiError(std::string("PMI: PMI_FD='") + printable(fd_s) + "' is not a file descriptor number");
    const char *rank_s = std::getenv("PMI_RANK");
    const char *size_s = std::getenv("PMI_SIZE");
    if (size_s == nullptr) throw PmiError("PMI: PMI_FD is set but PMI_SIZE is not");
    if (rank_s == nullptr) throw PmiError("PMI: PMI_FD is set but PMI_RANK is not");
    if (!parse_long(size_s, 1, INT_MAX, size))
        throw PmiError(std::string("PMI: PMI_SIZE='") + printable(size_s) + "' is not a positive integer");
    if (!parse_long(rank_s, 0, size - 1, rank))
        throw PmiError(std::string("PMI: PMI_RANK='") + printable(rank_s) + "' is not an integer in [0, PMI_SIZE)");
    int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
    if (flags < 0)
        throw PmiError("PMI: PMI_FD=" + std::to_string(fd) +
                       " is not an open file descriptor: " + std::strerror(errno));
    // Programs this rank starts must not inherit (and keep open) the launcher connection.
    ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
    auto ch = std::make_shared<Channel>();
    ch->fd = static_cast<int>(fd);
    ch->rank = static_cast<int>(rank);
    ch->size = static_cast<int>(size);
    ch->where = "PMI_FD=" + std::to_string(fd);
    return ch;
}

// One "cmd=set KEY=VALUE" line of the initack handshake.
long read_set_line(Channel &ch, const char *key, long lo, long hi, std::chrono::steady_clock::time_point deadline) {
    std::string line = ch.read_line(deadline);
    Reply r = parse_reply(line);
    const std::string *cmd = r.find("cmd");
    const std::string *v = r.find(key);
    long out = 0;
    if (cmd == nullptr || *cmd != "set" || v == nullptr || !parse_long(v->c_str(), lo, hi, out))
        throw PmiError("PMI: expected 'cmd=set " + std::string(key) + "=N' in the handshake with " + ch.where +
                       ", got '" + printable(line) + "'");
    return out;
}

std::shared_ptr<Channel> open_tcp_channel(const char *port_s) {
    const std::string hostport = port_s;
    const char *id_s = std::getenv("PMI_ID");
    long id = -1;
    if (id_s == nullptr) throw PmiError("PMI: PMI_PORT is set but PMI_ID is not");
    if (!parse_long(id_s, 0, INT_MAX, id))
        throw PmiError(std::string("PMI: PMI_ID='") + printable(id_s) + "' is not a non-negative integer");
    // host:port or [v6addr]:port
    std::string host, port;
    if (!hostport.empty() && hostport[0] == '[') {
        std::size_t close = hostport.find(']');
        if (close != std::string::npos && close + 1 < hostport.size() && hostport[close + 1] == ':') {
            host = hostport.substr(1, close - 1);
            port = hostport.substr(close + 2);
        }
    } else if (std::size_t colon = hostport.rfind(':'); colon != std::string::npos) {
        host = hostport.substr(0, colon);
        port = hostport.substr(colon + 1);
    }
    long port_n = 0;
    if (host.empty() || !parse_long(port.c_str(), 1, 65535, port_n))
        throw PmiError("PMI: PMI_PORT='" + printable(hostport) + "' is not host:port");

    auto ch = std::make_shared<Channel>();
    ch->where = "PMI_PORT=" + printable(hostport);
    ch->fd = connect_tcp(host, port, ch->where);
    ch->owns_fd = true;
    std::lock_guard lk(ch->mutex);
    ch->write_line("cmd=initack pmiid=" + std::to_string(id) + "\n");
    const auto deadline = std::chrono::steady_clock::now() + kHandshakeTimeout;
    std::string line;
    try {
        line = ch->read_line(deadline);
    } catch (const PmiTimeout &) {
        throw PmiError("PMI: no answer from the launcher at " + ch->where + " within " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kHandshakeTimeout).count()) +
                       " s (is it a PMI-1 launcher?)");
    }
    Reply r = parse_reply(line);
    const std::string *cmd = r.find("cmd");
    const std::string *rc = r.find("rc");
    if (cmd == nullptr || *cmd != "initack" || (rc != nullptr && *rc != "0")) {
        const std::string *msg = r.find("msg");
        if (cmd != nullptr && (*cmd == "error" || *cmd == "initack"))
            throw PmiError("PMI: the launcher at " + ch->where + " refused PMI_ID=" + std::to_string(id) + ": " +
                           (msg != nullptr ? printable(*msg) : printable(line)));
        throw PmiError("PMI: sent 'cmd=initack pmiid=" + std::to_string(id) +
                       "', expected cmd=initack but the launcher at " + ch->where + " answered '" + printable(line) +
                       "'");
    }
    // Hydra's order (MPICH's client reads exactly these three lines in this order).
    long size = read_set_line(*ch, "size", 1, INT_MAX, deadline);
    long rank = read_set_line(*ch, "rank", 0, size - 1, deadline);
    read_set_line(*ch, "debug", LONG_MIN, LONG_MAX, deadline);
    // A launcher that also sets PMI_RANK/PMI_SIZE (portico-run does) must agree with itself.
    for (auto [name, value] : {std::pair<const char *, long>{"PMI_RANK", rank}, {"PMI_SIZE", size}}) {
        const char *env = std::getenv(name);
        long v = -1;
        if (env != nullptr && (!parse_long(env, 0, INT_MAX, v) || v != value))
            throw PmiError(std::string("PMI: ") + name + "='" + printable(env) +
                           "' disagrees with the launcher's handshake (" + std::to_string(value) + ")");
    }
    ch->rank = static_cast<int>(rank);
    ch->size = static_cast<int>(size);
    return ch;
}

} // namespace

PmiClient::~PmiClient() = default;

bool detail::pmix_environment(bool uri_too) {
    for (const char *name : {"PMIX_NAMESPACE", "PMIX_RANK"})
        if (const char *v = std::getenv(name); v != nullptr && *v != '\0') return true;
    if (uri_too)
        for (char **e = environ; *e != nullptr; ++e)
            if (std::strncmp(*e, "PMIX_SERVER_URI", 15) == 0) return true;
    return false;
}

bool PmiClient::pmix_supported() {
#ifdef PORTICO_HAVE_PMIX
    return true;
#else
    return false;
#endif
}

namespace detail {

void leave_at_normal_exit() {
    static std::once_flag once;
    std::call_once(once, [] {
        // exit(0) and a return of 0 from main; a failing exit leaves the job to the launcher,
        // which ends the others (a finalize would tell hydra that all is well). libportals is
        // never unloaded (-z nodelete), so the handler outlives every dlclose.
        on_exit(
            [](int status, void *) {
                if (status == 0) PmiClient::leave_at_exit(PmiClient::kExitBound);
            },
            nullptr);
    });
}

std::optional<std::vector<int>> nodes_of_ranks(const std::string &mapping, int size) {
    // "(vector,(a,b,c),(d,e,f))", spaces allowed around the parts.
    struct Block {
        long first_node, node_count, per_node;
    };
    std::vector<Block> blocks;
    std::size_t at = 0;
    auto skip_spaces = [&] {
        while (at < mapping.size() && mapping[at] == ' ') ++at;
    };
    auto expect = [&](char c) {
        skip_spaces();
        if (at >= mapping.size() || mapping[at] != c) return false;
        ++at;
        return true;
    };
    auto number = [&](long &out) {
        skip_spaces();
        const std::size_t begin = at;
        while (at < mapping.size() && mapping[at] >= '0' && mapping[at] <= '9' && at - begin < 9) ++at;
        if (at == begin) return false;
        out = std::stol(mapping.substr(begin, at - begin));
        return true;
    };
    if (!expect('(')) return std::nullopt;
    skip_spaces();
    if (mapping.compare(at, 6, "vector") != 0) return std::nullopt;
    at += 6;
    while (expect(',')) {
        Block b{};
        if (!expect('(') || !number(b.first_node) || !expect(',') || !number(b.node_count) || !expect(',') ||
            !number(b.per_node) || !expect(')'))
            return std::nullopt;
        if (b.node_count < 1 || b.per_node < 1) return std::nullopt;
        blocks.push_back(b);
    }
    if (!expect(')') || blocks.empty() || size < 1) return std::nullopt;
    skip_spaces();
    if (at != mapping.size()) return std::nullopt;
    std::vector<int> node(static_cast<std::size_t>(size));
    std::size_t r = 0;
    while (r < node.size())
        for (const Block &b : blocks)
            for (long n = 0; n < b.node_count; ++n)
                for (long k = 0; k < b.per_node && r < node.size(); ++k) node[r++] = static_cast<int>(b.first_node + n);
    return node;
}

namespace {
long env_long(const char *name) {
    const char *v = std::getenv(name);
    return v && *v ? std::strtol(v, nullptr, 10) : 0;
}
} // namespace

std::string foreign_launcher_without_pmi() {
    const long slurm_tasks = std::max(env_long("SLURM_STEP_NUM_TASKS"), env_long("SLURM_NTASKS"));
    if (std::getenv("SLURM_STEP_ID") && slurm_tasks > 1)
        return "PMI: srun started " + std::to_string(slurm_tasks) +
               " tasks without a process-management interface, so each would be a job of one: start the "
               "job with srun --mpi=pmix or srun --mpi=pmi2";
    struct Sign {
        const char *variable;
        const char *launcher;
    };
    const Sign signs[] = {{"OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"},
                          {"PMI_SIZE", "a PMI launcher"},
                          {"MPI_LOCALNRANKS", "MPICH's mpiexec"}};
    for (const Sign &s : signs)
        if (env_long(s.variable) > 1)
            return std::string("PMI: ") + s.launcher + " started this process as one of " +
                   std::to_string(env_long(s.variable)) + " (" + s.variable +
                   ") but gave it no process-management interface to reach the others (no PMI_FD, "
                   "PMI_PORT or PMIx): start the job with portico-run, mpiexec, or srun --mpi=pmix or "
                   "--mpi=pmi2";
    return {};
}

} // namespace detail

std::unique_ptr<PmiClient> PmiClient::from_environment() {
    // PMI-1 first: a PMI-1 launcher running inside a PMIx job (portico-run under srun) sets
    // PMI_FD/PMI_PORT for its own ranks, which inherit the outer job's PMIX_* variables.
    if (auto c = SimplePmiClient::from_environment()) return c;
#ifdef PORTICO_HAVE_PMIX
    if (detail::pmix_environment(true)) return detail::pmix_from_environment();
#else
    if (detail::pmix_environment(false))
        throw PmiError("PMI: started by a PMIx launcher (PMIX_NAMESPACE/PMIX_RANK are set, no "
                       "PMI_FD or PMI_PORT), but this Portico was built without PMIx support: "
                       "install the PMIx development package (libpmix-dev) and reconfigure "
                       "(cmake -DPORTICO_PMIX=ON), or start the job with portico-run or MPICH's "
                       "mpiexec");
#endif
    // No process-management interface. A launcher that started several copies of the program
    // without one (srun --mpi=none) would have each believe it is a job of one: refuse instead.
    const std::string foreign = detail::foreign_launcher_without_pmi();
    if (!foreign.empty()) throw PmiError(foreign);
    return nullptr;
}

void PmiClient::put_then_barrier(const std::vector<std::pair<std::string, std::string>> &puts) {
    for (const auto &[key, value] : puts) put(key, value);
    barrier();
}

std::vector<std::optional<std::string>> PmiClient::get_many(const std::vector<std::string> &keys) {
    std::vector<std::optional<std::string>> values;
    values.reserve(keys.size());
    for (const std::string &key : keys) values.push_back(get(key));
    return values;
}

SimplePmiClient::SimplePmiClient(std::shared_ptr<Channel> channel)
    : ch_(std::move(channel)), rank_(ch_->rank), size_(ch_->size) {}

SimplePmiClient::~SimplePmiClient() {
    // A client that goes away without finalize() no longer needs the connection: the others'
    // last finalize is the launcher's.
    std::lock_guard lk(ch_->mutex);
    if (!left_) --ch_->users;
}

int SimplePmiClient::fd() const { return ch_->fd.load(); }

bool SimplePmiClient::finalizing() const { return ch_->finalizing.load(); }

std::unique_ptr<PmiClient> SimplePmiClient::from_environment() {
    const char *fd_s = std::getenv("PMI_FD");
    const char *port_s = std::getenv("PMI_PORT");
    const bool use_fd = fd_s != nullptr && *fd_s != '\0';
    const bool use_port = port_s != nullptr && *port_s != '\0';
    if (!use_fd && !use_port) return nullptr;

    Registry &reg = registry();
    std::lock_guard<std::mutex> reg_lock(reg.mutex);
    std::shared_ptr<Channel> ch = reg.channel.lock();
    if (!ch) {
        ch = use_fd ? open_fd_channel(fd_s) : open_tcp_channel(port_s);
        reg.channel = ch;
        detail::leave_at_normal_exit();
    }
    std::unique_ptr<SimplePmiClient> c(new SimplePmiClient(ch));
    std::lock_guard lk(ch->mutex);
    if (ch->finalized) {
        c->left_ = true; // never counted
        throw PmiError("PMI: this process has finalized its PMI connection already");
    }
    ++ch->users;
    if (!ch->initialized) {
        c->initialize();
        ch->initialized = true;
    }
    c->kvsname_max_ = ch->kvsname_max;
    c->keylen_max_ = ch->keylen_max;
    c->vallen_max_ = ch->vallen_max;
    c->kvsname_ = ch->kvsname;
    return c;
}

void SimplePmiClient::initialize() {
    Channel *ch = ch_.get();
    SimplePmiClient *c = this;
    // Under portico-run (which sets PORTICO_JOB_ID for its ranks) the three requests go in one
    // write: one round trip instead of three, for each of a thousand ranks at start-up. Other
    // launchers get them one at a time (see Channel::pipelined).
    const bool in_a_row = portico::settings::kJobId.is_set();
    const char *const kInit = "cmd=init pmi_version=1 pmi_subversion=1\n";
    const char *const kGetMaxes = "cmd=get_maxes\n";
    const char *const kGetKvsname = "cmd=get_my_kvsname\n";
    if (in_a_row) ch->write_line(std::string(kInit) + kGetMaxes + kGetKvsname);
    auto exchange = [&](const char *line, const char *expected) {
        return in_a_row ? c->reply_to(line, expected) : c->command(line, expected);
    };
    std::string resp = exchange(kInit, "response_to_init");
    Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    if (rc == nullptr || *rc != "0")
        throw PmiError("PMI: the launcher refused the PMI-1.1 init handshake: '" + printable(resp) + "'");

    resp = exchange(kGetMaxes, "maxes");
    r = parse_reply(resp);
    // portico-run reads whole lines and takes long values from clients that look for its
    // portico_vallen_max (MPICH's clients read replies into 1024-byte buffers).
    long long_vallen_max = 0;
    if (const std::string *v = r.find("portico_vallen_max"); v && !parse_long(v->c_str(), 1, INT_MAX, long_vallen_max))
        long_vallen_max = 0;
    auto get_max = [&](const char *key) {
        const std::string *v = r.find(key);
        long out = 0;
        if (v == nullptr || !parse_long(v->c_str(), 1, INT_MAX, out))
            throw PmiError(std::string("PMI: bad or missing ") + key + " in the launcher's reply '" + printable(resp) +
                           "'");
        return static_cast<int>(out);
    };
    // The maxes are C buffer sizes (MPICH's PMI_KVS_Get_*_length_max), terminating NUL included:
    // hydra keeps only vallen_max-1 characters of a value.
    ch->kvsname_max = get_max("kvsname_max");
    ch->keylen_max = get_max("keylen_max") - 1;
    ch->vallen_max = get_max("vallen_max") - 1;
    if (ch->keylen_max < 1 || ch->vallen_max < 1)
        throw PmiError("PMI: unusable limits in the launcher's reply '" + printable(resp) + "'");

    resp = exchange(kGetKvsname, "my_kvsname");
    r = parse_reply(resp);
    const std::string *name = r.find("kvsname");
    if (name == nullptr || name->empty())
        throw PmiError("PMI: no kvsname in the launcher's reply '" + printable(resp) + "'");
    ch->kvsname = *name;
    if (long_vallen_max > 0) {
        ch->vallen_max = std::max(ch->vallen_max, static_cast<int>(long_vallen_max) - 1);
        ch->pipelined = true;
        return;
    }
    // Some servers read a request in one read of 1024 bytes (Slurm's pmi2 plugin answering PMI-1):
    // the rest of a longer line is lost. Values are kept short enough for every put to fit; the
    // job service splits longer ones over several keys.
    const int room = kMaxRequestLine - static_cast<int>(std::strlen("cmd=put kvsname= key= value=\n")) -
                     static_cast<int>(ch->kvsname.size()) - ch->keylen_max;
    ch->vallen_max = std::min(ch->vallen_max, room);
    if (ch->vallen_max < 64)
        throw PmiError("PMI: the launcher's key and kvsname limits leave no room for values in a " +
                       std::to_string(kMaxRequestLine) + "-byte request ('" + printable(resp) + "')");
}

void SimplePmiClient::Channel::write_line(const std::string &line,
                                          std::optional<std::chrono::steady_clock::time_point> deadline) {
    std::unique_lock lk(write_mutex, std::defer_lock);
    if (!deadline)
        lk.lock();
    else if (!lk.try_lock_until(*deadline))
        throw PmiError("PMI: another thread's write to the launcher did not end in time");
    const int fd_ = fd.load();
    if (fd_ < 0) throw PmiError("PMI: the connection to the launcher is closed");
    const char *p = line.data();
    std::size_t left = line.size();
    bool use_write = false;
    while (left > 0) {
        if (deadline) { // wait for room ourselves, so that no write blocks past the deadline
            const auto ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
            pollfd pfd{fd_, POLLOUT, 0};
            const int ready = ms.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(ms.count())) : 0;
            if (ready < 0 && errno == EINTR) continue;
            if (ready == 0)
                throw PmiError("PMI: the launcher took nothing of '" + printable(trim_newline(line)) + "' in time");
        }
        const int dontwait = deadline ? MSG_DONTWAIT : 0;
        ssize_t n = use_write ? ::write(fd_, p, left) : ::send(fd_, p, left, MSG_NOSIGNAL | dontwait);
        if (n > 0) {
            p += n;
            left -= static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ENOTSOCK && !use_write) {
            use_write = true; // PMI_FD may be a pipe pair under some launchers
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd pfd{fd_, POLLOUT, 0};
            ::poll(&pfd, 1, -1);
            continue;
        }
        int e = n < 0 ? errno : EIO;
        throw PmiError("PMI: cannot send '" + printable(trim_newline(line)) + "' to the launcher: " + std::strerror(e));
    }
}

std::string SimplePmiClient::Channel::read_line(std::optional<std::chrono::steady_clock::time_point> deadline) {
    const int fd_ = fd.load();
    if (fd_ < 0) throw PmiError("PMI: the connection to the launcher is closed");
    for (;;) {
        std::size_t nl = rbuf.find('\n');
        if (nl != std::string::npos) {
            std::string line = rbuf.substr(0, nl);
            rbuf.erase(0, nl + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            return line;
        }
        if (rbuf.size() > kMaxLine)
            throw PmiError("PMI: the launcher sent a line longer than " + std::to_string(kMaxLine) + " bytes");
        if (deadline) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
            pollfd pfd{fd_, POLLIN, 0};
            int ready = left.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(left.count())) : 0;
            if (ready < 0 && errno == EINTR) continue;
            if (ready == 0) throw PmiTimeout("PMI: no answer from the launcher at " + where + " in time");
        }
        char buf[64 * 1024]; // a get of the job's gathered start-up data is tens of KB
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) {
            rbuf.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n == 0)
            throw PmiError("PMI: the launcher closed the connection (it died or is tearing "
                           "the job down)");
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            pollfd pfd{fd_, POLLIN, 0};
            ::poll(&pfd, 1, -1);
            continue;
        }
        throw PmiError(std::string("PMI: cannot read from the launcher: ") + std::strerror(errno));
    }
}

std::string SimplePmiClient::command(const std::string &line, const std::string &expected_cmd) {
    ch_->write_line(line);
    return reply_to(line, expected_cmd);
}

std::string SimplePmiClient::reply_to(const std::string &line, const std::string &expected_cmd) {
    // Every answer has a deadline: a launcher that lets a job live on after one of its ranks died
    // (Slurm's pmi2 plugin without -K) would otherwise keep the others in a barrier for ever.
    const uint64_t limit_s = portico::settings::kPmiTimeoutS.get();
    std::string resp;
    try {
        resp = ch_->read_line(limit_s ? std::optional(std::chrono::steady_clock::now() + std::chrono::seconds(limit_s))
                                      : std::nullopt);
    } catch (const PmiTimeout &) {
        throw PmiError("PMI: no answer to '" + printable(trim_newline(line)) + "' from the launcher at " + ch_->where +
                       " within " + std::to_string(limit_s) +
                       " s (PORTICO_PMI_TIMEOUT_S): a rank of the job may have died or hung");
    }
    Reply r = parse_reply(resp);
    const std::string *cmd = r.find("cmd");
    if (cmd != nullptr && *cmd == "finalize_ack" && ch_->finalizing.load()) {
        // This process's exit finalized while this thread waited (leave_at_exit) and is ending
        // the process once it knows the ack came: the request will never be answered, and
        // there is nothing to report.
        ch_->finalize_acked.store(true);
        for (;;) ::pause();
    }
    if (cmd == nullptr || *cmd != expected_cmd)
        throw PmiError("PMI: sent '" + printable(trim_newline(line)) + "', expected cmd=" + expected_cmd +
                       " but the launcher answered '" + printable(resp) + "'");
    return resp;
}

void SimplePmiClient::check_usable(const char *what) const {
    if (left_ || ch_->finalized) throw PmiError(std::string("PMI: ") + what + " after finalize()");
}

void detail::check_key(const std::string &key, int keylen_max_) {
    if (key.empty()) throw PmiError("PMI: empty key");
    if (key.size() > static_cast<std::size_t>(keylen_max_))
        throw PmiError("PMI: key '" + printable(key) + "' is " + std::to_string(key.size()) +
                       " characters long; the launcher allows at most " + std::to_string(keylen_max_) +
                       " (keylen_max - 1)");
    if (char c = forbidden_char(key); c != 0 || key.find('\0') != std::string::npos)
        throw PmiError("PMI: key '" + printable(key) + "' contains " + char_name(c) +
                       ", which the PMI-1 wire protocol cannot carry");
}

void detail::check_value(const std::string &value, int vallen_max_) {
    if (value.empty()) throw PmiError("PMI: empty values cannot be carried portably by PMI-1 (encode them)");
    if (value.size() > static_cast<std::size_t>(vallen_max_))
        throw PmiError("PMI: value of " + std::to_string(value.size()) +
                       " characters exceeds the launcher's limit of " + std::to_string(vallen_max_) +
                       " (max_value_length(): vallen_max - 1)");
    if (char c = forbidden_char(value, true); c != 0 || value.find('\0') != std::string::npos)
        throw PmiError("PMI: value '" + printable(value, 40) + "' contains " + char_name(c) +
                       ", which the PMI-1 wire protocol cannot carry (encode it, e.g. as hex)");
}

std::string SimplePmiClient::put_line(const std::string &key, const std::string &value) const {
    check_key(key);
    check_value(value);
    // The limit is on the value, not on its escaped form (as MPICH's client counts).
    return "cmd=put kvsname=" + kvsname_ + " key=" + key + " value=" + escape_value(value) + "\n";
}

std::string SimplePmiClient::get_line(const std::string &key) const {
    check_key(key);
    return "cmd=get kvsname=" + kvsname_ + " key=" + key + "\n";
}

void SimplePmiClient::check_put_reply(const std::string &key, const std::string &resp) {
    Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    if (rc != nullptr && *rc != "0") {
        const std::string *msg = r.find("msg");
        throw PmiError("PMI: put of key '" + printable(key) +
                       "' failed: " + (msg != nullptr ? printable(*msg) : std::string("rc=") + printable(*rc)));
    }
}

std::optional<std::string> SimplePmiClient::value_of_get_reply(const std::string &resp) {
    Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    const std::string *found = r.find("found");
    if ((rc != nullptr && *rc != "0") || (found != nullptr && *found == "FALSE")) return std::nullopt;
    const std::string *value = r.find("value");
    if (value == nullptr) throw PmiError("PMI: no value in the launcher's reply '" + printable(resp) + "'");
    return unescape_value(*value);
}

void SimplePmiClient::put(const std::string &key, const std::string &value) {
    const std::string line = put_line(key, value);
    std::lock_guard lk(ch_->mutex);
    check_usable("put");
    check_put_reply(key, command(line, "put_result"));
}

std::optional<std::string> SimplePmiClient::get(const std::string &key) {
    const std::string line = get_line(key);
    std::lock_guard lk(ch_->mutex);
    check_usable("get");
    return value_of_get_reply(command(line, "get_result"));
}

void SimplePmiClient::barrier() {
    std::lock_guard lk(ch_->mutex);
    check_usable("barrier");
    ch_->write_line("cmd=barrier_in\n");
    await_barrier_out();
}

void SimplePmiClient::await_barrier_out() {
    ch_->awaiting_barrier.store(true);
    struct Clear {
        Channel &ch;
        ~Clear() { ch.awaiting_barrier.store(false); }
    } clear{*ch_};
    reply_to("cmd=barrier_in\n", "barrier_out");
}

void SimplePmiClient::put_then_barrier(const std::vector<std::pair<std::string, std::string>> &puts) {
    if (!ch_->pipelined) return PmiClient::put_then_barrier(puts);
    std::string batch;
    std::vector<std::string> lines;
    for (const auto &[key, value] : puts) batch += lines.emplace_back(put_line(key, value));
    batch += "cmd=barrier_in\n";
    std::lock_guard lk(ch_->mutex);
    check_usable("barrier");
    // The replies to puts are short: the launcher never stops reading us while we write.
    ch_->write_line(batch);
    for (size_t i = 0; i < puts.size(); ++i) check_put_reply(puts[i].first, reply_to(lines[i], "put_result"));
    await_barrier_out();
}

std::vector<std::optional<std::string>> SimplePmiClient::get_many(const std::vector<std::string> &keys) {
    if (!ch_->pipelined) return PmiClient::get_many(keys);
    std::vector<std::optional<std::string>> values;
    values.reserve(keys.size());
    std::lock_guard lk(ch_->mutex);
    check_usable("get");
    // Requests go in batches that fit in the socket's buffer, so that our write never waits for
    // the launcher while the launcher waits for us to read its (possibly long) replies.
    constexpr size_t kBatchBytes = 8 * 1024;
    for (size_t first = 0; first < keys.size();) {
        std::string batch;
        std::vector<std::string> lines;
        size_t end = first;
        while (end < keys.size() && (batch.empty() || batch.size() < kBatchBytes))
            batch += lines.emplace_back(get_line(keys[end++]));
        ch_->write_line(batch);
        for (const std::string &line : lines) values.push_back(value_of_get_reply(reply_to(line, "get_result")));
        first = end;
    }
    return values;
}

int SimplePmiClient::universe_size() {
    const std::string resp = request("cmd=get_universe_size\n", "universe_size");
    const Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    const std::string *v = r.find("size");
    long n = 0;
    if ((rc != nullptr && *rc != "0") || v == nullptr || !parse_long(v->c_str(), 1, INT_MAX, n)) return size_;
    return static_cast<int>(n);
}

int SimplePmiClient::appnum() {
    const std::string resp = request("cmd=get_appnum\n", "appnum");
    const Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    const std::string *v = r.find("appnum");
    long n = 0;
    if ((rc != nullptr && *rc != "0") || v == nullptr || !parse_long(v->c_str(), 0, INT_MAX, n)) return 0;
    return static_cast<int>(n);
}

std::optional<std::vector<int>> SimplePmiClient::node_ranks() {
    const std::optional<std::string> mapping = get("PMI_process_mapping");
    if (!mapping) return std::nullopt;
    const std::optional<std::vector<int>> nodes = detail::nodes_of_ranks(*mapping, size_);
    if (!nodes) return std::nullopt;
    std::vector<int> ranks;
    for (int r = 0; r < size_; ++r)
        if ((*nodes)[static_cast<std::size_t>(r)] == (*nodes)[static_cast<std::size_t>(rank_)]) ranks.push_back(r);
    return ranks;
}

std::string SimplePmiClient::request(const std::string &line, const std::string &expected_cmd) {
    if (line.empty() || line.back() != '\n' || line.find('\n') != line.size() - 1)
        throw PmiError("PMI: a request is one line ending in a newline");
    std::lock_guard lk(ch_->mutex);
    check_usable("a request");
    return command(line, expected_cmd);
}

void SimplePmiClient::finalize() {
    std::lock_guard lk(ch_->mutex);
    if (left_) return;
    left_ = true;
    if (--ch_->users > 0 || ch_->finalized) return; // another user still needs the launcher
    ch_->finalize_locked(std::nullopt);
}

void SimplePmiClient::Channel::finalize_locked(std::optional<std::chrono::steady_clock::time_point> deadline) {
    finalizing.store(true);
    const char *const kFinalize = "cmd=finalize\n";
    if (!deadline)
        if (const uint64_t limit_s = portico::settings::kPmiTimeoutS.get())
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
    write_line(kFinalize, deadline);
    std::string resp;
    try {
        resp = read_line(deadline);
    } catch (const PmiTimeout &) {
        throw PmiError("PMI: no answer to 'cmd=finalize' from the launcher at " + where + " in time");
    }
    const Reply r = parse_reply(resp);
    const std::string *cmd = r.find("cmd");
    if (cmd == nullptr || *cmd != "finalize_ack")
        throw PmiError("PMI: sent 'cmd=finalize', expected cmd=finalize_ack but the launcher answered '" +
                       printable(resp) + "'");
    finalized = true;
    close_fd();
}

bool PmiClient::leave_at_exit(std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    bool left = true;
    if (std::shared_ptr<Channel> ch = live_channel().lock()) {
        // A thread in the middle of a request holds the lock. If it waits in a barrier (which a
        // rank that has left, such as the one whose exit this process follows, never enters),
        // finalize beside it: the launcher answers finalize_ack, which that thread then leaves
        // alone. Any other request is answered soon; past the bound we leave without the
        // launcher's finalize.
        std::unique_lock lk(ch->mutex, std::defer_lock);
        bool locked = false;
        while (!(locked = lk.try_lock_for(std::chrono::milliseconds(10))) && !ch->awaiting_barrier.load() &&
               std::chrono::steady_clock::now() < deadline) {
        }
        if (!locked && ch->awaiting_barrier.load() && !ch->finalized && ch->initialized) {
            ch->finalizing.store(true);
            try {
                ch->write_line("cmd=finalize\n", deadline);
                // The barrier thread reads the ack (reply_to); should its barrier_out have come
                // first, it lets the mutex go and the ack is ours to read.
                left = false;
                while (!left && std::chrono::steady_clock::now() < deadline) {
                    if (ch->finalize_acked.load()) {
                        left = true;
                    } else if (lk.try_lock_for(std::chrono::milliseconds(1))) {
                        const Reply r = parse_reply(ch->read_line(deadline));
                        const std::string *cmd = r.find("cmd");
                        left = cmd != nullptr && *cmd == "finalize_ack";
                        break;
                    }
                }
            } catch (const PmiError &) {
                left = false;
            }
        } else if (!locked) {
            left = false;
        } else if (!ch->finalized && ch->initialized) {
            try {
                ch->finalize_locked(deadline);
            } catch (const PmiError &) {
                left = false;
            }
        }
    }
#ifdef PORTICO_HAVE_PMIX
    left = detail::pmix_leave_at_exit(deadline) && left;
#endif
    return left;
}

void SimplePmiClient::abort(int exit_code, const std::string &message) {
    // Only the write lock: another thread may be blocked in barrier() holding the channel mutex.
    std::string line = "cmd=abort exitcode=" + std::to_string(exit_code);
    std::string msg = escape_message(message);
    if (!msg.empty()) line += " message=" + msg;
    line += "\n";
    bool sent = false;
    try {
        ch_->write_line(line);
        sent = true;
    } catch (const PmiError &) {
    }
    if (!sent) log_error("aborting the job (exit code %d): %s", exit_code, message.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(exit_status_for(exit_code));
}

} // namespace portico::bootstrap
