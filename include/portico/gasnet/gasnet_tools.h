/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gasnet_tools.h — the GASNet-1 tools a client commonly needs, for Portico's GASNet.
 *
 * May be included with or without gasnet.h, in C or C++; everything here is thread-safe (the
 * GASNETT_THREAD_SAFE / GASNETT_THREAD_SINGLE selection of GASNet is accepted and ignored).
 * Timers, atomics, memory barriers, mutexes and conditions are inline; the environment helpers,
 * backtraces and system queries live in the GASNet library (link any gasnet-* pkg-config module).
 * docs/GASNET.md lists what is provided.
 */
#ifndef GASNET_TOOLS_H
#define GASNET_TOOLS_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GASNETT_API __attribute__((__visibility__("default")))

#define GASNETT_RELEASE_VERSION_MAJOR 1
#define GASNETT_RELEASE_VERSION_MINOR 8
#define GASNETT_RELEASE_VERSION_PATCH 1
/* The version of the tools interface this header provides: GASNet-1's last (GASNet 1.28), less
 * what docs/GASNET.md lists as missing. */
#define GASNETT_SPEC_VERSION_MAJOR 1
#define GASNETT_SPEC_VERSION_MINOR 9
/* Everything here is thread-safe: the PAR tools model, unless the client is a GASNET_SEQ one. */
#ifdef GASNET_SEQ
#define GASNETT_THREAD_MODEL SEQ
#else
#define GASNETT_THREAD_MODEL PAR
#ifndef GASNETT_THREAD_SAFE
#define GASNETT_THREAD_SAFE 1
#endif
#endif
#define GASNETT_CONFIG_STRING "RELEASE=1.8.1,TOOLS=PORTICO,threadsafe,timers_native,membars_native,atomics_native"
#define GASNETT_PAGESIZE 4096

/* ---- platform identification (the PLATFORM_* macros of GASNet's portable_platform.h) ----------
 * PLATFORM_COMPILER_<FAMILY> (and _C / _CXX), _FAMILYNAME (a bare token), _FAMILYID (GNU 1,
 * CLANG 19, unknown 0), _ID (FAMILYID, +10000 in C++), _VERSION (monotonic integer),
 * _VERSION_STR, _VERSION_INT(maj,min,pat), _VERSION_GT/GE/EQ/LE/LT(maj,min,pat), _IDSTR,
 * _C_LANGLVL / _CXX_LANGLVL; PLATFORM_OS_<FAMILY>, PLATFORM_OS_FAMILYNAME; PLATFORM_ARCH_<FAMILY>,
 * PLATFORM_ARCH_FAMILYNAME, PLATFORM_ARCH_32/64, PLATFORM_ARCH_LITTLE/BIG_ENDIAN.
 * Skipped when the client already has them (e.g. from GASNet's own portable_platform.h). */
#ifndef _STRINGIFY
#define _STRINGIFY_HELPER(x) #x
#define _STRINGIFY(x) _STRINGIFY_HELPER(x)
#endif
#ifndef _CONCAT
#define _CONCAT_HELPER(a, b) a##b
#define _CONCAT(a, b) _CONCAT_HELPER(a, b)
#endif

#ifndef PLATFORM_COMPILER_FAMILYID
#if defined(__clang__)
#define PLATFORM_COMPILER_CLANG 1
#define PLATFORM_COMPILER_FAMILYNAME CLANG
#define PLATFORM_COMPILER_FAMILYID 19
#ifdef __cplusplus
#define PLATFORM_COMPILER_CLANG_CXX 1
#else
#define PLATFORM_COMPILER_CLANG_C 1
#endif
#define PLATFORM_COMPILER_VERSION PLATFORM_COMPILER_VERSION_INT(__clang_major__, __clang_minor__, __clang_patchlevel__)
#define PLATFORM_COMPILER_VERSION_STR __clang_version__
#elif defined(__GNUC__)
#define PLATFORM_COMPILER_GNU 1
#define PLATFORM_COMPILER_FAMILYNAME GNU
#define PLATFORM_COMPILER_FAMILYID 1
#ifdef __cplusplus
#define PLATFORM_COMPILER_GNU_CXX 1
#else
#define PLATFORM_COMPILER_GNU_C 1
#endif
#define PLATFORM_COMPILER_VERSION PLATFORM_COMPILER_VERSION_INT(__GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__)
#define PLATFORM_COMPILER_VERSION_STR                                                                                  \
    _STRINGIFY(__GNUC__) "." _STRINGIFY(__GNUC_MINOR__) "." _STRINGIFY(__GNUC_PATCHLEVEL__)
