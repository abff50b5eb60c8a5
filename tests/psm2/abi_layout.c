/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi_layout.c — prints what a PSM2 client's binary bakes in from the headers, one `name value`
 * per line: the size, alignment and member offsets of every struct and union, the size and
 * integer type of every typedef, the value and type of every enum constant and macro, and which
 * names are macros. Built twice (tests/psm2/CMakeLists.txt), against Portico's headers and
 * against the system's (Debian's libpsm2-dev); compare_abi.sh requires identical output.
 *
 * Only names both headers define may appear here, and the file must compile cleanly against
 * both, so it tests nothing the ABI does not promise.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <psm2.h>
#include <psm2_mq.h>
#include <psm2_am.h>

/* A type's name as the ABI sees it: the integer types by rank and signedness (enum types as
 * their compatible integer type), the handle and callback typedefs by name. Arrays have decayed
 * to pointers here; their sizes are printed separately. */
#define TYPE_OF(e)                                                                                                     \
    _Generic((e),                                                                                                      \
        _Bool: "bool",                                                                                                 \
        char: "char",                                                                                                  \
        signed char: "signed char",                                                                                    \
        unsigned char: "unsigned char",                                                                                \
        short: "short",                                                                                                \
        unsigned short: "unsigned short",                                                                              \
        int: "int",                                                                                                    \
        unsigned int: "unsigned int",                                                                                  \
        long: "long",                                                                                                  \
        unsigned long: "unsigned long",                                                                                \
        long long: "long long",                                                                                        \
        unsigned long long: "unsigned long long",                                                                      \
        void *: "void *",                                                                                              \
        char *: "char *",                                                                                              \
        unsigned char *: "unsigned char *",                                                                            \
        unsigned int *: "unsigned int *",                                                                              \
        unsigned long *: "unsigned long *",                                                                            \
        psm2_ep_t: "psm2_ep_t",                                                                                        \
        psm2_mq_t: "psm2_mq_t",                                                                                        \
        psm2_epaddr_t: "psm2_epaddr_t",                                                                                \
        psm2_mq_req_t: "psm2_mq_req_t",                                                                                \
        psm2_error_token_t: "psm2_error_token_t",                                                                      \
        psm2_ep_errhandler_t: "psm2_ep_errhandler_t",                                                                  \
        psmi_mq_status_copy_user_t: "psmi_mq_status_copy_user_t",                                                      \
        psm2_am_handler_fn_t: "psm2_am_handler_fn_t",                                                                  \
        psm2_am_handler_2_fn_t: "psm2_am_handler_2_fn_t",                                                              \
        psm2_am_completion_fn_t: "psm2_am_completion_fn_t",                                                            \
        default: "other")

#define STR_(x) #x
#define STR(x) STR_(x)

static void print_u(const char *what, const char *name, unsigned long long v) {
    printf("%s(%s) %llu\n", what, name, v);
}

