// SPDX-License-Identifier: BSD-3-Clause
// portico-run: starts N processes of a program (on this machine, or on other machines through a
// remote shell) and serves them the simple PMI-1 wire protocol. Command-line handling only; see
// job.cpp, remote.cpp, tcp.cpp and pmi_server.cpp.
#include "job.hpp"
#include "launcher_settings.hpp"
#include "remote.hpp"

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
                 "Usage: portico-run [-n N] [--timeout S] [--env NAME[=VALUE]]...\n"
                 "                   [--hosts H1,H2,... | --hostfile FILE] [--ppn K] [--rsh CMD]\n"
                 "                   [--pmi-addr ADDR] [--] PROGRAM [ARGS...]\n"
                 "\n"
                 "Starts N processes (ranks) of PROGRAM, on this machine or (--hosts) on other\n"
                 "machines through a remote shell, and serves them the simple PMI-1 wire protocol\n"
                 "(PMI_FD, or PMI_PORT/PMI_ID over TCP for remote ranks), so that any PMI-1 client\n"
                 "runs under it.\n"
                 "\n"
                 "Options:\n"
                 "  -n N, -np N      number of ranks, 1..%d (default 1; with hosts: one per host\n"
                 "                   entry, or --ppn per host, or the host file's slots)\n"
                 "  --timeout S      kill the job after S seconds (decimal; 0 = no limit);\n"
                 "                   the default comes from PORTICO_TIMEOUT when it is set\n"
                 "  --env NAME=VALUE, -x NAME=VALUE\n"
                 "                   set NAME in every rank's environment (repeatable)\n"
                 "  --env NAME, -x NAME\n"
                 "                   pass this launcher's NAME to the ranks (remote ranks get\n"
                 "                   only the PMI variables, PORTICO_* and what --env names)\n"
                 "  --hosts H1,H2,.. start the ranks on these hosts (a host may repeat), in blocks\n"
                 "                   of --ppn ranks per host in host order\n"
                 "  --hostfile FILE  hosts from FILE: one per line, optional host:slots, '#' comments\n"
                 "  --ppn K          ranks per host (default: the host's slots, else ceil(N/hosts))\n"
                 "  --rsh CMD        remote shell, run as CMD HOST 'COMMAND' (default ssh, or\n"
                 "                   PORTICO_RSH; split on spaces: --rsh \"ssh -o BatchMode=yes\")\n"
                 "  --pmi-addr ADDR  address the PMI port for remote ranks listens on and is\n"
                 "                   advertised as (default PORTICO_PMI_ADDR, else the address of\n"
                 "                   PORTICO_IFACE, else all addresses, advertising the first\n"
                 "                   non-loopback IPv4 interface's)\n"
                 "  --help           show this help and exit\n"
                 "  --version        show the version and exit\n"
                 "  --               end of options\n"
                 "\n"
                 "Each rank gets PMI_RANK, PMI_SIZE, PMI_JOBID, PORTICO_JOB_ID (64-bit hex),\n"
                 "PORTICO_JOB_SECRET (128-bit hex), PORTICO_LOCAL_RANK, PORTICO_LOCAL_SIZE,\n"
                 "MPI_LOCALRANKID and MPI_LOCALNRANKS, and PMI_FD (local ranks) or PMI_PORT and\n"
                 "PMI_ID (remote ranks). Rank 0 inherits stdin, the others read /dev/null; stdout\n"
                 "and stderr are inherited. All local processes share one process group.\n"
                 "PMI over TCP is as trusted as the network: see the README.\n"
                 "\n"
                 "If a rank exits non-zero or is killed by a signal while others still run, the\n"
                 "others are terminated (SIGTERM, then SIGKILL after 2 s). A remote rank's exit\n"
                 "status is that of its remote shell process.\n"
                 "\n"
                 "Exit status:\n"
                 "  the first failing rank's: the code of the first rank to exit non-zero,\n"
                 "    or 128+S if it was killed by signal S (ranks killed by portico-run\n"
                 "    itself do not count)\n"
                 "  the abort code    when a rank calls PMI abort (codes outside 0..255 are\n"
                 "                    taken modulo 256, 0 then becoming 1)\n"
                 "  1                 ranks wait in a PMI barrier that an exited rank can\n"
                 "                    never enter\n"
                 "  2                 bad command line\n"
                 "  124               the job timed out\n"
                 "  125               portico-run itself failed to start the job\n"
                 "  126               PROGRAM (or the remote shell) cannot be executed\n"
                 "  127               PROGRAM (or the remote shell) not found\n"
                 "  128+S             portico-run received signal S (SIGINT, SIGTERM, SIGHUP,\n"
                 "                    SIGQUIT are forwarded to the job first)\n",
                 kMaxRanks);
}

