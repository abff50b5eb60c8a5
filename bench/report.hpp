// SPDX-License-Identifier: BSD-3-Clause
// Output of results, on rank 0 only: a readable table, or (--json) one JSON object per line.
//
// JSON fields of a result line:
//   test, transport ("shm"/"tcp"), procs, size (bytes), value (median over the repetitions), unit
//   ("us", "MB/s" = 10^6 bytes/s, "Mmsg/s" = 10^6 messages/s, "%" = of one core), better
//   ("lower"/"higher": which way value and ratio improve), min, max (over the repetitions), reps,
//   iters (timed iterations per repetition), warmup (untimed iterations before the first
//   repetition), baseline, baseline_min, baseline_max, ratio (value / baseline, medians),
//   baseline_kind (what the baseline is) and, for the bandwidth tests, a second baseline:
//   baseline2, baseline2_min, baseline2_max, ratio2, baseline2_kind (memcpy of 64 MiB, out of cache).
//   Tests that measure several things under one name add `variant` (after `test`), e.g. the UPC
//   tests' "memget/portals": the operation and the path it took.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench.hpp"

namespace portico::bench {

struct Result {
    std::string test;
    std::string variant;           // empty: no JSON field
    std::string transport = "shm"; // the Reporter sets it to the job's transport
    int procs = 0;
    uint64_t size = 0;
    std::string unit = "us";
    std::string better = "lower";
    Stats value;
    bool has_baseline = false;
    Stats baseline;
    std::string baseline_kind;
    bool has_baseline2 = false;
    Stats baseline2;
    std::string baseline2_kind;
    int reps = 0;
    uint64_t iters = 0;
    uint64_t warmup = 0;

    double ratio() const;  // value / baseline (medians); NaN without a baseline
    double ratio2() const; // value / baseline2
    // The second reference of the same run (ratio2), from its repetitions' values or their stats.
    void set_baseline2(const std::vector<double> &values, std::string kind);
    void set_baseline2(const Stats &stats, std::string kind);

    // A result and its baseline from the repetitions' values (microseconds, lower is better: the
    // caller changes unit and better for rates and bandwidths).
    static Result of(std::string test, int procs, uint64_t size, std::vector<double> value,
                     std::vector<double> baseline, std::string baseline_kind, int reps, uint64_t iters,
                     uint64_t warmup = 0);
};

class Reporter {
public:
    Reporter(bool json, bool printing, std::string transport = "shm")
        : json_(json), printing_(printing), transport_(std::move(transport)) {}

    // A test announces itself once before its results (table mode: a title and column heads;
    // `second` names the second baseline's column when the results have one).
    void begin(const std::string &title, const std::string &details, const std::string &second = "");
    void result(Result r);
    void note(const std::string &line); // free text (table mode only; '#'-prefixed)

    const std::vector<Result> &results() const { return results_; }
    const std::string &transport() const { return transport_; }

private:
    bool json_;
    bool printing_;
    std::string transport_;
    std::string second_;
    std::vector<Result> results_;
};

// One result as a JSON object (one line, no newline).
std::string to_json(const Result &r);

} // namespace portico::bench
