// The library half of gasnet_tools.h: environment helpers, system queries, backtraces, thread keys.
#include <gasnet_tools.h>

#include <execinfo.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

GASNETT_EXPORT const char *gasnett_getenv_withdefault(const char *keyname, const char *defaultval) {
    const char *v = gasnett_getenv(keyname);
    return v ? v : defaultval;
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
    if (!parse_int(str, mem_size_multiplier, &v)) gasnett_fatalerror("'%s' is not an integer%s", str ? str : "(null)",
                                                              mem_size_multiplier ? " or a size" : "");
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

GASNETT_EXPORT void gasnett_killmyprocess(int exitcode) { _exit(exitcode); }

GASNETT_EXPORT int gasnett_print_backtrace(int fd) {
    void *frames[128];
    const int n = backtrace(frames, 128);
    if (n <= 0) return -1;
    backtrace_symbols_fd(frames, n, fd);
    return 0;
}

GASNETT_EXPORT int gasnett_print_backtrace_ifenabled(int fd) {
    const char *v = std::getenv("GASNET_BACKTRACE");
    int on = 0;
    if (!v || !yesno(v, &on) || !on) return 1;
    return gasnett_print_backtrace(fd);
}
