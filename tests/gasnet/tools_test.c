/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gasnet_tools.h, source compatibility with GASNet 1.x: every macro used with GASNet-1's
 * signature (GASNETT_FORMAT_PRINTF(fnname, fmtarg, firstvararg, declarator), GASNETT_NORETURN +
 * GASNETT_NORETURNP(fnname), ...), the tracing/statistics macros (off), the build and platform
 * constants, and the values of gasnett_checksum, gasnett_count0s*, gasnett_setenv/unsetenv,
 * gasnett_performance_warning_str and the backtrace functions (with a client mechanism through
 * gasnett_backtrace_user). And the rest of GASNet-1's tools interface that GASNet 1.28's test
 * programs use (docs/GASNET.md, *GASNet 1.28's own test programs*): the tools spec version and
 * thread model, reader-writer locks (readers together, a writer alone, from threads), weak
 * barriers, strong 32/64-bit atomics, gasnett_verboseenv and the environment reports,
 * gasnett_format_number (exact strings and round trips through gasnett_parse_int), signal handlers,
 * resource limits, aligned memory, and the
 * GASNETT_ALWAYS_INLINE/HOT/COLD/DEPRECATED/TENTATIVE_EXTERN/FAST_*_MEMCPY forms. Compiled as C (GASNET_SEQ) and, through tools_test_cxx.cpp, as C++
 * (GASNET_PAR), both with -Wall -Wextra -Werror. One process; no gasnet_init needed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <gasnet.h>
#include <gasnet_tools.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TCHECK(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* ---- the declaration forms GASNet-1 clients write ------------------------------------------------ */
/* A prototype, then a definition head, both through the four-argument form. */
GASNETT_FORMAT_PRINTF(format_into, 2, 3, static int format_into(char *out, const char *fmt, ...));
GASNETT_FORMAT_PRINTF(format_into, 2, 3, static int format_into(char *out, const char *fmt, ...)) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsprintf(out, fmt, ap);
    va_end(ap);
    return n;
}
GASNETT_FORMAT_PRINTF_FUNCPTR(format_fp, 2, 3, static int (*format_fp)(char *out, const char *fmt, ...)) = &format_into;

/* noreturn: the attribute in the declarator, then the pragma form on its own line (GASNet's
 * fatal-error style), and the attribute in front (the AM reference implementations' style). */
static void leave(int code) GASNETT_NORETURN;
GASNETT_NORETURNP(leave)
static void leave(int code) { exit(code); }
GASNETT_NORETURN
GASNETT_FORMAT_PRINTF(leave_with_message, 1, 2, static void leave_with_message(const char *fmt, ...));
GASNETT_NORETURNP(leave_with_message)
static void leave_with_message(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    leave(1);
}

GASNETT_NEVER_INLINE(not_inlined, static int not_inlined(int x)) { return x + 1; }
GASNETT_INLINE(inlined) int inlined(int x) { return x * 2; }
static void *GASNETT_MALLOC allocate(size_t n);
GASNETT_MALLOCP(allocate)
static void *allocate(size_t n) { return malloc(n); }
static int GASNETT_PURE pure_len(const char *s);
GASNETT_PUREP(pure_len)
static int pure_len(const char *s) { return (int)strlen(s); }
static int GASNETT_CONST square(int x);
GASNETT_CONSTP(square)
static int square(int x) { return x * x; }
GASNETT_WARN_UNUSED_RESULT static int must_use(void) { return 7; }
GASNETT_USED static int kept_even_unused(void) { return 0; }
static int restricted_sum(const int *GASNETT_RESTRICT a, const int *GASNETT_RESTRICT b) { return *a + *b; }
GASNETT_IDENT(tools_test_ident, "$ToolsTest: gasnet_tools.h compatibility $");
GASNETT_BEGIN_EXTERNC
int tools_test_externc_fn(void);
GASNETT_END_EXTERNC
int tools_test_externc_fn(void) { return 3; }

