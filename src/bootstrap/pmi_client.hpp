// Client side of the simple PMI-1 wire protocol (the text protocol served by mpiexec/hydra and by
// portico-run). Portico's logical NIs use it to build the job's rank map; the test harness uses it
// for out-of-band barriers.
//
// Connection, as in MPICH's simple PMI client:
//   - PMI_FD=N (with PMI_RANK, PMI_SIZE): the launcher's socket is already open as fd N;
//   - else PMI_PORT=host:port and PMI_ID=R: connect over TCP and identify with
//     "cmd=initack pmiid=R"; the launcher answers "cmd=initack" (rc=0 if present) and then
//     "cmd=set size=N", "cmd=set rank=R", "cmd=set debug=D", which give the rank and size
//     (PMI_RANK/PMI_SIZE, when also set, must agree). portico-run starts remote ranks this way,
//     hydra does with -pmi-port.
// Every PmiClient of a process shares one connection (a second from_environment() while the first
// client lives reuses it: a TCP launcher accepts one connection per rank).
//
// Wire-format limits (they hold under every PMI-1 launcher, so the client enforces them and throws
// PmiError instead of sending something a launcher would mangle):
//   - keys: 1..keylen_max-1 characters (63 under portico-run and hydra, whose keylen_max=64 is a C
//     buffer size including the NUL), no space, newline, CR, NUL or backslash;
//   - values: 1..max_value_length() characters (vallen_max-1: 1023 under portico-run and hydra;
//     hydra silently truncates longer ones), no space, newline, CR, NUL or backslash. Empty values
//     are rejected (MPICH >= 4's parser cannot carry them). Binary data must be encoded (e.g. hex)
//     by the caller.
// A key put twice keeps the last value (portico-run; older hydra rejects duplicates).
//
// Lifetime: finalize() is idempotent and closes the connection after the launcher's ack (for every
// client sharing it). The destructor does NOT finalize implicitly (it never talks to the
// launcher); the last client sharing the connection closes the socket. abort() tells the launcher
// to kill the whole job and then _exit()s the process.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

namespace portico::bootstrap {

class PmiError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class PmiClient {
public:
    // Connects to the launcher named by PMI_FD/PMI_RANK/PMI_SIZE or PMI_PORT/PMI_ID and performs
    // the init handshake. Returns nullptr when the process was not started by a PMI-1 launcher
    // (neither PMI_FD nor PMI_PORT). Throws PmiError when the variables are wrong, the launcher
    // cannot be reached or refuses us, or does not speak the protocol.
    static std::unique_ptr<PmiClient> from_environment();

    ~PmiClient();
    PmiClient(const PmiClient &) = delete;
    PmiClient &operator=(const PmiClient &) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    const std::string &kvsname() const { return kvsname_; }
    int max_value_length() const { return vallen_max_; }

    // The connection to the launcher (a stream socket, Unix or TCP), for watching the launcher's
    // liveness: poll/epoll it for POLLRDHUP|POLLHUP (EPOLLRDHUP|EPOLLHUP) only. A hang-up means
    // the launcher is gone (it died, or ended the job: portico-run closes remote ranks'
    // connections when it terminates a job) and the process should exit. Never read, write or
    // close it, and do not wait for POLLIN (replies arrive on it). Valid until finalize() or the
    // destruction of the last client sharing it; -1 after finalize(). Stop watching before
    // either (or watch a dup() of your own, which keeps the socket open until you close it).
    int fd() const;
    // True once any client of the process has begun finalize(): a hang-up is then expected (some
    // launchers close right after finalize_ack), not a sign that the launcher died.
    bool finalizing() const;

    // Key/value space of the job; values become visible to other ranks after barrier().
    void put(const std::string &key, const std::string &value);
    std::optional<std::string> get(const std::string &key);
    void barrier();
    void finalize();
    [[noreturn]] void abort(int exit_code, const std::string &message);

    // The connection shared by the clients of a process (defined in pmi_client.cpp).
    struct Channel;

private:
    explicit PmiClient(std::shared_ptr<Channel> channel);
    std::string command(const std::string &line, const std::string &expected_cmd);
    void check_usable(const char *what) const; // channel mutex held
    void check_key(const std::string &key) const;
    void check_value(const std::string &value) const;

    std::shared_ptr<Channel> ch_;
    int rank_;
    int size_;
    int vallen_max_ = 1023;  // longest value accepted: the launcher's vallen_max - 1
    int keylen_max_ = 63;    // longest key accepted: the launcher's keylen_max - 1
    int kvsname_max_ = 256;  // as the launcher reported it
    std::string kvsname_;
};

} // namespace portico::bootstrap
