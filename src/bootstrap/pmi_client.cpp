// Simple PMI-1 client: newline-terminated "key=value" lines over the socket named by PMI_FD.
//
// Request/response pairs used (as spoken by MPICH's simple PMI client and served by hydra):
//   cmd=init pmi_version=1 pmi_subversion=1   -> cmd=response_to_init ... rc=0
//   cmd=get_maxes                             -> cmd=maxes kvsname_max=K keylen_max=L vallen_max=V
//   cmd=get_my_kvsname                        -> cmd=my_kvsname kvsname=NAME
//   cmd=put kvsname=NAME key=K value=V        -> cmd=put_result rc=0 msg=success
//   cmd=get kvsname=NAME key=K                -> cmd=get_result rc=0 msg=success value=V  (rc!=0: absent)
//   cmd=barrier_in                            -> cmd=barrier_out
//   cmd=finalize                              -> cmd=finalize_ack
//   cmd=abort exitcode=N message=TEXT         (no response; the launcher kills the job)
#include "bootstrap/pmi_client.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::bootstrap {
namespace {

// Longest response line accepted; anything longer means we are not talking to a PMI launcher.
constexpr std::size_t kMaxLine = std::size_t{1} << 20;
// MPICH's PMI servers read request lines into 1024-byte buffers; keep abort messages well below.
constexpr std::size_t kMaxAbortMessage = 768;

struct Reply {
    std::vector<std::pair<std::string, std::string>> fields;

    const std::string *find(std::string_view key) const {
        for (const auto &[k, v] : fields)
            if (k == key)
                return &v;
        return nullptr;
    }
};

// Splits a response line into its space-separated key=value tokens (the value is everything
// after the first '=' of the token).
Reply parse_reply(std::string_view line) {
    Reply r;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ')
            ++i;
        if (i >= line.size())
            break;
        std::size_t end = line.find(' ', i);
        if (end == std::string_view::npos)
            end = line.size();
        std::string_view tok = line.substr(i, end - i);
        std::size_t eq = tok.find('=');
        if (eq == std::string_view::npos)
            r.fields.emplace_back(std::string(tok), std::string());
        else
            r.fields.emplace_back(std::string(tok.substr(0, eq)), std::string(tok.substr(eq + 1)));
        i = end;
    }
    return r;
}

bool parse_long(const char *s, long lo, long hi, long &out) {
    if (s == nullptr || *s == '\0')
        return false;
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return false;
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
    if (s.size() > max)
        out += "...";
    return out;
}

std::string trim_newline(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return std::string(s);
}

// The character that makes a key or value impossible to carry, or 0.
char forbidden_char(std::string_view s) {
    for (char c : s)
        if (c == ' ' || c == '\n' || c == '\r' || c == '\0' || c == '\\')
            return c;
    return 0;
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

// The process exit status an abort exit code maps to (same rule as portico-run's).
int exit_status_for(int code) {
    if (code >= 0 && code <= 255)
        return code;
    int s = code & 0xff;
    return s == 0 ? 1 : s;
}

} // namespace

PmiClient::PmiClient(int fd, int rank, int size) : fd_(fd), rank_(rank), size_(size) {}

