// SPDX-License-Identifier: BSD-3-Clause
// The variables the launchers set for their ranks and the bootstrap reads to join the job (PMI-1,
// PMIx, Slurm, Open MPI, MPICH). Nobody sets them by hand; they are declared so that portico-info
// lists every variable Portico reads, with who sets it and what it is read for.
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr const char *kLaunchers = "bootstrap.launchers";

inline constexpr Text kPmiRank{"PMI_RANK", kLaunchers, nullptr, "PMI-1 launchers: this rank (PMI_SIZE is the size)"};
inline constexpr Text kPmiSize{"PMI_SIZE", kLaunchers, nullptr, "PMI-1 launchers: the job's size"};
inline constexpr Text kPmiId{"PMI_ID", kLaunchers, nullptr, "PMI-1 launchers (older hydra): this rank's id"};
inline constexpr Text kPmiFd{"PMI_FD", kLaunchers, nullptr, "PMI-1 launchers: the connected socket to the PMI server"};
inline constexpr Text kPmiPort{"PMI_PORT", kLaunchers, nullptr, "PMI-1 launchers: host:port of the PMI server"};
inline constexpr Text kPmiSpawned{"PMI_SPAWNED", kLaunchers, nullptr,
                                  "PMI-1 launchers: set in spawned processes (libpmi's PMI_Init answers it)"};
inline constexpr Text kPmixNamespace{"PMIX_NAMESPACE", kLaunchers, nullptr,
                                     "PMIx launchers: the job's namespace (with PMIX_RANK and PMIX_SERVER_URI*: "
                                     "join through PMIx)"};
inline constexpr Text kPmixRank{"PMIX_RANK", kLaunchers, nullptr, "PMIx launchers: this rank"};
inline constexpr Text kPmixServerUri{"PMIX_SERVER_URI", kLaunchers, nullptr,
                                     "PMIx launchers: the server's address (any PMIX_SERVER_URI* variable)"};
inline constexpr Text kSlurmStepId{
    "SLURM_STEP_ID", kLaunchers, nullptr,
    "Slurm: inside a job step (a rank without a PMI is an error then, not a job of one)"};
inline constexpr Text kSlurmStepNumTasks{"SLURM_STEP_NUM_TASKS", kLaunchers, nullptr, "Slurm: the step's tasks"};
inline constexpr Text kSlurmNtasks{"SLURM_NTASKS", kLaunchers, nullptr, "Slurm: the job's tasks"};
inline constexpr Text kSlurmNodeId{"SLURM_NODEID", kLaunchers, nullptr,
                                   "Slurm: this node's index (with SLURM_STEP_TASKS_PER_NODE: ranks on this machine)"};
inline constexpr Text kSlurmLocalId{"SLURM_LOCALID", kLaunchers, nullptr, "Slurm: this task's index on its node"};
inline constexpr Text kSlurmTasksPerNode{"SLURM_STEP_TASKS_PER_NODE", kLaunchers, nullptr,
                                         "Slurm: tasks per node, \"4(x2),3\""};
inline constexpr Text kOmpiWorldSize{"OMPI_COMM_WORLD_SIZE", kLaunchers, nullptr,
                                     "Open MPI's mpirun: the job's size (a sign that a launcher started us)"};
inline constexpr Text kOmpiLocalSize{"OMPI_COMM_WORLD_LOCAL_SIZE", kLaunchers, nullptr,
                                     "Open MPI's mpirun: ranks on this machine"};
inline constexpr Text kOmpiLocalRank{"OMPI_COMM_WORLD_LOCAL_RANK", kLaunchers, nullptr,
                                     "Open MPI's mpirun: this rank's index on this machine"};
inline constexpr Text kMpiLocalNranks{"MPI_LOCALNRANKS", kLaunchers, nullptr, "MPICH's hydra: ranks on this machine"};
inline constexpr Text kMpiLocalRankId{"MPI_LOCALRANKID", kLaunchers, nullptr,
                                      "MPICH's hydra: this rank's index on this machine"};

inline constexpr const Setting *kLauncherEnvSettings[] = {
    &kPmiRank,           &kPmiSize,       &kPmiId,         &kPmiFd,          &kPmiPort,
    &kPmiSpawned,        &kPmixNamespace, &kPmixRank,      &kPmixServerUri,  &kSlurmStepId,
    &kSlurmStepNumTasks, &kSlurmNtasks,   &kSlurmNodeId,   &kSlurmLocalId,   &kSlurmTasksPerNode,
    &kOmpiWorldSize,     &kOmpiLocalSize, &kOmpiLocalRank, &kMpiLocalNranks, &kMpiLocalRankId};

} // namespace portico::settings
