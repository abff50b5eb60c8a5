/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psm2.h — the core of the PSM2 API (initialisation, errors, endpoints, connections, options,
 * progress, queries), as implemented by Portico's libpsm2.so.2.
 *
 * Binary-compatible with the PSM2 11.2 headers that programs are built against (PSM2_VERNO
 * 0x0202): every name, numeric value, parameter type and struct layout below is that ABI's, so a
 * program compiled against either header runs against either library. Where the Programmer's
 * Guide and that ABI disagree, the ABI wins: it is what existing clients were compiled with.
 *
 * The include guards are the ABI's own on purpose: a translation unit that reaches both this
 * header and a system <psm2.h> gets one set of definitions, never a clash.
 */
#ifndef PSM2_H
#define PSM2_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions ------------------------------------------------------------------------------ */
/* psm2_init takes the header's version in and hands the library's back. A library accepts
 * callers of its own major and of the compat major (PSM2 1.x programs). */
#define PSM2_VERNO 0x0202
#define PSM2_VERNO_MAJOR 0x02
#define PSM2_VERNO_MINOR 0x02
#define PSM2_VERNO_COMPAT_MAJOR 0x01

/* ---- opaque handles ------------------------------------------------------------------------ */
typedef struct psm2_ep *psm2_ep_t;                   /* a local endpoint */
typedef struct psm2_mq *psm2_mq_t;                   /* an endpoint's matched queue */
typedef struct psm2_epaddr *psm2_epaddr_t;           /* a connected (or implicitly known) peer */
typedef struct psm2_error_token *psm2_error_token_t; /* one error event, for psm2_error_defer */

/* An endpoint's global name: a 64-bit value exchanged out of band and passed to psm2_ep_connect. */
typedef uint64_t psm2_epid_t;
/* The job key: endpoints connect only to endpoints opened with the same one. */
typedef uint8_t psm2_uuid_t[16];

/* ---- errors -------------------------------------------------------------------------------- */
/* The gaps in the numbering are the ABI's; values are fixed, never reordered. */
enum psm2_error {
    PSM2_OK = 0,
    PSM2_OK_NO_PROGRESS = 1,
    PSM2_PARAM_ERR = 3,
    PSM2_NO_MEMORY = 4,
    PSM2_INIT_NOT_INIT = 5,
    PSM2_INIT_BAD_API_VERSION = 6,
    PSM2_NO_AFFINITY = 7,
    PSM2_INTERNAL_ERR = 8,
    PSM2_SHMEM_SEGMENT_ERR = 9,
    PSM2_OPT_READONLY = 10,
    PSM2_TIMEOUT = 11,
    PSM2_TOO_MANY_ENDPOINTS = 12,
    PSM2_IS_FINALIZED = 13,

    PSM2_EP_WAS_CLOSED = 20,
    PSM2_EP_NO_DEVICE = 21,
    PSM2_EP_UNIT_NOT_FOUND = 22,
    PSM2_EP_DEVICE_FAILURE = 23,
    PSM2_EP_CLOSE_TIMEOUT = 24,
    PSM2_EP_NO_PORTS_AVAIL = 25,
    PSM2_EP_NO_NETWORK = 26,
    PSM2_EP_INVALID_UUID_KEY = 27,
    PSM2_EP_NO_RESOURCES = 28,

    PSM2_EPID_UNKNOWN = 40,
    PSM2_EPID_UNREACHABLE = 41,
    PSM2_EPID_INVALID_NODE = 43,
    PSM2_EPID_INVALID_MTU = 44,
    PSM2_EPID_INVALID_UUID_KEY = 45,
    PSM2_EPID_INVALID_VERSION = 46,
    PSM2_EPID_INVALID_CONNECT = 47,
    PSM2_EPID_ALREADY_CONNECTED = 48,
    PSM2_EPID_NETWORK_ERROR = 49,
    PSM2_EPID_INVALID_PKEY = 50,
    PSM2_EPID_PATH_RESOLUTION = 51,

    PSM2_MQ_NO_COMPLETIONS = 60,
    PSM2_MQ_TRUNCATION = 61,

    PSM2_AM_INVALID_REPLY = 70,
    PSM2_IQ_INVALID_QUERY = 71,

    PSM2_ERROR_LAST = 80 /* one past every code; psm2_error_get_string still answers for it */
};
typedef enum psm2_error psm2_error_t;