PmiClient::~PmiClient() {
    std::lock_guard<std::mutex> lk(write_mutex_);
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

std::unique_ptr<PmiClient> PmiClient::from_environment() {
    const char *fd_s = std::getenv("PMI_FD");
    if (fd_s == nullptr || *fd_s == '\0')
        return nullptr;

    long fd = -1, rank = -1, size = -1;
    if (!parse_long(fd_s, 0, INT_MAX, fd))
        throw PmiError(std::string("PMI: PMI_FD='") + printable(fd_s) +
                       "' is not a file descriptor number");
    const char *rank_s = std::getenv("PMI_RANK");
    const char *size_s = std::getenv("PMI_SIZE");
    if (size_s == nullptr)
        throw PmiError("PMI: PMI_FD is set but PMI_SIZE is not");
    if (rank_s == nullptr)
        throw PmiError("PMI: PMI_FD is set but PMI_RANK is not");
    if (!parse_long(size_s, 1, INT_MAX, size))
        throw PmiError(std::string("PMI: PMI_SIZE='") + printable(size_s) +
                       "' is not a positive integer");
    if (!parse_long(rank_s, 0, size - 1, rank))
        throw PmiError(std::string("PMI: PMI_RANK='") + printable(rank_s) +
                       "' is not an integer in [0, PMI_SIZE)");
    int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
    if (flags < 0)
        throw PmiError("PMI: PMI_FD=" + std::to_string(fd) +
                       " is not an open file descriptor: " + std::strerror(errno));
    // Programs this rank starts must not inherit (and keep open) the launcher connection.
    ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);

    std::unique_ptr<PmiClient> c(
        new PmiClient(static_cast<int>(fd), static_cast<int>(rank), static_cast<int>(size)));
    std::lock_guard<std::mutex> lk(c->mutex_);

    std::string resp = c->command("cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init");
    Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    if (rc == nullptr || *rc != "0")
        throw PmiError("PMI: the launcher refused the PMI-1.1 init handshake: '" + printable(resp) +
                       "'");

    resp = c->command("cmd=get_maxes\n", "maxes");
    r = parse_reply(resp);
    auto get_max = [&](const char *key) {
        const std::string *v = r.find(key);
        long out = 0;
        if (v == nullptr || !parse_long(v->c_str(), 1, INT_MAX, out))
            throw PmiError(std::string("PMI: bad or missing ") + key + " in the launcher's reply '" +
                           printable(resp) + "'");
        return static_cast<int>(out);
    };
    // The maxes are C buffer sizes (MPICH's PMI_KVS_Get_*_length_max), terminating NUL included:
    // hydra keeps only vallen_max-1 characters of a value.
    c->kvsname_max_ = get_max("kvsname_max");
    c->keylen_max_ = get_max("keylen_max") - 1;
    c->vallen_max_ = get_max("vallen_max") - 1;
    if (c->keylen_max_ < 1 || c->vallen_max_ < 1)
        throw PmiError("PMI: unusable limits in the launcher's reply '" + printable(resp) + "'");

    resp = c->command("cmd=get_my_kvsname\n", "my_kvsname");
    r = parse_reply(resp);
    const std::string *name = r.find("kvsname");
    if (name == nullptr || name->empty())
        throw PmiError("PMI: no kvsname in the launcher's reply '" + printable(resp) + "'");
    c->kvsname_ = *name;
    return c;
}

void PmiClient::write_line(const std::string &line) {
    std::lock_guard<std::mutex> lk(write_mutex_);
    if (fd_ < 0)
        throw PmiError("PMI: the connection to the launcher is closed");
    const char *p = line.data();
    std::size_t left = line.size();
    bool use_write = false;
    while (left > 0) {
        ssize_t n = use_write ? ::write(fd_, p, left) : ::send(fd_, p, left, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            left -= static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
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
        throw PmiError("PMI: cannot send '" + printable(trim_newline(line)) +
                       "' to the launcher: " + std::strerror(e));
    }
}

std::string PmiClient::read_line() {
    for (;;) {
        std::size_t nl = rbuf_.find('\n');
        if (nl != std::string::npos) {
            std::string line = rbuf_.substr(0, nl);
            rbuf_.erase(0, nl + 1);
            if (!line.empty() && line.back() == '\r')
                line.pop_back();
            return line;
        }
        if (rbuf_.size() > kMaxLine)
            throw PmiError("PMI: the launcher sent a line longer than " +
                           std::to_string(kMaxLine) + " bytes");
        char buf[4096];
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) {
            rbuf_.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n == 0)
            throw PmiError("PMI: the launcher closed the connection (it died or is tearing "
                           "the job down)");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            pollfd pfd{fd_, POLLIN, 0};
            ::poll(&pfd, 1, -1);
            continue;
        }
        throw PmiError(std::string("PMI: cannot read from the launcher: ") + std::strerror(errno));
    }
}

std::string PmiClient::command(const std::string &line, const std::string &expected_cmd) {
    write_line(line);
    std::string resp = read_line();
    Reply r = parse_reply(resp);
    const std::string *cmd = r.find("cmd");
    if (cmd == nullptr || *cmd != expected_cmd)
        throw PmiError("PMI: sent '" + printable(trim_newline(line)) + "', expected cmd=" +
                       expected_cmd + " but the launcher answered '" + printable(resp) + "'");
    return resp;
}