#else
#define PLATFORM_COMPILER_UNKNOWN 1
#define PLATFORM_COMPILER_FAMILYNAME UNKNOWN
#define PLATFORM_COMPILER_FAMILYID 0
#define PLATFORM_COMPILER_VERSION 0
#define PLATFORM_COMPILER_VERSION_STR "0"
#endif
#define PLATFORM_COMPILER_VERSION_INT(maj, min, pat) (((maj) << 16) | ((min) << 8) | (pat))
#define PLATFORM_COMPILER_VERSION_GT(maj, min, pat)                                                                    \
    (PLATFORM_COMPILER_VERSION > PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_GE(maj, min, pat)                                                                    \
    (PLATFORM_COMPILER_VERSION >= PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_EQ(maj, min, pat)                                                                    \
    (PLATFORM_COMPILER_VERSION == PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_LE(maj, min, pat)                                                                    \
    (PLATFORM_COMPILER_VERSION <= PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_LT(maj, min, pat)                                                                    \
    (PLATFORM_COMPILER_VERSION < PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#ifdef __cplusplus
#define PLATFORM_COMPILER_ID (10000 + PLATFORM_COMPILER_FAMILYID)
#define PLATFORM_COMPILER_CXX_LANGLVL __cplusplus
#define PLATFORMI_COMPILER_STD ",__cplusplus=" _STRINGIFY(__cplusplus)
#else
#define PLATFORM_COMPILER_ID PLATFORM_COMPILER_FAMILYID
#ifdef __STDC_VERSION__
#define PLATFORM_COMPILER_C_LANGLVL __STDC_VERSION__
#define PLATFORMI_COMPILER_STD ",__STDC_VERSION__=" _STRINGIFY(__STDC_VERSION__)
#else
#define PLATFORM_COMPILER_C_LANGLVL 199000L
#define PLATFORMI_COMPILER_STD ""
#endif
#endif
#define PLATFORM_COMPILER_IDSTR                                                                                        \
    "|COMPILER_FAMILY:" _STRINGIFY(                                                                                    \
        PLATFORM_COMPILER_FAMILYNAME) "|COMPILER_VERSION:" PLATFORM_COMPILER_VERSION_STR                               \
                                      "|COMPILER_FAMILYID:" _STRINGIFY(                                                \
                                          PLATFORM_COMPILER_FAMILYID) "|STD:__STDC__" PLATFORMI_COMPILER_STD "|"
#endif /* PLATFORM_COMPILER_FAMILYID */

#ifndef PLATFORM_OS_FAMILYNAME
#if defined(__linux__)
#define PLATFORM_OS_LINUX 1
#define PLATFORM_OS_FAMILYNAME LINUX
#elif defined(__APPLE__) && defined(__MACH__)
#define PLATFORM_OS_DARWIN 1
#define PLATFORM_OS_FAMILYNAME DARWIN
#elif defined(__FreeBSD__)
#define PLATFORM_OS_FREEBSD 1
#define PLATFORM_OS_FAMILYNAME FREEBSD
#else
#define PLATFORM_OS_UNKNOWN 1
#define PLATFORM_OS_FAMILYNAME UNKNOWN
#endif
#endif /* PLATFORM_OS_FAMILYNAME */

#ifndef PLATFORM_ARCH_FAMILYNAME
#if defined(__x86_64__)
#define PLATFORM_ARCH_X86_64 1
#define PLATFORM_ARCH_FAMILYNAME X86_64
#define PLATFORMI_ARCH_TUPLE "x86_64"
#elif defined(__i386__)
#define PLATFORM_ARCH_X86 1
#define PLATFORM_ARCH_FAMILYNAME X86
#define PLATFORMI_ARCH_TUPLE "i686"
#elif defined(__aarch64__)
#define PLATFORM_ARCH_AARCH64 1
#define PLATFORM_ARCH_FAMILYNAME AARCH64
#define PLATFORMI_ARCH_TUPLE "aarch64"
#elif defined(__powerpc__) || defined(__powerpc64__)
#define PLATFORM_ARCH_POWERPC 1
#define PLATFORM_ARCH_FAMILYNAME POWERPC
#define PLATFORMI_ARCH_TUPLE "powerpc"
#else
#define PLATFORM_ARCH_UNKNOWN 1
#define PLATFORM_ARCH_FAMILYNAME UNKNOWN
#define PLATFORMI_ARCH_TUPLE "unknown"
#endif
#if defined(__LP64__) || defined(_LP64)
#define PLATFORM_ARCH_64 1
#else
#define PLATFORM_ARCH_32 1
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PLATFORM_ARCH_BIG_ENDIAN 1
#else
#define PLATFORM_ARCH_LITTLE_ENDIAN 1
#endif
#endif /* PLATFORM_ARCH_FAMILYNAME */

/* ---- build configuration ----------------------------------------------------------------------
 * GASNet records the compiler its configure step found and defines GASNETT_CONFIGURE_MISMATCH
 * (to 1) only when a client is compiled by another one. This header has no configure step: it
 * adapts to whichever GNU-compatible compiler (GCC, Clang) includes it, so the "configured"
 * compiler (GASNETT_PLATFORM_COMPILER_*) is the client's own, and the mismatch is flagged only for
 * compilers outside that family. */
#ifndef __GNUC__
#define GASNETT_CONFIGURE_MISMATCH 1
#endif
#define GASNETT_PLATFORM_COMPILER_IDSTR PLATFORM_COMPILER_IDSTR
#define GASNETT_PLATFORM_COMPILER_FAMILYID PLATFORM_COMPILER_FAMILYID
#define GASNETT_PLATFORM_COMPILER_ID PLATFORM_COMPILER_ID
#define GASNETT_PLATFORM_COMPILER_VERSION PLATFORM_COMPILER_VERSION
#if defined(__linux__) && defined(__GLIBC__)
#define GASNETT_SYSTEM_TUPLE PLATFORMI_ARCH_TUPLE "-unknown-linux-gnu"
#elif defined(__linux__)
#define GASNETT_SYSTEM_TUPLE PLATFORMI_ARCH_TUPLE "-unknown-linux"
#else
#define GASNETT_SYSTEM_TUPLE PLATFORMI_ARCH_TUPLE "-unknown-unknown"
#endif
#define GASNETT_PAGESHIFT 12
#if defined(__powerpc__) || defined(__powerpc64__)
#define GASNETT_CACHE_LINE_BYTES 128
#else
#define GASNETT_CACHE_LINE_BYTES 64
#endif
/* Client threads per process that may call GASNet: one under GASNET_SEQ; otherwise Portico has no
 * fixed limit, and this is the bound GASNet clients size their per-thread tables with. */
#ifdef GASNET_SEQ
#define GASNETT_MAX_THREADS 1
#else
#define GASNETT_MAX_THREADS 256
#endif

/* ---- compiler helpers (GASNet-1 signatures: the *P(fnname) forms are GASNet's pragma variants for
 * compilers without attributes, so they are empty here) ------------------------------------------ */
#define GASNETT_INLINE(fnname) static inline
#define GASNETT_ALWAYS_INLINE(fnname) static inline __attribute__((__always_inline__))
#define GASNETT_PLEASE_INLINE(fnname) static inline
#define GASNETT_INLINE_MODIFIER(fnname) inline
#define GASNETT_NEVER_INLINE(fnname, declarator) __attribute__((__noinline__)) declarator
#define GASNETT_PREDICT_TRUE(exp) __builtin_expect(!!(exp), 1)
#define GASNETT_PREDICT_FALSE(exp) __builtin_expect(!!(exp), 0)
#define GASNETT_LIKELY(exp) GASNETT_PREDICT_TRUE(exp)
#define GASNETT_UNLIKELY(exp) GASNETT_PREDICT_FALSE(exp)
#ifndef if_pf
#define if_pf(cond) if (GASNETT_PREDICT_FALSE(cond))
#define if_pt(cond) if (GASNETT_PREDICT_TRUE(cond))
#endif
#define GASNETT_NORETURN __attribute__((__noreturn__))
#define GASNETT_NORETURNP(fnname)
#define GASNETT_MALLOC __attribute__((__malloc__))
#define GASNETT_MALLOCP(fnname)
#define GASNETT_PURE __attribute__((__pure__))
#define GASNETT_PUREP(fnname)
#define GASNETT_CONST __attribute__((__const__))
#define GASNETT_CONSTP(fnname)
#define GASNETT_WARN_UNUSED_RESULT __attribute__((__warn_unused_result__))
#define GASNETT_USED __attribute__((__used__))
#define GASNETT_UNUSED __attribute__((__unused__))
#define GASNETT_RESTRICT __restrict__
#define GASNETT_HOT __attribute__((__hot__))
#define GASNETT_COLD __attribute__((__cold__))
#define GASNETT_DEPRECATED __attribute__((__deprecated__))
/* A data declaration the client may or may not define elsewhere (GASNet's tentative definitions;
 * an extern declaration works with -fno-common, GCC's default since 10). */
#define GASNETT_TENTATIVE_EXTERN extern
#define gasnett_constant_p(expr) __builtin_constant_p(expr)
#define GASNETT_FAST_ALIGNED_MEMCPY(dst, src, nbytes) ((void)memcpy((dst), (src), (nbytes)))
#define GASNETT_FAST_UNALIGNED_MEMCPY(dst, src, nbytes) ((void)memcpy((dst), (src), (nbytes)))
/* fnname: the function declared; fmtarg, firstvararg: 1-based positions of the format and of the
 * first variadic argument; declarator: the declaration itself (a prototype or a definition head). */
#define GASNETT_FORMAT_PRINTF(fnname, fmtarg, firstvararg, declarator)                                                 \
    __attribute__((__format__(__printf__, fmtarg, firstvararg))) declarator
#define GASNETT_FORMAT_PRINTF_FUNCPTR(fnname, fmtarg, firstvararg, declarator)                                         \
    __attribute__((__format__(__printf__, fmtarg, firstvararg))) declarator
#define GASNETT_CURRENT_FUNCTION __func__
#define GASNETT_IDENT(identName, identText) static const char identName[] GASNETT_UNUSED = identText
#ifdef __cplusplus
#define GASNETT_BEGIN_EXTERNC extern "C" {
#define GASNETT_END_EXTERNC }
#define GASNETT_EXTERNC extern "C"
#else
#define GASNETT_BEGIN_EXTERNC
#define GASNETT_END_EXTERNC
#define GASNETT_EXTERNC
#endif

/* ---- tracing and statistics: Portico has no tracing or statistics build (GASNET_TRACE,
 * GASNET_STATS), so, as in such a GASNet build, these are off and do nothing; the printf forms
 * still check their format against the arguments. */
#define GASNETT_TRACE_ENABLED 0
static inline GASNETT_UNUSED void gasnetti_trace_printf_off(const char *fmt, ...)
    __attribute__((__format__(__printf__, 1, 2)));
static inline GASNETT_UNUSED void gasnetti_trace_printf_off(const char *fmt, ...) { (void)fmt; }
#define GASNETT_TRACE_PRINTF gasnetti_trace_printf_off
#define GASNETT_TRACE_PRINTF_FORCE gasnetti_trace_printf_off
#define GASNETT_TRACE_GETMASK() ""
#define GASNETT_TRACE_SETMASK(mask) ((void)0)
#define GASNETT_TRACE_GET_TRACELOCAL() (0)
#define GASNETT_TRACE_SET_TRACELOCAL(newval) ((void)0)
#define GASNETT_TRACE_SETSOURCELINE(file, line) ((void)0)
#define GASNETT_TRACE_GETSOURCELINE(pfile, pline) ((void)0)
#define GASNETT_TRACE_FREEZESOURCELINE() ((void)0)
#define GASNETT_TRACE_UNFREEZESOURCELINE() ((void)0)
#define GASNETT_STATS_INIT(callbackfn) 0
#define GASNETT_STATS_GETMASK() ""
#define GASNETT_STATS_SETMASK(mask) ((void)0)

/* ---- timers: a monotonic wall clock (CLOCK_MONOTONIC); one tick is one nanosecond -------------
 * Inline when <time.h> declares the POSIX clocks (any POSIX or GNU feature level), otherwise (e.g.
 * strict -std=c99) a call into the library that does the same. */
typedef uint64_t gasnett_tick_t;
#define GASNETT_TICK_MIN ((gasnett_tick_t)0)
#define GASNETT_TICK_MAX (~(gasnett_tick_t)0)
GASNETT_API gasnett_tick_t gasnett_ticks_now_lib(void);
#ifdef CLOCK_MONOTONIC
static inline gasnett_tick_t gasnett_ticks_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (gasnett_tick_t)ts.tv_sec * 1000000000u + (gasnett_tick_t)ts.tv_nsec;
}
#else
#define gasnett_ticks_now() gasnett_ticks_now_lib()
#endif
static inline uint64_t gasnett_ticks_to_ns(gasnett_tick_t t) { return t; }
static inline uint64_t gasnett_ticks_to_us(gasnett_tick_t t) { return t / 1000u; }
static inline double gasnett_ticks_to_ns_dbl(gasnett_tick_t t) { return (double)t; }
static inline double gasnett_ticks_to_us_dbl(gasnett_tick_t t) { return (double)t / 1000.0; }
/* Measured once per process: the smallest nonzero difference of two readings, and the cost of a
 * reading, in microseconds. */
GASNETT_API double gasnett_tick_granularityus(void);
GASNETT_API double gasnett_tick_overheadus(void);
/* Microseconds since the epoch (gettimeofday). */
GASNETT_API uint64_t gasnett_gettimeofday_us(void);

/* ---- memory barriers -------------------------------------------------------------------------- */
#define gasnett_compiler_fence() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define gasnett_local_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define gasnett_local_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define gasnett_local_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define gasnett_spinloop_hint() __builtin_ia32_pause()
#if !defined(__x86_64__) && !defined(__i386__)
#undef gasnett_spinloop_hint
#define gasnett_spinloop_hint() gasnett_compiler_fence()
#endif
/* GASNet's "weak" barriers may be no-ops where no other thread can look; here every build is
 * thread-safe, so they are the full barriers. */
#define gasnett_weak_mb() gasnett_local_mb()
#define gasnett_weak_wmb() gasnett_local_wmb()
#define gasnett_weak_rmb() gasnett_local_rmb()

/* ---- atomics ---------------------------------------------------------------------------------
 * gasnett_atomic_t (32-bit, unsigned values, signed view via gasnett_atomic_signed),
 * gasnett_atomic32_t and gasnett_atomic64_t. Every operation is sequentially consistent, which
 * gives whatever ordering the fence flags ask for; the flags are accepted and need not be used. */
#define GASNETT_ATOMIC_NONE 0x00
#define GASNETT_ATOMIC_RMB_PRE 0x01
#define GASNETT_ATOMIC_WMB_PRE 0x02
#define GASNETT_ATOMIC_RMB_POST 0x04
#define GASNETT_ATOMIC_WMB_POST 0x08
#define GASNETT_ATOMIC_RMB_POST_IF_TRUE 0x10
#define GASNETT_ATOMIC_RMB_POST_IF_FALSE 0x20
#define GASNETT_ATOMIC_MB_PRE (GASNETT_ATOMIC_RMB_PRE | GASNETT_ATOMIC_WMB_PRE)
#define GASNETT_ATOMIC_MB_POST (GASNETT_ATOMIC_RMB_POST | GASNETT_ATOMIC_WMB_POST)
#define GASNETT_ATOMIC_REL GASNETT_ATOMIC_WMB_PRE
#define GASNETT_ATOMIC_ACQ GASNETT_ATOMIC_RMB_POST
#define GASNETT_ATOMIC_ACQ_IF_TRUE GASNETT_ATOMIC_RMB_POST_IF_TRUE
#define GASNETT_ATOMIC_ACQ_IF_FALSE GASNETT_ATOMIC_RMB_POST_IF_FALSE
#define GASNETT_HAVE_ATOMIC_CAS 1
#define GASNETT_HAVE_ATOMIC_ADD_SUB 1
#define GASNETT_HAVE_STRONGATOMIC_CAS 1
#define GASNETT_HAVE_STRONGATOMIC_ADD_SUB 1
#define GASNETT_HAVE_ATOMIC32_T 1
#define GASNETT_HAVE_ATOMIC64_T 1

typedef uint32_t gasnett_atomic_val_t;
typedef int32_t gasnett_atomic_sval_t;
#define GASNETT_ATOMIC_MAX ((gasnett_atomic_val_t)0xFFFFFFFFu)
#define GASNETT_ATOMIC_SIGNED_MIN ((gasnett_atomic_sval_t)INT32_MIN)
#define GASNETT_ATOMIC_SIGNED_MAX ((gasnett_atomic_sval_t)INT32_MAX)
#define gasnett_atomic_signed(v) ((gasnett_atomic_sval_t)(v))

#define GASNETT_DEFINE_ATOMIC_(T, VT, P)                                                                               \
    typedef struct {                                                                                                   \
        volatile VT ctr;                                                                                               \
    } T;                                                                                                               \
    static inline VT P##_read(T *p, int f) {                                                                           \
        (void)f;                                                                                                       \
        return __atomic_load_n(&p->ctr, __ATOMIC_SEQ_CST);                                                             \
    }                                                                                                                  \
    static inline void P##_set(T *p, VT v, int f) {                                                                    \
        (void)f;                                                                                                       \
        __atomic_store_n(&p->ctr, v, __ATOMIC_SEQ_CST);                                                                \
    }                                                                                                                  \
    static inline int P##_compare_and_swap(T *p, VT oldval, VT newval, int f) {                                        \
        (void)f;                                                                                                       \
        return __atomic_compare_exchange_n(&p->ctr, &oldval, newval, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);           \
    }                                                                                                                  \
    static inline VT P##_swap(T *p, VT v, int f) {                                                                     \
        (void)f;                                                                                                       \
        return __atomic_exchange_n(&p->ctr, v, __ATOMIC_SEQ_CST);                                                      \
    }                                                                                                                  \
    static inline VT P##_add(T *p, VT v, int f) {                                                                      \
        (void)f;                                                                                                       \
        return __atomic_add_fetch(&p->ctr, v, __ATOMIC_SEQ_CST);                                                       \
    }                                                                                                                  \
    static inline VT P##_subtract(T *p, VT v, int f) {                                                                 \
        (void)f;                                                                                                       \
        return __atomic_sub_fetch(&p->ctr, v, __ATOMIC_SEQ_CST);                                                       \
    }                                                                                                                  \
    static inline VT P##_fetchadd(T *p, VT v, int f) {                                                                 \
        (void)f;                                                                                                       \
        return __atomic_fetch_add(&p->ctr, v, __ATOMIC_SEQ_CST);                                                       \
    }                                                                                                                  \
    static inline void P##_increment(T *p, int f) { (void)P##_add(p, 1, f); }                                          \
    static inline void P##_decrement(T *p, int f) { (void)P##_subtract(p, 1, f); }                                     \
    static inline int P##_decrement_and_test(T *p, int f) { return P##_subtract(p, 1, f) == 0; }