/* The name the Guide uses for "not complete yet" (test, ipeek, iprobe, cancel). */
#define PSM2_MQ_INCOMPLETE PSM2_MQ_NO_COMPLETIONS

/* ---- components and options ---------------------------------------------------------------- */
enum psm2_component { PSM2_COMPONENT_CORE = 0, PSM2_COMPONENT_MQ = 1, PSM2_COMPONENT_AM = 2, PSM2_COMPONENT_IB = 3 };
typedef enum psm2_component psm2_component_t;

/* How an endpoint finds paths on the fabric; only NONE means anything without OPA hardware. */
enum psm2_path_res { PSM2_PATH_RES_NONE = 0, PSM2_PATH_RES_OPP = 1, PSM2_PATH_RES_UMAD = 2 };
typedef enum psm2_path_res psm2_path_res_t;

/* A key/value pair for psm2_mq_init. */
struct psm2_optkey {
    uint32_t key;
    void *value;
};

/* psm2_setopt/psm2_getopt option names: 0x1xx core, 0x2xx IB, 0x3xx MQ, 0x4xx AM (read-only).
 * The second spellings are older names kept for source compatibility. */
#define PSM2_CORE_OPT_DEBUG 0x101
#define PSM2_CORE_OPT_EP_CTXT 0x102
#define PSM2_IB_OPT_DF_SL 0x201
#define PSM2_IB_OPT_EP_SL 0x202
#define PSM2_MQ_OPT_RNDV_IB_SZ 0x301
#define PSM2_MQ_RNDV_HFI_SZ PSM2_MQ_OPT_RNDV_IB_SZ
#define PSM2_MQ_RNDV_IPATH_SZ PSM2_MQ_OPT_RNDV_IB_SZ
#define PSM2_MQ_OPT_RNDV_SHM_SZ 0x302
#define PSM2_MQ_RNDV_SHM_SZ PSM2_MQ_OPT_RNDV_SHM_SZ
#define PSM2_MQ_OPT_SYSBUF_MYBYTES 0x303 /* sic: the ABI's spelling; accepted, has no effect */
#define PSM2_MQ_MAX_SYSBUF_MBYTES PSM2_MQ_OPT_SYSBUF_MYBYTES
#define PSM2_AM_OPT_FRAG_SZ 0x401
#define PSM2_AM_MAX_FRAG_SZ PSM2_AM_OPT_FRAG_SZ
#define PSM2_AM_OPT_NARGS 0x402
#define PSM2_AM_MAX_NARGS PSM2_AM_OPT_NARGS
#define PSM2_AM_OPT_HANDLERS 0x403
#define PSM2_AM_MAX_HANDLERS PSM2_AM_OPT_HANDLERS

/* ---- initialisation ------------------------------------------------------------------------ */
/* psm2_get_capability_mask bits: several endpoints per process; nested init/finalize. */
#define PSM2_MULTI_EP_CAP 0x1
#define PSM2_LIB_REFCOUNT_CAP 0x2

/* Starts the library; the two versions: the caller's in, the library's out.
 * PSM2_INIT_BAD_API_VERSION (incompatible major), PSM2_PARAM_ERR (NULL), PSM2_IS_FINALIZED. */
psm2_error_t psm2_init(int *api_verno_major, int *api_verno_minor);
/* The bits of req_cap_mask this library supports; callable before psm2_init. */
uint64_t psm2_get_capability_mask(uint64_t req_cap_mask);
/* Closes every endpoint and ends the library (at the last of nested inits). PSM2_OK. */
psm2_error_t psm2_finalize(void);

/* ---- error handling ------------------------------------------------------------------------ */
/* A user error handler: ep is NULL for the global handler; what it returns is what the failed
 * call returns. */
typedef psm2_error_t (*psm2_ep_errhandler_t)(psm2_ep_t ep, const psm2_error_t error, const char *error_string,
                                             psm2_error_token_t token);

/* Sentinel handlers (not callable): the library's own, which reports and exits, and none, which
 * makes every call just return its error. DEFAULT and NOP are the legacy names. */