void PmiClient::check_usable(const char *what) const {
    if (finalized_)
        throw PmiError(std::string("PMI: ") + what + " after finalize()");
}

void PmiClient::check_key(const std::string &key) const {
    if (key.empty())
        throw PmiError("PMI: empty key");
    if (key.size() > static_cast<std::size_t>(keylen_max_))
        throw PmiError("PMI: key '" + printable(key) + "' is " + std::to_string(key.size()) +
                       " characters long; the launcher allows at most " +
                       std::to_string(keylen_max_) + " (keylen_max - 1)");
    if (char c = forbidden_char(key); c != 0 || key.find('\0') != std::string::npos)
        throw PmiError("PMI: key '" + printable(key) + "' contains " + char_name(c) +
                       ", which the PMI-1 wire protocol cannot carry");
}

void PmiClient::check_value(const std::string &value) const {
    if (value.empty())
        throw PmiError("PMI: empty values cannot be carried portably by PMI-1 (encode them)");
    if (value.size() > static_cast<std::size_t>(vallen_max_))
        throw PmiError("PMI: value of " + std::to_string(value.size()) +
                       " characters exceeds the launcher's limit of " +
                       std::to_string(vallen_max_) + " (max_value_length(): vallen_max - 1)");
    if (char c = forbidden_char(value); c != 0 || value.find('\0') != std::string::npos)
        throw PmiError("PMI: value '" + printable(value, 40) + "' contains " + char_name(c) +
                       ", which the PMI-1 wire protocol cannot carry (encode it, e.g. as hex)");
}

void PmiClient::put(const std::string &key, const std::string &value) {
    check_key(key);
    check_value(value);
    std::lock_guard<std::mutex> lk(mutex_);
    check_usable("put");
    std::string resp =
        command("cmd=put kvsname=" + kvsname_ + " key=" + key + " value=" + value + "\n",
                "put_result");
    Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    if (rc != nullptr && *rc != "0") {
        const std::string *msg = r.find("msg");
        throw PmiError("PMI: put of key '" + printable(key) + "' failed: " +
                       (msg != nullptr ? printable(*msg) : std::string("rc=") + printable(*rc)));
    }
}

std::optional<std::string> PmiClient::get(const std::string &key) {
    check_key(key);
    std::lock_guard<std::mutex> lk(mutex_);
    check_usable("get");
    std::string resp = command("cmd=get kvsname=" + kvsname_ + " key=" + key + "\n", "get_result");
    Reply r = parse_reply(resp);
    const std::string *rc = r.find("rc");
    const std::string *found = r.find("found");
    if ((rc != nullptr && *rc != "0") || (found != nullptr && *found == "FALSE"))
        return std::nullopt;
    const std::string *value = r.find("value");
    if (value == nullptr)
        throw PmiError("PMI: no value in the launcher's reply '" + printable(resp) + "'");
    return *value;
}

void PmiClient::barrier() {
    std::lock_guard<std::mutex> lk(mutex_);
    check_usable("barrier");
    command("cmd=barrier_in\n", "barrier_out");
}

void PmiClient::finalize() {
    std::lock_guard<std::mutex> lk(mutex_);
    if (finalized_)
        return;
    command("cmd=finalize\n", "finalize_ack");
    finalized_ = true;
    std::lock_guard<std::mutex> wl(write_mutex_);
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void PmiClient::abort(int exit_code, const std::string &message) {
    // Only the write lock: another thread may be blocked in barrier() holding mutex_.
    std::string line = "cmd=abort exitcode=" + std::to_string(exit_code);
    std::string msg = escape_message(message);
    if (!msg.empty())
        line += " message=" + msg;
    line += "\n";
    bool sent = false;
    try {
        write_line(line);
        sent = true;
    } catch (const PmiError &) {
    }
    if (!sent)
        std::fprintf(stderr, "portico: rank %d aborting the job (exit code %d): %s\n", rank_,
                     exit_code, message.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(exit_status_for(exit_code));
}

} // namespace portico::bootstrap
