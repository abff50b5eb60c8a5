// The benchmark's job: rank, size and out-of-band collectives over the launcher's PMI-1 key/value
// space (never through the Portals engine being measured).
//
// Without a PMI launcher (no PMI_FD) the job is a single process: rank 0 of 1.
//
// The engine opens its own PMI connection for logical NIs; the tests here use physical NIs only,
// so this is the only PMI client of the process.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace portico::bootstrap {
class PmiClient;
}

namespace portico::bench {

class Job {
public:
    Job(); // joins the job named by the environment; throws bench::Error on a broken launcher
    ~Job();
    Job(const Job &) = delete;
    Job &operator=(const Job &) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    bool launched() const { return pmi_ != nullptr; }
    // A short token naming this job (letters, digits, '_'), for names of shared resources.
    const std::string &id() const { return id_; }

    void barrier();
    // Every rank contributes one value (a non-empty token without spaces, at most ~1000
    // characters); all ranks receive all values in rank order.
    std::vector<std::string> allgather(const std::string &mine);

    // Ends the whole job (the launcher kills the other ranks) and exits with `code`.
    [[noreturn]] void abort(int code, const std::string &message);
    void finalize();

private:
    std::unique_ptr<bootstrap::PmiClient> pmi_;
    int rank_ = 0;
    int size_ = 1;
    unsigned long seq_ = 0;
    std::string id_;
};

} // namespace portico::bench