GASNETT_DEFINE_ATOMIC_(gasnett_atomic_t, gasnett_atomic_val_t, gasnett_atomic)
GASNETT_DEFINE_ATOMIC_(gasnett_atomic32_t, uint32_t, gasnett_atomic32)
GASNETT_DEFINE_ATOMIC_(gasnett_atomic64_t, uint64_t, gasnett_atomic64)
#undef GASNETT_DEFINE_ATOMIC_
#define gasnett_atomic_init(v)                                                                                         \
    { (v) }
#define gasnett_atomic32_init(v)                                                                                       \
    { (v) }
#define gasnett_atomic64_init(v)                                                                                       \
    { (v) }
/* Strong atomics are the same objects here (every atomic is coherent with every other access). */
typedef gasnett_atomic_t gasnett_strongatomic_t;
#define gasnett_strongatomic_init gasnett_atomic_init
#define gasnett_strongatomic_read gasnett_atomic_read
#define gasnett_strongatomic_set gasnett_atomic_set
#define gasnett_strongatomic_increment gasnett_atomic_increment
#define gasnett_strongatomic_decrement gasnett_atomic_decrement
#define gasnett_strongatomic_decrement_and_test gasnett_atomic_decrement_and_test
#define gasnett_strongatomic_compare_and_swap gasnett_atomic_compare_and_swap
#define gasnett_strongatomic_swap gasnett_atomic_swap
#define gasnett_strongatomic_add gasnett_atomic_add
#define gasnett_strongatomic_subtract gasnett_atomic_subtract
typedef gasnett_atomic32_t gasnett_strongatomic32_t;
#define gasnett_strongatomic32_init gasnett_atomic32_init
#define gasnett_strongatomic32_read gasnett_atomic32_read
#define gasnett_strongatomic32_set gasnett_atomic32_set
#define gasnett_strongatomic32_increment gasnett_atomic32_increment
#define gasnett_strongatomic32_decrement gasnett_atomic32_decrement
#define gasnett_strongatomic32_decrement_and_test gasnett_atomic32_decrement_and_test
#define gasnett_strongatomic32_compare_and_swap gasnett_atomic32_compare_and_swap
#define gasnett_strongatomic32_swap gasnett_atomic32_swap
#define gasnett_strongatomic32_add gasnett_atomic32_add
#define gasnett_strongatomic32_subtract gasnett_atomic32_subtract
typedef gasnett_atomic64_t gasnett_strongatomic64_t;
#define gasnett_strongatomic64_init gasnett_atomic64_init
#define gasnett_strongatomic64_read gasnett_atomic64_read
#define gasnett_strongatomic64_set gasnett_atomic64_set
#define gasnett_strongatomic64_increment gasnett_atomic64_increment
#define gasnett_strongatomic64_decrement gasnett_atomic64_decrement
#define gasnett_strongatomic64_decrement_and_test gasnett_atomic64_decrement_and_test
#define gasnett_strongatomic64_compare_and_swap gasnett_atomic64_compare_and_swap
#define gasnett_strongatomic64_swap gasnett_atomic64_swap
#define gasnett_strongatomic64_add gasnett_atomic64_add
#define gasnett_strongatomic64_subtract gasnett_atomic64_subtract