[[noreturn]] void usage_error(const std::string &msg) {
    std::fprintf(stderr, "portico-run: %s\nTry 'portico-run --help' for more information.\n", msg.c_str());
    std::exit(kExitUsage);
}

std::optional<long> parse_count(std::string_view s) {
    std::string tmp(s);
    if (tmp.empty() || tmp[0] == '+' || tmp[0] == '-' || tmp[0] == ' ') return std::nullopt;
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(tmp.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return std::nullopt;
    return v;
}

std::optional<double> parse_seconds(std::string_view s) {
    std::string tmp(s);
    if (tmp.empty() || !(std::isdigit(static_cast<unsigned char>(tmp[0])) || tmp[0] == '.')) return std::nullopt;
    errno = 0;
    char *end = nullptr;
    double v = std::strtod(tmp.c_str(), &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0 || v > kMaxTimeout) return std::nullopt;
    return v;
}

int parse_nprocs(std::string_view value) {
    std::optional<long> n = parse_count(value);
    if (!n || *n < 1 || *n > kMaxRanks)
        usage_error("invalid number of processes '" + std::string(value) + "' (expected an integer from 1 to " +
                    std::to_string(kMaxRanks) + ")");
    return static_cast<int>(*n);
}

// --env NAME=VALUE sets, --env NAME passes the launcher's value (nothing when it is unset).
void add_env(portico::run::JobOptions &opt, std::string_view arg, const char *option) {
    std::size_t eq = arg.find('=');
    std::string name(arg.substr(0, eq));
    if (!portico::run::valid_env_name(name))
        usage_error("invalid variable name '" + name + "' in " + option + " '" + std::string(arg) + "'");
    if (portico::run::is_launcher_variable(name))
        usage_error(std::string(option) + " " + name + ": portico-run sets " + name + " itself");
    std::string value;
    if (eq != std::string_view::npos) {
        value = std::string(arg.substr(eq + 1));
    } else {
        const char *v = std::getenv(name.c_str());
        if (v == nullptr) return; // not set here: nothing to pass on (as with a shell's `export NAME`)
        value = v;
    }
    for (auto &kv : opt.env)
        if (kv.first == name) {
            kv.second = value; // the last one wins
            return;
        }
    opt.env.emplace_back(name, value);
}

double parse_timeout(std::string_view value, const char *source) {
    std::optional<double> t = parse_seconds(value);
    if (!t)
        usage_error(std::string("invalid ") + source + " '" + std::string(value) +
                    "' (expected a number of seconds, 0 for none)");
    return *t;
}

// What the command line says, before any default is applied.
struct CommandLine {
    portico::run::JobOptions opt; // argv and --env so far
    std::optional<double> timeout;
    std::optional<int> nprocs, ppn;
    std::optional<std::string> hosts, hostfile, rsh, pmi_addr;
};

int parse_ppn(std::string_view value) {
    std::optional<long> k = parse_count(value);
    if (!k || *k < 1 || *k > kMaxRanks)
        usage_error("invalid --ppn '" + std::string(value) + "' (expected an integer from 1 to " +
                    std::to_string(kMaxRanks) + ")");
    return static_cast<int>(*k);
}

// The options, then the program and its arguments. --help and --version exit here.
CommandLine parse_command_line(int argc, char **argv) {
    CommandLine cl;
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
                if (i + 1 >= argc) usage_error("option '" + std::string(name) + "' needs a value");
                return std::string_view(argv[++i]);
            }
            if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=')
                return a.substr(name.size() + 1);
            return std::nullopt;
        };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            std::exit(0);
        }
        if (a == "--version") {
            std::printf("portico-run (Portico) %s\n", PORTICO_VERSION);
            std::exit(0);
        }
        if (auto v = value_of("-np"); v) {
            cl.nprocs = parse_nprocs(*v);
        } else if (auto v2 = value_of("-n"); v2) {
            cl.nprocs = parse_nprocs(*v2);
        } else if (a.size() > 2 && a.substr(0, 2) == "-n" && a != "-np" &&
                   std::isdigit(static_cast<unsigned char>(a[2]))) {
            cl.nprocs = parse_nprocs(a.substr(2));
        } else if (auto v3 = value_of("--timeout"); v3) {
            cl.timeout = parse_timeout(*v3, "timeout");
        } else if (auto v4 = value_of("--hosts"); v4) {
            cl.hosts = std::string(*v4);
        } else if (auto v5 = value_of("--hostfile"); v5) {
            cl.hostfile = std::string(*v5);
        } else if (auto v6 = value_of("--ppn"); v6) {
            cl.ppn = parse_ppn(*v6);
        } else if (auto v7 = value_of("--rsh"); v7) {
            cl.rsh = std::string(*v7);
        } else if (auto v8 = value_of("--pmi-addr"); v8) {
            cl.pmi_addr = std::string(*v8);
        } else if (auto v9 = value_of("--env"); v9) {
            add_env(cl.opt, *v9, "--env");
        } else if (auto v10 = value_of("-x"); v10) {
            add_env(cl.opt, *v10, "-x");
        } else {
            usage_error("unknown option '" + std::string(a) + "'");
        }
    }
    if (i >= argc) usage_error("no program to run");
    for (; i < argc; ++i) cl.opt.argv.emplace_back(argv[i]);
    return cl;
}

