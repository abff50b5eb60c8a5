/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * portals4.h — the Portals 4.3 network programming interface, as implemented by Portico.
 *
 * The specification (SAND2022-8810) fixes names, argument lists and semantics but no numeric
 * values; the values below are Portico's. Every constant is a compile-time constant, and every
 * integral constant is a valid switch label. Struct members follow the order the spec lists.
 */
#ifndef PORTALS4_H
#define PORTALS4_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTL_MAJOR_VERSION 4
#define PTL_MINOR_VERSION 3

/* ---- base types (§3.3) ---------------------------------------------------------------------- */
typedef uint64_t ptl_size_t;
typedef uint32_t ptl_pt_index_t;
typedef uint64_t ptl_match_bits_t;
typedef uint64_t ptl_hdr_data_t;
typedef uint32_t ptl_interface_t;
typedef uint32_t ptl_nid_t;
typedef uint32_t ptl_pid_t;
typedef uint32_t ptl_rank_t;
typedef uint32_t ptl_uid_t;
typedef int64_t ptl_sr_value_t;
typedef int64_t ptl_time_t; /* milliseconds */

/* Handles are 64-bit values (type, slot, generation); all kinds convert losslessly to any. */
typedef uint64_t ptl_handle_any_t;
typedef ptl_handle_any_t ptl_handle_ni_t;
typedef ptl_handle_any_t ptl_handle_md_t;
typedef ptl_handle_any_t ptl_handle_le_t;
typedef ptl_handle_any_t ptl_handle_me_t;
typedef ptl_handle_any_t ptl_handle_eq_t;
typedef ptl_handle_any_t ptl_handle_ct_t;

#define PTL_INVALID_HANDLE ((ptl_handle_any_t)0)
#define PTL_EQ_NONE ((ptl_handle_eq_t)0x0500000000000000ULL)
#define PTL_CT_NONE ((ptl_handle_ct_t)0x0600000000000000ULL)

#define PTL_SIZE_MAX ((ptl_size_t)UINT64_MAX)
#define PTL_TIME_FOREVER ((ptl_time_t)-1)

#define PTL_PID_ANY ((ptl_pid_t)0xFFFFFFFFu)
#define PTL_NID_ANY ((ptl_nid_t)0xFFFFFFFFu)
#define PTL_RANK_ANY ((ptl_rank_t)0xFFFFFFFFu)
#define PTL_UID_ANY ((ptl_uid_t)0xFFFFFFFFu)
#define PTL_PT_ANY ((ptl_pt_index_t)0xFFFFFFFFu)
/* Largest pid a caller may request (pids are 0 .. PTL_PID_MAX-1). */
#define PTL_PID_MAX ((ptl_pid_t)65535u)

#define PTL_IFACE_DEFAULT ((ptl_interface_t)0xFFFFFFFFu)

/* ---- return codes (Table 3-7) ------------------------------------------------------------- */
enum {
    PTL_OK = 0,
    PTL_ARG_INVALID,
    PTL_CT_NONE_REACHED,
    PTL_EQ_DROPPED,
    PTL_EQ_EMPTY,
    PTL_FAIL,
    PTL_IGNORED,
    PTL_IN_USE,
    PTL_LIST_TOO_LONG,
    PTL_NO_INIT,
    PTL_NO_SPACE,
    PTL_PID_IN_USE,
    PTL_PT_FULL,
    PTL_PT_EQ_NEEDED,
    PTL_PT_IN_USE,
    PTL_ABORTED,
    PTL_STATUS_LAST /* Portico: one past the last code */
};
/* Compatibility name (Portals 4.0-4.2): 4.3 deprecated PTL_INTERRUPTED as a return code and dropped
 * it from Table 3-7 (a wait ended by PtlAbort returns PTL_ABORTED). Defined so that 4.0/4.1-era
 * clients (Open MPI 4.1, GASNet's portals4-conduit) compile; its value differs from every other
 * code, so it can share a switch with them, and Portico never returns it. */
enum { PTL_INTERRUPTED = 64 };

