// portico-bench: the framework every benchmark test plugs into.
//
// A test is one source file that registers itself (PORTICO_BENCH_TEST below) with a name, a
// one-line summary, the number of processes it needs and a run function. main.cpp parses the
// command line, joins the job (PMI), finds the test and calls it on every rank; the test measures
// and hands its results to the Reporter, which prints them on rank 0 (table or JSON lines).
//
// Errors: a test throws bench::Error (or any std::exception) with a message that names the failed
// call; main() prints it with the rank and ends the whole job with a non-zero exit code.
#pragma once

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
    bool short_mode = false; // a few thousand iterations only (CI)
    uint64_t iters = 0;      // timed iterations per repetition
    int reps = 0;            // repetitions (medians are taken over them)
    bool verbose = false;    // every repetition's numbers on stderr (rank 0)
};

struct Context {
    const Options &opt;
    Job &job;
    Reporter &report;
};

struct TestInfo {
    const char *name;
    const char *summary;
    int procs; // exact number of processes the test needs (0: any)
    void (*run)(Context &);
};

// Registry. register_test() is called from static initialisers (one per test file).
bool register_test(const TestInfo &t);
const std::vector<TestInfo> &all_tests();
const TestInfo *find_test(const std::string &name);

#define PORTICO_BENCH_CONCAT2(a, b) a##b
#define PORTICO_BENCH_CONCAT(a, b) PORTICO_BENCH_CONCAT2(a, b)
// PORTICO_BENCH_TEST(put_lat, "summary", 2, run_function)
#define PORTICO_BENCH_TEST(name, summary, procs, fn)                                                                   \
    [[maybe_unused]] static const bool PORTICO_BENCH_CONCAT(registered_, name) =                                        \
        ::portico::bench::register_test({#name, summary, procs, fn})

// Median, minimum and maximum of a set of measurements.
struct Stats {
    double median = 0, min = 0, max = 0;
    static Stats of(std::vector<double> v);
};

} // namespace portico::bench
