// Output of results, on rank 0 only: a readable table, or (--json) one JSON object per line.
//
// JSON fields of a result line:
//   test, transport, procs, size (bytes), value (median over the repetitions), unit, better
//   ("lower"/"higher"), min, max (over the repetitions), reps, iters (timed iterations per
//   repetition), warmup (untimed iterations before the first repetition) and, when the test
//   measures a physical baseline, baseline, baseline_min, baseline_max, ratio (value / baseline,
//   medians), baseline_kind (what the baseline is).
#pragma once

#include <cstdint>
#include <string>

#include "bench.hpp"

namespace portico::bench {

struct Result {
    std::string test;
    std::string transport = "shm";
    int procs = 0;
    uint64_t size = 0;
    std::string unit = "us";
    std::string better = "lower";
    Stats value;
    bool has_baseline = false;
    Stats baseline;
    std::string baseline_kind;
    int reps = 0;
    uint64_t iters = 0;
    uint64_t warmup = 0;
};

class Reporter {
public:
    Reporter(bool json, bool printing) : json_(json), printing_(printing) {}

    // A test announces itself once before its results (table mode: a title and column heads).
    void begin(const std::string &title, const std::string &details);
    void result(const Result &r);
    void note(const std::string &line); // free text (table mode only; '#'-prefixed)

private:
    bool json_;
    bool printing_;
};

} // namespace portico::bench
