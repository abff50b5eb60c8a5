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
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GASNETT_API __attribute__((__visibility__("default")))

#define GASNETT_RELEASE_VERSION_MAJOR 1
#define GASNETT_RELEASE_VERSION_MINOR 8
#define GASNETT_RELEASE_VERSION_PATCH 1
#define GASNETT_CONFIG_STRING "RELEASE=1.8.1,TOOLS=PORTICO,threadsafe,timers_native,membars_native,atomics_native"
#define GASNETT_PAGESIZE 4096

/* ---- compiler helpers ------------------------------------------------------------------------- */
#define GASNETT_INLINE(fnname) static inline
#define GASNETT_INLINE_MODIFIER(fnname) inline
#define GASNETT_NEVER_INLINE(fnname, declarator) __attribute__((__noinline__)) declarator
#define GASNETT_PREDICT_TRUE(exp) __builtin_expect(!!(exp), 1)
#define GASNETT_PREDICT_FALSE(exp) __builtin_expect(!!(exp), 0)
#define GASNETT_LIKELY(exp) GASNETT_PREDICT_TRUE(exp)
#define GASNETT_UNLIKELY(exp) GASNETT_PREDICT_FALSE(exp)
#define GASNETT_NORETURN __attribute__((__noreturn__))
#define GASNETT_UNUSED __attribute__((__unused__))
#define GASNETT_FORMAT_PRINTF(fmtarg, firstvararg) __attribute__((__format__(__printf__, fmtarg, firstvararg)))
#define GASNETT_CURRENT_FUNCTION __func__
#define GASNETT_IDENT(identName, identText) static const char identName[] GASNETT_UNUSED = identText
#ifdef __cplusplus
#define GASNETT_BEGIN_EXTERNC extern "C" {
#define GASNETT_END_EXTERNC }
#else
#define GASNETT_BEGIN_EXTERNC
#define GASNETT_END_EXTERNC
#endif

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

#define GASNETT_DEFINE_ATOMIC_(T, VT, P)                                                           \
    typedef struct {                                                                               \
        volatile VT ctr;                                                                           \
    } T;                                                                                           \
    static inline VT P##_read(T *p, int f) {                                                       \
        (void)f;                                                                                   \
        return __atomic_load_n(&p->ctr, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    static inline void P##_set(T *p, VT v, int f) {                                                \
        (void)f;                                                                                   \
        __atomic_store_n(&p->ctr, v, __ATOMIC_SEQ_CST);                                            \
    }                                                                                              \
    static inline int P##_compare_and_swap(T *p, VT oldval, VT newval, int f) {                    \
        (void)f;                                                                                   \
        return __atomic_compare_exchange_n(&p->ctr, &oldval, newval, 0, __ATOMIC_SEQ_CST,          \
                                           __ATOMIC_SEQ_CST);                                      \
    }                                                                                              \
    static inline VT P##_swap(T *p, VT v, int f) {                                                 \
        (void)f;                                                                                   \
        return __atomic_exchange_n(&p->ctr, v, __ATOMIC_SEQ_CST);                                  \
    }                                                                                              \
    static inline VT P##_add(T *p, VT v, int f) {                                                  \
        (void)f;                                                                                   \
        return __atomic_add_fetch(&p->ctr, v, __ATOMIC_SEQ_CST);                                   \
    }                                                                                              \
    static inline VT P##_subtract(T *p, VT v, int f) {                                             \
        (void)f;                                                                                   \
        return __atomic_sub_fetch(&p->ctr, v, __ATOMIC_SEQ_CST);                                   \
    }                                                                                              \
    static inline VT P##_fetchadd(T *p, VT v, int f) {                                             \
        (void)f;                                                                                   \
        return __atomic_fetch_add(&p->ctr, v, __ATOMIC_SEQ_CST);                                   \
    }                                                                                              \
    static inline void P##_increment(T *p, int f) { (void)P##_add(p, 1, f); }                     \
    static inline void P##_decrement(T *p, int f) { (void)P##_subtract(p, 1, f); }                 \
    static inline int P##_decrement_and_test(T *p, int f) { return P##_subtract(p, 1, f) == 0; }

GASNETT_DEFINE_ATOMIC_(gasnett_atomic_t, gasnett_atomic_val_t, gasnett_atomic)
GASNETT_DEFINE_ATOMIC_(gasnett_atomic32_t, uint32_t, gasnett_atomic32)
GASNETT_DEFINE_ATOMIC_(gasnett_atomic64_t, uint64_t, gasnett_atomic64)
#undef GASNETT_DEFINE_ATOMIC_
#define gasnett_atomic_init(v) {(v)}
#define gasnett_atomic32_init(v) {(v)}
#define gasnett_atomic64_init(v) {(v)}
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

typedef pthread_cond_t gasnett_cond_t;
#define GASNETT_COND_INITIALIZER PTHREAD_COND_INITIALIZER
#define gasnett_cond_init(pc) pthread_cond_init((pc), NULL)
#define gasnett_cond_destroy(pc) pthread_cond_destroy(pc)
#define gasnett_cond_signal(pc) pthread_cond_signal(pc)
#define gasnett_cond_broadcast(pc) pthread_cond_broadcast(pc)
#define gasnett_cond_wait(pc, pm) pthread_cond_wait((pc), (pm))

/* ---- thread-specific data -------------------------------------------------------------------- */
typedef struct {
    pthread_once_t once;
    pthread_key_t key;
    volatile int ready;
} gasnett_threadkey_t;
#define GASNETT_THREADKEY_INITIALIZER {PTHREAD_ONCE_INIT, 0, 0}
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
GASNETT_API const char *gasnett_getenv_withdefault(const char *keyname, const char *defaultval);
GASNETT_API int gasnett_getenv_yesno_withdefault(const char *keyname, int defaultval);
GASNETT_API int64_t gasnett_getenv_int_withdefault(const char *keyname, int64_t defaultval,
                                                   uint64_t mem_size_multiplier);
GASNETT_API double gasnett_getenv_dbl_withdefault(const char *keyname, double defaultval);
/* Parse as gasnett_getenv_int_withdefault does; malformed input is a fatal error. */
GASNETT_API int64_t gasnett_parse_int(const char *str, uint64_t mem_size_multiplier);
GASNETT_API double gasnett_parse_dbl(const char *str);

/* ---- system ----------------------------------------------------------------------------------- */
static inline int gasnett_sched_yield(void) { return sched_yield(); }
GASNETT_API int gasnett_cpu_count(void);              /* online CPUs */
GASNETT_API uint64_t gasnett_getPhysMemSz(int failureIsFatal); /* bytes of physical memory */
GASNETT_API const char *gasnett_gethostname(void);
GASNETT_API void gasnett_flush_streams(void);          /* fflush every stdio stream */
GASNETT_API void gasnett_fatalerror(const char *msg, ...) GASNETT_FORMAT_PRINTF(1, 2) GASNETT_NORETURN;
GASNETT_API void gasnett_killmyprocess(int exitcode) GASNETT_NORETURN; /* _exit, no cleanup */
/* Writes a backtrace of the calling thread to fd (glibc backtrace_symbols_fd); returns 0 on
 * success. The _ifenabled variant does so only when GASNET_BACKTRACE is set to yes. */
GASNETT_API int gasnett_print_backtrace(int fd);
GASNETT_API int gasnett_print_backtrace_ifenabled(int fd);

#ifdef __cplusplus
}
#endif

#endif /* GASNET_TOOLS_H */