#define PSM2_ERRHANDLER_DEFAULT ((psm2_ep_errhandler_t)(intptr_t)-1)
#define PSM2_ERRHANDLER_NOP ((psm2_ep_errhandler_t)(intptr_t)-2)
#define PSM2_ERRHANDLER_PSM_HANDLER ((psm2_ep_errhandler_t)(intptr_t)-1)
#define PSM2_ERRHANDLER_NO_HANDLER ((psm2_ep_errhandler_t)(intptr_t)-2)

/* The longest error_string a handler is given. */
#define PSM2_ERRSTRING_MAXLEN 512

/* Sets ep's handler, or the global one (inherited by later endpoints) when ep is NULL; callable
 * before psm2_init. PSM2_PARAM_ERR. */
psm2_error_t psm2_error_register_handler(psm2_ep_t ep, const psm2_ep_errhandler_t errhandler);
/* From a user handler: lets the library's own handler deal with the error (may not return). */
psm2_error_t psm2_error_defer(psm2_error_token_t err_token);
/* A static description of error; never NULL, also for unknown codes. */
const char *psm2_error_get_string(psm2_error_t error);

/* ---- endpoint ids -------------------------------------------------------------------------- */
/* The fields of an epid: node, context and port (port is a legacy field). */
uint64_t psm2_epid_nid(psm2_epid_t epid);
uint64_t psm2_epid_context(psm2_epid_t epid);
uint64_t psm2_epid_port(psm2_epid_t epid);

/* Number of devices an endpoint may open. PSM2_INIT_NOT_INIT. */
psm2_error_t psm2_ep_num_devunits(uint32_t *num_units);
/* Fills uuid_out with a fresh random job key; callable before psm2_init. */
void psm2_uuid_generate(psm2_uuid_t uuid_out);

/* ---- endpoints ----------------------------------------------------------------------------- */
#define PSM2_EP_OPEN_AFFINITY_SKIP 0
#define PSM2_EP_OPEN_AFFINITY_SET 1
#define PSM2_EP_OPEN_AFFINITY_FORCE 2
#define PSM2_EP_OPEN_PKEY_DEFAULT 0xffffffffffffffffULL

/* psm2_ep_open's options; start from psm2_ep_open_opts_get_defaults (-1 in a field also means
 * "the default"). Several fields only make sense for OPA hardware (port, outsl, pkey, paths). */
struct psm2_ep_open_opts {
    int64_t timeout; /* nanoseconds */
    int unit;
    int affinity; /* PSM2_EP_OPEN_AFFINITY_* */
    int shm_mbytes;
    int sendbufs_num;
    uint64_t network_pkey;
    int port;
    int outsl;
    uint64_t service_id;
    psm2_path_res_t path_res_type;
    int senddesc_num;
    int imm_size;
};

/* Opens an endpoint of job unique_job_key (opts NULL: defaults); *ep and *epid receive it.
 * PSM2_PARAM_ERR, PSM2_TOO_MANY_ENDPOINTS (a second one without PSM2_MULTI_EP), PSM2_INIT_NOT_INIT. */
psm2_error_t psm2_ep_open(const psm2_uuid_t unique_job_key, const struct psm2_ep_open_opts *opts, psm2_ep_t *ep,
                          psm2_epid_t *epid);
/* Fills *opts with the defaults. PSM2_INIT_NOT_INIT, PSM2_PARAM_ERR. */
psm2_error_t psm2_ep_open_opts_get_defaults(struct psm2_ep_open_opts *opts);
/* *result non-zero when epid lives on this node (reached through shared memory). PSM2_EPID_UNKNOWN. */
psm2_error_t psm2_ep_epid_share_memory(psm2_ep_t ep, psm2_epid_t epid, int *result);

#define PSM2_EP_CLOSE_GRACEFUL 0
#define PSM2_EP_CLOSE_FORCE 1

/* Closes ep; GRACEFUL first waits for its peers up to timeout ns (0 forever, -1 the library's
 * choice) and then closes anyway, FORCE does not wait. PSM2_OK; other errors via the handler. */
psm2_error_t psm2_ep_close(psm2_ep_t ep, int mode, int64_t timeout);

/* Tells the library the host names of nids, for its diagnostics only. PSM2_PARAM_ERR. */
psm2_error_t psm2_map_nid_hostname(int num, const uint64_t *nids, const char **hostnames);

