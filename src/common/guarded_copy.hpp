// Copies that survive unmapped memory. Portals lets MDs, LEs and MEs cover the whole address space
// (start=NULL, length=PTL_SIZE_MAX); touching an unmapped byte must become PTL_NI_SEGV, not a crash.
#pragma once

#include <cstddef>

namespace portico {

// Installs the SIGSEGV/SIGBUS handler that guarded_copy relies on (idempotent). Faults outside a
// guarded copy are passed on to the previous handler, so the application's behaviour is unchanged.
void install_fault_guard();

// memcpy(dst, src, n); returns false (and leaves dst partly written) if either range faults.
bool guarded_copy(void *dst, const void *src, size_t n);

} // namespace portico
