// Client side of the simple PMI-1 wire protocol (the text protocol over the socket named by
// PMI_FD, as served by mpiexec/hydra and by portico-run). Portico's logical NIs use it to build the
// job's rank map; the test harness uses it for out-of-band barriers.
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
// Lifetime: finalize() is idempotent and closes the connection after the launcher's ack. The
// destructor does NOT finalize implicitly (it never talks to the launcher); it only closes the
// socket. abort() tells the launcher to kill the whole job and then _exit()s the process.
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
    // Connects to the launcher named by PMI_FD/PMI_RANK/PMI_SIZE and performs the init handshake.
    // Returns nullptr when the process was not started by a PMI-1 launcher (no PMI_FD).
    // Throws PmiError when PMI_FD is set but the launcher does not speak the protocol.
    static std::unique_ptr<PmiClient> from_environment();

    ~PmiClient();
    PmiClient(const PmiClient &) = delete;
    PmiClient &operator=(const PmiClient &) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    const std::string &kvsname() const { return kvsname_; }
    int max_value_length() const { return vallen_max_; }

    // Key/value space of the job; values become visible to other ranks after barrier().
    void put(const std::string &key, const std::string &value);
    std::optional<std::string> get(const std::string &key);
    void barrier();
    void finalize();
    [[noreturn]] void abort(int exit_code, const std::string &message);

private:
    PmiClient(int fd, int rank, int size);
    std::string command(const std::string &line, const std::string &expected_cmd);
    // Helpers (callers hold the locks noted).
    void write_line(const std::string &line);   // write_mutex_ is taken inside
    std::string read_line();                    // mutex_ held
    void check_usable(const char *what) const;  // mutex_ held
    void check_key(const std::string &key) const;
    void check_value(const std::string &value) const;

    int fd_;
    int rank_;
    int size_;
    int vallen_max_ = 1023;  // longest value accepted: the launcher's vallen_max - 1
    int keylen_max_ = 63;    // longest key accepted: the launcher's keylen_max - 1
    int kvsname_max_ = 256;  // as the launcher reported it
    std::string kvsname_;
    std::string rbuf_;         // bytes received after the last complete line (mutex_)
    std::mutex mutex_; // one request/response at a time; every call is thread-safe
    std::mutex write_mutex_;   // one line at a time on the socket (abort() takes only this one)
    bool finalized_ = false;
};

} // namespace portico::bootstrap
