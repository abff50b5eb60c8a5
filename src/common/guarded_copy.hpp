// SPDX-License-Identifier: BSD-3-Clause
// Copies that survive unmapped memory. Portals lets MDs, LEs and MEs cover the whole address space
// (start=NULL, length=PTL_SIZE_MAX); touching an unmapped byte must become PTL_NI_SEGV, not a crash.
#pragma once

#include <cstddef>

namespace portico {

// Installs the SIGSEGV/SIGBUS handler that guarded_copy relies on (idempotent; the engine calls it
// when the first NI is created, so that a process without one keeps its signal dispositions).
// Faults outside a guarded copy, and signals sent with kill/raise/pthread_kill/sigqueue, go to the
// handler installed before (SA_SIGINFO or not, with its mask), are ignored if it was SIG_IGN, and
// get the default action if it was SIG_DFL: the application sees what it would without Portico.
void install_fault_guard();

// guarded_copy(dst, src, n): memcpy(dst, src, n); returns false (and leaves dst partly written)
// if either range faults.
#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
// Small copies, nearly every message's payload, are guarded by where they fault instead of by a
// sigsetjmp each (about 50 instructions, as much as the rest of an 8-byte copy's path):
// portico_small_copy is a leaf that touches no stack, so the fault handler can resume a faulting
// instruction of it at its failure return. Called inline, so that a small copy does not also pay
// for the frame of the sigsetjmp path. (Not under the sanitizers: their runtimes must see the
// copy; they use the sigsetjmp path, or the kernel's under TSan.)
#define PORTICO_GUARD_BY_PC 1
extern "C" bool portico_small_copy(void *dst, const void *src, size_t n); // true, or false through the handler
// The largest copy made by portico_small_copy; larger ones pay for their sigsetjmp many times over
// in bytes, and glibc's memcpy moves them faster than a loop of words.
inline constexpr size_t kSmallCopyMax = 256;
bool guarded_copy_large(void *dst, const void *src, size_t n);
inline bool guarded_copy(void *dst, const void *src, size_t n) {
    return n <= kSmallCopyMax ? portico_small_copy(dst, src, n) : guarded_copy_large(dst, src, n);
}
#else
bool guarded_copy(void *dst, const void *src, size_t n);
#endif

// True if every byte of [p, p+n) can be read (touches one byte per page). For senders that hand
// memory to the kernel (TCP) and must know before a frame's header leaves that its payload exists.
bool guarded_readable(const void *p, size_t n);

} // namespace portico
