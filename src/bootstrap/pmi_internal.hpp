// SPDX-License-Identifier: BSD-3-Clause
// Internals shared by the bootstrap clients (pmi_client.cpp, pmix_client.cpp).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/pmi_client.hpp"

namespace portico::bootstrap::detail {

// PMI-1's limits on keys and values, which every client enforces (throws PmiError).
void check_key(const std::string &key, int keylen_max);
void check_value(const std::string &value, int vallen_max);
// The process exit status an abort exit code maps to (same rule as portico-run's).
int exit_status_for(int code);

// MPICH's PMI_process_mapping, "(vector,(first_node,node_count,ranks_per_node),...)": ranks are
// placed in blocks of ranks_per_node on node_count consecutive nodes from first_node, tuple after
// tuple, and the pattern repeats until every rank has a node. Returns each of `size` ranks' node,
// nullopt when the text is not such a mapping.
std::optional<std::vector<int>> nodes_of_ranks(const std::string &mapping, int size);

// Registers, once per process, the exit handler that leaves the launcher at a normal exit
// (PmiClient::leave_at_exit with kExitBound when the status is 0).
void leave_at_normal_exit();

// True when the environment says a PMIx server started this process (PMIX_NAMESPACE or
// PMIX_RANK; with uri_too, also a PMIX_SERVER_URI* variable).
bool pmix_environment(bool uri_too);

// When no process-management interface is there: a message naming the launcher and the fix if the
// environment says a launcher started several copies of this program anyway (Slurm's step
// variables, Open MPI's, MPICH's or a PMI launcher's sizes above 1); empty otherwise.
std::string foreign_launcher_without_pmi();

#ifdef PORTICO_HAVE_PMIX
// The PMIx client (pmix_client.cpp); throws PmiError.
std::unique_ptr<PmiClient> pmix_from_environment();
// PmiClient::leave_at_exit's PMIx part: PMIx_Finalize of the live session by the deadline.
bool pmix_leave_at_exit(std::chrono::steady_clock::time_point deadline);
#endif

} // namespace portico::bootstrap::detail