/* ---- GASNet-1 tools forms that GASNet 1.28's tests use ------------------------------------------- */
GASNETT_ALWAYS_INLINE(always) int always(int x) { return x + 2; }
GASNETT_PLEASE_INLINE(please) int please(int x) { return x + 3; }
GASNETT_HOT static int hot_fn(int x) { return x ^ 1; }
GASNETT_COLD static int cold_fn(int x) { return x ^ 2; }
GASNETT_DEPRECATED static int old_fn(void);
static int old_fn(void) { return 5; }
GASNETT_TENTATIVE_EXTERN int tools_test_tentative;
int tools_test_tentative = 9;

/* Reader-writer locks from threads: readers inside together, a writer alone. */
static gasnett_rwlock_t rw = GASNETT_RWLOCK_INITIALIZER;
static gasnett_atomic_t writer_in = gasnett_atomic_init(0), overlap = gasnett_atomic_init(0);
static gasnett_atomic_t readers_waiting = gasnett_atomic_init(0);
static int rw_value = 0;
enum { RW_THREADS = 4, RW_ROUNDS = 2000 };

static void *rw_reader(void *arg) {
    (void)arg;
    TCHECK(gasnett_rwlock_rdlock(&rw) == 0);
    /* Every reader holds the lock until all are in: they must be inside at once (a lock that let
     * one reader in at a time would hang here, and the test's timeout would fail it). */
    gasnett_atomic_increment(&readers_waiting, 0);
    while (gasnett_atomic_read(&readers_waiting, 0) < RW_THREADS) gasnett_sched_yield();
    TCHECK(gasnett_rwlock_unlock(&rw) == 0);
    return NULL;
}

static void *rw_writer(void *arg) {
    (void)arg;
    for (int i = 0; i < RW_ROUNDS; ++i) {
        if (i % 2) {
            TCHECK(gasnett_rwlock_wrlock(&rw) == 0);
            if (gasnett_atomic_add(&writer_in, 1, 0) != 1) gasnett_atomic_increment(&overlap, 0);
            ++rw_value;
            gasnett_atomic_decrement(&writer_in, 0);
            TCHECK(gasnett_rwlock_unlock(&rw) == 0);
        } else {
            TCHECK(gasnett_rwlock_rdlock(&rw) == 0);
            if (gasnett_atomic_read(&writer_in, 0) != 0) gasnett_atomic_increment(&overlap, 0);
            TCHECK(gasnett_rwlock_unlock(&rw) == 0);
        }
    }
    return NULL;
}

static volatile sig_atomic_t usr1_seen = 0;
static void on_usr1(int sig) { usr1_seen = sig; }

