// SPDX-License-Identifier: BSD-3-Clause
// The library half of gasnet_tools.h: environment helpers, system queries, backtraces, thread keys,
// checksums.
#include <gasnet_tools.h>
#include <portico_runtime.h>

#include <execinfo.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "gasnet_settings.hpp"
#include "internal.hpp"

#define GASNETT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

bool parse_int(const char *str, uint64_t mult, int64_t *out) {
    if (!str) return false;
    while (std::isspace(static_cast<unsigned char>(*str))) ++str;
    errno = 0;
    char *end = nullptr;
    const bool has_dot = std::strchr(str, '.') != nullptr;
    long double v = has_dot ? std::strtold(str, &end) : static_cast<long double>(std::strtoll(str, &end, 0));
    if (end == str || errno) return false;
    while (std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (mult && *end) {
        long double scale = 1;
        switch (std::toupper(static_cast<unsigned char>(*end))) {
        case 'K': scale = 1024.0L; break;
        case 'M': scale = 1024.0L * 1024; break;
        case 'G': scale = 1024.0L * 1024 * 1024; break;
        case 'T': scale = 1024.0L * 1024 * 1024 * 1024; break;
        case 'B': scale = 1; break;
        default: return false;
        }
        if (std::toupper(static_cast<unsigned char>(*end)) != 'B') {
            ++end;
            if (std::toupper(static_cast<unsigned char>(*end)) == 'B') ++end;
        } else {
            ++end;
        }
        v *= scale;
    } else if (mult) {
        v *= static_cast<long double>(mult);
    }
    while (std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (*end) return false;
    if (v > static_cast<long double>(INT64_MAX) || v < static_cast<long double>(INT64_MIN)) return false;
    *out = static_cast<int64_t>(v);
    return true;
}

bool yesno(const char *s, int *out) {
    std::string v;
    for (const char *p = s; *p; ++p) v.push_back(char(std::tolower(static_cast<unsigned char>(*p))));
    if (v == "1" || v == "y" || v == "yes" || v == "t" || v == "true" || v == "on") {
        *out = 1;
        return true;
    }
    if (v == "0" || v == "n" || v == "no" || v == "f" || v == "false" || v == "off") {
        *out = 0;
        return true;
    }
    return false;
}

double measure_granularity() {
    double best = 1e9;
    for (int i = 0; i < 1000; ++i) {
        const gasnett_tick_t a = gasnett_ticks_now();
        gasnett_tick_t b;
        do b = gasnett_ticks_now();
        while (b == a);
        best = std::fmin(best, gasnett_ticks_to_ns_dbl(b - a) / 1000.0);
    }
    return best;
}

double measure_overhead() {
    constexpr int n = 10000;
    const gasnett_tick_t a = gasnett_ticks_now();
    for (int i = 0; i < n; ++i) (void)gasnett_ticks_now();
    return gasnett_ticks_to_ns_dbl(gasnett_ticks_now() - a) / 1000.0 / n;
}

} // namespace

GASNETT_EXPORT gasnett_tick_t gasnett_ticks_now_lib(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return gasnett_tick_t(ts.tv_sec) * 1000000000u + gasnett_tick_t(ts.tv_nsec);
}

GASNETT_EXPORT double gasnett_tick_granularityus(void) {
    static const double v = measure_granularity();
    return v;
}
GASNETT_EXPORT double gasnett_tick_overheadus(void) {
    static const double v = measure_overhead();
    return v;
}
GASNETT_EXPORT uint64_t gasnett_gettimeofday_us(void) {
    struct timeval tv;
    gettimeofday(&tv, nullptr);
    return uint64_t(tv.tv_sec) * 1000000u + uint64_t(tv.tv_usec);
}

// ---- thread keys ----------------------------------------------------------------------------------------
namespace {
gasnett_threadkey_t *pending_key = nullptr; // pthread_once has no argument: passed through here
pthread_mutex_t key_mu = PTHREAD_MUTEX_INITIALIZER;
void make_key() {
    if (pthread_key_create(&pending_key->key, nullptr) != 0) gasnett_fatalerror("pthread_key_create failed");
}
} // namespace

GASNETT_EXPORT void(gasnett_threadkey_init)(gasnett_threadkey_t *key) {
    if (__atomic_load_n(&key->ready, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&key_mu);
    pending_key = key;
    pthread_once(&key->once, make_key);
    __atomic_store_n(&key->ready, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&key_mu);
}
GASNETT_EXPORT void *(gasnett_threadkey_get)(gasnett_threadkey_t *key) {
    (gasnett_threadkey_init)(key);
    return pthread_getspecific(key->key);
}
GASNETT_EXPORT void(gasnett_threadkey_set)(gasnett_threadkey_t *key, void *value) {
    (gasnett_threadkey_init)(key);
    if (pthread_setspecific(key->key, value) != 0) gasnett_fatalerror("pthread_setspecific failed");
}

// ---- environment -------------------------------------------------------------------------------------------
GASNETT_EXPORT char *gasnett_getenv(const char *keyname) { return keyname ? std::getenv(keyname) : nullptr; }

GASNETT_EXPORT char *gasnett_getenv_withdefault(const char *keyname, const char *defaultval) {
    char *v = gasnett_getenv(keyname);
    return v ? v : const_cast<char *>(defaultval); // GASNet's signature; callers do not write it
}

GASNETT_EXPORT void gasnett_setenv(const char *key, const char *value) {
    errno = 0;
    if (!key || !value || setenv(key, value, 1) != 0)
        gasnett_fatalerror("gasnett_setenv(%s, %s): %s", key ? key : "(null)", value ? value : "(null)",
                           std::strerror(errno ? errno : EINVAL));
}

GASNETT_EXPORT void gasnett_unsetenv(const char *key) {
    errno = 0;
    if (!key || unsetenv(key) != 0)
        gasnett_fatalerror("gasnett_unsetenv(%s): %s", key ? key : "(null)", std::strerror(errno ? errno : EINVAL));
}

GASNETT_EXPORT int gasnett_getenv_yesno_withdefault(const char *keyname, int defaultval) {
    const char *v = gasnett_getenv(keyname);
    if (!v || !*v) return defaultval;
    int out;
    if (!yesno(v, &out)) gasnett_fatalerror("environment variable %s='%s' is not a yes/no value", keyname, v);
    return out;
}

GASNETT_EXPORT int64_t gasnett_parse_int(const char *str, uint64_t mem_size_multiplier) {
    int64_t v;
    if (!parse_int(str, mem_size_multiplier, &v))
        gasnett_fatalerror("'%s' is not an integer%s", str ? str : "(null)", mem_size_multiplier ? " or a size" : "");
    return v;
}

GASNETT_EXPORT double gasnett_parse_dbl(const char *str) {
    char *end = nullptr;
    errno = 0;
    const double v = str ? std::strtod(str, &end) : 0;
    if (!str || end == str || errno) gasnett_fatalerror("'%s' is not a number", str ? str : "(null)");
    while (std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (*end) gasnett_fatalerror("'%s' is not a number", str);
    return v;
}

GASNETT_EXPORT int64_t gasnett_getenv_int_withdefault(const char *keyname, int64_t defaultval,
                                                      uint64_t mem_size_multiplier) {
    const char *v = gasnett_getenv(keyname);
    if (!v || !*v) return defaultval;
    int64_t out;
    if (!parse_int(v, mem_size_multiplier, &out))
        gasnett_fatalerror("environment variable %s='%s' is not an integer%s", keyname, v,
                           mem_size_multiplier ? " or a size" : "");
    return out;
}

GASNETT_EXPORT double gasnett_getenv_dbl_withdefault(const char *keyname, double defaultval) {
    const char *v = gasnett_getenv(keyname);
    if (!v || !*v) return defaultval;
    return gasnett_parse_dbl(v);
}

// ---- system ----------------------------------------------------------------------------------------------------
GASNETT_EXPORT int gasnett_cpu_count(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? int(n) : 1;
}

GASNETT_EXPORT uint64_t gasnett_getPhysMemSz(int failureIsFatal) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) {
        if (failureIsFatal) gasnett_fatalerror("cannot determine the physical memory size");
        return 0;
    }
    return uint64_t(pages) * uint64_t(page);
}

GASNETT_EXPORT const char *gasnett_gethostname(void) {
    static char name[256];
    if (!name[0] && gethostname(name, sizeof name - 1) != 0) std::strcpy(name, "unknown");
    return name;
}

GASNETT_EXPORT void gasnett_flush_streams(void) { std::fflush(nullptr); }

GASNETT_EXPORT void gasnett_fatalerror(const char *msg, ...) {
    va_list ap;
    va_start(ap, msg);
    std::fprintf(stderr, "*** FATAL ERROR: ");
    std::vfprintf(stderr, msg, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::fflush(stderr);
    gasnett_print_backtrace_ifenabled(2);
    std::abort();
}

GASNETT_EXPORT void gasnett_killmyprocess(int exitcode) {
    portico_runtime_exiting(exitcode);
    _exit(exitcode);
}

GASNETT_EXPORT const char *gasnett_performance_warning_str(void) {
    // What this library was compiled with, not what the client was.
    static const char warnings[] = ""
#ifndef __OPTIMIZE__
                                   "    no compiler optimization\n"
#endif
#if defined(__SANITIZE_ADDRESS__)
                                   "    AddressSanitizer\n"
#endif
#if defined(__SANITIZE_THREAD__)
                                   "    ThreadSanitizer\n"
#endif
        ;
    return warnings;
}

GASNETT_EXPORT uint64_t gasnett_checksum(const void *p, int numbytes) {
    const auto *b = static_cast<const unsigned char *>(p);
    uint64_t sum = 0;
    for (int i = 0; i < numbytes; ++i) sum = ((sum << 8) | (sum >> 56)) ^ b[i];
    return sum;
}

GASNETT_EXPORT size_t gasnett_count0s(const void *src, size_t len) {
    const auto *b = static_cast<const unsigned char *>(src);
    size_t n = 0;
    for (size_t i = 0; i < len; ++i) n += b[i] == 0;
    return n;
}

GASNETT_EXPORT size_t gasnett_count0s_copy(void *dst, const void *src, size_t len) {
    if (len) std::memcpy(dst, src, len);
    return gasnett_count0s(dst, len);
}

// ---- backtraces ---------------------------------------------------------------------------------------------
namespace {
std::atomic<const char *> backtrace_exename{nullptr};

int execinfo_backtrace(int fd) {
    void *frames[128];
    const int n = backtrace(frames, 128);
    if (n <= 0) return -1;
    backtrace_symbols_fd(frames, n, fd);
    return 0;
}

bool user_backtrace_defined() { return &gasnett_backtrace_user != nullptr && gasnett_backtrace_user.fnp; }

bool same_name(const char *a, size_t alen, const char *b) {
    if (!b || std::strlen(b) != alen) return false;
    for (size_t i = 0; i < alen; ++i)
        if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

// Runs the mechanism called name (alen bytes); -1 when there is none by that name.
int run_backtrace(const char *name, size_t alen, int fd) {
    if (user_backtrace_defined() && same_name(name, alen, gasnett_backtrace_user.name))
        return gasnett_backtrace_user.fnp(fd) == 0 ? 0 : 1;
    if (same_name(name, alen, "EXECINFO")) return execinfo_backtrace(fd) == 0 ? 0 : 1;
    return -1;
}
} // namespace

GASNETT_EXPORT void gasnett_backtrace_init(const char *exename) {
    // Kept for the header line; the string is the client's (GASNet passes argv[0]) and must live on.
    backtrace_exename.store(exename, std::memory_order_release);
}

GASNETT_EXPORT int gasnett_print_backtrace(int fd) {
    const char *exe = backtrace_exename.load(std::memory_order_acquire);
    char self[512];
    if (!exe) {
        const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = '\0';
        exe = n > 0 ? self : "(unknown program)";
    }
    dprintf(fd, "backtrace of %s, pid %ld:\n", exe, long(getpid()));
    const std::string types = portico::settings::kGasnetBacktraceType.get();
    if (const char *order = types.c_str(); *order) {
        for (const char *p = order; *p;) {
            const char *end = std::strchr(p, ',');
            const size_t len = end ? size_t(end - p) : std::strlen(p);
            if (len && run_backtrace(p, len, fd) == 0) return 0;
            p += len + (end ? 1 : 0);
        }
        return 1;
    }
    if (user_backtrace_defined() && gasnett_backtrace_user.fnp(fd) == 0) return 0;
    return execinfo_backtrace(fd) == 0 ? 0 : 1;
}

GASNETT_EXPORT int gasnett_print_backtrace_ifenabled(int fd) {
    if (!portico::settings::kGasnetBacktrace.get()) return 1;
    return gasnett_print_backtrace(fd);
}

// ---- verbose environment reports --------------------------------------------------------------------
GASNETT_EXPORT int gasnett_verboseenv(void) {
    if (!portico::settings::kGasnetVerboseEnv.get()) return 0;
    // A GASNet job reports once, from node 0; a tools-only program (no gasnet_init) itself.
    return !gasnetp::state || !gasnetp::state->inited || gasnetp::state->mynode == 0;
}

namespace {
// Prints one report line per key, the first time it is reported.
void env_report(const char *key, const std::string &shown, int is_dflt) {
    if (!key || !gasnett_verboseenv()) return;
    static std::mutex mu;
    static std::set<std::string> reported;
    std::lock_guard lk(mu);
    if (!reported.insert(key).second) return;
    std::fprintf(stderr, "ENV parameter: %s = %s%s\n", key, shown.c_str(), is_dflt ? "   (default)" : "");
    std::fflush(stderr);
}
} // namespace

GASNETT_EXPORT void gasnett_envstr_display(const char *key, const char *val, int is_dflt) {
    env_report(key, !val ? "*not set*" : !*val ? "*empty*" : val, is_dflt);
}

GASNETT_EXPORT void gasnett_envint_display(const char *key, int64_t val, int is_dflt, int is_mem_size) {
    char buf[64];
    env_report(key, gasnett_format_number(val, buf, sizeof buf, is_mem_size), is_dflt);
}

GASNETT_EXPORT void gasnett_envdbl_display(const char *key, double val, int is_dflt) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", val);
    env_report(key, buf, is_dflt);
}

GASNETT_EXPORT char *gasnett_format_number(int64_t val, char *buf, size_t bufsz, int is_mem_size) {
    if (!buf || bufsz == 0) return buf;
    static const struct {
        int shift;
        const char *unit;
    } units[] = {{40, " TB"}, {30, " GB"}, {20, " MB"}, {10, " KB"}};
    // The magnitude, without overflowing on INT64_MIN.
    const uint64_t mag = val < 0 ? uint64_t(0) - uint64_t(val) : uint64_t(val);
    const char *sign = val < 0 ? "-" : "";
    if (is_mem_size) {
        for (const auto &u : units) {
            const uint64_t div = uint64_t(1) << u.shift;
            if (mag >= div && mag % div == 0) {
                std::snprintf(buf, bufsz, "%s%llu%s", sign, static_cast<unsigned long long>(mag / div), u.unit);
                return buf;
            }
        }
        std::snprintf(buf, bufsz, "%s%llu B", sign, static_cast<unsigned long long>(mag));
        return buf;
    }
    std::snprintf(buf, bufsz, "%lld", static_cast<long long>(val));
    return buf;
}

// ---- signals, limits, affinity, streams, aligned memory --------------------------------------------
GASNETT_EXPORT gasnett_sighandlerfn_t gasnett_reghandler(int sigtocatch, gasnett_sighandlerfn_t fp) {
    struct sigaction act {};
    struct sigaction old {};
    act.sa_handler = fp;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESTART;
    if (sigaction(sigtocatch, &act, &old) != 0)
        gasnett_fatalerror("gasnett_reghandler(%d): %s", sigtocatch, std::strerror(errno));
    return old.sa_handler;
}

GASNETT_EXPORT const char *gasnett_signame_fromval(int sigval) {
    switch (sigval) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGURG: return "SIGURG";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGWINCH: return "SIGWINCH";
    case SIGIO: return "SIGIO";
    case SIGSYS: return "SIGSYS";
    default: return nullptr;
    }
}

GASNETT_EXPORT int gasnett_maximize_rlimit(int res, const char *lim_desc) {
    struct rlimit lim {};
    const auto which = static_cast<__rlimit_resource_t>(res);
    if (getrlimit(which, &lim) != 0) return 0;
    if (lim.rlim_cur == lim.rlim_max) return 1;
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(which, &lim) != 0) {
        if (gasnett_verboseenv())
            std::fprintf(stderr, "gasnett_maximize_rlimit: cannot raise %s: %s\n", lim_desc ? lim_desc : "a limit",
                         std::strerror(errno));
        return 0;
    }
    return 1;
}

