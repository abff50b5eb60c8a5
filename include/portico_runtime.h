/*
 * portico_runtime.h — the job a Portals process belongs to, as its launcher (portico-run, or any
 * PMI-1 launcher such as MPICH's mpiexec) describes it.
 *
 * Portals has no runtime API (spec §4.1), yet a job needs one thing it cannot do with Portals
 * alone: a barrier after every rank has set up its portal entries, so that nobody sends to an
 * entry that does not exist yet (such messages are dropped, as the spec requires). These calls
 * share the engine's connection to the launcher.
 */
#ifndef PORTICO_RUNTIME_H
#define PORTICO_RUNTIME_H

#ifdef __cplusplus
extern "C" {
#endif

/* PTL_OK, or PTL_IGNORED when not started by a launcher (then rank 0 of a job of size 1),
 * PTL_NO_INIT before PtlInit, PTL_FAIL if the launcher misbehaves. */
int portico_runtime_rank(int *rank);
int portico_runtime_size(int *size);
/* Returns when every rank of the job has called it. PTL_IGNORED (at once) without a launcher. */
int portico_runtime_barrier(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTICO_RUNTIME_H */
