/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gasnet.h — GASNet 1.8.1 (core and extended API) on Portico's Portals 4.3 engine.
 *
 * Source-compatible with GASNet-1 clients: the names, types, constants and semantics are those of
 * the GASNet specification v1.8.1. See docs/GASNET.md for the design, the limits and the
 * environment variables.
 *
 * Configuration, as GASNet clients expect it:
 *   - the client defines exactly one of GASNET_SEQ, GASNET_PARSYNC, GASNET_PAR before including
 *     this header (the pkg-config modules gasnet-seq, gasnet-parsync and gasnet-par add it to the
 *     cflags). One library serves the three modes; gasnet_init() records the one the client was
 *     compiled with.
 *   - the segment configuration is GASNET_SEGMENT_FAST unless the client defines
 *     GASNET_SEGMENT_LARGE or GASNET_SEGMENT_EVERYTHING itself (e.g. -DGASNET_SEGMENT_EVERYTHING).
 */
#ifndef GASNET_H
#define GASNET_H

#if (defined(GASNET_SEQ) + defined(GASNET_PARSYNC) + defined(GASNET_PAR)) != 1
#error "Client code must #define exactly one of (GASNET_PAR, GASNET_PARSYNC, GASNET_SEQ) before #including gasnet.h"
#endif

#if (defined(GASNET_SEGMENT_FAST) + defined(GASNET_SEGMENT_LARGE) + defined(GASNET_SEGMENT_EVERYTHING)) > 1
#error "At most one of GASNET_SEGMENT_FAST, GASNET_SEGMENT_LARGE, GASNET_SEGMENT_EVERYTHING may be defined"
#endif
#if !defined(GASNET_SEGMENT_LARGE) && !defined(GASNET_SEGMENT_EVERYTHING) && !defined(GASNET_SEGMENT_FAST)
#define GASNET_SEGMENT_FAST 1
#endif

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
/* As GASNet's gasnet.h, which GASNet programs rely on for them: */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__LP64__) && !defined(_LP64)
#error "This GASNet implementation supports LP64 platforms only"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GASNETP_API __attribute__((__visibility__("default")))

/* ---- versions and configuration (spec §1.8) ------------------------------------------------ */
#define GASNET_SPEC_VERSION_MAJOR 1
#define GASNET_SPEC_VERSION_MINOR 8
#define GASNET_RELEASE_VERSION_MAJOR 1
#define GASNET_RELEASE_VERSION_MINOR 8
#define GASNET_RELEASE_VERSION_PATCH 1
#define GASNET_VERSION GASNET_SPEC_VERSION_MAJOR /* deprecated */

#define GASNET_CONDUIT_NAME PORTICO
#define GASNET_CONDUIT_NAME_STR "PORTICO"
#define GASNET_CONDUIT_PORTICO 1
#define GASNET_CORE_NAME PORTICO
#define GASNET_CORE_NAME_STR "PORTICO"
#define GASNET_CORE_VERSION 1.0
#define GASNET_EXTENDED_NAME PORTICO
#define GASNET_EXTENDED_NAME_STR "PORTICO"
#define GASNET_EXTENDED_VERSION 1.0
#define GASNET_NDEBUG 1 /* the library is a release build: GASNET_DEBUG, _TRACE, _STATS are off */

#if defined(GASNET_SEQ)
#define GASNETP_THREADMODE 0
#define GASNETP_THREADMODE_STR "SEQ"
#elif defined(GASNET_PARSYNC)
#define GASNETP_THREADMODE 1
#define GASNETP_THREADMODE_STR "PARSYNC"
#else
#define GASNETP_THREADMODE 2
#define GASNETP_THREADMODE_STR "PAR"
#endif
#if defined(GASNET_SEGMENT_FAST)
#define GASNETP_SEGMODE 0
#define GASNETP_SEGMODE_STR "FAST"
#elif defined(GASNET_SEGMENT_LARGE)
#define GASNETP_SEGMODE 1
#define GASNETP_SEGMODE_STR "LARGE"
#else
#define GASNETP_SEGMODE 2
#define GASNETP_SEGMODE_STR "EVERYTHING"
#endif

/* Comparable with strcmp; the library holds the strings of every configuration it serves. */
#define GASNET_CONFIG_STRING                                                                                           \
    "RELEASE=1.8.1,SPEC=1.8,CONDUIT=PORTICO(PORTALS4),THREADMODEL=" GASNETP_THREADMODE_STR                             \
    ",SEGMENT=" GASNETP_SEGMODE_STR ",PTR=64bit,nodebug,notrace,nostats"

