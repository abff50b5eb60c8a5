/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * upc_collective.h — the UPC Collectives 1.0 library (UPC 1.3 §7.3) of Portico's UPC runtime,
 * libportico-upc.
 *
 * Two faces, as upc.h: under a UPC compiler (__UPC__ defined) the functions take pointers-to-
 * shared as the language writes them; a C program without one passes upc_shared_ptr_t
 * (portico/upc_abi.h) for every `shared void *`, `shared const int *` and for the arguments of
 * upc_all_sort's comparison function. Both faces call the same library.
 *
 * Shapes of the arrays (Collectives 1.0 §7.3.1, "treated as if"):
 *   broadcast:  src shared [] char[nbytes], dst shared [nbytes] char[nbytes*THREADS]
 *   scatter:    src shared [] char[nbytes*THREADS], dst shared [nbytes] char[nbytes*THREADS]
 *   gather:     src shared [nbytes] char[nbytes*THREADS], dst shared [] char[nbytes*THREADS]
 *   gather_all: src shared [nbytes] char[nbytes*THREADS],
 *               dst shared [nbytes*THREADS] char[nbytes*THREADS*THREADS]
 *   exchange:   src and dst shared [nbytes*THREADS] char[nbytes*THREADS*THREADS]
 *   permute:    src and dst shared [nbytes] char[nbytes*THREADS]; perm a `shared int *` of THREADS
 *               elements (block size 1), a permutation of 0..THREADS-1: block i of src goes to
 *               block perm[i] of dst
 * A blocked (distributed) pointer is taken as if its phase were 0; its block i is on thread
 * (upc_threadof(p) + i) % THREADS, which is thread i when p has affinity to thread 0 as the
 * specification requires.
 *
 * reduce and prefix_reduce read `shared [blk_size] T src[nelems]` (blk_size 0: the indefinite
 * block size), starting at src's thread and phase; prefix_reduce writes dst[i] = src[0] op ... op
 * src[i] into `shared [blk_size] T dst[nelems]`, reduce writes the one T at dst. func is used by
 * UPC_FUNC and UPC_NONCOMM_FUNC only (NULL otherwise).
 *
 * Environment: UPC_COLL_CHECK=1 makes every call check, at entry and at the cost of one barrier,
 * that all threads called the same collective with the same single-valued arguments (and that
 * perm is a permutation); a violation ends the job with a message naming the argument.
 */
#ifndef PORTICO_UPC_COLLECTIVE_H
#define PORTICO_UPC_COLLECTIVE_H

#include <stddef.h>

#include <upc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* upc_op_t: the operation of a reduction. The values are those of GCC UPC and the reference
 * implementation, so that object code built against either header agrees. */
typedef int upc_op_t;
#define UPC_ADD 0           /* + (integer arithmetic wraps as unsigned arithmetic does) */
#define UPC_MULT 1          /* * */
#define UPC_AND 2           /* & (integer types only) */
#define UPC_OR 3            /* | (integer types only) */
#define UPC_XOR 4           /* ^ (integer types only) */
#define UPC_LOGAND 5        /* && (result 0 or 1) */
#define UPC_LOGOR 6         /* || (result 0 or 1) */
#define UPC_MIN 7           /* the smaller */
#define UPC_MAX 8           /* the larger */
#define UPC_FUNC 9          /* func, commutative and associative: any order of combination */
#define UPC_NONCOMM_FUNC 10 /* func, associative only: combined in index order */

#ifdef __UPC__
#define PORTICO_UPC_SPTR shared void *
#define PORTICO_UPC_CSPTR shared const void *
#define PORTICO_UPC_PERM shared const int *
#else
#define PORTICO_UPC_SPTR upc_shared_ptr_t
#define PORTICO_UPC_CSPTR upc_shared_ptr_t
#define PORTICO_UPC_PERM upc_shared_ptr_t
#endif

/* Kept for programs written for older libraries, which had to call it first: does nothing. */
void upc_coll_init(void);

/* Data movement (§7.3.1.1-6). nbytes is the size of one block; 0 moves nothing. */
void upc_all_broadcast(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, size_t nbytes, upc_flag_t sync_mode);
void upc_all_scatter(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, size_t nbytes, upc_flag_t sync_mode);
void upc_all_gather(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, size_t nbytes, upc_flag_t sync_mode);
void upc_all_gather_all(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, size_t nbytes, upc_flag_t sync_mode);
void upc_all_exchange(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, size_t nbytes, upc_flag_t sync_mode);
void upc_all_permute(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, PORTICO_UPC_PERM perm, size_t nbytes,
                     upc_flag_t sync_mode);

/* Computation (§7.3.2): upc_all_reduceT and upc_all_prefix_reduceT for T in
 * C signed char, UC unsigned char, S short, US unsigned short, I int, UI unsigned int, L long,
 * UL unsigned long, F float, D double, LD long double. */
#define PORTICO_UPC_REDUCE(code, type)                                                                                 \
    void upc_all_reduce##code(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, upc_op_t op, size_t nelems,                 \
                              size_t blk_size, type (*func)(type, type), upc_flag_t sync_mode);                        \
    void upc_all_prefix_reduce##code(PORTICO_UPC_SPTR dst, PORTICO_UPC_CSPTR src, upc_op_t op, size_t nelems,          \
                                     size_t blk_size, type (*func)(type, type), upc_flag_t sync_mode);
PORTICO_UPC_REDUCE(C, signed char)
PORTICO_UPC_REDUCE(UC, unsigned char)
PORTICO_UPC_REDUCE(S, signed short)
PORTICO_UPC_REDUCE(US, unsigned short)
PORTICO_UPC_REDUCE(I, signed int)
PORTICO_UPC_REDUCE(UI, unsigned int)
PORTICO_UPC_REDUCE(L, signed long)
PORTICO_UPC_REDUCE(UL, unsigned long)
PORTICO_UPC_REDUCE(F, float)
PORTICO_UPC_REDUCE(D, double)
PORTICO_UPC_REDUCE(LD, long double)
#undef PORTICO_UPC_REDUCE

/* Sorts A, taken as `shared [blk_size] T A[nelems]` with sizeof(T) == elem_size (blk_size 0: the
 * indefinite block size), in place into ascending order by func (negative, zero, positive as
 * qsort's). func is called on one thread with pointers-to-shared to copies of two elements; the
 * sort is stable. */
void upc_all_sort(PORTICO_UPC_SPTR A, size_t elem_size, size_t nelems, size_t blk_size,
                  int (*func)(PORTICO_UPC_SPTR, PORTICO_UPC_SPTR), upc_flag_t sync_mode);

#undef PORTICO_UPC_SPTR
#undef PORTICO_UPC_CSPTR
#undef PORTICO_UPC_PERM

#ifdef __cplusplus
}
#endif
#endif /* PORTICO_UPC_COLLECTIVE_H */