/* ---- mutexes and conditions (POSIX threads) ---------------------------------------------------- */
typedef pthread_mutex_t gasnett_mutex_t;
#define GASNETT_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define gasnett_mutex_init(pm) pthread_mutex_init((pm), NULL)
#define gasnett_mutex_destroy(pm) pthread_mutex_destroy(pm)
#define gasnett_mutex_lock(pm) pthread_mutex_lock(pm)
#define gasnett_mutex_trylock(pm) pthread_mutex_trylock(pm) /* 0 or EBUSY */
#define gasnett_mutex_unlock(pm) pthread_mutex_unlock(pm)
#define gasnett_mutex_assertlocked(pm) ((void)0)
#define gasnett_mutex_assertunlocked(pm) ((void)0)
#define gasnett_mutex_destroy_ignoreerr(pm) ((void)pthread_mutex_destroy(pm))

typedef pthread_cond_t gasnett_cond_t;
#define GASNETT_COND_INITIALIZER PTHREAD_COND_INITIALIZER
#define gasnett_cond_init(pc) pthread_cond_init((pc), NULL)
#define gasnett_cond_destroy(pc) pthread_cond_destroy(pc)
#define gasnett_cond_signal(pc) pthread_cond_signal(pc)
#define gasnett_cond_broadcast(pc) pthread_cond_broadcast(pc)
#define gasnett_cond_wait(pc, pm) pthread_cond_wait((pc), (pm))