// The hosts, how many ranks, the remote shell and the PMI address of a job started with --hosts
// or --hostfile. Every mistake is a usage error, before anything starts.
portico::run::RemoteOptions remote_options(const CommandLine &cl, portico::run::JobOptions &opt) {
    std::vector<portico::run::HostEntry> hosts;
    try {
        hosts = cl.hosts ? portico::run::parse_host_list(*cl.hosts) : portico::run::read_hostfile(*cl.hostfile);
    } catch (const portico::run::HostError &e) {
        usage_error(e.what());
    }
    opt.nprocs = cl.nprocs.value_or(0);
    if (!cl.nprocs) {
        int n = portico::run::default_nprocs(hosts, cl.ppn.value_or(0));
        if (n > kMaxRanks)
            usage_error("the hosts give " + std::to_string(n) + " ranks; at most " + std::to_string(kMaxRanks) +
                        " are supported (use -n)");
        opt.nprocs = n;
    }

    portico::run::RemoteOptions ro;
    std::string rsh = cl.rsh.value_or("");
    const char *rsh_source = "--rsh";
    if (!cl.rsh) {
        rsh = portico::settings::kRsh.get();
        rsh_source = portico::settings::kRsh.is_set() ? portico::settings::kRsh.name : "--rsh";
    }
    ro.rsh = portico::run::split_words(rsh);
    if (ro.rsh.empty()) usage_error(std::string("empty remote shell command (") + rsh_source + ")");
    if (cl.pmi_addr) {
        ro.pmi_addr = *cl.pmi_addr;
        if (ro.pmi_addr.empty()) usage_error("empty --pmi-addr");
    } else {
        ro.pmi_addr = portico::settings::kPmiAddr.get();
    }
    portico::run::Placement p = portico::run::place_ranks(hosts, opt.nprocs, cl.ppn.value_or(0));
    ro.rank_host = std::move(p.host);
    ro.local_rank = std::move(p.local_rank);
    ro.local_size = std::move(p.local_size);
    ro.hosts = std::move(p.distinct_hosts);
    ro.process_mapping = std::move(p.process_mapping);
    return ro;
}

} // namespace

int main(int argc, char **argv) {
    CommandLine cl = parse_command_line(argc, argv);
    portico::run::JobOptions &opt = cl.opt;
    std::optional<double> timeout = cl.timeout;
    if (!timeout) {
        if (const char *env = portico::settings::kTimeout.raw())
            timeout = parse_timeout(env, portico::settings::kTimeout.name);
    }
    opt.timeout_seconds = timeout.value_or(0);

    if (cl.hosts && cl.hostfile) usage_error("use either --hosts or --hostfile, not both");
    if (!cl.hosts && !cl.hostfile) {
        if (cl.ppn) usage_error("--ppn needs --hosts or --hostfile");
        if (cl.rsh) usage_error("--rsh needs --hosts or --hostfile");
        if (cl.pmi_addr) usage_error("--pmi-addr needs --hosts or --hostfile");
        opt.nprocs = cl.nprocs.value_or(1);
        return portico::run::run_job(opt);
    }
    opt.remote = remote_options(cl, opt);
    return portico::run::run_job(opt);
}
