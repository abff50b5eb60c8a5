/*
 * portico_ext.h — Portico's extensions to the Portals 4.3 API: settings a client (a library
 * built on Portals, such as Portico's GASNet) may choose for the engine instead of setting
 * PORTICO_* environment variables behind the application's back. The variables, their defaults
 * and ranges are listed by `portico-info` and in the README.
 */
#ifndef PORTICO_EXT_H
#define PORTICO_EXT_H

#ifdef __cplusplus
extern "C" {
#endif

/* How long (microseconds) a thread waiting in PtlEQWait, PtlEQPoll, PtlCTWait or PtlCTPoll
 * polls the network itself before it sleeps and leaves progress to the engine's progress thread
 * (PORTICO_WAIT_SPIN_US; default 100). Longer spins answer sooner once a message comes, at the
 * cost of a busy core while nothing comes.
 *
 * Callable before or after PtlInit, from any thread; the value is process-wide and applies to
 * every wait that starts after the call (a wait already under way keeps the spin it started
 * with), until the next call. PtlFini does not reset it.
 *
 * An explicit PORTICO_WAIT_SPIN_US in the environment (set and not empty) wins: the user's
 * setting is kept and the call returns PTL_IGNORED. Otherwise it returns PTL_OK. */
int portico_set_wait_spin_us(unsigned us);

#ifdef __cplusplus
}
#endif

#endif /* PORTICO_EXT_H */