#define GASNET_MAXNODES 4096
#define GASNET_ALIGNED_SEGMENTS 0
#define GASNET_PAGESIZE 4096
#define SIZEOF_GASNET_REGISTER_VALUE_T 8

/* ---- errors (§1.6) --------------------------------------------------------------------------- */
#define GASNET_OK 0
#define GASNET_ERR_BASE 10000
#define GASNET_ERR_NOT_INIT 10001
#define GASNET_ERR_RESOURCE 10002
#define GASNET_ERR_BAD_ARG 10003
#define GASNET_ERR_NOT_READY 10004
#define GASNET_ERR_BARRIER_MISMATCH 10005

GASNETP_API const char *gasnet_ErrorName(int errval);
GASNETP_API const char *gasnet_ErrorDesc(int errval);

/* ---- types (§1.7) ---------------------------------------------------------------------------- */
typedef uint32_t gasnet_node_t;
typedef uint8_t gasnet_handler_t;
typedef int32_t gasnet_handlerarg_t;
typedef void *gasnet_token_t;
typedef uint64_t gasnet_register_value_t;
typedef struct gasnetp_op *gasnet_handle_t; /* all-zero bytes (NULL) is GASNET_INVALID_HANDLE */
typedef struct gasnetp_valget *gasnet_valget_handle_t;
typedef void *gasnet_threadinfo_t;
#define GASNET_INVALID_HANDLE ((gasnet_handle_t)0)

/* A handler of any category; attach casts it back to the prototype the messages name. */
typedef void (*gasnet_handler_fn_t)();
typedef struct {
    gasnet_handler_t index; /* 0 = don't care: attach fills in the index it assigned */
    void (*fnptr)();
} gasnet_handlerentry_t;

typedef struct {
    void *addr;
    uintptr_t size;
} gasnet_seginfo_t;

/* Extension (later GASNet-1 releases): where each node runs. host = the lowest node on the same
 * machine. After gasnet_attach, for a node of this machine whose segment is mapped here (PSHM,
 * GASNET_PSHM=1, the default): supernode = host, and an address in that node's segment plus offset
 * is the same byte, reachable here with loads and stores; otherwise supernode = the node itself
 * and offset = 0. */
typedef struct {
    gasnet_node_t host;
    gasnet_node_t supernode;
    intptr_t offset;
} gasnet_nodeinfo_t;

/* ---- job control (§2.1) ---------------------------------------------------------------------- */
/* gasnet_init is a macro so that the library learns the thread and segment configuration the
 * client was compiled with; the function of that name (PAR, FAST) exists for callers that
 * bypass the macro. */
GASNETP_API int gasnet_init(int *argc, char ***argv);
GASNETP_API int gasnetp_init(int *argc, char ***argv, int threadmode, int segmode, const char *config);
#define gasnet_init(argc, argv) gasnetp_init((argc), (argv), GASNETP_THREADMODE, GASNETP_SEGMODE, GASNET_CONFIG_STRING)

GASNETP_API int gasnet_attach(gasnet_handlerentry_t *table, int numentries, uintptr_t segsize, uintptr_t minheapoffset);
GASNETP_API uintptr_t gasnet_getMaxLocalSegmentSize(void);
GASNETP_API uintptr_t gasnet_getMaxGlobalSegmentSize(void);
GASNETP_API void gasnet_exit(int exitcode) __attribute__((__noreturn__));

/* ---- job environment (§2.2) ------------------------------------------------------------------ */
GASNETP_API gasnet_node_t gasnet_mynode(void);
GASNETP_API gasnet_node_t gasnet_nodes(void);
GASNETP_API int gasnet_getSegmentInfo(gasnet_seginfo_t *seginfo_table, int numentries);
GASNETP_API int gasnet_getNodeInfo(gasnet_nodeinfo_t *nodeinfo_table, int numentries);
GASNETP_API char *gasnet_getenv(const char *name);

