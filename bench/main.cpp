// SPDX-License-Identifier: BSD-3-Clause
// portico-bench: Portico's benchmarks, run under the launcher:
//
//   portico-run -n 2 portico-bench put_lat [--json] [--iters N] [--reps R] [--short] [--plot FILE.svg]
//   portico-bench --plot FILE.svg --from a.json [--from b.json ...]     (no launcher: plot only)
//
// Rank 0 prints the results. Exit status 0 on success; 1 (and the whole job ended, with a message
// naming the rank and the failed call) on any error; 2 on a bad command line.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "bench.hpp"
#include "job.hpp"
#include "net.hpp"
#include "plot.hpp"
#include "report.hpp"

#ifndef PORTICO_VERSION
#define PORTICO_VERSION "0.0.0"
#endif

namespace {

using namespace portico::bench;

// Before the job is joined, only rank 0 (or a process without a launcher) speaks.
bool quiet_rank() {
    const char *r = std::getenv("PMI_RANK");
    return r && *r && std::strcmp(r, "0") != 0;
}

void usage(FILE *out) {
    std::fprintf(out,
                 "usage: portico-run -n N portico-bench TEST [--json] [--iters N] [--reps R] [--short] [--verbose]\n"
                 "                                           [--plot FILE.svg]\n"
                 "       portico-bench --plot FILE.svg --from RESULTS.json [--from RESULTS.json ...]\n"
                 "       portico-bench --list | --help | --version\n"
                 "\n"
                 "Measures Portico (Portals 4.3) performance; rank 0 prints the results.\n"
                 "  --json       one JSON object per result line instead of a table\n"
                 "  --iters N    timed iterations per repetition (default: the test's)\n"
                 "  --reps R     repetitions; medians, minima and maxima are taken over them\n"
                 "  --short      a few thousand iterations only (for CI)\n"
                 "  --sizes L    message sizes of put_lat, get_lat, put_bw, get_bw: a comma-separated list,\n"
                 "               K/M suffixes (powers of 1024), e.g. --sizes 8,64K,4M\n"
                 "  --verbose    print every repetition's numbers on stderr\n"
                 "  --plot F     draw the results (value and baselines against the size) into the SVG file F\n"
                 "  --from J     with --plot: draw the --json output in file J instead of running a test\n"
                 "               (repeatable: several tests in one figure)\n"
                 "  --list       list the tests\n"
                 "PORTICO_TRANSPORT (auto, shm, tcp) selects the transport and the baselines (docs/PERFORMANCE.md).\n"
                 "\ntests:\n");
    for (const TestInfo &t : all_tests()) {
        char procs[32];
        if (t.procs > 0)
            std::snprintf(procs, sizeof procs, "-n %d", t.procs);
        else
            std::snprintf(procs, sizeof procs, "-n >=%d", t.min_procs);
        std::fprintf(out, "  %-17s (%s) %s\n", t.name, procs, t.summary);
    }
}

[[noreturn]] void bad_usage(const std::string &msg) {
    if (!quiet_rank()) {
        std::fprintf(stderr, "portico-bench: %s\n", msg.c_str());
        std::fprintf(stderr, "Try 'portico-bench --help' for more information.\n");
    }
    std::exit(2);
}

uint64_t parse_count(const std::string &opt, const std::string &v, uint64_t max) {
    if (v.empty() || v[0] == '-' || v[0] == '+') bad_usage(opt + " needs a positive integer, not '" + v + "'");
    errno = 0;
    char *end = nullptr;
    unsigned long long x = std::strtoull(v.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || x == 0 || x > max)
        bad_usage(opt + " needs an integer in 1.." + std::to_string(max) + ", not '" + v + "'");
    return x;
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        std::string value;
        bool has_value = false;
        if (a.rfind("--", 0) == 0) {
            const size_t eq = a.find('=');
            if (eq != std::string::npos) {
                value = a.substr(eq + 1);
                a = a.substr(0, eq);
                has_value = true;
            }
        }
        auto take_value = [&]() -> std::string {
            if (has_value) return value;
            if (i + 1 >= argc) bad_usage(a + " needs a value");
            return argv[++i];
        };
        auto no_value = [&] {
            if (has_value) bad_usage(a + " takes no value");
        };
        if (a == "--help" || a == "-h") {
            if (!quiet_rank()) usage(stdout);
            std::exit(0);
        } else if (a == "--version") {
            if (!quiet_rank()) std::printf("portico-bench (Portico) %s\n", PORTICO_VERSION);
            std::exit(0);
        } else if (a == "--list") {
            if (!quiet_rank())
                for (const TestInfo &t : all_tests()) std::printf("%s\n", t.name);
            std::exit(0);
        } else if (a == "--json") {
            no_value();
            o.json = true;
        } else if (a == "--short") {
            no_value();
            o.short_mode = true;
        } else if (a == "--verbose" || a == "-v") {
            no_value();
            o.verbose = true;
        } else if (a == "--iters") {
            o.iters = parse_count(a, take_value(), 1ull << 40);
        } else if (a == "--sizes") {
            const std::string list = take_value();
            size_t pos = 0;
            while (pos <= list.size()) {
                const size_t comma = std::min(list.find(',', pos), list.size());
                std::string item = list.substr(pos, comma - pos);
                uint64_t mult = 1;
                if (!item.empty() && (item.back() == 'K' || item.back() == 'k'))
                    mult = 1024;
                else if (!item.empty() && (item.back() == 'M' || item.back() == 'm'))
                    mult = 1024 * 1024;
                if (mult != 1) item.pop_back();
                o.sizes.push_back(parse_count("--sizes", item, (1ull << 40) / mult) * mult);
                pos = comma + 1;
            }
        } else if (a == "--plot") {
            o.plot = take_value();
            if (o.plot.empty()) bad_usage("--plot needs a file name");
        } else if (a == "--from") {
            o.from.push_back(take_value());
        } else if (a == "--reps") {
            o.reps = static_cast<int>(parse_count(a, take_value(), 100000));
        } else if (!a.empty() && a[0] == '-') {
            bad_usage("unknown option '" + a + "'");
        } else if (o.test.empty()) {
            o.test = a;
        } else {
            bad_usage("one test at a time ('" + o.test + "' and '" + a + "')");
        }
    }
    if (!o.from.empty()) {
        if (o.plot.empty()) bad_usage("--from needs --plot FILE.svg");
        if (!o.test.empty()) bad_usage("--from plots earlier results; it runs no test ('" + o.test + "')");
        return o;
    }
    if (o.test.empty()) bad_usage("no test named (try --list)");
    if (!find_test(o.test)) bad_usage("no test named '" + o.test + "' (try --list)");
    return o;
}

} // namespace

