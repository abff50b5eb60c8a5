// SPDX-License-Identifier: BSD-3-Clause
#include "common/guarded_copy.hpp"

#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef PORTICO_GUARD_BY_PC
#include <ucontext.h>
extern "C" const char portico_small_copy_fault[], portico_small_copy_end[];
asm(R"(
    .text
    .p2align 4
    .globl portico_small_copy
    .hidden portico_small_copy
    .type portico_small_copy, @function
portico_small_copy:
1:  cmpq $8, %rdx
    jb 2f
    movq (%rsi), %rax
    movq %rax, (%rdi)
    addq $8, %rsi
    addq $8, %rdi
    subq $8, %rdx
    jmp 1b
2:  testq %rdx, %rdx
    je 3f
    movb (%rsi), %al
    movb %al, (%rdi)
    incq %rsi
    incq %rdi
    decq %rdx
    jmp 2b
3:  movl $1, %eax
    ret
    .globl portico_small_copy_fault
    .hidden portico_small_copy_fault
portico_small_copy_fault:
    xorl %eax, %eax
    ret
    .globl portico_small_copy_end
    .hidden portico_small_copy_end
portico_small_copy_end:
    .size portico_small_copy, portico_small_copy_end - portico_small_copy
)");
#endif

namespace portico {

namespace {
#ifdef PORTICO_GUARD_BY_PC
// A fault at an instruction of portico_small_copy: resume at its failure return.
bool resume_small_copy(void *ctx) {
    auto *uc = static_cast<ucontext_t *>(ctx);
    const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
    if (pc < reinterpret_cast<uintptr_t>(&portico_small_copy) ||
        pc >= reinterpret_cast<uintptr_t>(portico_small_copy_fault))
        return false;
    uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(portico_small_copy_fault));
    return true;
}
#endif

// initial-exec TLS: reading it from the signal handler must not allocate.
__attribute__((tls_model("initial-exec"))) thread_local sigjmp_buf *volatile t_guard = nullptr;
struct sigaction g_old_segv, g_old_bus;
std::once_flag g_once;

// A fault the kernel raised for an instruction (si_code > 0: SEGV_MAPERR, BUS_ADRERR, SI_KERNEL
// for a non-canonical address, ...), as opposed to a signal someone sent with kill, raise,
// pthread_kill or sigqueue (si_code <= 0), which no instruction will raise again.
bool is_fault(const siginfo_t *info) { return info != nullptr && info->si_code > 0; }

// Delivers a signal that is not ours as if Portico's handler had never been installed.
void chain(int sig, siginfo_t *info, void *ctx) {
    struct sigaction &old = sig == SIGSEGV ? g_old_segv : g_old_bus;
    const bool fault = is_fault(info);
    const bool has_handler = (old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
    if (!has_handler) {
        if (old.sa_handler == SIG_IGN && !fault) return; // ignored, as it would have been
        // Default action (the kernel applies it to a fault even when the signal is ignored).
        // A fault: restore it and return, the instruction runs again and the process dies with
        // the original signal and fault address. A sent signal would be lost that way: send it
        // again, now that the default action is in place (it is not blocked: our handler runs
        // with SA_NODEFER).
        signal(sig, SIG_DFL);
        if (!fault) raise(sig);
        return;
    }
    // The application's handler, run as the kernel would have run it: with its mask (and the
    // signal itself unless SA_NODEFER) blocked, and reset to the default first if SA_RESETHAND.
    sigset_t mask = old.sa_mask, saved;
    if (!(old.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
    const struct sigaction handler = old;
    if (old.sa_flags & static_cast<int>(SA_RESETHAND)) { // an unsigned constant, 0x80000000
        old.sa_flags &= ~SA_SIGINFO;
        old.sa_handler = SIG_DFL;
    }
    pthread_sigmask(SIG_BLOCK, &mask, &saved);
    if (handler.sa_flags & SA_SIGINFO)
        handler.sa_sigaction(sig, info, ctx);
    else
        handler.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

void on_fault(int sig, siginfo_t *info, void *ctx) {
    // Only a real fault inside a guarded copy is ours; a signal sent to a thread that happens
    // to be copying is the application's.
#ifdef PORTICO_GUARD_BY_PC
    if (is_fault(info) && resume_small_copy(ctx)) return;
#endif
    if (sigjmp_buf *g = t_guard; g && is_fault(info)) {
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
        // SA_ONSTACK: a thread with an alternate signal stack (a stack-overflow handler) gets
        // its handler there, as without Portico.
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
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
#ifdef PORTICO_GUARD_BY_PC
bool guarded_copy_large(void *dst, const void *src, size_t n) {
#else
bool guarded_copy(void *dst, const void *src, size_t n) {
    if (n == 0) return true;
#endif
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
