// The C ABI of portico_runtime.h and portico_ext.h.
#include <portals4.h>
#include <portico_ext.h>
#include <portico_runtime.h>

#include "engine/engine.hpp"

using portico::engine::Engine;

#define PORTICO_API extern "C" __attribute__((visibility("default")))

PORTICO_API int portico_runtime_rank(int *rank) {
    if (!Engine::instance().initialized()) return PTL_NO_INIT;
    if (!rank) return PTL_ARG_INVALID;
    return Engine::instance().runtime_query(rank, nullptr);
}
PORTICO_API int portico_runtime_size(int *size) {
    if (!Engine::instance().initialized()) return PTL_NO_INIT;
    if (!size) return PTL_ARG_INVALID;
    return Engine::instance().runtime_query(nullptr, size);
}
PORTICO_API int portico_runtime_barrier(void) {
    if (!Engine::instance().initialized()) return PTL_NO_INIT;
    return Engine::instance().runtime_barrier();
}

// portico_ext.h
PORTICO_API int portico_set_wait_spin_us(unsigned us) { return portico::engine::Tunables::set_wait_spin_us(us); }