/* Runs one environment report into a temporary file standing in for stderr; returns its text. */
static void capture_report(void (*report)(void), char *out, size_t cap) {
    FILE *f = tmpfile();
    TCHECK(f != NULL);
    fflush(stderr);
    const int saved = dup(2);
    TCHECK(saved >= 0 && dup2(fileno(f), 2) == 2);
    report();
    fflush(stderr);
    TCHECK(dup2(saved, 2) == 2);
    close(saved);
    TCHECK(lseek(fileno(f), 0, SEEK_SET) == 0);
    const ssize_t n = read(fileno(f), out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
    fclose(f);
}
static void report_three(void) {
    gasnett_envstr_display("TOOLS_TEST_STR", "abc", 0);
    gasnett_envint_display("TOOLS_TEST_INT", 3 * 1048576, 1, 1);
    gasnett_envdbl_display("TOOLS_TEST_DBL", 0.5, 0);
    gasnett_envstr_display("TOOLS_TEST_STR", "again", 0); /* reported once per key */
    gasnett_envstr_display("TOOLS_TEST_UNSET", NULL, 1);
}

static void gasnet1_tools(void) {
    char buf[64];
    /* versions and thread model */
    TCHECK(GASNETT_SPEC_VERSION_MAJOR == 1 && GASNETT_SPEC_VERSION_MINOR >= 8);
    TCHECK(strcmp(_STRINGIFY(GASNETT_THREAD_MODEL),
#ifdef GASNET_SEQ
                  "SEQ"
#else
                  "PAR"
#endif
                  ) == 0);
#if !defined(GASNET_SEQ) && !defined(GASNETT_THREAD_SAFE)
#error "GASNETT_THREAD_SAFE must be defined outside GASNET_SEQ"
#endif
    TCHECK(always(1) == 3 && please(1) == 4 && hot_fn(0) == 1 && cold_fn(0) == 2 && tools_test_tentative == 9);
    TCHECK(gasnett_constant_p(3) && gasnett_isLittleEndian() == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__));
    {
        int src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
        GASNETT_FAST_ALIGNED_MEMCPY(dst, src, sizeof src);
        TCHECK(memcmp(dst, src, sizeof src) == 0);
        GASNETT_FAST_UNALIGNED_MEMCPY((char *)dst + 1, src, 3);
        TCHECK(memcmp((char *)dst + 1, src, 3) == 0);
    }
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    TCHECK(old_fn() == 5);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

    /* weak barriers and strong sized atomics */
    gasnett_weak_mb();
    gasnett_weak_wmb();
    gasnett_weak_rmb();
    {
        gasnett_strongatomic32_t a32 = gasnett_strongatomic32_init(7);
        gasnett_strongatomic64_t a64 = gasnett_strongatomic64_init(UINT64_C(1) << 40);
        gasnett_strongatomic32_increment(&a32, 0);
        TCHECK(gasnett_strongatomic32_add(&a32, 2, 0) == 10);
        TCHECK(gasnett_strongatomic32_compare_and_swap(&a32, 10, 1, 0) && gasnett_strongatomic32_read(&a32, 0) == 1);
        TCHECK(gasnett_strongatomic32_decrement_and_test(&a32, 0));
        TCHECK(gasnett_strongatomic64_add(&a64, 1, 0) == (UINT64_C(1) << 40) + 1);
        TCHECK(gasnett_strongatomic64_swap(&a64, 3, 0) == (UINT64_C(1) << 40) + 1);
        gasnett_strongatomic64_set(&a64, 4, 0);
        TCHECK(gasnett_strongatomic64_subtract(&a64, 4, 0) == 0);
    }

    /* reader-writer locks */
    {
        pthread_t t[RW_THREADS + 2];
        for (int i = 0; i < RW_THREADS; ++i) TCHECK(pthread_create(&t[i], NULL, rw_reader, NULL) == 0);
        for (int i = 0; i < RW_THREADS; ++i) TCHECK(pthread_join(t[i], NULL) == 0);
        TCHECK(gasnett_atomic_read(&readers_waiting, 0) == RW_THREADS); /* all held it at once */
        for (int i = 0; i < 2; ++i) TCHECK(pthread_create(&t[i], NULL, rw_writer, NULL) == 0);
        for (int i = 0; i < 2; ++i) TCHECK(pthread_join(t[i], NULL) == 0);
        TCHECK(gasnett_atomic_read(&overlap, 0) == 0 && rw_value == RW_ROUNDS);
        gasnett_rwlock_t dyn;
        TCHECK(gasnett_rwlock_init(&dyn) == 0);
        TCHECK(gasnett_rwlock_tryrdlock(&dyn) == 0 && gasnett_rwlock_tryrdlock(&dyn) == 0);
        gasnett_rwlock_assertrdlocked(&dyn);
        TCHECK(gasnett_rwlock_trywrlock(&dyn) != 0); /* readers hold it */
        TCHECK(gasnett_rwlock_unlock(&dyn) == 0 && gasnett_rwlock_unlock(&dyn) == 0);
        TCHECK(gasnett_rwlock_trywrlock(&dyn) == 0);
        gasnett_rwlock_assertwrlocked(&dyn);
        gasnett_rwlock_assertlocked(&dyn);
        TCHECK(gasnett_rwlock_tryrdlock(&dyn) != 0); /* a writer holds it */
        TCHECK(gasnett_rwlock_unlock(&dyn) == 0);
        gasnett_rwlock_assertunlocked(&dyn);
        TCHECK(gasnett_rwlock_destroy(&dyn) == 0);
        gasnett_mutex_t m;
        TCHECK(gasnett_mutex_init(&m) == 0);
        gasnett_mutex_destroy_ignoreerr(&m);
    }

    /* format_number: exact text, and parse_int gives every value back */
    TCHECK(strcmp(gasnett_format_number(0, buf, sizeof buf, 0), "0") == 0);
    TCHECK(strcmp(gasnett_format_number(-12345, buf, sizeof buf, 0), "-12345") == 0);
    TCHECK(strcmp(gasnett_format_number(1024, buf, sizeof buf, 1), "1 KB") == 0);
    TCHECK(strcmp(gasnett_format_number(1536, buf, sizeof buf, 1), "1536 B") == 0);
    TCHECK(strcmp(gasnett_format_number(3 * 1048576, buf, sizeof buf, 1), "3 MB") == 0);
    TCHECK(strcmp(gasnett_format_number(-(INT64_C(2) << 30), buf, sizeof buf, 1), "-2 GB") == 0);
    TCHECK(strcmp(gasnett_format_number(INT64_C(5) << 40, buf, sizeof buf, 1), "5 TB") == 0);
    TCHECK(strcmp(gasnett_format_number(123456789, buf, 4, 0), "123") == 0); /* truncated to fit */
    for (int i = 0; i < 63; ++i) {
        const int64_t x = INT64_C(1) << i, y = x + 7 * (i > 3);
        TCHECK(gasnett_parse_int(gasnett_format_number(x, buf, sizeof buf, 1), 1) == x);
        TCHECK(gasnett_parse_int(gasnett_format_number(x, buf, sizeof buf, 0), 0) == x);
        TCHECK(gasnett_parse_int(gasnett_format_number(y, buf, sizeof buf, 1), 1) == y);
    }

    /* verbose environment: off unless GASNET_VERBOSEENV is set (no gasnet_init: this process reports) */
    {
        static char text[1024];
        gasnett_unsetenv("GASNET_VERBOSEENV");
        TCHECK(gasnett_verboseenv() == 0);
        capture_report(report_three, text, sizeof text);
        TCHECK(text[0] == '\0');
        gasnett_setenv("GASNET_VERBOSEENV", "1");
        TCHECK(gasnett_verboseenv() != 0);
        capture_report(report_three, text, sizeof text);
        TCHECK(strstr(text, "ENV parameter: TOOLS_TEST_STR = abc\n") != NULL);
        TCHECK(strstr(text, "ENV parameter: TOOLS_TEST_INT = 3 MB   (default)\n") != NULL);
        TCHECK(strstr(text, "ENV parameter: TOOLS_TEST_DBL = 0.5\n") != NULL);
        TCHECK(strstr(text, "ENV parameter: TOOLS_TEST_UNSET = *not set*   (default)\n") != NULL);
        TCHECK(strstr(text, "again") == NULL);
        gasnett_unsetenv("GASNET_VERBOSEENV");
    }

    /* signals */
    {
        TCHECK(strcmp(gasnett_signame_fromval(SIGINT), "SIGINT") == 0 &&
               strcmp(gasnett_signame_fromval(SIGSEGV), "SIGSEGV") == 0 && gasnett_signame_fromval(-1) == NULL);
        gasnett_sighandlerfn_t before = gasnett_reghandler(SIGUSR1, on_usr1);
        TCHECK(before == SIG_DFL);
        TCHECK(raise(SIGUSR1) == 0 && usr1_seen == SIGUSR1);
        TCHECK(gasnett_reghandler(SIGUSR1, before) == on_usr1);
    }

    /* resource limits: the soft limit reaches the hard one */
    {
        struct rlimit lim;
        TCHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
        if (lim.rlim_max > 64) {
            lim.rlim_cur = 64;
            TCHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
        }
        TCHECK(gasnett_maximize_rlimit(RLIMIT_NOFILE, "RLIMIT_NOFILE") == 1);
        TCHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur == lim.rlim_max);
        TCHECK(gasnett_maximize_rlimits() == 1);
    }

    /* aligned memory, affinity */
    {
        void *p = gasnett_malloc_aligned(4096, 100);
        TCHECK(((uintptr_t)p & 4095) == 0);
        memset(p, 1, 100);
        gasnett_free_aligned(p);
        cpu_set_t before, now;
        TCHECK(sched_getaffinity(0, sizeof before, &before) == 0);
        gasnett_set_affinity(0); /* CPU 0, where this process may run there */
        TCHECK(sched_getaffinity(0, sizeof now, &now) == 0);
        TCHECK(!CPU_ISSET(0, &before) || (CPU_COUNT(&now) == 1 && CPU_ISSET(0, &now)));
        TCHECK(sched_setaffinity(0, sizeof before, &before) == 0); /* undone for the rest of the test */
    }
}

