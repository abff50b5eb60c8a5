// Process management of portico-run: starts the ranks, serves them PMI-1, watches them, and
// decides the launcher's exit code. See README.md next to this file for the user-visible rules.
#pragma once

#include <string>
#include <vector>

namespace portico::run {

// Exit codes of the launcher itself (ranks' own codes pass through: the worst one wins).
inline constexpr int kExitUsage = 2;          // bad command line
inline constexpr int kExitTimeout = 124;      // --timeout / PORTICO_TIMEOUT expired
inline constexpr int kExitLauncherError = 125; // portico-run could not start the job
inline constexpr int kExitCannotExec = 126;   // program found but not executable
inline constexpr int kExitNotFound = 127;     // program not found
inline constexpr int kExitDeadlock = 1;       // ranks wait in a PMI barrier a rank can never enter

inline constexpr int kMaxRanks = 4096;

struct JobOptions {
    int nprocs = 1;
    double timeout_seconds = 0; // 0: no timeout
    std::vector<std::string> argv; // program and its arguments
};

// Runs the job to completion and returns the launcher's exit code.
int run_job(const JobOptions &options);

} // namespace portico::run