/* Reader-writer locks (POSIX); the lock calls return 0 or an errno value, the try forms EBUSY when
 * taken. Where <pthread.h> hides them (strict ISO C, e.g. -std=c99 without a POSIX feature level)
 * they are mutexes, as in GASNet where the system lacks them: correct, without concurrent readers.
 * The assertions are those of a GASNet built without debugging: no-ops. */
#ifdef PTHREAD_RWLOCK_INITIALIZER
typedef pthread_rwlock_t gasnett_rwlock_t;
#define GASNETT_RWLOCK_INITIALIZER PTHREAD_RWLOCK_INITIALIZER
#define gasnett_rwlock_init(pl) pthread_rwlock_init((pl), NULL)
#define gasnett_rwlock_destroy(pl) pthread_rwlock_destroy(pl)
#define gasnett_rwlock_rdlock(pl) pthread_rwlock_rdlock(pl)
#define gasnett_rwlock_wrlock(pl) pthread_rwlock_wrlock(pl)
#define gasnett_rwlock_tryrdlock(pl) pthread_rwlock_tryrdlock(pl)
#define gasnett_rwlock_trywrlock(pl) pthread_rwlock_trywrlock(pl)
#define gasnett_rwlock_unlock(pl) pthread_rwlock_unlock(pl)
#else
typedef pthread_mutex_t gasnett_rwlock_t;
#define GASNETT_RWLOCK_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define gasnett_rwlock_init(pl) pthread_mutex_init((pl), NULL)
#define gasnett_rwlock_destroy(pl) pthread_mutex_destroy(pl)
#define gasnett_rwlock_rdlock(pl) pthread_mutex_lock(pl)
#define gasnett_rwlock_wrlock(pl) pthread_mutex_lock(pl)
#define gasnett_rwlock_tryrdlock(pl) pthread_mutex_trylock(pl)
#define gasnett_rwlock_trywrlock(pl) pthread_mutex_trylock(pl)
#define gasnett_rwlock_unlock(pl) pthread_mutex_unlock(pl)
#endif
#define gasnett_rwlock_assertlocked(pl) ((void)0)
#define gasnett_rwlock_assertrdlocked(pl) ((void)0)
#define gasnett_rwlock_assertwrlocked(pl) ((void)0)
#define gasnett_rwlock_assertunlocked(pl) ((void)0)