/* ---- active messages (§2.3) ------------------------------------------------------------------ */
#define GASNETP_AM_MAX_ARGS 16
#define GASNETP_AM_MAX_MEDIUM 65408
#define GASNETP_AM_MAX_LONG 16777216
GASNETP_API size_t gasnet_AMMaxArgs(void);
GASNETP_API size_t gasnet_AMMaxMedium(void);
GASNETP_API size_t gasnet_AMMaxLongRequest(void);
GASNETP_API size_t gasnet_AMMaxLongReply(void);
#define gasnet_AMMaxArgs() ((size_t)GASNETP_AM_MAX_ARGS)
#define gasnet_AMMaxMedium() ((size_t)GASNETP_AM_MAX_MEDIUM)
#define gasnet_AMMaxLongRequest() ((size_t)GASNETP_AM_MAX_LONG)
#define gasnet_AMMaxLongReply() ((size_t)GASNETP_AM_MAX_LONG)

GASNETP_API int gasnet_AMPoll(void);
GASNETP_API int gasnet_AMGetMsgSource(gasnet_token_t token, gasnet_node_t *srcindex);

/* GASNET_BLOCKUNTIL(cond): services the network (running handlers) until cond holds. cond is
 * evaluated after every message or completion this or another thread handled, and at least every
 * few milliseconds; the thread sleeps in between (see docs/GASNET.md, "Waiting and progress"). */
GASNETP_API void gasnetp_blockuntil_step(unsigned *iteration);
#define GASNET_BLOCKUNTIL(cond)                                                                                        \
    do {                                                                                                               \
        unsigned _gasnetp_bu_iter = 0;                                                                                 \
        while (!(cond)) gasnetp_blockuntil_step(&_gasnetp_bu_iter);                                                    \
    } while (0)

/* The Active Message entry points: 7 families x M = 0..16 handler arguments, 119 functions,
 * gasnet_AM<family><M>(<the family's parameters>, gasnet_handlerarg_t a0, ..., a<M-1>):
 *   RequestShort<M>(gasnet_node_t dest, gasnet_handler_t handler, ...)
 *   RequestMedium<M>(gasnet_node_t dest, gasnet_handler_t handler, void *source_addr, size_t nbytes, ...)
 *   RequestLong<M>, RequestLongAsync<M>(..., void *source_addr, size_t nbytes, void *dest_addr, ...)
 *   ReplyShort<M>(gasnet_token_t token, gasnet_handler_t handler, ...)
 *   ReplyMedium<M>, ReplyLong<M>: as the requests, from a request handler's token
 * This table is their only list: it declares them here, defines them (src/gasnet/am_names.cpp)
 * and exports them (src/gasnet/CMakeLists.txt writes libgasnet.map's AM names from it).
 * GASNETP_AM_FAMILIES(X, M) applies X(M, family, (parameters), (leading arguments)) to each
 * family; GASNETP_AM_ARGUMENT_COUNTS(X) applies X to M = 0..16; GASNETP_AM_HANDLER_ARGS<M>(T) is
 * ", T a0, ..., T a<M-1>" (the handler arguments' parameters, or with T empty their names). */
