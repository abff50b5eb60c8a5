/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * portico_runtime.h — the job a process belongs to, as its launcher (portico-run, any PMI-1
 * launcher such as MPICH's mpiexec, or a PMIx launcher such as Open MPI's mpirun or srun
 * --mpi=pmix) describes it, and the out-of-band collectives every parallel program needs before
 * its network is set up.
 *
 * Portals has no runtime API (spec §4.1), yet a job needs things it cannot do with Portals alone:
 * a barrier after every rank has set up its portal entries, so that nobody sends to an entry that
 * does not exist yet (such messages are dropped, as the spec requires), and an exchange of
 * addresses or segment descriptions at start-up. These calls are Portico's job service; they share
 * the engine's connection to the launcher (a launcher accepts one per rank) and may be called
 * before PtlInit.
 *
 * Return values: PTL_OK; PTL_IGNORED when no launcher started the process — then it is rank 0 of
 * a job of one, and the collectives complete at once (an allgather copies the caller's data);
 * PTL_ARG_INVALID for a NULL pointer or a bad root; PTL_FAIL when the launcher cannot be reached,
 * refuses the process or misbehaves, or after portico_runtime_finalize (the reason is logged).
 *
 * The collectives (barrier, allgather, broadcast, and portico_runtime_local the first time) must
 * be called by every rank of the job in the same order. They go through the launcher, so they are
 * meant for start-up data (bytes to kilobytes per rank), not for bulk transfers.
 */
#ifndef PORTICO_RUNTIME_H
#define PORTICO_RUNTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int portico_runtime_rank(int *rank);
int portico_runtime_size(int *size);
/* This rank's index among the ranks on its machine (same nid) and how many there are. */
int portico_runtime_local(int *local_rank, int *local_size);
/* Returns when every rank of the job has called it. */
int portico_runtime_barrier(void);
/* Every rank contributes len bytes at mine; all (size * len bytes) receives them in rank order. */
int portico_runtime_allgather(const void *mine, size_t len, void *all);
/* The same for contributions of different lengths (each rank its own len): lens (size entries)
 * receives every rank's length, and *all a buffer that holds the contributions back to back in
 * rank order, which the caller releases with free() (NULL when the call fails). */
int portico_runtime_allgatherv(const void *mine, size_t len, size_t *lens, void **all);
/* root's len bytes at data are copied to data on every rank. */
int portico_runtime_broadcast(void *data, size_t len, int root);
/* Leaves the job (the launcher's finalize, which launchers such as hydra and Open MPI's mpirun
 * expect of every rank). The last PtlFini does it, unless the program called any portico_runtime_*
 * function before its first PtlInit: then the program owns the job's end and calls this before it
 * exits. An exit with status 0 does it too if nothing has (waiting at most 5 s for the launcher).
 * Idempotent. */
int portico_runtime_finalize(void);
/* Ends the whole job: the launcher kills every rank and reports message; the caller exits with
 * code (a job of one just exits). */
void portico_runtime_abort(int code, const char *message) __attribute__((noreturn));
/* Ends this process with code (_exit: no exit handlers run) after leaving the job, for a program's
 * deliberate end that the job's other ranks know of — GASNet's gasnet_exit and UPC's
 * upc_global_exit tell every rank first, and every rank then ends with the same code. Launchers
 * such as MPICH's hydra and Open MPI's mpirun take a rank that ends without leaving for a failed one
 * and kill the job; a rank that has left ends with its own status, which the launcher reports
 * (0 is success). Waits at most 5 s for the launcher; says goodbye to peers on other machines when
 * code is 0, as exit(0) does; flushes nothing (stdio is the caller's). Not for failures nobody else
 * knows of: exit with a non-zero status, or portico_runtime_abort, so that the launcher ends the
 * job. Not async-signal-safe. */
void portico_runtime_exit(int code) __attribute__((noreturn));
/* The caller is about to end this process with code through a path that runs no exit handlers
 * (_exit). Where the ranks of a machine watch each other (launchers that leave a job running when
 * a rank dies, such as srun --mpi=pmi2), a rank that ends without leaving the job ends the job,
 * unless it ended with code 0: exit() and returns from main tell the code by themselves, _exit
 * needs this call. Async-signal-safe; does nothing when no watch runs. */
void portico_runtime_exiting(int code);

#ifdef __cplusplus
}
#endif

#endif /* PORTICO_RUNTIME_H */