/* ---- thread-specific data -------------------------------------------------------------------- */
typedef struct {
    pthread_once_t once;
    pthread_key_t key;
    volatile int ready;
} gasnett_threadkey_t;
#define GASNETT_THREADKEY_INITIALIZER                                                                                  \
    { PTHREAD_ONCE_INIT, 0, 0 }
#define GASNETT_THREADKEY_DEFINE(key) gasnett_threadkey_t key = GASNETT_THREADKEY_INITIALIZER
#define GASNETT_THREADKEY_DECLARE(key) extern gasnett_threadkey_t key
GASNETT_API void gasnett_threadkey_init(gasnett_threadkey_t *key);
GASNETT_API void *gasnett_threadkey_get(gasnett_threadkey_t *key);
GASNETT_API void gasnett_threadkey_set(gasnett_threadkey_t *key, void *value);
#define gasnett_threadkey_init(key) gasnett_threadkey_init(&(key))
#define gasnett_threadkey_get(key) gasnett_threadkey_get(&(key))
#define gasnett_threadkey_set(key, value) gasnett_threadkey_set(&(key), (value))
#define gasnett_threadkey_get_noinit gasnett_threadkey_get
#define gasnett_threadkey_set_noinit gasnett_threadkey_set

/* ---- environment ------------------------------------------------------------------------------
 * These read this process's environment. Values set with =1/y/yes/t/true/on (any case) are "yes",
 * =0/n/no/f/false/off "no". Integers accept a K/M/G/T suffix (powers of 1024) when
 * mem_size_multiplier is nonzero; a bare number is then multiplied by mem_size_multiplier
 * (so 1 means bytes, 1048576 megabytes). A malformed value is a fatal error. */
