// SPDX-License-Identifier: BSD-3-Clause
// The benchmark's job: rank, size and out-of-band collectives through Portico's job service
// (portico_runtime.h), never through the Portals engine being measured.
//
// Without a launcher the job is a single process: rank 0 of 1.
#pragma once

#include <string>
#include <vector>

namespace portico::bench {

class Job {
public:
    Job(); // joins the job named by the environment; throws bench::Error on a broken launcher
    Job(const Job &) = delete;
    Job &operator=(const Job &) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    bool launched() const { return launched_; }
    // A short token naming this job (letters, digits, '_'), for names of shared resources.
    const std::string &id() const { return id_; }

    void barrier();
    // Every rank contributes one value (any bytes); all ranks receive all values in rank order.
    std::vector<std::string> allgather(const std::string &mine);

    // Ends the whole job (the launcher kills the other ranks) and exits with `code`.
    [[noreturn]] void abort(int code, const std::string &message);
    void finalize();

private:
    int rank_ = 0;
    int size_ = 1;
    bool launched_ = false;
    std::string id_;
};

} // namespace portico::bench