/* A type (struct, union, typedef): size and alignment. */
#define TYPE(T)                                                                                                        \
    do {                                                                                                               \
        print_u("sizeof", #T, sizeof(T));                                                                              \
        print_u("alignof", #T, _Alignof(T));                                                                           \
    } while (0)

/* A scalar typedef: also its integer type (after promotion, so an enum type shows the integer type
 * its values behave as). */
#define SCALAR(T)                                                                                                      \
    do {                                                                                                               \
        TYPE(T);                                                                                                       \
        printf("type(%s) %s\n", #T, TYPE_OF((T)0 + 0));                                                                \
    } while (0)

/* A handle or callback typedef: its name must denote the same kind of pointer. */
#define POINTER(T)                                                                                                     \
    do {                                                                                                               \
        TYPE(T);                                                                                                       \
        printf("type(%s) %s\n", #T, TYPE_OF((T)0));                                                                    \
    } while (0)

/* A struct or union member: offset, size, type. A pointer member's size is wanted too, hence the
 * NOLINT (bugprone-sizeof-expression flags sizeof of a pointer to a struct). */
#define MEMBER(T, m)                                                                                                   \
    do {                                                                                                               \
        print_u("offsetof", #T "." #m, offsetof(T, m));                                                                \
        print_u("sizeof", #T "." #m, sizeof(((T *)0)->m)); /* NOLINT(bugprone-sizeof-expression) */                    \
        printf("type(%s.%s) %s\n", #T, #m, TYPE_OF(((T *)0)->m));                                                      \
    } while (0)

/* An integer constant (enum constant or macro): value (two's complement for negatives), type, and
 * whether the name is a macro (a macro's name stringizes to its expansion). */
#define CONST(c)                                                                                                       \
    do {                                                                                                               \
        printf("value(%s) 0x%llx\n", #c, (unsigned long long)(c));                                                     \
        printf("type(%s) %s\n", #c, TYPE_OF(c));                                                                       \
        printf("macro(%s) %d\n", #c, strcmp(#c, STR(c)) != 0);                                                         \
    } while (0)

/* A pointer-valued macro (sentinels): value and pointer type. */
#define PCONST(c)                                                                                                      \
    do {                                                                                                               \
        printf("value(%s) 0x%llx\n", #c, (unsigned long long)(uintptr_t)(c));                                          \
        printf("type(%s) %s\n", #c, TYPE_OF(c));                                                                       \
        printf("macro(%s) %d\n", #c, strcmp(#c, STR(c)) != 0);                                                         \
    } while (0)

/* Callbacks written against the documented signatures: assigning them to the typedefs fails to
 * compile (-Werror=incompatible-pointer-types) if a typedef's parameter list differs. */
static psm2_error_t cb_errhandler(psm2_ep_t ep, psm2_error_t error, const char *error_string,
                                  psm2_error_token_t token) {
    (void)ep, (void)error_string, (void)token;
    return error;
}
static int cb_copy(struct psm2_mq_req_user *req, void *status_array, int entry_index) {
    (void)req, (void)status_array;
    return entry_index;
}
static int cb_am(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len) {
    (void)token, (void)args, (void)src, (void)len;
    return nargs;
}
static int cb_am2(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len, void *hctx) {
    (void)token, (void)args, (void)src, (void)len, (void)hctx;
    return nargs;
}
static void cb_completion(void *context) { (void)context; }

static void callbacks(void) {
    psm2_ep_errhandler_t e = cb_errhandler;
    psmi_mq_status_copy_user_t c = cb_copy;
    psm2_am_handler_fn_t a = cb_am;
    psm2_am_handler_2_fn_t a2 = cb_am2;
    psm2_am_completion_fn_t done = cb_completion;
    printf("callbacks %d\n", e != NULL && c != NULL && a != NULL && a2 != NULL && done != NULL);
}

static void core_header(void) {
    /* versions */
    CONST(PSM2_VERNO);
    CONST(PSM2_VERNO_MAJOR);
    CONST(PSM2_VERNO_MINOR);
    CONST(PSM2_VERNO_COMPAT_MAJOR);

    /* handles and scalars */
    POINTER(psm2_ep_t);
    POINTER(psm2_mq_t);
    POINTER(psm2_epaddr_t);
    POINTER(psm2_error_token_t);
    POINTER(psm2_ep_errhandler_t);
    SCALAR(psm2_epid_t);
    TYPE(psm2_uuid_t);
    SCALAR(psm2_error_t);
    SCALAR(enum psm2_error);
    SCALAR(psm2_component_t);
    SCALAR(enum psm2_component);
    SCALAR(psm2_path_res_t);
    SCALAR(enum psm2_path_res);
    SCALAR(psm2_info_query_t);
    SCALAR(enum psm2_info_query_et);
    SCALAR(enum psm2_info_query_config);
    SCALAR(enum psm2_info_query_thresh_et);
    SCALAR(enum psm2_info_query_feature_mask);

    /* psm2_error_t */
    CONST(PSM2_OK);
    CONST(PSM2_OK_NO_PROGRESS);
    CONST(PSM2_PARAM_ERR);
    CONST(PSM2_NO_MEMORY);
    CONST(PSM2_INIT_NOT_INIT);
    CONST(PSM2_INIT_BAD_API_VERSION);
    CONST(PSM2_NO_AFFINITY);
    CONST(PSM2_INTERNAL_ERR);
    CONST(PSM2_SHMEM_SEGMENT_ERR);
    CONST(PSM2_OPT_READONLY);
    CONST(PSM2_TIMEOUT);
    CONST(PSM2_TOO_MANY_ENDPOINTS);
    CONST(PSM2_IS_FINALIZED);
    CONST(PSM2_EP_WAS_CLOSED);
    CONST(PSM2_EP_NO_DEVICE);
    CONST(PSM2_EP_UNIT_NOT_FOUND);
    CONST(PSM2_EP_DEVICE_FAILURE);
    CONST(PSM2_EP_CLOSE_TIMEOUT);
    CONST(PSM2_EP_NO_PORTS_AVAIL);
    CONST(PSM2_EP_NO_NETWORK);
    CONST(PSM2_EP_INVALID_UUID_KEY);
    CONST(PSM2_EP_NO_RESOURCES);
    CONST(PSM2_EPID_UNKNOWN);
    CONST(PSM2_EPID_UNREACHABLE);
    CONST(PSM2_EPID_INVALID_NODE);
    CONST(PSM2_EPID_INVALID_MTU);
    CONST(PSM2_EPID_INVALID_UUID_KEY);
    CONST(PSM2_EPID_INVALID_VERSION);
    CONST(PSM2_EPID_INVALID_CONNECT);
    CONST(PSM2_EPID_ALREADY_CONNECTED);
    CONST(PSM2_EPID_NETWORK_ERROR);
    CONST(PSM2_EPID_INVALID_PKEY);
    CONST(PSM2_EPID_PATH_RESOLUTION);
    CONST(PSM2_MQ_NO_COMPLETIONS);
    CONST(PSM2_MQ_TRUNCATION);
    CONST(PSM2_AM_INVALID_REPLY);
    CONST(PSM2_IQ_INVALID_QUERY);
    CONST(PSM2_ERROR_LAST);
    CONST(PSM2_MQ_INCOMPLETE);

    /* components, path resolution, options */
    CONST(PSM2_COMPONENT_CORE);
    CONST(PSM2_COMPONENT_MQ);
    CONST(PSM2_COMPONENT_AM);
    CONST(PSM2_COMPONENT_IB);
    CONST(PSM2_PATH_RES_NONE);
    CONST(PSM2_PATH_RES_OPP);
    CONST(PSM2_PATH_RES_UMAD);
    CONST(PSM2_CORE_OPT_DEBUG);
    CONST(PSM2_CORE_OPT_EP_CTXT);
    CONST(PSM2_IB_OPT_DF_SL);
    CONST(PSM2_IB_OPT_EP_SL);
    CONST(PSM2_MQ_OPT_RNDV_IB_SZ);
    CONST(PSM2_MQ_RNDV_HFI_SZ);
    CONST(PSM2_MQ_RNDV_IPATH_SZ);
    CONST(PSM2_MQ_OPT_RNDV_SHM_SZ);
    CONST(PSM2_MQ_RNDV_SHM_SZ);
    CONST(PSM2_MQ_OPT_SYSBUF_MYBYTES);
    CONST(PSM2_MQ_MAX_SYSBUF_MBYTES);
    CONST(PSM2_AM_OPT_FRAG_SZ);
    CONST(PSM2_AM_MAX_FRAG_SZ);
    CONST(PSM2_AM_OPT_NARGS);
    CONST(PSM2_AM_MAX_NARGS);
    CONST(PSM2_AM_OPT_HANDLERS);
    CONST(PSM2_AM_MAX_HANDLERS);

    TYPE(struct psm2_optkey);
    MEMBER(struct psm2_optkey, key);
    MEMBER(struct psm2_optkey, value);

    /* initialisation and errors */
    CONST(PSM2_MULTI_EP_CAP);
    CONST(PSM2_LIB_REFCOUNT_CAP);
    PCONST(PSM2_ERRHANDLER_DEFAULT);
    PCONST(PSM2_ERRHANDLER_NOP);
    PCONST(PSM2_ERRHANDLER_PSM_HANDLER);
    PCONST(PSM2_ERRHANDLER_NO_HANDLER);
    CONST(PSM2_ERRSTRING_MAXLEN);

    /* endpoints */
    CONST(PSM2_EP_OPEN_AFFINITY_SKIP);
    CONST(PSM2_EP_OPEN_AFFINITY_SET);
    CONST(PSM2_EP_OPEN_AFFINITY_FORCE);
    CONST(PSM2_EP_OPEN_PKEY_DEFAULT);
    CONST(PSM2_EP_CLOSE_GRACEFUL);
    CONST(PSM2_EP_CLOSE_FORCE);
    CONST(PSM2_EP_DISCONNECT_GRACEFUL);
    CONST(PSM2_EP_DISCONNECT_FORCE);

    TYPE(struct psm2_ep_open_opts);
    MEMBER(struct psm2_ep_open_opts, timeout);
    MEMBER(struct psm2_ep_open_opts, unit);
    MEMBER(struct psm2_ep_open_opts, affinity);
    MEMBER(struct psm2_ep_open_opts, shm_mbytes);
    MEMBER(struct psm2_ep_open_opts, sendbufs_num);
    MEMBER(struct psm2_ep_open_opts, network_pkey);
    MEMBER(struct psm2_ep_open_opts, port);
    MEMBER(struct psm2_ep_open_opts, outsl);
    MEMBER(struct psm2_ep_open_opts, service_id);
    MEMBER(struct psm2_ep_open_opts, path_res_type);
    MEMBER(struct psm2_ep_open_opts, senddesc_num);
    MEMBER(struct psm2_ep_open_opts, imm_size);

    TYPE(struct psm2_epinfo);
    TYPE(psm2_epinfo_t);
    MEMBER(psm2_epinfo_t, ep);
    MEMBER(psm2_epinfo_t, epid);
    MEMBER(psm2_epinfo_t, uuid);
    MEMBER(psm2_epinfo_t, jkey);
    MEMBER(psm2_epinfo_t, uuid_str);

    TYPE(struct psm2_epconn);
    TYPE(psm2_epconn_t);
    MEMBER(psm2_epconn_t, addr);
    MEMBER(psm2_epconn_t, ep);
    MEMBER(psm2_epconn_t, mq);

    /* info queries */
    CONST(PSM2_INFO_QUERY_NUM_UNITS);
    CONST(PSM2_INFO_QUERY_NUM_PORTS);
    CONST(PSM2_INFO_QUERY_UNIT_STATUS);
    CONST(PSM2_INFO_QUERY_UNIT_PORT_STATUS);
    CONST(PSM2_INFO_QUERY_NUM_FREE_CONTEXTS);
    CONST(PSM2_INFO_QUERY_NUM_CONTEXTS);
    CONST(PSM2_INFO_QUERY_CONFIG);
    CONST(PSM2_INFO_QUERY_THRESH);
    CONST(PSM2_INFO_QUERY_DEVICE_NAME);
    CONST(PSM2_INFO_QUERY_MTU);
    CONST(PSM2_INFO_QUERY_LINK_SPEED);
    CONST(PSM2_INFO_QUERY_NETWORK_TYPE);
    CONST(PSM2_INFO_QUERY_FEATURE_MASK);
    CONST(PSM2_INFO_QUERY_LAST);
    CONST(PSM2_INFO_QUERY_CONFIG_IPS);
    CONST(PSM2_INFO_QUERY_CONFIG_AMSH);
    CONST(PSM2_INFO_QUERY_CONFIG_SELF);
    CONST(PSM2_INFO_QUERY_CONFIG_CUDA);
    CONST(PSM2_INFO_QUERY_CONFIG_PIO);
    CONST(PSM2_INFO_QUERY_CONFIG_DMA);
    CONST(PSM2_INFO_QUERY_CONFIG_GDR_COPY);
    CONST(PSM2_INFO_QUERY_THRESH_IPS_START);
    CONST(PSM2_INFO_QUERY_THRESH_IPS_PIO_DMA);
    CONST(PSM2_INFO_QUERY_THRESH_IPS_TINY);
    CONST(PSM2_INFO_QUERY_THRESH_IPS_PIO_FRAG_SIZE);
    CONST(PSM2_INFO_QUERY_THRESH_IPS_DMA_FRAG_SIZE);
    CONST(PSM2_INFO_QUERY_THRESH_IPS_RNDV);
    CONST(PSM2_INFO_QUERY_THRESH_IPS_END);
    CONST(PSM2_INFO_QUERY_THRESH_AMSH_START);
    CONST(PSM2_INFO_QUERY_THRESH_AMSH_END);
    CONST(PSM2_INFO_QUERY_THRESH_SELF_START);
    CONST(PSM2_INFO_QUERY_THRESH_SELF_END);
    CONST(PSM2_INFO_QUERY_FEATURE_CUDA);

    TYPE(union psm2_info_query_arg);
    TYPE(psm2_info_query_arg_t);
    MEMBER(psm2_info_query_arg_t, unit);
    MEMBER(psm2_info_query_arg_t, port);
    MEMBER(psm2_info_query_arg_t, length);
    MEMBER(psm2_info_query_arg_t, mq);
    MEMBER(psm2_info_query_arg_t, epaddr);
    MEMBER(psm2_info_query_arg_t, mstq);
}

static void mq_header(void) {
    CONST(PSM2_MQ_ORDERMASK_NONE);
    CONST(PSM2_MQ_ORDERMASK_ALL);
    CONST(PSM2_MQ_TAG_ELEMENTS);
    CONST(PSM2_MQ_FLAG_SENDSYNC);
    CONST(PSM2_MQ_NUM_STATS);
    PCONST(PSM2_MQ_REQINVALID);
    PCONST(PSM2_MQ_ANY_ADDR);
    CONST(PSM2_MQ_ISEND_FP);
    CONST(PSM2_MQ_IRECV_FP);

    POINTER(psm2_mq_req_t);
    POINTER(psmi_mq_status_copy_user_t);
    SCALAR(enum psm2_mq_fp_op);

    TYPE(union psm2_mq_tag);
    TYPE(psm2_mq_tag_t);
    MEMBER(psm2_mq_tag_t, tag);
    MEMBER(psm2_mq_tag_t, tag0);
    MEMBER(psm2_mq_tag_t, tag1);
    MEMBER(psm2_mq_tag_t, tag2);

    TYPE(struct psm2_mq_status);
    TYPE(psm2_mq_status_t);
    MEMBER(psm2_mq_status_t, msg_tag);
    MEMBER(psm2_mq_status_t, msg_length);
    MEMBER(psm2_mq_status_t, nbytes);
    MEMBER(psm2_mq_status_t, error_code);
    MEMBER(psm2_mq_status_t, context);

    TYPE(struct psm2_mq_status2);
    TYPE(psm2_mq_status2_t);
    MEMBER(psm2_mq_status2_t, msg_peer);
    MEMBER(psm2_mq_status2_t, msg_tag);
    MEMBER(psm2_mq_status2_t, msg_length);
    MEMBER(psm2_mq_status2_t, nbytes);
    MEMBER(psm2_mq_status2_t, error_code);
    MEMBER(psm2_mq_status2_t, context);

    TYPE(struct psm2_mq_req_user);
    MEMBER(struct psm2_mq_req_user, peer);
    MEMBER(struct psm2_mq_req_user, tag);
    MEMBER(struct psm2_mq_req_user, tagsel);
    MEMBER(struct psm2_mq_req_user, buf);
    MEMBER(struct psm2_mq_req_user, buf_len);
    MEMBER(struct psm2_mq_req_user, error_code);
    MEMBER(struct psm2_mq_req_user, recv_msglen);
    MEMBER(struct psm2_mq_req_user, send_msglen);
    MEMBER(struct psm2_mq_req_user, context);
    MEMBER(struct psm2_mq_req_user, user_reserved);

    TYPE(struct psm2_mq_stats);
    TYPE(psm2_mq_stats_t);
    MEMBER(psm2_mq_stats_t, rx_user_bytes);
    MEMBER(psm2_mq_stats_t, rx_user_num);
    MEMBER(psm2_mq_stats_t, rx_sys_bytes);
    MEMBER(psm2_mq_stats_t, rx_sys_num);
    MEMBER(psm2_mq_stats_t, tx_num);
    MEMBER(psm2_mq_stats_t, tx_eager_num);
    MEMBER(psm2_mq_stats_t, tx_eager_bytes);
    MEMBER(psm2_mq_stats_t, tx_rndv_num);
    MEMBER(psm2_mq_stats_t, tx_rndv_bytes);
    MEMBER(psm2_mq_stats_t, tx_shm_num);
    MEMBER(psm2_mq_stats_t, rx_shm_num);
    MEMBER(psm2_mq_stats_t, rx_sysbuf_num);
    MEMBER(psm2_mq_stats_t, rx_sysbuf_bytes);
    MEMBER(psm2_mq_stats_t, _reserved);
}

static void am_header(void) {
    SCALAR(psm2_handler_t);
    POINTER(psm2_am_token_t);
    POINTER(psm2_am_handler_fn_t);
    POINTER(psm2_am_handler_2_fn_t);
    POINTER(psm2_am_completion_fn_t);

    CONST(PSM2_AM_FLAG_NONE);
    CONST(PSM2_AM_FLAG_ASYNC);
    CONST(PSM2_AM_FLAG_NOREPLY);

    TYPE(struct psm2_amarg);
    TYPE(psm2_amarg_t);
    MEMBER(psm2_amarg_t, u16w3);
    MEMBER(psm2_amarg_t, u16w2);
    MEMBER(psm2_amarg_t, u16w1);
    MEMBER(psm2_amarg_t, u16w0);
    MEMBER(psm2_amarg_t, u32w1);
    MEMBER(psm2_amarg_t, u32w0);
    MEMBER(psm2_amarg_t, u64w0);
    MEMBER(psm2_amarg_t, u64);

    TYPE(struct psm2_am_parameters);
    MEMBER(struct psm2_am_parameters, max_handlers);
    MEMBER(struct psm2_am_parameters, max_nargs);
    MEMBER(struct psm2_am_parameters, max_request_short);
    MEMBER(struct psm2_am_parameters, max_reply_short);
}

int main(void) {
    core_header();
    mq_header();
    am_header();
    callbacks();
    return 0;
}
