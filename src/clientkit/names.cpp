// SPDX-License-Identifier: BSD-3-Clause
#include "clientkit.hpp"

#include <sstream>

namespace portico::clientkit {

// One case per constant, spelled by the preprocessor from the constant itself, so a name can never
// drift from its value; the unit test checks that every value of each enum has a name.
#define CLIENTKIT_NAME(c)                                                                                              \
    case c: return #c

const char *rc_name(int rc) {
    switch (rc) {
        CLIENTKIT_NAME(PTL_OK);
        CLIENTKIT_NAME(PTL_ARG_INVALID);
        CLIENTKIT_NAME(PTL_CT_NONE_REACHED);
        CLIENTKIT_NAME(PTL_EQ_DROPPED);
        CLIENTKIT_NAME(PTL_EQ_EMPTY);
        CLIENTKIT_NAME(PTL_FAIL);
        CLIENTKIT_NAME(PTL_IGNORED);
        CLIENTKIT_NAME(PTL_IN_USE);
        CLIENTKIT_NAME(PTL_LIST_TOO_LONG);
        CLIENTKIT_NAME(PTL_NO_INIT);
        CLIENTKIT_NAME(PTL_NO_SPACE);
        CLIENTKIT_NAME(PTL_PID_IN_USE);
        CLIENTKIT_NAME(PTL_PT_FULL);
        CLIENTKIT_NAME(PTL_PT_EQ_NEEDED);
        CLIENTKIT_NAME(PTL_PT_IN_USE);
        CLIENTKIT_NAME(PTL_ABORTED);
    }
    return "(unknown return code)";
}

const char *event_name(int kind) {
    switch (kind) {
        CLIENTKIT_NAME(PTL_EVENT_GET);
        CLIENTKIT_NAME(PTL_EVENT_GET_OVERFLOW);
        CLIENTKIT_NAME(PTL_EVENT_PUT);
        CLIENTKIT_NAME(PTL_EVENT_PUT_OVERFLOW);
        CLIENTKIT_NAME(PTL_EVENT_ATOMIC);
        CLIENTKIT_NAME(PTL_EVENT_ATOMIC_OVERFLOW);
        CLIENTKIT_NAME(PTL_EVENT_FETCH_ATOMIC);
        CLIENTKIT_NAME(PTL_EVENT_FETCH_ATOMIC_OVERFLOW);
        CLIENTKIT_NAME(PTL_EVENT_REPLY);
        CLIENTKIT_NAME(PTL_EVENT_SEND);
        CLIENTKIT_NAME(PTL_EVENT_ACK);
        CLIENTKIT_NAME(PTL_EVENT_PT_DISABLED);
        CLIENTKIT_NAME(PTL_EVENT_LINK);
        CLIENTKIT_NAME(PTL_EVENT_AUTO_UNLINK);
        CLIENTKIT_NAME(PTL_EVENT_AUTO_FREE);
        CLIENTKIT_NAME(PTL_EVENT_SEARCH);
        CLIENTKIT_NAME(PTL_EVENT_ERROR);
    }
    return "(unknown event kind)";
}

const char *fail_name(int fail) {
    switch (fail) {
        CLIENTKIT_NAME(PTL_NI_OK);
        CLIENTKIT_NAME(PTL_NI_UNDELIVERABLE);
        CLIENTKIT_NAME(PTL_NI_PT_DISABLED);
        CLIENTKIT_NAME(PTL_NI_DROPPED);
        CLIENTKIT_NAME(PTL_NI_PERM_VIOLATION);
        CLIENTKIT_NAME(PTL_NI_OP_VIOLATION);
        CLIENTKIT_NAME(PTL_NI_SEGV);
        CLIENTKIT_NAME(PTL_NI_NO_MATCH);
    }
    return "(unknown ni_fail_type)";
}

const char *op_name(int op) {
    switch (op) {
        CLIENTKIT_NAME(PTL_MIN);
        CLIENTKIT_NAME(PTL_MAX);
        CLIENTKIT_NAME(PTL_SUM);
        CLIENTKIT_NAME(PTL_PROD);
        CLIENTKIT_NAME(PTL_DIFF);
        CLIENTKIT_NAME(PTL_LOR);
        CLIENTKIT_NAME(PTL_LAND);
        CLIENTKIT_NAME(PTL_LXOR);
        CLIENTKIT_NAME(PTL_BOR);
        CLIENTKIT_NAME(PTL_BAND);
        CLIENTKIT_NAME(PTL_BXOR);
        CLIENTKIT_NAME(PTL_SWAP);
        CLIENTKIT_NAME(PTL_CSWAP);
        CLIENTKIT_NAME(PTL_CSWAP_NE);
        CLIENTKIT_NAME(PTL_CSWAP_LE);
        CLIENTKIT_NAME(PTL_CSWAP_LT);
        CLIENTKIT_NAME(PTL_CSWAP_GE);
        CLIENTKIT_NAME(PTL_CSWAP_GT);
        CLIENTKIT_NAME(PTL_MSWAP);
    }
    return "(invalid op)";
}

const char *datatype_name(int datatype) {
    switch (datatype) {
        CLIENTKIT_NAME(PTL_INT8_T);
        CLIENTKIT_NAME(PTL_UINT8_T);
        CLIENTKIT_NAME(PTL_INT16_T);
        CLIENTKIT_NAME(PTL_UINT16_T);
        CLIENTKIT_NAME(PTL_INT32_T);
        CLIENTKIT_NAME(PTL_UINT32_T);
        CLIENTKIT_NAME(PTL_INT64_T);
        CLIENTKIT_NAME(PTL_UINT64_T);
        CLIENTKIT_NAME(PTL_FLOAT);
        CLIENTKIT_NAME(PTL_FLOAT_COMPLEX);
        CLIENTKIT_NAME(PTL_DOUBLE);
        CLIENTKIT_NAME(PTL_DOUBLE_COMPLEX);
        CLIENTKIT_NAME(PTL_LONG_DOUBLE);
        CLIENTKIT_NAME(PTL_LONG_DOUBLE_COMPLEX);
    }
    return "(invalid datatype)";
}

#undef CLIENTKIT_NAME

std::string describe(const ptl_event_t &ev) {
    std::ostringstream os;
    os << "event{" << event_name(ev.type) << ", fail=" << fail_name(ev.ni_fail_type) << ", initiator=(nid "
       << ev.initiator.phys.nid << ", pid " << ev.initiator.phys.pid << " | rank " << ev.initiator.rank
       << "), pt=" << ev.pt_index << ", list=" << ev.ptl_list << ", uid=" << ev.uid << ", match_bits=0x" << std::hex
       << ev.match_bits << std::dec << ", rlength=" << ev.rlength << ", mlength=" << ev.mlength
       << ", remote_offset=" << ev.remote_offset << ", start=" << ev.start << ", user_ptr=" << ev.user_ptr
       << ", hdr_data=0x" << std::hex << ev.hdr_data << std::dec << "}";
    return os.str();
}

} // namespace portico::clientkit