/* ---- a client backtrace mechanism ---------------------------------------------------------------- */
static int user_backtrace(int fd) {
    static const char marker[] = "user backtrace marker\n";
    return write(fd, marker, sizeof marker - 1) == (ssize_t)(sizeof marker - 1) ? 0 : 1;
}
GASNETT_BEGIN_EXTERNC
gasnett_backtrace_type_t gasnett_backtrace_user = {"TESTBT", &user_backtrace, 1};
GASNETT_END_EXTERNC

/* Runs one backtrace call into a temporary file; returns its result and the text in out. */
static int capture(int ifenabled, char *out, size_t cap) {
    FILE *f = tmpfile();
    int rc;
    ssize_t n;
    TCHECK(f != NULL);
    rc = ifenabled ? gasnett_print_backtrace_ifenabled(fileno(f)) : gasnett_print_backtrace(fileno(f));
    TCHECK(lseek(fileno(f), 0, SEEK_SET) == 0);
    n = read(fileno(f), out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
    fclose(f);
    return rc;
}

static int stats_callback_calls = 0;
static void stats_callback(void (*pf)(const char *, ...)) {
    (void)pf;
    ++stats_callback_calls;
}

static uint64_t reference_checksum(const unsigned char *p, int n) {
    uint64_t v = 0;
    int i;
    for (i = 0; i < n; ++i) v = ((v << 8) | (v >> 56)) ^ p[i];
    return v;
}

int main(void) {
    char buf[256];
    static char text[1 << 16];

    /* ---- compiler helpers ---- */
    TCHECK(format_into(buf, "%d-%s", 42, "x") == 4 && strcmp(buf, "42-x") == 0);
    TCHECK(format_fp(buf, "%u", 7u) == 1 && strcmp(buf, "7") == 0);
    TCHECK(not_inlined(1) == 2 && inlined(3) == 6 && square(5) == 25 && pure_len("abc") == 3);
    TCHECK(must_use() == 7 && kept_even_unused() == 0 && tools_test_externc_fn() == 3);
    {
        int a = 2, b = 3;
        void *p = allocate(16);
        TCHECK(p != NULL && restricted_sum(&a, &b) == 5);
        free(p);
    }
    TCHECK(strstr(tools_test_ident, "ToolsTest") != NULL);
    TCHECK(strcmp(GASNETT_CURRENT_FUNCTION, "main") == 0);
    TCHECK(strcmp(_STRINGIFY(GASNETT_PAGESIZE), "4096") == 0);
    {
        int taken = 0;
        if_pf(buf[0] == 'x') taken = 1;
        if_pt(buf[0] == '7') taken += 2;
        TCHECK(taken == 2);
        TCHECK(GASNETT_PREDICT_TRUE(taken == 2) && !GASNETT_PREDICT_FALSE(taken != 2));
    }
    if (buf[0] == 'z') leave_with_message("unreachable %d\n", 1);

    /* ---- tracing and statistics: off, and nothing happens ---- */
    {
        const char *file = "unchanged";
        unsigned int line = 12345;
        TCHECK(GASNETT_TRACE_ENABLED == 0);
        GASNETT_TRACE_PRINTF("trace %d %s", 1, "x");
        GASNETT_TRACE_PRINTF_FORCE("forced %u", 2u);
        TCHECK(strcmp(GASNETT_TRACE_GETMASK(), "") == 0);
        GASNETT_TRACE_SETMASK("HGPB");
        TCHECK(GASNETT_TRACE_GET_TRACELOCAL() == 0);
        GASNETT_TRACE_SET_TRACELOCAL(1);
        GASNETT_TRACE_SETSOURCELINE(__FILE__, __LINE__);
        GASNETT_TRACE_GETSOURCELINE(&file, &line);
        GASNETT_TRACE_FREEZESOURCELINE();
        GASNETT_TRACE_UNFREEZESOURCELINE();
        TCHECK(strcmp(file, "unchanged") == 0 && line == 12345);
        TCHECK(GASNETT_STATS_INIT(stats_callback) == 0);
        TCHECK(strcmp(GASNETT_STATS_GETMASK(), "") == 0);
        GASNETT_STATS_SETMASK("H");
        stats_callback(NULL);
        TCHECK(stats_callback_calls == 1);
    }

    /* ---- build and platform constants ---- */
#ifdef GASNETT_CONFIGURE_MISMATCH
    TCHECK(!"GASNETT_CONFIGURE_MISMATCH is defined for the compiler the tests are built with");
#endif
    TCHECK(GASNETT_PLATFORM_COMPILER_ID == PLATFORM_COMPILER_ID);
    TCHECK(GASNETT_PLATFORM_COMPILER_FAMILYID == PLATFORM_COMPILER_FAMILYID);
    TCHECK(GASNETT_PLATFORM_COMPILER_VERSION == PLATFORM_COMPILER_VERSION);
    TCHECK(strcmp(GASNETT_PLATFORM_COMPILER_IDSTR, PLATFORM_COMPILER_IDSTR) == 0);
#if defined(__x86_64__) && defined(__linux__)
    TCHECK(strcmp(GASNETT_SYSTEM_TUPLE, "x86_64-unknown-linux-gnu") == 0);
#endif
    TCHECK(strstr(GASNETT_SYSTEM_TUPLE, "-linux") != NULL);
#ifdef GASNET_SEQ
    TCHECK(GASNETT_MAX_THREADS == 1);
#else
    TCHECK(GASNETT_MAX_THREADS == 256);
#endif
    TCHECK(GASNETT_CACHE_LINE_BYTES >= 32 && (GASNETT_CACHE_LINE_BYTES & (GASNETT_CACHE_LINE_BYTES - 1)) == 0);
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
    if (sysconf(_SC_LEVEL1_DCACHE_LINESIZE) > 0)
        TCHECK(sysconf(_SC_LEVEL1_DCACHE_LINESIZE) == GASNETT_CACHE_LINE_BYTES);
#endif
#if GASNETT_PAGESIZE != GASNET_PAGESIZE || (1 << GASNETT_PAGESHIFT) != GASNETT_PAGESIZE
#error GASNETT_PAGESIZE, GASNETT_PAGESHIFT and GASNET_PAGESIZE disagree
#endif
    TCHECK(GASNETT_PAGESIZE % sysconf(_SC_PAGESIZE) == 0);

    /* ---- PLATFORM_* ---- */
#if defined(__GNUC__) && !defined(__clang__)
    TCHECK(PLATFORM_COMPILER_GNU == 1 && PLATFORM_COMPILER_FAMILYID == 1);
    TCHECK(strcmp(_STRINGIFY(PLATFORM_COMPILER_FAMILYNAME), "GNU") == 0);
    TCHECK(PLATFORM_COMPILER_VERSION_EQ(__GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__));
    TCHECK(strstr(PLATFORM_COMPILER_IDSTR, "|COMPILER_FAMILY:GNU|") != NULL);
#ifdef __cplusplus
    TCHECK(PLATFORM_COMPILER_GNU_CXX == 1 && PLATFORM_COMPILER_ID == 10001);
#else
    TCHECK(PLATFORM_COMPILER_GNU_C == 1 && PLATFORM_COMPILER_ID == 1);
#endif
#elif defined(__clang__)
    TCHECK(PLATFORM_COMPILER_CLANG == 1 && PLATFORM_COMPILER_FAMILYID == 19);
    TCHECK(strcmp(_STRINGIFY(PLATFORM_COMPILER_FAMILYNAME), "CLANG") == 0);
#endif
#if !PLATFORM_COMPILER_VERSION_GE(4, 0, 0) || !PLATFORM_COMPILER_VERSION_LT(999, 0, 0) ||                              \
    !PLATFORM_COMPILER_VERSION_GT(1, 2, 3) || !PLATFORM_COMPILER_VERSION_LE(999, 9, 9)
#error PLATFORM_COMPILER_VERSION comparisons are wrong
#endif
    TCHECK(strlen(PLATFORM_COMPILER_VERSION_STR) > 0);
#ifdef __cplusplus
    TCHECK(PLATFORM_COMPILER_CXX_LANGLVL == __cplusplus);
#else
    TCHECK(PLATFORM_COMPILER_C_LANGLVL == __STDC_VERSION__);
#endif
#if defined(__linux__)
    TCHECK(PLATFORM_OS_LINUX == 1 && strcmp(_STRINGIFY(PLATFORM_OS_FAMILYNAME), "LINUX") == 0);
#endif
#if defined(__x86_64__)
    TCHECK(PLATFORM_ARCH_X86_64 == 1 && strcmp(_STRINGIFY(PLATFORM_ARCH_FAMILYNAME), "X86_64") == 0);
#endif
#if defined(PLATFORM_ARCH_64) && !defined(PLATFORM_ARCH_32)
    TCHECK(sizeof(void *) == 8);
#elif defined(PLATFORM_ARCH_32) && !defined(PLATFORM_ARCH_64)
    TCHECK(sizeof(void *) == 4);
#else
#error exactly one of PLATFORM_ARCH_32 and PLATFORM_ARCH_64 must be defined
#endif
    {
        const uint32_t one = 1;
        unsigned char first;
        memcpy(&first, &one, 1);
#ifdef PLATFORM_ARCH_LITTLE_ENDIAN
        TCHECK(first == 1);
#else
        TCHECK(PLATFORM_ARCH_BIG_ENDIAN == 1 && first == 0);
#endif
    }

    /* ---- environment ---- */
    gasnett_setenv("GASNET_TOOLS_TEST_VAR", "value 1");
    TCHECK(gasnett_getenv("GASNET_TOOLS_TEST_VAR") && strcmp(gasnett_getenv("GASNET_TOOLS_TEST_VAR"), "value 1") == 0);
    gasnett_setenv("GASNET_TOOLS_TEST_VAR", "42K");
    TCHECK(gasnett_getenv_int_withdefault("GASNET_TOOLS_TEST_VAR", 0, 1) == 42 * 1024);
    gasnett_unsetenv("GASNET_TOOLS_TEST_VAR");
    TCHECK(gasnett_getenv("GASNET_TOOLS_TEST_VAR") == NULL);
    {
        char *dflt = gasnett_getenv_withdefault("GASNET_TOOLS_TEST_VAR", "default"); /* char *, as in GASNet */
        TCHECK(strcmp(dflt, "default") == 0);
    }

    /* ---- checksum ---- */
    {
        unsigned char data[300];
        int i;
        for (i = 0; i < 300; ++i) data[i] = (unsigned char)(i * 37 + 11);
        TCHECK(gasnett_checksum(data, 0) == 0);
        TCHECK(gasnett_checksum("\x01", 1) == 1);
        TCHECK(gasnett_checksum("\x01\x02", 2) == 0x0102);
        TCHECK(gasnett_checksum("\x01\x02\x03\x04\x05\x06\x07\x08\x09", 9) ==
               0x0203040506070808ull); /* the 1 wrapped around */
        for (i = 0; i <= 300; i += 7) TCHECK(gasnett_checksum(data, i) == reference_checksum(data, i));
        TCHECK(gasnett_checksum(data + 1, 100) != gasnett_checksum(data, 100));
    }

    /* ---- zero-byte counts ---- */
    {
        unsigned char src[1000], dst[1000];
        size_t i, zeros = 0, off;
        for (i = 0; i < sizeof src; ++i) src[i] = (unsigned char)((i % 3 == 0 || i % 7 == 0) ? 0 : i | 1);
        for (off = 0; off < 9; ++off) {
            zeros = 0;
            for (i = off; i < sizeof src; ++i) zeros += src[i] == 0;
            TCHECK(gasnett_count0s(src + off, sizeof src - off) == zeros);
            memset(dst, 0xEE, sizeof dst);
            TCHECK(gasnett_count0s_copy(dst + 1, src + off, sizeof src - off - 1) ==
                   zeros - (src[sizeof src - 1] == 0));
            TCHECK(memcmp(dst + 1, src + off, sizeof src - off - 1) == 0 && dst[0] == 0xEE);
        }
        TCHECK(gasnett_count0s(src, 0) == 0);
        TCHECK(gasnett_count0s_uint32_t(0) == 4 && gasnett_count0s_uint32_t(0x01000100u) == 2);
        TCHECK(gasnett_count0s_uint32_t(0xFFFFFFFFu) == 0);
        TCHECK(gasnett_count0s_uint64_t(0) == 8 && gasnett_count0s_uint64_t(0x00FF00FF00FF00FFull) == 4);
        TCHECK(gasnett_count0s_uintptr_t((uintptr_t)0x100) == (int)sizeof(uintptr_t) - 1);
    }

    /* ---- performance warnings: what the library was built with (its sanitizers are this test's;
       its optimization comes from the build type, LIBRARY_OPTIMIZED) ---- */
    {
        const char *w = gasnett_performance_warning_str();
        TCHECK(w != NULL);
#if defined(__SANITIZE_ADDRESS__)
        TCHECK(strstr(w, "AddressSanitizer") != NULL);
#endif
#if defined(__SANITIZE_THREAD__)
        TCHECK(strstr(w, "ThreadSanitizer") != NULL);
#endif
#if !LIBRARY_OPTIMIZED
        TCHECK(strstr(w, "no compiler optimization") != NULL);
#endif
#if LIBRARY_OPTIMIZED && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        TCHECK(strcmp(w, "") == 0);
#endif
        TCHECK(*w == '\0' || w[strlen(w) - 1] == '\n');
    }

    gasnet1_tools();

    /* ---- backtraces ---- */
    gasnett_unsetenv("GASNET_BACKTRACE_TYPE");
    gasnett_unsetenv("GASNET_BACKTRACE");
    gasnett_backtrace_init("tools-test-program");
    TCHECK(capture(0, text, sizeof text) == 0); /* default order: the client's mechanism first */
    TCHECK(strstr(text, "tools-test-program") != NULL && strstr(text, "user backtrace marker") != NULL);
    gasnett_setenv("GASNET_BACKTRACE_TYPE", "EXECINFO");
    TCHECK(capture(0, text, sizeof text) == 0);
    TCHECK(strstr(text, "user backtrace marker") == NULL);
    TCHECK(strstr(text, "gasnett_print_backtrace") != NULL); /* an exported frame of the library */
    gasnett_setenv("GASNET_BACKTRACE_TYPE", "NOSUCH,testbt");
    TCHECK(capture(0, text, sizeof text) == 0 && strstr(text, "user backtrace marker") != NULL);
    gasnett_setenv("GASNET_BACKTRACE_TYPE", "NOSUCH");
    TCHECK(capture(0, text, sizeof text) != 0);
    gasnett_unsetenv("GASNET_BACKTRACE_TYPE");
    TCHECK(capture(1, text, sizeof text) == 1 && text[0] == '\0'); /* GASNET_BACKTRACE unset */
    gasnett_setenv("GASNET_BACKTRACE", "yes");
    TCHECK(capture(1, text, sizeof text) == 0 && strstr(text, "user backtrace marker") != NULL);
    gasnett_unsetenv("GASNET_BACKTRACE");

    printf("gasnet_tools.h compatibility: OK (%s)\n",
#ifdef __cplusplus
           "C++"
#else
           "C"
#endif
    );
    return 0;
}