// --plot with --from: draw earlier results; no job.
int plot_only(const Options &opt) {
    try {
        std::vector<Result> all;
        for (const std::string &f : opt.from) {
            auto rs = read_json_results(f);
            all.insert(all.end(), rs.begin(), rs.end());
        }
        write_svg(opt.plot, all);
        std::printf("%zu results drawn into %s\n", all.size(), opt.plot.c_str());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "portico-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const Options opt = parse(argc, argv);
    if (!opt.from.empty()) return plot_only(opt);
    const TestInfo &test = *find_test(opt.test);

    std::unique_ptr<Job> job;
    try {
        job = std::make_unique<Job>();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "portico-bench: %s\n", e.what());
        return 1;
    }
    const bool procs_ok = test.procs > 0 ? job->size() == test.procs : job->size() >= test.min_procs;
    if (!procs_ok) {
        if (job->rank() != 0) {
            // Rank 0 explains and ends the job; this barrier never completes.
            try {
                job->barrier();
            } catch (const std::exception &) {
            }
            return 2;
        }
        const int want = test.procs > 0 ? test.procs : test.min_procs;
        std::fprintf(stderr,
                     "portico-bench: %s needs %s %d processes, not %d; run it as\n"
                     "    portico-run -n %d portico-bench %s\n",
                     test.name, test.procs > 0 ? "exactly" : "at least", want, job->size(), want, test.name);
        job->abort(2, std::string(test.name) + " needs " + std::to_string(want) + " processes");
    }

    std::string transport;
    try {
        transport = detect_transport(*job);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "portico-bench: rank %d: %s\n", job->rank(), e.what());
        job->abort(2, e.what());
    }
    Reporter report(opt.json, job->rank() == 0, transport);
    Context ctx{opt, *job, report, transport};
    try {
        test.run(ctx);
        if (!opt.plot.empty() && job->rank() == 0) write_svg(opt.plot, report.results());
        job->finalize();
    } catch (const std::exception &e) {
        const std::string msg = std::string(test.name) + ": " + e.what();
        std::fprintf(stderr, "portico-bench: rank %d: %s\n", job->rank(), msg.c_str());
        job->abort(1, msg);
    }
    return 0;
}
