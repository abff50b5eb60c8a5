#include "common/guarded_copy.hpp"

#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>
#include <sys/uio.h>
#include <unistd.h>

namespace portico {

namespace {
// initial-exec TLS: reading it from the signal handler must not allocate.
__attribute__((tls_model("initial-exec"))) thread_local sigjmp_buf *volatile t_guard = nullptr;
struct sigaction g_old_segv, g_old_bus;
std::once_flag g_once;

void chain(int sig, siginfo_t *info, void *ctx) {
    struct sigaction &old = sig == SIGSEGV ? g_old_segv : g_old_bus;
    if (old.sa_flags & SA_SIGINFO) {
        old.sa_sigaction(sig, info, ctx);
    } else if (old.sa_handler == SIG_IGN) {
        return;
    } else if (old.sa_handler != SIG_DFL) {
        old.sa_handler(sig);
    } else {
        // Restore the default action and return: the faulting instruction runs again and the
        // process dies with the original signal, exactly as without Portico.
        signal(sig, SIG_DFL);
    }
}

void on_fault(int sig, siginfo_t *info, void *ctx) {
    if (sigjmp_buf *g = t_guard) {
        t_guard = nullptr;
        siglongjmp(*g, 1);
    }
    chain(sig, info, ctx);
}
} // namespace

void install_fault_guard() {
    std::call_once(g_once, [] {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &g_old_segv);
        sigaction(SIGBUS, &sa, &g_old_bus);
    });
}

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer's runtime cannot leave a signal handler by siglongjmp, so under TSan the kernel
// makes the guarded copy: process_vm_readv on ourselves fails with EFAULT instead of faulting.
// (A system call per copy, in the sanitizer build only.)
bool guarded_copy(void *dst, const void *src, size_t n) {
    if (n == 0) return true;
    iovec local{dst, n};
    iovec remote{const_cast<void *>(src), n};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

bool guarded_readable(const void *p, size_t n) {
    if (n == 0) return true;
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    auto readable = [](uintptr_t a) {
        char c;
        iovec local{&c, 1};
        iovec remote{reinterpret_cast<void *>(a), 1};
        return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
    };
    if (!readable(start) || !readable(start + n - 1)) return false;
    for (uintptr_t a = (start / page + 1) * page; a - start < n; a += page)
        if (!readable(a)) return false;
    return true;
}
#else
bool guarded_copy(void *dst, const void *src, size_t n) {
    if (n == 0) return true;
    sigjmp_buf env;
    if (sigsetjmp(env, 0) != 0) return false; // a fault inside memcpy landed here
    t_guard = &env;
    // The compiler knows memcpy does not read t_guard and would otherwise drop the store above;
    // the signal handler must see it.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    std::memcpy(dst, src, n);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_guard = nullptr;
    return true;
}


bool guarded_readable(const void *p, size_t n) {
    if (n == 0) return true;
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const volatile char *b = static_cast<const char *>(p);
    sigjmp_buf env;
    if (sigsetjmp(env, 0) != 0) return false;
    t_guard = &env;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    // First byte, then the first byte of every following page, then the last byte.
    (void)b[0];
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    for (uintptr_t a = (start / page + 1) * page; a - start < n; a += page) (void)b[a - start];
    (void)b[n - 1];
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_guard = nullptr;
    return true;
}
#endif

} // namespace portico