GASNETT_EXPORT int gasnett_maximize_rlimits(void) {
    static const struct {
        int res;
        const char *desc;
    } limits[] = {{RLIMIT_CPU, "RLIMIT_CPU"},        {RLIMIT_DATA, "RLIMIT_DATA"},     {RLIMIT_AS, "RLIMIT_AS"},
                  {RLIMIT_RSS, "RLIMIT_RSS"},        {RLIMIT_NOFILE, "RLIMIT_NOFILE"}, {RLIMIT_NPROC, "RLIMIT_NPROC"},
                  {RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"}};
    int all = 1;
    for (const auto &l : limits) all &= gasnett_maximize_rlimit(l.res, l.desc);
    return all;
}

GASNETT_EXPORT void gasnett_set_affinity(int rank) {
    const int cpus = gasnett_cpu_count();
    if (cpus <= 0 || rank < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<size_t>(rank % cpus), &set);
    (void)sched_setaffinity(0, sizeof set, &set); // a hint: where it fails, the thread runs anywhere
}

GASNETT_EXPORT void gasnett_close_streams(void) {
    std::fflush(nullptr);
    std::fclose(stdin);
    std::fclose(stdout);
    std::fclose(stderr);
}

GASNETT_EXPORT void *gasnett_malloc_aligned(size_t align, size_t sz) {
    void *p = nullptr;
    const size_t a = align < sizeof(void *) ? sizeof(void *) : align;
    if (posix_memalign(&p, a, sz ? sz : 1) != 0)
        gasnett_fatalerror("gasnett_malloc_aligned(%zu, %zu): out of memory or a bad alignment", align, sz);
    return p;
}

GASNETT_EXPORT void gasnett_free_aligned(void *ptr) { std::free(ptr); }