/* ---- connections --------------------------------------------------------------------------- */
/* Connects ep to the epids whose mask entry is non-zero (mask NULL: all) within timeout ns
 * (0 forever); array_of_errors gets one code per entry and array_of_epaddr the addresses of
 * those that succeeded. Not collective, idempotent. PSM2_TIMEOUT, PSM2_EPID_*. */
psm2_error_t psm2_ep_connect(psm2_ep_t ep, int num_of_epid, const psm2_epid_t *array_of_epid,
                             const int *array_of_epid_mask, psm2_error_t *array_of_errors,
                             psm2_epaddr_t *array_of_epaddr, int64_t timeout);
/* psm2_ep_disconnect2 with PSM2_EP_DISCONNECT_GRACEFUL. */
psm2_error_t psm2_ep_disconnect(psm2_ep_t ep, int num_of_epaddr, psm2_epaddr_t *array_of_epaddr,
                                const int *array_of_epaddr_mask, psm2_error_t *array_of_errors, int64_t timeout);
/* Disconnects the masked-in epaddrs (set to NULL on success) gracefully or by force; a peer must
 * be connected again before the next send to it. PSM2_PARAM_ERR, PSM2_TIMEOUT. */
psm2_error_t psm2_ep_disconnect2(psm2_ep_t ep, int num_of_epaddr, psm2_epaddr_t *array_of_epaddr,
                                 const int *array_of_epaddr_mask, psm2_error_t *array_of_errors, int mode,
                                 int64_t timeout);

#define PSM2_EP_DISCONNECT_GRACEFUL PSM2_EP_CLOSE_GRACEFUL
#define PSM2_EP_DISCONNECT_FORCE PSM2_EP_CLOSE_FORCE

/* ---- progress ------------------------------------------------------------------------------ */
/* Makes progress on everything of ep without blocking: PSM2_OK if anything moved, else
 * PSM2_OK_NO_PROGRESS. Nothing progresses by itself between PSM2 calls. */
psm2_error_t psm2_poll(psm2_ep_t ep);

/* ---- peer addresses ------------------------------------------------------------------------ */
/* Names epaddr in the library's messages; the string is kept, not copied. */
void psm2_epaddr_setlabel(psm2_epaddr_t epaddr, const char *epaddr_label_string);
/* A pointer of the caller's attached to epaddr (NULL until set). */
void psm2_epaddr_setctxt(psm2_epaddr_t epaddr, void *ctxt);
void *psm2_epaddr_getctxt(psm2_epaddr_t epaddr);

/* ---- generic options ----------------------------------------------------------------------- */
/* Sets option optname of a component object (an ep, an mq, an epaddr, or NULL for the core).
 * PSM2_PARAM_ERR (unknown option, bad length), PSM2_OPT_READONLY. */
psm2_error_t psm2_setopt(psm2_component_t component, const void *component_obj, int optname, const void *optval,
                         uint64_t optlen);
/* Reads an option into optval; *optlen: its room in, the size written out.
 * PSM2_NO_MEMORY (too small: *optlen tells the size needed), PSM2_PARAM_ERR. */
psm2_error_t psm2_getopt(psm2_component_t component, const void *component_obj, int optname, void *optval,
                         uint64_t *optlen);

/* ---- endpoint queries ---------------------------------------------------------------------- */
typedef struct psm2_epinfo {
    psm2_ep_t ep;
    psm2_epid_t epid;
    psm2_uuid_t uuid;
    uint16_t jkey;
    char uuid_str[64]; /* the uuid as text */
} psm2_epinfo_t;

typedef struct psm2_epconn {
    psm2_epaddr_t addr;
    psm2_ep_t ep;
    psm2_mq_t mq;
} psm2_epconn_t;

/* Lists this process's endpoints; *num_of_epinfo: the array's room in, the count out.
 * PSM2_PARAM_ERR (no room), PSM2_EP_WAS_CLOSED (no endpoint). */
psm2_error_t psm2_ep_query(int *num_of_epinfo, psm2_epinfo_t *array_of_epinfo);
/* The connection to epid of any local endpoint. PSM2_EP_WAS_CLOSED, PSM2_EPID_UNKNOWN. */
psm2_error_t psm2_ep_epid_lookup(psm2_epid_t epid, psm2_epconn_t *epconn);
/* The connection to epid of ep. PSM2_PARAM_ERR, PSM2_EPID_UNKNOWN. */
psm2_error_t psm2_ep_epid_lookup2(psm2_ep_t ep, psm2_epid_t epid, psm2_epconn_t *epconn);
/* The epid behind epaddr. PSM2_PARAM_ERR. */
psm2_error_t psm2_epaddr_to_epid(psm2_epaddr_t epaddr, psm2_epid_t *epid);

