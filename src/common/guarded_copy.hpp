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

// memcpy(dst, src, n); returns false (and leaves dst partly written) if either range faults.
bool guarded_copy(void *dst, const void *src, size_t n);

// True if every byte of [p, p+n) can be read (touches one byte per page). For senders that hand
// memory to the kernel (TCP) and must know before a frame's header leaves that its payload exists.
bool guarded_readable(const void *p, size_t n);

} // namespace portico
