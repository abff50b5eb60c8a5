/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * upc.h — the UPC library (UPC 1.3 §7.2) of Portico's UPC runtime, libportico-upc.
 *
 * Under a UPC compiler (__UPC__ defined) the functions take and return pointers-to-shared as
 * the language writes them. A C program without one uses upc_shared_ptr_t (portico/upc_abi.h)
 * for every `shared void *`, `upc_lock_t *` included: the same 64-bit value passed the same way,
 * so both faces call one library.
 */
#ifndef PORTICO_UPC_H
#define PORTICO_UPC_H

#include <stddef.h>

#include <portico/upc_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UPC_MAX_BLOCK_SIZE UPC_PTS_MAX_BLOCKSIZE

/* upc_flag_t: synchronisation modes of the collectives and upc_mem*_nb (UPC 1.3 §7.3.1). */
typedef int upc_flag_t;
#define UPC_IN_ALLSYNC 0
#define UPC_IN_NOSYNC 1
#define UPC_IN_MYSYNC 2
#define UPC_OUT_ALLSYNC 0
#define UPC_OUT_NOSYNC 4
#define UPC_OUT_MYSYNC 8

#ifdef __UPC__
typedef shared struct portico_upc_lock upc_lock_t;
#define PORTICO_UPC_SPTR shared void *
#define PORTICO_UPC_LOCKP upc_lock_t *
#else
#define PORTICO_UPC_SPTR upc_shared_ptr_t
#define PORTICO_UPC_LOCKP upc_shared_ptr_t
#endif

/* Ends every thread of the job with status (the launcher reports it). */
void upc_global_exit(int status) __attribute__((noreturn));

/* Allocation (UPC 1.3 §7.2.2). Size 0 returns NULL. */
PORTICO_UPC_SPTR upc_global_alloc(size_t nblocks, size_t nbytes);
PORTICO_UPC_SPTR upc_all_alloc(size_t nblocks, size_t nbytes);
PORTICO_UPC_SPTR upc_alloc(size_t nbytes);
void upc_free(PORTICO_UPC_SPTR ptr);
void upc_all_free(PORTICO_UPC_SPTR ptr); /* UPC 1.3: collective, thread 0 frees */

/* Pointer-to-shared manipulation (§7.2.3). */
size_t upc_threadof(PORTICO_UPC_SPTR ptr);
size_t upc_phaseof(PORTICO_UPC_SPTR ptr);
PORTICO_UPC_SPTR upc_resetphase(PORTICO_UPC_SPTR ptr);
size_t upc_addrfield(PORTICO_UPC_SPTR ptr);
size_t upc_affinitysize(size_t totalsize, size_t nbytes, size_t threadid);

/* Locks (§7.2.4). */
PORTICO_UPC_LOCKP upc_global_lock_alloc(void);
PORTICO_UPC_LOCKP upc_all_lock_alloc(void);
void upc_lock_free(PORTICO_UPC_LOCKP ptr);
void upc_all_lock_free(PORTICO_UPC_LOCKP ptr); /* UPC 1.3: collective */
void upc_lock(PORTICO_UPC_LOCKP ptr);
int upc_lock_attempt(PORTICO_UPC_LOCKP ptr);
void upc_unlock(PORTICO_UPC_LOCKP ptr);

/* Shared memory transfers (§7.2.5). */
void upc_memcpy(PORTICO_UPC_SPTR dst, PORTICO_UPC_SPTR src, size_t n);
void upc_memget(void *dst, PORTICO_UPC_SPTR src, size_t n);
void upc_memput(PORTICO_UPC_SPTR dst, const void *src, size_t n);
void upc_memset(PORTICO_UPC_SPTR dst, int c, size_t n);

/* Without a UPC compiler: the statements upc_barrier, upc_notify, upc_wait and upc_fence. */
#ifndef __UPC__
#define upc_barrier_id(id) __upc_barrier(id)
#define upc_notify_id(id) __upc_notify(id)
#define upc_wait_id(id) __upc_wait(id)
#endif

#undef PORTICO_UPC_SPTR
#undef PORTICO_UPC_LOCKP

#ifdef __cplusplus
}
#endif
#endif /* PORTICO_UPC_H */
