// portico-run: starts N processes of a program on this machine and serves them the simple PMI-1
// wire protocol. Command-line handling only; see job.cpp and pmi_server.cpp.
#include "job.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#ifndef PORTICO_VERSION
#define PORTICO_VERSION "0.0.0"
#endif

namespace {

using portico::run::kExitUsage;
using portico::run::kMaxRanks;

constexpr double kMaxTimeout = 1e9; // seconds (~31 years)

void usage(std::FILE *out) {
    std::fprintf(out,
                 "Usage: portico-run [-n N] [--timeout S] [--] PROGRAM [ARGS...]\n"
                 "\n"
                 "Starts N processes (ranks) of PROGRAM on this machine and serves them the simple\n"
                 "PMI-1 wire protocol (PMI_FD/PMI_RANK/PMI_SIZE), so that any PMI-1 client runs\n"
                 "under it.\n"
                 "\n"
                 "Options:\n"
                 "  -n N, -np N      number of ranks, 1..%d (default 1)\n"
                 "  --timeout S      kill the job after S seconds (decimal; 0 = no limit);\n"
                 "                   the default comes from PORTICO_TIMEOUT when it is set\n"
                 "  --help           show this help and exit\n"
                 "  --version        show the version and exit\n"
                 "  --               end of options\n"
                 "\n"
                 "Each rank gets PMI_FD, PMI_RANK, PMI_SIZE, PMI_JOBID, PORTICO_JOB_ID (64-bit hex),\n"
                 "PORTICO_JOB_SECRET (128-bit hex), PORTICO_LOCAL_RANK, PORTICO_LOCAL_SIZE,\n"
                 "MPI_LOCALRANKID and MPI_LOCALNRANKS. Rank 0 inherits stdin, the others read\n"
                 "/dev/null; stdout and stderr are inherited. All ranks share one process group.\n"
                 "\n"
                 "If a rank exits non-zero or is killed by a signal while others still run, the\n"
                 "others are terminated (SIGTERM, then SIGKILL after 2 s).\n"
                 "\n"
                 "Exit status:\n"
                 "  the worst rank's: its exit code, or 128+S for a rank killed by signal S\n"
                 "    (ranks killed by portico-run itself do not count)\n"
                 "  the abort code    when a rank calls PMI abort (codes outside 0..255 are\n"
                 "                    taken modulo 256, 0 then becoming 1)\n"
                 "  1                 ranks wait in a PMI barrier that an exited rank can\n"
                 "                    never enter\n"
                 "  2                 bad command line\n"
                 "  124               the job timed out\n"
                 "  125               portico-run itself failed to start the job\n"
                 "  126               PROGRAM cannot be executed\n"
                 "  127               PROGRAM not found\n"
                 "  128+S             portico-run received signal S (SIGINT, SIGTERM, SIGHUP,\n"
                 "                    SIGQUIT are forwarded to the job first)\n",
                 kMaxRanks);
}

[[noreturn]] void usage_error(const std::string &msg) {
    std::fprintf(stderr, "portico-run: %s\nTry 'portico-run --help' for more information.\n",
                 msg.c_str());
    std::exit(kExitUsage);
}

std::optional<long> parse_count(std::string_view s) {
    std::string tmp(s);
    if (tmp.empty() || tmp[0] == '+' || tmp[0] == '-' || tmp[0] == ' ')
        return std::nullopt;
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(tmp.c_str(), &end, 10);
    if (errno != 0 || *end != '\0')
        return std::nullopt;
    return v;
}

std::optional<double> parse_seconds(std::string_view s) {
    std::string tmp(s);
    if (tmp.empty() || !(std::isdigit(static_cast<unsigned char>(tmp[0])) || tmp[0] == '.'))
        return std::nullopt;
    errno = 0;
    char *end = nullptr;
    double v = std::strtod(tmp.c_str(), &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0 || v > kMaxTimeout)
        return std::nullopt;
    return v;
}

int parse_nprocs(std::string_view value) {
    std::optional<long> n = parse_count(value);
    if (!n || *n < 1 || *n > kMaxRanks)
        usage_error("invalid number of processes '" + std::string(value) +
                    "' (expected an integer from 1 to " + std::to_string(kMaxRanks) + ")");
    return static_cast<int>(*n);
}

double parse_timeout(std::string_view value, const char *source) {
    std::optional<double> t = parse_seconds(value);
    if (!t)
        usage_error(std::string("invalid ") + source + " '" + std::string(value) +
                    "' (expected a number of seconds, 0 for none)");
    return *t;
}

} // namespace

int main(int argc, char **argv) {
    portico::run::JobOptions opt;
    std::optional<double> timeout;

    int i = 1;
    for (; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a.empty() || a[0] != '-' || a == "-")
            break; // the program: everything from here on is the job's command line
        // Options with a value: "-n N", "-n=N", "-nN"; "--timeout S", "--timeout=S".
        auto value_of = [&](std::string_view name) -> std::optional<std::string_view> {
            if (a == name) {
                if (i + 1 >= argc)
                    usage_error("option '" + std::string(name) + "' needs a value");
                return std::string_view(argv[++i]);
            }
            if (a.size() > name.size() && a.substr(0, name.size()) == name &&
                a[name.size()] == '=')
                return a.substr(name.size() + 1);
            return std::nullopt;
        };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        }
        if (a == "--version") {
            std::printf("portico-run (Portico) %s\n", PORTICO_VERSION);
            return 0;
        }
        if (auto v = value_of("-np"); v) {
            opt.nprocs = parse_nprocs(*v);
        } else if (auto v2 = value_of("-n"); v2) {
            opt.nprocs = parse_nprocs(*v2);
        } else if (a.size() > 2 && a.substr(0, 2) == "-n" && a != "-np" &&
                   std::isdigit(static_cast<unsigned char>(a[2]))) {
            opt.nprocs = parse_nprocs(a.substr(2));
        } else if (auto v3 = value_of("--timeout"); v3) {
            timeout = parse_timeout(*v3, "timeout");
        } else {
            usage_error("unknown option '" + std::string(a) + "'");
        }
    }
    if (i >= argc)
        usage_error("no program to run");
    for (; i < argc; ++i)
        opt.argv.emplace_back(argv[i]);

    if (!timeout) {
        const char *env = std::getenv("PORTICO_TIMEOUT");
        if (env != nullptr && *env != '\0')
            timeout = parse_timeout(env, "PORTICO_TIMEOUT");
    }
    opt.timeout_seconds = timeout.value_or(0);

    return portico::run::run_job(opt);
}