/* ---- status registers (§3.3.7) ------------------------------------------------------------ */
typedef enum {
    PTL_SR_DROP_COUNT = 0,
    PTL_SR_PERMISSION_VIOLATIONS,
    PTL_SR_OPERATION_VIOLATIONS,
    /* Portico extensions (Appendix B allows extra registers) */
    PTL_SR_MALFORMED_MESSAGES,  /* messages from the network dropped as malformed */
    PTL_SR_REFUSED_CONNECTIONS, /* connections refused: failed authentication, wrong endpoint, overload */
    PTL_SR_LAST
} ptl_sr_index_t;

/* ---- NI (§3.6) ----------------------------------------------------------------------------- */
typedef struct {
    int max_entries;
    int max_unexpected_headers;
    int max_mds;
    int max_cts;
    int max_eqs;
    int max_pt_index;
    int max_iovecs;
    int max_list_size;
    int max_triggered_ops;
    ptl_size_t max_msg_size;
    ptl_size_t max_atomic_size;
    ptl_size_t max_fetch_atomic_size;
    ptl_size_t max_waw_ordered_size;
    ptl_size_t max_war_ordered_size;
    ptl_size_t max_volatile_size;
    unsigned int features;
} ptl_ni_limits_t;

#define PTL_TARGET_BIND_INACCESSIBLE (1u << 0)
#define PTL_TOTAL_DATA_ORDERING (1u << 1)
#define PTL_COHERENT_ATOMICS (1u << 2)

#define PTL_NI_MATCHING (1u << 0)
#define PTL_NI_NO_MATCHING (1u << 1)
#define PTL_NI_LOGICAL (1u << 2)
#define PTL_NI_PHYSICAL (1u << 3)

/* ---- process identification (§3.9) --------------------------------------------------------- */
typedef union {
    struct {
        ptl_nid_t nid;
        ptl_pid_t pid;
    } phys;
    ptl_rank_t rank;
} ptl_process_t;

/* ---- portal table (§3.7) ------------------------------------------------------------------- */
#define PTL_PT_ONLY_USE_ONCE (1u << 0)
#define PTL_PT_ONLY_TRUNCATE (1u << 1)
#define PTL_PT_FLOWCTRL (1u << 2)
#define PTL_PT_ALLOC_DISABLED (1u << 3)

/* ---- memory descriptors (§3.10) ------------------------------------------------------------ */
typedef struct {
    void *start;
    ptl_size_t length;
    unsigned int options;
    ptl_handle_eq_t eq_handle;
    ptl_handle_ct_t ct_handle;
} ptl_md_t;

typedef struct {
    void *iov_base;
    ptl_size_t iov_len;
} ptl_iovec_t;

/* PTL_IOVEC is shared by MDs, LEs and MEs. */
#define PTL_IOVEC (1u << 0)
#define PTL_MD_EVENT_SUCCESS_DISABLE (1u << 1)
#define PTL_MD_EVENT_SEND_DISABLE (1u << 2)
#define PTL_MD_EVENT_CT_SEND (1u << 3)
#define PTL_MD_EVENT_CT_REPLY (1u << 4)
#define PTL_MD_EVENT_CT_ACK (1u << 5)
#define PTL_MD_EVENT_CT_BYTES (1u << 6)
#define PTL_MD_UNORDERED (1u << 7)
#define PTL_MD_VOLATILE (1u << 8)
#define PTL_MD_UNRELIABLE (1u << 9)

/* ---- list entries (§3.11) and match list entries (§3.12) ----------------------------------- */
typedef struct {
    void *start;
    ptl_size_t length;
    ptl_handle_ct_t ct_handle;
    ptl_uid_t uid;
    unsigned int options;
} ptl_le_t;

typedef struct {
    void *start;
    ptl_size_t length;
    ptl_handle_ct_t ct_handle;
    ptl_uid_t uid;
    unsigned int options;
    ptl_process_t match_id;
    ptl_match_bits_t match_bits;
    ptl_match_bits_t ignore_bits;
    ptl_size_t min_free;
} ptl_me_t;