#define GASNETP_AM_HANDLER_ARGS0(T)
#define GASNETP_AM_HANDLER_ARGS1(T) , T a0
#define GASNETP_AM_HANDLER_ARGS2(T) GASNETP_AM_HANDLER_ARGS1(T), T a1
#define GASNETP_AM_HANDLER_ARGS3(T) GASNETP_AM_HANDLER_ARGS2(T), T a2
#define GASNETP_AM_HANDLER_ARGS4(T) GASNETP_AM_HANDLER_ARGS3(T), T a3
#define GASNETP_AM_HANDLER_ARGS5(T) GASNETP_AM_HANDLER_ARGS4(T), T a4
#define GASNETP_AM_HANDLER_ARGS6(T) GASNETP_AM_HANDLER_ARGS5(T), T a5
#define GASNETP_AM_HANDLER_ARGS7(T) GASNETP_AM_HANDLER_ARGS6(T), T a6
#define GASNETP_AM_HANDLER_ARGS8(T) GASNETP_AM_HANDLER_ARGS7(T), T a7
#define GASNETP_AM_HANDLER_ARGS9(T) GASNETP_AM_HANDLER_ARGS8(T), T a8
#define GASNETP_AM_HANDLER_ARGS10(T) GASNETP_AM_HANDLER_ARGS9(T), T a9
#define GASNETP_AM_HANDLER_ARGS11(T) GASNETP_AM_HANDLER_ARGS10(T), T a10
#define GASNETP_AM_HANDLER_ARGS12(T) GASNETP_AM_HANDLER_ARGS11(T), T a11
#define GASNETP_AM_HANDLER_ARGS13(T) GASNETP_AM_HANDLER_ARGS12(T), T a12
#define GASNETP_AM_HANDLER_ARGS14(T) GASNETP_AM_HANDLER_ARGS13(T), T a13
#define GASNETP_AM_HANDLER_ARGS15(T) GASNETP_AM_HANDLER_ARGS14(T), T a14
#define GASNETP_AM_HANDLER_ARGS16(T) GASNETP_AM_HANDLER_ARGS15(T), T a15
#define GASNETP_AM_PARAMS(M) GASNETP_AM_HANDLER_ARGS##M(gasnet_handlerarg_t)
#define GASNETP_AM_ARGUMENT_COUNTS(X)                                                                                  \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)
#define GASNETP_AM_FAMILIES(X, M)                                                                                      \
    X(M, RequestShort, (gasnet_node_t dest, gasnet_handler_t handler GASNETP_AM_PARAMS(M)), (dest, handler))           \
    X(M, RequestMedium,                                                                                                \
      (gasnet_node_t dest, gasnet_handler_t handler, void *source_addr, size_t nbytes GASNETP_AM_PARAMS(M)),           \
      (dest, handler, source_addr, nbytes))                                                                            \
    X(M, RequestLong,                                                                                                  \
      (gasnet_node_t dest, gasnet_handler_t handler, void *source_addr, size_t nbytes,                                 \
       void *dest_addr GASNETP_AM_PARAMS(M)),                                                                          \
      (dest, handler, source_addr, nbytes, dest_addr))                                                                 \
    X(M, RequestLongAsync,                                                                                             \
      (gasnet_node_t dest, gasnet_handler_t handler, void *source_addr, size_t nbytes,                                 \
       void *dest_addr GASNETP_AM_PARAMS(M)),                                                                          \
      (dest, handler, source_addr, nbytes, dest_addr))                                                                 \
    X(M, ReplyShort, (gasnet_token_t token, gasnet_handler_t handler GASNETP_AM_PARAMS(M)), (token, handler))          \
    X(M, ReplyMedium,                                                                                                  \
      (gasnet_token_t token, gasnet_handler_t handler, void *source_addr, size_t nbytes GASNETP_AM_PARAMS(M)),         \
      (token, handler, source_addr, nbytes))                                                                           \
    X(M, ReplyLong,                                                                                                    \
      (gasnet_token_t token, gasnet_handler_t handler, void *source_addr, size_t nbytes,                               \
       void *dest_addr GASNETP_AM_PARAMS(M)),                                                                          \
      (token, handler, source_addr, nbytes, dest_addr))
#define GASNETP_AM_DECLARE_ONE(M, family, params, args) GASNETP_API int gasnet_AM##family##M params;
#define GASNETP_AM_DECLARE(M) GASNETP_AM_FAMILIES(GASNETP_AM_DECLARE_ONE, M)
GASNETP_AM_ARGUMENT_COUNTS(GASNETP_AM_DECLARE)
/* ---- atomicity control (§2.4) ---------------------------------------------------------------- */
GASNETP_API void gasnet_hold_interrupts(void);
GASNETP_API void gasnet_resume_interrupts(void);

typedef struct {
    pthread_mutex_t lock;
} gasnet_hsl_t;
#define GASNET_HSL_INITIALIZER                                                                                         \
    { PTHREAD_MUTEX_INITIALIZER }
GASNETP_API void gasnet_hsl_init(gasnet_hsl_t *hsl);
GASNETP_API void gasnet_hsl_destroy(gasnet_hsl_t *hsl);
GASNETP_API void gasnet_hsl_lock(gasnet_hsl_t *hsl);
GASNETP_API void gasnet_hsl_unlock(gasnet_hsl_t *hsl);
GASNETP_API int gasnet_hsl_trylock(gasnet_hsl_t *hsl);

/* ---- extended API: blocking transfers (§3.2) --------------------------------------------------
 * Errors in the extended API are fatal: a message on stderr, then SIGABRT (§3). */
