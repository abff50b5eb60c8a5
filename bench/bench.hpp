// SPDX-License-Identifier: BSD-3-Clause
// portico-bench: the framework every benchmark test plugs into.
//
// A test is one source file that registers itself (PORTICO_BENCH_TEST below) with a name, a
// one-line summary, the number of processes it needs and a run function. main.cpp parses the
// command line, joins the job (PMI), finds the test and calls it on every rank; the test measures
// and hands its results to the Reporter, which prints them on rank 0 (table or JSON lines) and,
// with --plot, draws them (plot.hpp).
//
// Errors: a test throws bench::Error (or any std::exception) with a message that names the failed
// call; main() prints it with the rank and ends the whole job with a non-zero exit code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace portico::bench {

class Job;
class Reporter;

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Command-line options shared by all tests. 0 means "the test's default".
struct Options {
    std::string test;
    bool json = false;
    bool short_mode = false;       // a few thousand iterations only (CI)
    uint64_t iters = 0;            // timed iterations per repetition
    int reps = 0;                  // repetitions (medians are taken over them)
    bool verbose = false;          // every repetition's numbers on stderr (rank 0)
    std::vector<uint64_t> sizes;   // --sizes: message sizes of the tests that sweep sizes
    std::string plot;              // --plot FILE.svg: draw the results
    std::vector<std::string> from; // --from FILE.json: plot earlier --json output, run nothing
};

struct Context {
    const Options &opt;
    Job &job;
    Reporter &report;
    std::string transport; // "shm" or "tcp" (net.hpp)
};

struct TestInfo {
    const char *name;
    const char *summary;
    int procs; // exact number of processes the test needs (0: any, at least min_procs)
    void (*run)(Context &);
    int min_procs = 1;
};

// Registry. register_test() is called from static initialisers (one per test file).
bool register_test(const TestInfo &t);
const std::vector<TestInfo> &all_tests();
const TestInfo *find_test(const std::string &name);

#define PORTICO_BENCH_CONCAT2(a, b) a##b
#define PORTICO_BENCH_CONCAT(a, b) PORTICO_BENCH_CONCAT2(a, b)
// PORTICO_BENCH_TEST(put_lat, "summary", 2, run_function[, min_procs])
#define PORTICO_BENCH_TEST(name, summary, procs, ...)                                                                  \
    [[maybe_unused]] static const bool PORTICO_BENCH_CONCAT(registered_, name) =                                       \
        ::portico::bench::register_test({#name, summary, procs, __VA_ARGS__})

// Median, minimum and maximum of a set of measurements.
struct Stats {
    double median = 0, min = 0, max = 0;
    static Stats of(std::vector<double> v);
};

// Iterations and repetitions of a test: the command line's, else the test's defaults (full or
// --short). Warm-up: a tenth of the iterations, at least 100.
struct Plan {
    uint64_t iters;
    int reps;
    uint64_t warmup;
    static Plan of(const Options &o, uint64_t full_iters, uint64_t short_iters, int full_reps = 7, int short_reps = 3) {
        Plan p;
        p.iters = o.iters ? o.iters : o.short_mode ? short_iters : full_iters;
        p.reps = o.reps ? o.reps : o.short_mode ? short_reps : full_reps;
        p.warmup = std::max<uint64_t>(100, p.iters / 10);
        return p;
    }
};

// The message sizes a sweeping test runs: --sizes if given (each must lie in [lo, hi], else
// bench::Error), else the test's defaults (full or --short).
std::vector<size_t> sizes_of(const Options &o, const std::vector<size_t> &full, const std::vector<size_t> &short_sizes,
                             size_t lo, size_t hi);

// The values of PORTICO_* tunables that are set, "NAME=value ..." (for the table's notes).
std::string env_note();

// The data check of the tests that move buffers: the sender writes a value into the first and the
// last 8 bytes of a message of `size` >= 8 bytes (write_stamp), the receiver compares both
// (check_stamp throws bench::Error naming `what` and the size).
void write_stamp(unsigned char *buf, size_t size, uint64_t stamp);
void check_stamp(const unsigned char *buf, size_t size, uint64_t stamp, const std::string &what);

} // namespace portico::bench