/* Bit 0 is PTL_IOVEC. LE and ME options share their values so that one engine path serves both. */
#define PTL_LE_OP_PUT (1u << 1)
#define PTL_LE_OP_GET (1u << 2)
#define PTL_LE_USE_ONCE (1u << 3)
#define PTL_LE_EVENT_LINK_DISABLE (1u << 4)
#define PTL_LE_EVENT_COMM_DISABLE (1u << 5)
#define PTL_LE_EVENT_FLOWCTRL_DISABLE (1u << 6)
#define PTL_LE_EVENT_SUCCESS_DISABLE (1u << 7)
#define PTL_LE_EVENT_OVER_DISABLE (1u << 8)
#define PTL_LE_EVENT_UNLINK_DISABLE (1u << 9)
#define PTL_LE_EVENT_CT_COMM (1u << 10)
#define PTL_LE_EVENT_CT_OVERFLOW (1u << 11)
#define PTL_LE_EVENT_CT_BYTES (1u << 12)
#define PTL_LE_UNEXPECTED_HDR_DISABLE (1u << 13)
#define PTL_LE_IS_ACCESSIBLE (1u << 14)

#define PTL_ME_OP_PUT PTL_LE_OP_PUT
#define PTL_ME_OP_GET PTL_LE_OP_GET
#define PTL_ME_USE_ONCE PTL_LE_USE_ONCE
#define PTL_ME_EVENT_LINK_DISABLE PTL_LE_EVENT_LINK_DISABLE
#define PTL_ME_EVENT_COMM_DISABLE PTL_LE_EVENT_COMM_DISABLE
#define PTL_ME_EVENT_FLOWCTRL_DISABLE PTL_LE_EVENT_FLOWCTRL_DISABLE
#define PTL_ME_EVENT_SUCCESS_DISABLE PTL_LE_EVENT_SUCCESS_DISABLE
#define PTL_ME_EVENT_OVER_DISABLE PTL_LE_EVENT_OVER_DISABLE
#define PTL_ME_EVENT_UNLINK_DISABLE PTL_LE_EVENT_UNLINK_DISABLE
#define PTL_ME_EVENT_CT_COMM PTL_LE_EVENT_CT_COMM
#define PTL_ME_EVENT_CT_OVERFLOW PTL_LE_EVENT_CT_OVERFLOW
#define PTL_ME_EVENT_CT_BYTES PTL_LE_EVENT_CT_BYTES
#define PTL_ME_UNEXPECTED_HDR_DISABLE PTL_LE_UNEXPECTED_HDR_DISABLE
#define PTL_ME_IS_ACCESSIBLE PTL_LE_IS_ACCESSIBLE
#define PTL_ME_MANAGE_LOCAL (1u << 15)
#define PTL_ME_NO_TRUNCATE (1u << 16)
#define PTL_ME_MAY_ALIGN (1u << 17)
#define PTL_ME_LOCAL_INC_UH_RLENGTH (1u << 18)

/* Compatibility names (Portals 4.0-4.2): 4.3 deprecated target-side disabling of acknowledgements
 * (the initiator alone decides, §3.13.3) and dropped these options from Table 3-8. They are 0, so
 * that an entry appended with them behaves exactly as one without. */
#define PTL_LE_ACK_DISABLE 0u
#define PTL_ME_ACK_DISABLE PTL_LE_ACK_DISABLE

typedef enum { PTL_PRIORITY_LIST = 0, PTL_OVERFLOW_LIST = 1 } ptl_list_t;
typedef enum { PTL_SEARCH_ONLY = 0, PTL_SEARCH_DELETE = 1 } ptl_search_op_t;

