// SPDX-License-Identifier: BSD-3-Clause
// Process management of portico-run: starts the ranks, serves them PMI-1, watches them, and
// decides the launcher's exit code. See README.md next to this file for the user-visible rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace portico::run {

// Exit codes of the launcher itself (ranks' own codes pass through: the first rank to exit
// non-zero decides).
inline constexpr int kExitUsage = 2;           // bad command line
inline constexpr int kExitTimeout = 124;       // --timeout / PORTICO_TIMEOUT expired
inline constexpr int kExitLauncherError = 125; // portico-run could not start the job
inline constexpr int kExitCannotExec = 126;    // program found but not executable
inline constexpr int kExitNotFound = 127;      // program not found
inline constexpr int kExitDeadlock = 1;        // ranks wait in a PMI barrier a rank can never enter

inline constexpr int kMaxRanks = 4096;

// Ranks started on other machines through a remote shell (--hosts/--hostfile).
struct RemoteOptions {
    std::vector<std::string> rank_host; // per rank
    std::vector<int> local_rank;        // per rank, among the ranks of its host
    std::vector<int> local_size;        // per rank: ranks on its host
    std::vector<std::string> hosts;     // distinct host names
    std::string process_mapping;        // PMI_process_mapping
    std::vector<std::string> rsh;       // the remote shell command, split into words
    std::string pmi_addr;               // --pmi-addr / PORTICO_PMI_ADDR ("" = default rules)
};

struct JobOptions {
    int nprocs = 1;
    double timeout_seconds = 0;    // 0: no timeout
    std::vector<std::string> argv; // program and its arguments
    // --env/-x: set in every rank's environment (values already resolved).
    std::vector<std::pair<std::string, std::string>> env;
    std::optional<RemoteOptions> remote; // unset: every rank is forked on this machine
};

// The variables portico-run sets for every rank (PMI_*, PORTICO_JOB_ID, ...): never inherited from
// the launcher's environment, and not settable with --env.
bool is_launcher_variable(std::string_view name);

// Runs the job to completion and returns the launcher's exit code.
int run_job(const JobOptions &options);

} // namespace portico::run
