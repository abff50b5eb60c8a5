// SPDX-License-Identifier: BSD-3-Clause
// Settings of the bootstrap (see common/settings.hpp): what a launcher tells each rank about its
// job. portico-run sets these for every rank; they are declared here, where they are read.
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Text kJobId{"PORTICO_JOB_ID", "bootstrap", nullptr,
                             "set by portico-run: the job's id, 16 hex digits, new for every job"};
inline constexpr Text kJobSecret{
    "PORTICO_JOB_SECRET", "bootstrap", nullptr,
    "the job's secret, which TCP connections and shared-memory links prove (any string, the same in "
    "every process); set by portico-run; unset: the ranks agree on one through the PMI (a process "
    "without a launcher draws its own for TCP and has none for shared memory)"};
inline constexpr Number kLocalRank{"PORTICO_LOCAL_RANK",
                                   "bootstrap",
                                   0,
                                   0,
                                   UINT64_MAX,
                                   "set by portico-run: this rank's index among the ranks of its host"};
inline constexpr Number kLocalSize{"PORTICO_LOCAL_SIZE",
                                   "bootstrap",
                                   0,
                                   0,
                                   UINT64_MAX,
                                   "set by portico-run: the number of ranks on this host (0: unknown)"};
inline constexpr Boolean kLauncherWatch{"PORTICO_LAUNCHER_WATCH", "bootstrap", true,
                                        "end the process when the launcher's PMI connection (PMIx: the "
                                        "connection to the PMIx server) closes"};

inline constexpr Choice kPeerWatch{
    "PORTICO_PEER_WATCH", "bootstrap", "auto", "auto|on|off",
    "the ranks of a machine watch each other and end the job when one ends without leaving it "
    "(bootstrap/peer_watch.hpp); auto: on under PMI-1 launchers, off under PMIx ones (they end the "
    "job themselves); portico-run, which watches its ranks itself, sets off for them"};

inline constexpr Number kPmiTimeoutS{"PORTICO_PMI_TIMEOUT_S",
                                     "bootstrap",
                                     600,
                                     0,
                                     7 * 86400,
                                     "seconds a rank waits for its PMI-1 launcher's answer to one request (a "
                                     "barrier included) before it ends with a message; 0: for ever"};

inline constexpr const Setting *kBootstrapSettings[] = {&kJobId,         &kJobSecret, &kLocalRank,  &kLocalSize,
                                                        &kLauncherWatch, &kPeerWatch, &kPmiTimeoutS};

} // namespace portico::settings
