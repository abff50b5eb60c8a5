// SPDX-License-Identifier: BSD-3-Clause
// What the launcher says about this machine's share of the job before any collective: how many of
// its processes run here and which of them this one is. Memory per peer is sized by it when an
// endpoint opens (shared-memory rings), long before the job's first allgather could count them.
#pragma once

#include <cstdint>

namespace portico::bootstrap {

struct LocalHint {
    uint32_t processes = 0; // 0: no launcher said
    int32_t rank = -1;      // -1: no launcher said
};

// From the environment the launchers set for their ranks: portico-run (PORTICO_LOCAL_SIZE and
// PORTICO_LOCAL_RANK), MPICH's hydra (MPI_LOCALNRANKS, MPI_LOCALRANKID), Open MPI
// (OMPI_COMM_WORLD_LOCAL_SIZE, OMPI_COMM_WORLD_LOCAL_RANK), Slurm (SLURM_STEP_TASKS_PER_NODE
// and SLURM_NODEID, SLURM_LOCALID); the first launcher that says both wins.
LocalHint local_hint();

// Slurm's task counts per node ("4(x2),3": two nodes of 4 tasks, then one of 3): the count of
// node `index`, 0 when the text does not say.
uint32_t slurm_tasks_on_node(const char *per_node, uint32_t index);

} // namespace portico::bootstrap