/* ---- events (§3.13) ------------------------------------------------------------------------ */
typedef enum {
    PTL_EVENT_GET = 0,
    PTL_EVENT_GET_OVERFLOW,
    PTL_EVENT_PUT,
    PTL_EVENT_PUT_OVERFLOW,
    PTL_EVENT_ATOMIC,
    PTL_EVENT_ATOMIC_OVERFLOW,
    PTL_EVENT_FETCH_ATOMIC,
    PTL_EVENT_FETCH_ATOMIC_OVERFLOW,
    PTL_EVENT_REPLY,
    PTL_EVENT_SEND,
    PTL_EVENT_ACK,
    PTL_EVENT_PT_DISABLED,
    PTL_EVENT_LINK,
    PTL_EVENT_AUTO_UNLINK,
    PTL_EVENT_AUTO_FREE,
    PTL_EVENT_SEARCH,
    PTL_EVENT_ERROR
} ptl_event_kind_t;

typedef enum {
    PTL_NI_OK = 0,
    PTL_NI_UNDELIVERABLE,
    PTL_NI_PT_DISABLED,
    PTL_NI_DROPPED,
    PTL_NI_PERM_VIOLATION,
    PTL_NI_OP_VIOLATION,
    PTL_NI_SEGV,
    PTL_NI_NO_MATCH
} ptl_ni_fail_t;

typedef enum {
    PTL_MIN = 0,
    PTL_MAX,
    PTL_SUM,
    PTL_PROD,
    PTL_DIFF,
    PTL_LOR,
    PTL_LAND,
    PTL_LXOR,
    PTL_BOR,
    PTL_BAND,
    PTL_BXOR,
    PTL_SWAP,
    PTL_CSWAP,
    PTL_CSWAP_NE,
    PTL_CSWAP_LE,
    PTL_CSWAP_LT,
    PTL_CSWAP_GE,
    PTL_CSWAP_GT,
    PTL_MSWAP,
    PTL_OP_LAST /* Portico: one past the last operation */
} ptl_op_t;

typedef enum {
    PTL_INT8_T = 0,
    PTL_UINT8_T,
    PTL_INT16_T,
    PTL_UINT16_T,
    PTL_INT32_T,
    PTL_UINT32_T,
    PTL_INT64_T,
    PTL_UINT64_T,
    PTL_FLOAT,
    PTL_FLOAT_COMPLEX,
    PTL_DOUBLE,
    PTL_DOUBLE_COMPLEX,
    PTL_LONG_DOUBLE,
    PTL_LONG_DOUBLE_COMPLEX,
    PTL_DATATYPE_LAST /* Portico: one past the last datatype */
} ptl_datatype_t;

typedef struct {
    void *start;
    void *user_ptr;
    ptl_hdr_data_t hdr_data;
    ptl_match_bits_t match_bits;
    ptl_size_t rlength;
    ptl_size_t mlength;
    ptl_size_t remote_offset;
    ptl_uid_t uid;
    ptl_process_t initiator;
    ptl_event_kind_t type;
    ptl_list_t ptl_list;
    ptl_pt_index_t pt_index;
    ptl_ni_fail_t ni_fail_type;
    ptl_op_t atomic_operation;
    ptl_datatype_t atomic_type;
} ptl_event_t;

/* ---- counting events (§3.14) --------------------------------------------------------------- */
typedef struct {
    ptl_size_t success;
    ptl_size_t failure;
} ptl_ct_event_t;

/* ---- data movement (§3.15) ----------------------------------------------------------------- */
typedef enum { PTL_ACK_REQ = 0, PTL_NO_ACK_REQ, PTL_CT_ACK_REQ, PTL_OC_ACK_REQ } ptl_ack_req_t;

/* ---- functions ----------------------------------------------------------------------------- */
int PtlInit(void);
void PtlFini(void);
void PtlAbort(void);

int PtlNIInit(ptl_interface_t iface, unsigned int options, ptl_pid_t pid, const ptl_ni_limits_t *desired,
              ptl_ni_limits_t *actual, ptl_handle_ni_t *ni_handle);
int PtlNIFini(ptl_handle_ni_t ni_handle);
int PtlNIStatus(ptl_handle_ni_t ni_handle, ptl_sr_index_t status_register, ptl_sr_value_t *status);
int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni_handle);
int PtlSetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size, const ptl_process_t *mapping);
int PtlGetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size, ptl_process_t *mapping, ptl_size_t *actual_map_size);