GASNETT_API char *gasnett_getenv(const char *keyname);
/* Returns the value, or defaultval (a char *, as in GASNet; the caller must not modify it). */
GASNETT_API char *gasnett_getenv_withdefault(const char *keyname, const char *defaultval);
GASNETT_API int gasnett_getenv_yesno_withdefault(const char *keyname, int defaultval);
GASNETT_API int64_t gasnett_getenv_int_withdefault(const char *keyname, int64_t defaultval,
                                                   uint64_t mem_size_multiplier);
GASNETT_API double gasnett_getenv_dbl_withdefault(const char *keyname, double defaultval);
/* Parse as gasnett_getenv_int_withdefault does; malformed input is a fatal error. */
GASNETT_API int64_t gasnett_parse_int(const char *str, uint64_t mem_size_multiplier);
GASNETT_API double gasnett_parse_dbl(const char *str); /* a Portico extension */
/* Set or remove a variable of this process's environment only; a failure is a fatal error. */
GASNETT_API void gasnett_setenv(const char *key, const char *value);
GASNETT_API void gasnett_unsetenv(const char *key);
/* Nonzero when GASNET_VERBOSEENV is set (to anything but empty) and this process is to report the
 * environment settings: node 0 once gasnet_init has run, every process of a tools-only program.
 * The _display calls print "ENV parameter: KEY = VALUE" (with "(default)" when is_dflt) on stderr
 * then, once per key; envint shows a memory size with a unit when is_mem_size. */
GASNETT_API int gasnett_verboseenv(void);
GASNETT_API void gasnett_envstr_display(const char *key, const char *val, int is_dflt);
GASNETT_API void gasnett_envint_display(const char *key, int64_t val, int is_dflt, int is_mem_size);
GASNETT_API void gasnett_envdbl_display(const char *key, double val, int is_dflt);
/* val as text into buf (bufsz bytes, truncated to fit), returning buf: decimal, or with
 * is_mem_size the largest of "TB", "GB", "MB", "KB" that divides it exactly (else "B"), so that
 * gasnett_parse_int(buf, is_mem_size) gives val back. */
GASNETT_API char *gasnett_format_number(int64_t val, char *buf, size_t bufsz, int is_mem_size);

/* ---- system ----------------------------------------------------------------------------------- */
static inline int gasnett_sched_yield(void) { return sched_yield(); }
static inline int gasnett_isLittleEndian(void) {
    const union {
        uint32_t word;
        unsigned char byte[4];
    } probe = {1};
    return probe.byte[0] == 1;
}
/* Signal handlers: gasnett_reghandler installs fp for sigtocatch and returns the previous handler
 * (a failure is fatal); gasnett_signame_fromval names a signal ("SIGINT"), NULL when unknown. */
