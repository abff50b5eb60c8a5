// Names of Portals constants, for diagnostics (engine logs, tools, tests, benchmarks).
#pragma once

namespace portico::names {

const char *return_code(int rc);  // "PTL_ARG_INVALID"
const char *event_kind(int kind); // "PTL_EVENT_PUT"
const char *ni_fail(int fail);    // "PTL_NI_SEGV"
const char *atomic_op(int op);    // "CSWAP_NE" (without the PTL_ prefix)
const char *datatype(int type);   // "LONG_DOUBLE_COMPLEX" (without the PTL_ prefix)

} // namespace portico::names