int PtlPTAlloc(ptl_handle_ni_t ni_handle, unsigned int options, ptl_handle_eq_t eq_handle, ptl_pt_index_t pt_index_req,
               ptl_pt_index_t *pt_index);
int PtlPTFree(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);
int PtlPTDisable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);
int PtlPTEnable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);

int PtlGetUid(ptl_handle_ni_t ni_handle, ptl_uid_t *uid);
int PtlGetId(ptl_handle_ni_t ni_handle, ptl_process_t *id);
int PtlGetPhysId(ptl_handle_ni_t ni_handle, ptl_process_t *id);

int PtlMDBind(ptl_handle_ni_t ni_handle, const ptl_md_t *md, ptl_handle_md_t *md_handle);
int PtlMDRelease(ptl_handle_md_t md_handle);

int PtlLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le, ptl_list_t ptl_list,
                void *user_ptr, ptl_handle_le_t *le_handle);
int PtlLEUnlink(ptl_handle_le_t le_handle);
int PtlLESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le, ptl_search_op_t ptl_search_op,
                void *user_ptr);
int PtlMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me, ptl_list_t ptl_list,
                void *user_ptr, ptl_handle_me_t *me_handle);
int PtlMEUnlink(ptl_handle_me_t me_handle);
int PtlMESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me, ptl_search_op_t ptl_search_op,
                void *user_ptr);

int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count, ptl_handle_eq_t *eq_handle);
int PtlEQFree(ptl_handle_eq_t eq_handle);
int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event);
int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event);
int PtlEQPoll(const ptl_handle_eq_t *eq_handles, unsigned int size, ptl_time_t timeout, ptl_event_t *event,
              unsigned int *which);

int PtlCTAlloc(ptl_handle_ni_t ni_handle, ptl_handle_ct_t *ct_handle);
int PtlCTFree(ptl_handle_ct_t ct_handle);
int PtlCTCancelTriggered(ptl_handle_ct_t ct_handle);
int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *event);
int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event);
int PtlCTPoll(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests, unsigned int size, ptl_time_t timeout,
              ptl_ct_event_t *event, unsigned int *which);
int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct);
int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment);

int PtlPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
           ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
           void *user_ptr, ptl_hdr_data_t hdr_data);
int PtlGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target_id,
           ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr);

int PtlAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
              ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
              void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype);
int PtlFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset, ptl_handle_md_t put_md_handle,
                   ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
                   ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                   ptl_op_t operation, ptl_datatype_t datatype);
int PtlSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset, ptl_handle_md_t put_md_handle,
            ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
            ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
            const void *operand, ptl_op_t operation, ptl_datatype_t datatype);
int PtlAtomicSync(void);

/* ---- triggered operations (§3.16) ---------------------------------------------------------- */
int PtlTriggeredPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                    ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                    ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct_handle,
                    ptl_size_t threshold);
int PtlTriggeredGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target_id,
                    ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                    ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                       ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                       ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t operation,
                       ptl_datatype_t datatype, ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset, ptl_handle_md_t put_md_handle,
                            ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target_id,
                            ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                            void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype,
                            ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset, ptl_handle_md_t put_md_handle,
                     ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
                     ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                     const void *operand, ptl_op_t operation, ptl_datatype_t datatype, ptl_handle_ct_t trig_ct_handle,
                     ptl_size_t threshold);
int PtlTriggeredCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment, ptl_handle_ct_t trig_ct_handle,
                      ptl_size_t threshold);
int PtlTriggeredCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct, ptl_handle_ct_t trig_ct_handle,
                      ptl_size_t threshold);

/* ---- deferred communication (§3.17) -------------------------------------------------------- */
int PtlStartBundle(ptl_handle_ni_t ni_handle);
int PtlEndBundle(ptl_handle_ni_t ni_handle);

int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2);

#ifdef __cplusplus
}
#endif

#endif /* PORTALS4_H */