typedef void (*gasnett_sighandlerfn_t)(int);
GASNETT_API gasnett_sighandlerfn_t gasnett_reghandler(int sigtocatch, gasnett_sighandlerfn_t fp);
GASNETT_API const char *gasnett_signame_fromval(int sigval);
/* Raise the soft limit of one resource (RLIMIT_*; lim_desc names it in messages) to its hard
 * limit, returning 1 on success, 0 when it could not be raised; gasnett_maximize_rlimits does so
 * for the CPU time, data, address space, resident set, open files, processes and locked memory
 * limits and returns 1 when all were raised. */
GASNETT_API int gasnett_maximize_rlimit(int res, const char *lim_desc);
GASNETT_API int gasnett_maximize_rlimits(void);
/* Binds the calling thread to CPU rank % gasnett_cpu_count() (no effect where that fails). */
GASNETT_API void gasnett_set_affinity(int rank);
/* Flushes and closes stdin, stdout and stderr (at the end of a process). */
GASNETT_API void gasnett_close_streams(void);
/* Memory aligned to align bytes (a power of two); a failure is fatal. Free it with
 * gasnett_free_aligned. */
GASNETT_API void *gasnett_malloc_aligned(size_t align, size_t sz) GASNETT_MALLOC;
GASNETT_API void gasnett_free_aligned(void *ptr);
GASNETT_API int gasnett_cpu_count(void);                       /* online CPUs */
GASNETT_API uint64_t gasnett_getPhysMemSz(int failureIsFatal); /* bytes of physical memory */
GASNETT_API const char *gasnett_gethostname(void);
GASNETT_API void gasnett_flush_streams(void); /* fflush every stdio stream */
GASNETT_FORMAT_PRINTF(gasnett_fatalerror, 1, 2,
                      GASNETT_API void gasnett_fatalerror(const char *msg, ...) GASNETT_NORETURN);
GASNETT_API void gasnett_killmyprocess(int exitcode) GASNETT_NORETURN; /* _exit, no cleanup */
/* A non-empty list, one "    <option>\n" line each, when the library was built in a way that
 * slows it down (no optimization, a sanitizer), so benchmarks can warn; "" otherwise. */
GASNETT_API const char *gasnett_performance_warning_str(void);

/* A fast, simple (not cryptographic) 64-bit checksum of numbytes bytes: each byte is xored into
 * the running value after rotating it left by 8 bits. */
GASNETT_API uint64_t gasnett_checksum(const void *p, int numbytes);

/* Number of zero bytes in [src, src + len); the _copy form also copies them to dst (no overlap). */
GASNETT_API size_t gasnett_count0s(const void *src, size_t len);
GASNETT_API size_t gasnett_count0s_copy(void *GASNETT_RESTRICT dst, const void *GASNETT_RESTRICT src, size_t len);
/* ... and among the bytes of one word. */
static inline int gasnett_count0s_uint64_t(uint64_t x) {
    int n = 0;
    for (unsigned i = 0; i < 8; ++i) n += ((x >> (8 * i)) & 0xFFu) == 0;
    return n;
}
static inline int gasnett_count0s_uint32_t(uint32_t x) {
    return gasnett_count0s_uint64_t((uint64_t)x | 0xFFFFFFFF00000000ull);
}
#define gasnett_count0s_uintptr_t(x) gasnett_count0s_uint64_t((uint64_t)(uintptr_t)(x))

/* ---- backtraces --------------------------------------------------------------------------------
 * gasnett_print_backtrace writes a backtrace of the calling thread to fd: a header line naming
 * the program (the exename given to gasnett_backtrace_init, else /proc/self/exe) and the pid,
 * then the frames. Mechanisms, tried in the order GASNET_BACKTRACE_TYPE lists them (a comma
 * list of names; default: the client's, then EXECINFO): the client's own, when it defines
 * gasnett_backtrace_user (name, fnp(fd) returning 0 on success, threadsupport), and EXECINFO
 * (glibc backtrace_symbols_fd). Returns 0 when one succeeded, nonzero otherwise. The _ifenabled
 * variant does so only when GASNET_BACKTRACE is set to yes (else returns 1). */
GASNETT_API void gasnett_backtrace_init(const char *exename);
GASNETT_API int gasnett_print_backtrace(int fd);
GASNETT_API int gasnett_print_backtrace_ifenabled(int fd);
typedef struct {
    const char *name;  /* upper-case name, as listed in GASNET_BACKTRACE_TYPE */
    int (*fnp)(int);   /* writes the backtrace to the fd, returns 0 on success */
    int threadsupport; /* backtraces the calling thread (not necessarily another) */
} gasnett_backtrace_type_t;
/* Weak: defined by the client that wants its own mechanism, absent otherwise. */
GASNETT_API extern gasnett_backtrace_type_t gasnett_backtrace_user __attribute__((__weak__));

#ifdef __cplusplus
}
#endif

#endif /* GASNET_TOOLS_H */
