// SPDX-License-Identifier: BSD-3-Clause
// The job a multi-process test belongs to: rank, size and out-of-band collectives that do not
// go through the Portals engine under test (they use the launcher's PMI-1 key/value space).
#pragma once

#include <cstring>
#include <string>
#include <vector>

namespace portico::test {

class Job {
public:
    static Job &get(); // the job of this process; valid after run_all_tests() started

    int rank() const;
    int size() const;
    void barrier();
    // Every rank contributes one value; all ranks receive all values in rank order.
    std::vector<std::string> allgather(const std::string &mine);

    template <class T> std::vector<T> allgather_pod(const T &mine) {
        std::string blob(reinterpret_cast<const char *>(&mine), sizeof(T));
        std::vector<T> out;
        for (const std::string &s : allgather(blob)) {
            T v;
            std::memcpy(&v, s.data(), sizeof(T));
            out.push_back(v);
        }
        return out;
    }
};

// main() of every multi-process GoogleTest binary: joins the job, runs the tests on every rank in
// the same order, and ends the whole job at the first failure on any rank (so that a failed
// assertion on one rank never leaves its peers waiting in a barrier).
int run_all_tests(int argc, char **argv);

} // namespace portico::test
