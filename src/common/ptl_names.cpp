#include "common/ptl_names.hpp"

#include <portals4.h>

namespace portico::names {

namespace {
template <size_t N> const char *lookup(const char *const (&table)[N], int i, const char *unknown) {
    return i >= 0 && static_cast<size_t>(i) < N ? table[i] : unknown;
}
} // namespace

// Each table follows the order of its enum in portals4.h; the static_asserts keep them in step.
const char *return_code(int rc) {
    static const char *const t[] = {
        "PTL_OK",      "PTL_ARG_INVALID",  "PTL_CT_NONE_REACHED", "PTL_EQ_DROPPED", "PTL_EQ_EMPTY", "PTL_FAIL",
        "PTL_IGNORED", "PTL_IN_USE",       "PTL_LIST_TOO_LONG",   "PTL_NO_INIT",    "PTL_NO_SPACE", "PTL_PID_IN_USE",
        "PTL_PT_FULL", "PTL_PT_EQ_NEEDED", "PTL_PT_IN_USE",       "PTL_ABORTED"};
    static_assert(sizeof t / sizeof *t == PTL_STATUS_LAST);
    return lookup(t, rc, "(unknown return code)");
}

const char *event_kind(int kind) {
    static const char *const t[] = {"PTL_EVENT_GET",          "PTL_EVENT_GET_OVERFLOW",
                                    "PTL_EVENT_PUT",          "PTL_EVENT_PUT_OVERFLOW",
                                    "PTL_EVENT_ATOMIC",       "PTL_EVENT_ATOMIC_OVERFLOW",
                                    "PTL_EVENT_FETCH_ATOMIC", "PTL_EVENT_FETCH_ATOMIC_OVERFLOW",
                                    "PTL_EVENT_REPLY",        "PTL_EVENT_SEND",
                                    "PTL_EVENT_ACK",          "PTL_EVENT_PT_DISABLED",
                                    "PTL_EVENT_LINK",         "PTL_EVENT_AUTO_UNLINK",
                                    "PTL_EVENT_AUTO_FREE",    "PTL_EVENT_SEARCH",
                                    "PTL_EVENT_ERROR"};
    static_assert(sizeof t / sizeof *t == PTL_EVENT_ERROR + 1);
    return lookup(t, kind, "(unknown event kind)");
}

const char *ni_fail(int fail) {
    static const char *const t[] = {"PTL_NI_OK",      "PTL_NI_UNDELIVERABLE",  "PTL_NI_PT_DISABLED",
                                    "PTL_NI_DROPPED", "PTL_NI_PERM_VIOLATION", "PTL_NI_OP_VIOLATION",
                                    "PTL_NI_SEGV",    "PTL_NI_NO_MATCH"};
    static_assert(sizeof t / sizeof *t == PTL_NI_NO_MATCH + 1);
    return lookup(t, fail, "(unknown ni_fail_type)");
}

const char *atomic_op(int op) {
    static const char *const t[] = {"MIN",      "MAX",      "SUM",      "PROD",     "DIFF", "LOR",   "LAND",
                                    "LXOR",     "BOR",      "BAND",     "BXOR",     "SWAP", "CSWAP", "CSWAP_NE",
                                    "CSWAP_LE", "CSWAP_LT", "CSWAP_GE", "CSWAP_GT", "MSWAP"};
    static_assert(sizeof t / sizeof *t == PTL_OP_LAST);
    return lookup(t, op, "(invalid op)");
}

const char *datatype(int type) {
    static const char *const t[] = {
        "INT8_T",   "UINT8_T", "INT16_T",       "UINT16_T", "INT32_T",        "UINT32_T",    "INT64_T",
        "UINT64_T", "FLOAT",   "FLOAT_COMPLEX", "DOUBLE",   "DOUBLE_COMPLEX", "LONG_DOUBLE", "LONG_DOUBLE_COMPLEX"};
    static_assert(sizeof t / sizeof *t == PTL_DATATYPE_LAST);
    return lookup(t, type, "(invalid datatype)");
}

} // namespace portico::names
