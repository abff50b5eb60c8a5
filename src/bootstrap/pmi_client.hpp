// Client side of the simple PMI-1 wire protocol (the text protocol over the socket named by
// PMI_FD, as served by mpiexec/hydra and by portico-run). Portico's logical NIs use it to build the
// job's rank map; the test harness uses it for out-of-band barriers.
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

    int fd_;
    int rank_;
    int size_;
    int vallen_max_ = 1024;
    std::string kvsname_;
    std::mutex mutex_; // one request/response at a time; every call is thread-safe
    bool finalized_ = false;
};

} // namespace portico::bootstrap