/* ---- library and device queries ------------------------------------------------------------ */
/* psm2_info_query's questions, numbered from 0 in this order. */
typedef enum psm2_info_query_et {
    PSM2_INFO_QUERY_NUM_UNITS,
    PSM2_INFO_QUERY_NUM_PORTS,
    PSM2_INFO_QUERY_UNIT_STATUS,
    PSM2_INFO_QUERY_UNIT_PORT_STATUS,
    PSM2_INFO_QUERY_NUM_FREE_CONTEXTS,
    PSM2_INFO_QUERY_NUM_CONTEXTS,
    PSM2_INFO_QUERY_CONFIG,
    PSM2_INFO_QUERY_THRESH,
    PSM2_INFO_QUERY_DEVICE_NAME,
    PSM2_INFO_QUERY_MTU,
    PSM2_INFO_QUERY_LINK_SPEED,
    PSM2_INFO_QUERY_NETWORK_TYPE,
    PSM2_INFO_QUERY_FEATURE_MASK,
    PSM2_INFO_QUERY_LAST,
} psm2_info_query_t;

/* Bits of the PSM2_INFO_QUERY_CONFIG answer: the transports and features in use. */
enum psm2_info_query_config {
    PSM2_INFO_QUERY_CONFIG_IPS = (1 << 0),
    PSM2_INFO_QUERY_CONFIG_AMSH = (1 << 1),
    PSM2_INFO_QUERY_CONFIG_SELF = (1 << 2),
    PSM2_INFO_QUERY_CONFIG_CUDA = (1 << 3),
    PSM2_INFO_QUERY_CONFIG_PIO = (1 << 4),
    PSM2_INFO_QUERY_CONFIG_DMA = (1 << 5),
    PSM2_INFO_QUERY_CONFIG_GDR_COPY = (1 << 6),
};

/* Which threshold PSM2_INFO_QUERY_THRESH asks for; START/END bracket each transport's range. */
enum psm2_info_query_thresh_et {
    PSM2_INFO_QUERY_THRESH_IPS_START,
    PSM2_INFO_QUERY_THRESH_IPS_PIO_DMA = PSM2_INFO_QUERY_THRESH_IPS_START,
    PSM2_INFO_QUERY_THRESH_IPS_TINY,
    PSM2_INFO_QUERY_THRESH_IPS_PIO_FRAG_SIZE,
    PSM2_INFO_QUERY_THRESH_IPS_DMA_FRAG_SIZE,
    PSM2_INFO_QUERY_THRESH_IPS_RNDV,
    PSM2_INFO_QUERY_THRESH_IPS_END = PSM2_INFO_QUERY_THRESH_IPS_RNDV,

    PSM2_INFO_QUERY_THRESH_AMSH_START,
    PSM2_INFO_QUERY_THRESH_AMSH_END = PSM2_INFO_QUERY_THRESH_AMSH_START,

    PSM2_INFO_QUERY_THRESH_SELF_START,
    PSM2_INFO_QUERY_THRESH_SELF_END = PSM2_INFO_QUERY_THRESH_SELF_START,
};

/* Bits of the PSM2_INFO_QUERY_FEATURE_MASK answer. */
enum psm2_info_query_feature_mask {
    PSM2_INFO_QUERY_FEATURE_CUDA = (1 << 0),
};

/* One argument of a query; which member a query reads depends on the query. */
typedef union psm2_info_query_arg {
    uint32_t unit;
    uint32_t port;
    size_t length; /* the size of the buffer a text answer goes to */
    psm2_mq_t mq;
    psm2_epaddr_t epaddr;
    enum psm2_info_query_thresh_et mstq;
} psm2_info_query_arg_t;

/* Answers query into *out, reading nargs arguments from args. PSM2_IQ_INVALID_QUERY,
 * PSM2_PARAM_ERR (wrong nargs or arguments). */
psm2_error_t psm2_info_query(psm2_info_query_t query, void *out, size_t nargs, psm2_info_query_arg_t args[]);

#ifdef __cplusplus
}
#endif

#endif /* PSM2_H */