GASNETP_API void gasnet_get(void *dest, gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API void gasnet_put(gasnet_node_t node, void *dest, void *src, size_t nbytes);
GASNETP_API void gasnet_get_bulk(void *dest, gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API void gasnet_put_bulk(gasnet_node_t node, void *dest, void *src, size_t nbytes);
GASNETP_API void gasnet_memset(gasnet_node_t node, void *dest, int val, size_t nbytes);

/* ---- explicit-handle non-blocking transfers (§3.3.2-3) ---------------------------------------- */
GASNETP_API gasnet_handle_t gasnet_get_nb(void *dest, gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API gasnet_handle_t gasnet_put_nb(gasnet_node_t node, void *dest, void *src, size_t nbytes);
GASNETP_API gasnet_handle_t gasnet_get_nb_bulk(void *dest, gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API gasnet_handle_t gasnet_put_nb_bulk(gasnet_node_t node, void *dest, void *src, size_t nbytes);
GASNETP_API gasnet_handle_t gasnet_memset_nb(gasnet_node_t node, void *dest, int val, size_t nbytes);
GASNETP_API void gasnet_wait_syncnb(gasnet_handle_t handle);
GASNETP_API int gasnet_try_syncnb(gasnet_handle_t handle);
GASNETP_API void gasnet_wait_syncnb_all(gasnet_handle_t *handles, size_t numhandles);
GASNETP_API int gasnet_try_syncnb_all(gasnet_handle_t *handles, size_t numhandles);
GASNETP_API void gasnet_wait_syncnb_some(gasnet_handle_t *handles, size_t numhandles);
GASNETP_API int gasnet_try_syncnb_some(gasnet_handle_t *handles, size_t numhandles);

/* ---- implicit-handle non-blocking transfers (§3.3.4-6) ---------------------------------------- */
GASNETP_API void gasnet_get_nbi(void *dest, gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API void gasnet_put_nbi(gasnet_node_t node, void *dest, void *src, size_t nbytes);
GASNETP_API void gasnet_get_nbi_bulk(void *dest, gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API void gasnet_put_nbi_bulk(gasnet_node_t node, void *dest, void *src, size_t nbytes);
GASNETP_API void gasnet_memset_nbi(gasnet_node_t node, void *dest, int val, size_t nbytes);
GASNETP_API void gasnet_wait_syncnbi_gets(void);
GASNETP_API void gasnet_wait_syncnbi_puts(void);
GASNETP_API void gasnet_wait_syncnbi_all(void);
GASNETP_API int gasnet_try_syncnbi_gets(void);
GASNETP_API int gasnet_try_syncnbi_puts(void);
GASNETP_API int gasnet_try_syncnbi_all(void);
GASNETP_API void gasnet_begin_nbi_accessregion(void);
GASNETP_API gasnet_handle_t gasnet_end_nbi_accessregion(void);

/* ---- node-local transfers, inline ------------------------------------------------------------
 * A put or get to this node, or to a node of this machine whose segment this process maps (PSHM),
 * is a memory copy, done here in the caller as GASNet's own headers do it: the calls above are
 * macros over the inline functions below, which copy when the address lies in such a segment and
 * call the library's function otherwise (which checks the arguments and reports what is wrong).
 * Every 256th copy of a thread goes through the library too, which then polls: a thread looping
 * on local copies while it waits for a flag that an AM handler sets still runs the handler.
 * The names without an argument list (&gasnet_put) are the library's functions. */
typedef struct {
    uintptr_t base; /* the node's segment, as the node sees it; size 0: not mapped here */
    uintptr_t size;
    intptr_t shift; /* where byte base + i of the node's segment is in this process: base + i + shift */
} gasnetp_local_segment_t;
/* Set once by gasnet_attach (gasnetp_local_nodes entries), NULL before. */
GASNETP_API extern const gasnetp_local_segment_t *gasnetp_local_segments;
GASNETP_API extern gasnet_node_t gasnetp_local_nodes;
GASNETP_API extern __thread unsigned gasnetp_local_copies __attribute__((__tls_model__("initial-exec")));

/* Where [addr, addr + nbytes) of node's segment is in this process, or NULL. */
static __inline__ __attribute__((__always_inline__)) char *gasnetp_mapped(gasnet_node_t node, const void *addr,
                                                                          size_t nbytes) {
    const gasnetp_local_segment_t *map = gasnetp_local_segments;
    const gasnetp_local_segment_t *s;
    uintptr_t off;
    unsigned copies;
    if (__builtin_expect(map == NULL || node >= gasnetp_local_nodes, 0)) return NULL;
    s = map + node;
    off = (uintptr_t)addr - s->base;
    if (__builtin_expect(off >= s->size || nbytes > s->size - off || nbytes == 0, 0)) return NULL;
    copies = gasnetp_local_copies;
    if (__builtin_expect((copies & 255u) == 255u, 0)) return NULL; /* the library copies this one, and polls */
    gasnetp_local_copies = copies + 1;
    return (char *)addr + s->shift;
}
static __inline__ __attribute__((__always_inline__)) int gasnetp_put_here(gasnet_node_t node, void *dest,
                                                                          const void *src, size_t nbytes) {
    char *d = gasnetp_mapped(node, dest, nbytes);
    if (d == NULL) return 0;
    memmove(d, src, nbytes);
    return 1;
}
static __inline__ __attribute__((__always_inline__)) int gasnetp_get_here(void *dest, gasnet_node_t node,
                                                                          const void *src, size_t nbytes) {
    const char *s = gasnetp_mapped(node, src, nbytes);
    if (s == NULL) return 0;
    memmove(dest, s, nbytes);
    return 1;
}
/* One inline function per call (each argument evaluated once), calling the library's function
 * when the copy cannot be done here. */
#define GASNETP_INLINE static __inline__ __attribute__((__always_inline__))
#define GASNETP_LOCAL_PUT(name)                                                                                        \
    GASNETP_INLINE void gasnetp_inline_##name(gasnet_node_t node, void *dest, void *src, size_t nbytes) {              \
        if (!gasnetp_put_here(node, dest, src, nbytes)) name(node, dest, src, nbytes);                                 \
    }
#define GASNETP_LOCAL_PUT_NB(name)                                                                                     \
    GASNETP_INLINE gasnet_handle_t gasnetp_inline_##name(gasnet_node_t node, void *dest, void *src, size_t nbytes) {   \
        return gasnetp_put_here(node, dest, src, nbytes) ? GASNET_INVALID_HANDLE : name(node, dest, src, nbytes);      \
    }
#define GASNETP_LOCAL_GET(name)                                                                                        \
    GASNETP_INLINE void gasnetp_inline_##name(void *dest, gasnet_node_t node, void *src, size_t nbytes) {              \
        if (!gasnetp_get_here(dest, node, src, nbytes)) name(dest, node, src, nbytes);                                 \
    }
#define GASNETP_LOCAL_GET_NB(name)                                                                                     \
    GASNETP_INLINE gasnet_handle_t gasnetp_inline_##name(void *dest, gasnet_node_t node, void *src, size_t nbytes) {   \
        return gasnetp_get_here(dest, node, src, nbytes) ? GASNET_INVALID_HANDLE : name(dest, node, src, nbytes);      \
    }
GASNETP_LOCAL_PUT(gasnet_put)
GASNETP_LOCAL_PUT(gasnet_put_bulk)
GASNETP_LOCAL_PUT(gasnet_put_nbi)
GASNETP_LOCAL_PUT(gasnet_put_nbi_bulk)
GASNETP_LOCAL_PUT_NB(gasnet_put_nb)
GASNETP_LOCAL_PUT_NB(gasnet_put_nb_bulk)
GASNETP_LOCAL_GET(gasnet_get)
GASNETP_LOCAL_GET(gasnet_get_bulk)
GASNETP_LOCAL_GET(gasnet_get_nbi)
GASNETP_LOCAL_GET(gasnet_get_nbi_bulk)
GASNETP_LOCAL_GET_NB(gasnet_get_nb)
GASNETP_LOCAL_GET_NB(gasnet_get_nb_bulk)
#undef GASNETP_LOCAL_PUT
#undef GASNETP_LOCAL_PUT_NB
#undef GASNETP_LOCAL_GET
#undef GASNETP_LOCAL_GET_NB
#undef GASNETP_INLINE
#define gasnet_put(node, dest, src, nbytes) gasnetp_inline_gasnet_put(node, dest, src, nbytes)
#define gasnet_put_bulk(node, dest, src, nbytes) gasnetp_inline_gasnet_put_bulk(node, dest, src, nbytes)
#define gasnet_put_nbi(node, dest, src, nbytes) gasnetp_inline_gasnet_put_nbi(node, dest, src, nbytes)
#define gasnet_put_nbi_bulk(node, dest, src, nbytes) gasnetp_inline_gasnet_put_nbi_bulk(node, dest, src, nbytes)
#define gasnet_put_nb(node, dest, src, nbytes) gasnetp_inline_gasnet_put_nb(node, dest, src, nbytes)
#define gasnet_put_nb_bulk(node, dest, src, nbytes) gasnetp_inline_gasnet_put_nb_bulk(node, dest, src, nbytes)
#define gasnet_get(dest, node, src, nbytes) gasnetp_inline_gasnet_get(dest, node, src, nbytes)
#define gasnet_get_bulk(dest, node, src, nbytes) gasnetp_inline_gasnet_get_bulk(dest, node, src, nbytes)
#define gasnet_get_nbi(dest, node, src, nbytes) gasnetp_inline_gasnet_get_nbi(dest, node, src, nbytes)
#define gasnet_get_nbi_bulk(dest, node, src, nbytes) gasnetp_inline_gasnet_get_nbi_bulk(dest, node, src, nbytes)
#define gasnet_get_nb(dest, node, src, nbytes) gasnetp_inline_gasnet_get_nb(dest, node, src, nbytes)
#define gasnet_get_nb_bulk(dest, node, src, nbytes) gasnetp_inline_gasnet_get_nb_bulk(dest, node, src, nbytes)

/* ---- register-memory operations (§3.4) -------------------------------------------------------- */
GASNETP_API void gasnet_put_val(gasnet_node_t node, void *dest, gasnet_register_value_t value, size_t nbytes);
GASNETP_API gasnet_handle_t gasnet_put_nb_val(gasnet_node_t node, void *dest, gasnet_register_value_t value,
                                              size_t nbytes);
GASNETP_API void gasnet_put_nbi_val(gasnet_node_t node, void *dest, gasnet_register_value_t value, size_t nbytes);
GASNETP_API gasnet_register_value_t gasnet_get_val(gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API gasnet_valget_handle_t gasnet_get_nb_val(gasnet_node_t node, void *src, size_t nbytes);
GASNETP_API gasnet_register_value_t gasnet_wait_syncnb_valget(gasnet_valget_handle_t handle);

/* ---- barriers (§3.5) -------------------------------------------------------------------------- */
#define GASNET_BARRIERFLAG_ANONYMOUS 1
#define GASNET_BARRIERFLAG_MISMATCH 2
/* GASNet-1 extension: every node's barrier is anonymous and the client never asks for the result
 * (an anonymous barrier here, as in GASNet's reference barriers). */
#define GASNET_BARRIERFLAG_UNNAMED (GASNET_BARRIERFLAG_ANONYMOUS | 8)
GASNETP_API void gasnet_barrier_notify(int id, int flags);
GASNETP_API int gasnet_barrier_wait(int id, int flags);
GASNETP_API int gasnet_barrier_try(int id, int flags);
/* GASNet-1 extensions (not in the 1.8.1 spec): a blocking barrier (notify, then wait: returns what
 * the wait returns), and the last completed barrier's result: nonzero when no node named it, else 0
 * with *id set to the id they named. */
GASNETP_API int gasnet_barrier(int id, int flags);
GASNETP_API int gasnet_barrier_result(int *id);

/* ---- threads (§3.6) --------------------------------------------------------------------------- */
GASNETP_API gasnet_threadinfo_t gasnetp_get_threadinfo(void);
#define GASNET_GET_THREADINFO() (gasnetp_get_threadinfo())
/* A declaration: only at the top of a function or block, as the spec says. Named after its line,
 * so that one posted in a nested block does not shadow the outer one (-Wshadow in clients). */
#define GASNETP_CAT2(a, b) a##b
#define GASNETP_CAT(a, b) GASNETP_CAT2(a, b)
#define GASNET_POST_THREADINFO(info)                                                                                   \
    gasnet_threadinfo_t GASNETP_CAT(_gasnetp_threadinfo_posted_, __LINE__) __attribute__((__unused__)) = (info)
#define GASNET_BEGIN_FUNCTION() GASNET_POST_THREADINFO(GASNET_GET_THREADINFO())

#define GASNET_WAIT_SPIN 0
#define GASNET_WAIT_BLOCK 1
#define GASNET_WAIT_SPINBLOCK 2
GASNETP_API int gasnet_set_waitmode(int wait_mode);

#ifdef __cplusplus
}
#endif

#endif /* GASNET_H */
