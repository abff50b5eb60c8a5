/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * core_test.c — PSM2 conformance, one process (psm2.core): the library's lifetime, errors and error
 * handlers, endpoints, connections to itself and to endpoints that do not exist, options, queries.
 * docs/PSM2.md's conformance cases 1–4, 5 (values), 6, 7 (without PSM2_MULTI_EP), 8, 9, 10 (dead
 * epid), 11, 12, 14, 33 (idle), 34, 35, 37, 38.
 *
 * psm2_finalize is final for a process (a later psm2_init is PSM2_IS_FINALIZED), and
 * PSM2_MULTI_EP and the thresholds' variables are read once: every phase runs in a child process
 * of its own, and the parent checks that each exits 0. Run without a launcher.
 */
#include "psm2_test.h"

#include <sys/wait.h>
#include <unistd.h>

/* The values and sizes clients are compiled with (psm2.abi compares each with Debian's headers). */
_Static_assert(PSM2_OK == 0 && PSM2_OK_NO_PROGRESS == 1 && PSM2_PARAM_ERR == 3 && PSM2_NO_MEMORY == 4, "general");
_Static_assert(PSM2_INIT_NOT_INIT == 5 && PSM2_INIT_BAD_API_VERSION == 6 && PSM2_INTERNAL_ERR == 8, "general");
_Static_assert(PSM2_OPT_READONLY == 10 && PSM2_TIMEOUT == 11 && PSM2_TOO_MANY_ENDPOINTS == 12, "general");
_Static_assert(PSM2_IS_FINALIZED == 13 && PSM2_EP_WAS_CLOSED == 20 && PSM2_EP_NO_RESOURCES == 28, "endpoint");
_Static_assert(PSM2_EPID_UNKNOWN == 40 && PSM2_EPID_INVALID_UUID_KEY == 45 && PSM2_EPID_PATH_RESOLUTION == 51, "conn");
_Static_assert(PSM2_MQ_NO_COMPLETIONS == 60 && PSM2_MQ_INCOMPLETE == 60 && PSM2_MQ_TRUNCATION == 61, "mq");
_Static_assert(PSM2_AM_INVALID_REPLY == 70 && PSM2_IQ_INVALID_QUERY == 71 && PSM2_ERROR_LAST == 80, "am");
_Static_assert(sizeof(psm2_mq_tag_t) == 16 && sizeof(psm2_mq_status_t) == 32 && sizeof(psm2_mq_status2_t) == 64,
               "mq structs");
_Static_assert(sizeof(struct psm2_ep_open_opts) == 64 && sizeof(psm2_epinfo_t) == 104 && sizeof(psm2_epconn_t) == 24,
               "core structs");
_Static_assert(sizeof(psm2_mq_stats_t) == 232 && sizeof(psm2_amarg_t) == 8 && sizeof(struct psm2_am_parameters) == 16,
               "stats and am");

/* ---- phases ------------------------------------------------------------------------------------ */

/* Cases 1, 2, 3: calls before psm2_init, the version check, the reference count, IS_FINALIZED. */
static void phase_lifetime(void) {
    uint32_t units = 0;
    struct psm2_ep_open_opts opts;
    CHECK_ERR(psm2_ep_num_devunits(&units), PSM2_INIT_NOT_INIT);
    CHECK_ERR(psm2_ep_open_opts_get_defaults(&opts), PSM2_INIT_NOT_INIT);
    psm2_uuid_t key = {0};
    psm2_ep_t ep = NULL;
    psm2_epid_t epid = 0;
    CHECK_ERR(psm2_ep_open(key, NULL, &ep, &epid), PSM2_INIT_NOT_INIT);
    CHECK(ep == NULL);

    /* What may come before psm2_init: uuid_generate, the capability mask, the global handler. */
    psm2_uuid_t u1, u2;
    memset(u1, 0, sizeof u1);
    memset(u2, 0, sizeof u2);
    psm2_uuid_generate(u1);
    psm2_uuid_generate(u2);
    CHECK(memcmp(u1, u2, sizeof u1) != 0);
    CHECK((u1[6] & 0xF0) == 0x40 && (u1[8] & 0xC0) == 0x80); /* RFC 4122 random uuid */
    CHECK(psm2_get_capability_mask(PSM2_LIB_REFCOUNT_CAP) == PSM2_LIB_REFCOUNT_CAP);
    CHECK(psm2_get_capability_mask(PSM2_MULTI_EP_CAP) == PSM2_MULTI_EP_CAP);
    CHECK(psm2_get_capability_mask(~0ULL) == (PSM2_MULTI_EP_CAP | PSM2_LIB_REFCOUNT_CAP));
    CHECK(psm2_get_capability_mask(0) == 0);
    CHECK_OK(psm2_error_register_handler(NULL, PSM2_ERRHANDLER_NO_HANDLER));
    const unsigned mask = 0x101;
    CHECK_OK(psm2_setopt(PSM2_COMPONENT_CORE, NULL, PSM2_CORE_OPT_DEBUG, &mask, sizeof mask));

    /* The version check, and failed calls do not count as initializations. */
    int major = 3, minor = 0;
    CHECK_ERR(psm2_init(&major, &minor), PSM2_INIT_BAD_API_VERSION);
    major = 0x7F;
    CHECK_ERR(psm2_init(&major, &minor), PSM2_INIT_BAD_API_VERSION);
    minor = 2;
    CHECK_ERR(psm2_init(NULL, &minor), PSM2_PARAM_ERR);
    major = 2;
    CHECK_ERR(psm2_init(&major, NULL), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_ep_num_devunits(&units), PSM2_INIT_NOT_INIT);

    major = 2;
    minor = 2;
    CHECK_OK(psm2_init(&major, &minor));
    CHECKF(major == 2 && minor >= 2, "psm2_init reported version %d.%d, expected 2.2 or later", major, minor);
    /* A client of the compatible major version 1 is accepted too. */
    major = PSM2_VERNO_COMPAT_MAJOR;
    minor = 0;
    CHECK_OK(psm2_init(&major, &minor));
    CHECK(major == 2);
    CHECK_OK(psm2_ep_num_devunits(&units));
    CHECK(units >= 1);

    /* Nested: two inits, two finalizes; the library works until the last one. */
    CHECK_OK(psm2_finalize());
    CHECK_OK(psm2_ep_num_devunits(&units));
    CHECK_OK(psm2_ep_open(key, NULL, &ep, &epid));
    CHECK(ep != NULL && epid != 0);
    CHECK_OK(psm2_finalize()); /* the final one closes the endpoint too */
    CHECK_ERR(psm2_ep_num_devunits(&units), PSM2_INIT_NOT_INIT);
    major = 2;
    minor = 2;
    CHECK_ERR(psm2_init(&major, &minor), PSM2_IS_FINALIZED);
    CHECK_ERR(psm2_ep_open_opts_get_defaults(&opts), PSM2_INIT_NOT_INIT);
}

/* Case 4: a text for every code, and for codes past the end. */
static void phase_strings(void) {
    const char *unknown = psm2_error_get_string((psm2_error_t)(PSM2_ERROR_LAST + 5));
    CHECK(unknown != NULL && unknown[0] != '\0');
    for (int e = 0; e <= PSM2_ERROR_LAST + 5; ++e) {
        const char *s = psm2_error_get_string((psm2_error_t)e);
        CHECKF(s != NULL && s[0] != '\0' && strlen(s) < PSM2_ERRSTRING_MAXLEN, "no text for code %d", e);
    }
    const psm2_error_t known[] = {PSM2_OK,
                                  PSM2_OK_NO_PROGRESS,
                                  PSM2_PARAM_ERR,
                                  PSM2_NO_MEMORY,
                                  PSM2_TIMEOUT,
                                  PSM2_EPID_UNKNOWN,
                                  PSM2_MQ_TRUNCATION,
                                  PSM2_IS_FINALIZED,
                                  PSM2_EP_WAS_CLOSED,
                                  PSM2_IQ_INVALID_QUERY,
                                  PSM2_AM_INVALID_REPLY};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i) {
        CHECKF(strcmp(psm2_error_get_string(known[i]), unknown) != 0, "code %d has the unknown code's text",
               (int)known[i]);
        for (size_t j = 0; j < i; ++j)
            CHECKF(strcmp(psm2_error_get_string(known[i]), psm2_error_get_string(known[j])) != 0,
                   "codes %d and %d have the same text", (int)known[i], (int)known[j]);
    }
}

/* Cases 6, 7, 8, 9, 10 (an epid nobody has), 11, 12, 14, 33 (idle), 37, 38. */
static void phase_endpoints(void) {
    t_init();
    struct psm2_ep_open_opts opts;
    CHECK_ERR(psm2_ep_open_opts_get_defaults(NULL), PSM2_PARAM_ERR);
    CHECK_OK(psm2_ep_open_opts_get_defaults(&opts));
    CHECK(opts.timeout == 30000000000LL && opts.shm_mbytes == 10 && opts.sendbufs_num == 512);
    CHECK(opts.network_pkey == PSM2_EP_OPEN_PKEY_DEFAULT && opts.service_id == 0x1000117500000000ULL);
    CHECK(opts.path_res_type == PSM2_PATH_RES_NONE && opts.senddesc_num == 1048576 && opts.imm_size == 128);

    /* Case 38: one active unit, context counts. */
    uint32_t v = 0;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_NUM_UNITS, &v, 0, NULL));
    CHECK(v >= 1);
    psm2_info_query_arg_t arg[4];
    memset(arg, 0, sizeof arg);
    arg[0].unit = 0;
    v = 0;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_UNIT_STATUS, &v, 1, arg));
    CHECK(v != 0);
    uint32_t contexts = 0, free_contexts = 0;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_NUM_CONTEXTS, &contexts, 1, arg));
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_NUM_FREE_CONTEXTS, &free_contexts, 1, arg));
    CHECK(contexts >= 1 && free_contexts <= contexts);
    CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_LAST, &v, 0, NULL), PSM2_IQ_INVALID_QUERY);
    CHECK_ERR(psm2_info_query((psm2_info_query_t)99, &v, 0, NULL), PSM2_IQ_INVALID_QUERY);

    /* No endpoint yet. */
    psm2_epinfo_t info[4];
    int n = 4;
    CHECK_ERR(psm2_ep_query(&n, info), PSM2_EP_WAS_CLOSED);
    psm2_epconn_t conn;
    CHECK_ERR(psm2_ep_epid_lookup(0x1234, &conn), PSM2_EP_WAS_CLOSED);

    /* Case 6: NULL and default options; bad arguments. */
    psm2_uuid_t key;
    psm2_uuid_generate(key);
    psm2_ep_t ep = NULL;
    psm2_epid_t epid = 0;
    CHECK_ERR(psm2_ep_open(NULL, NULL, &ep, &epid), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_ep_open(key, NULL, NULL, &epid), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_ep_open(key, NULL, &ep, NULL), PSM2_PARAM_ERR);
    CHECK_OK(psm2_ep_open(key, NULL, &ep, &epid));
    CHECK(ep != NULL && epid != 0);
    CHECK(psm2_epid_context(epid) == 0);
    CHECK((psm2_epid_nid(epid) << 32 | psm2_epid_port(epid) << 8 | psm2_epid_context(epid)) == epid);
    const psm2_epid_t first = epid;

    /* Case 7: one endpoint per process without PSM2_MULTI_EP. */
    psm2_ep_t ep2 = NULL;
    psm2_epid_t epid2 = 0;
    CHECK_ERR(psm2_ep_open(key, &opts, &ep2, &epid2), PSM2_TOO_MANY_ENDPOINTS);
    CHECK(ep2 == NULL);
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    opts.unit = -1;
    opts.affinity = PSM2_EP_OPEN_AFFINITY_SKIP;
    CHECK_OK(psm2_ep_open(key, &opts, &ep, &epid));
    CHECK(ep != NULL && epid != 0 && psm2_epid_nid(epid) == psm2_epid_nid(first));

    /* ep_query lists it. */
    n = 0;
    CHECK_ERR(psm2_ep_query(&n, info), PSM2_PARAM_ERR);
    n = 4;
    CHECK_OK(psm2_ep_query(&n, info));
    CHECK(n == 1 && info[0].ep == ep && info[0].epid == epid && memcmp(info[0].uuid, key, sizeof key) == 0);
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_NUM_FREE_CONTEXTS, &v, 1, arg));
    CHECK(v < contexts);

    /* Case 14: an option key applies; a second mq_init returns the same queue and leaves it. */
    psm2_mq_t mq = NULL, mq2 = NULL;
    uint32_t bad = 1;
    struct psm2_optkey badkey = {0x999, &bad};
    CHECK_ERR(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_ALL, &badkey, 1, &mq), PSM2_PARAM_ERR);
    uint32_t shm_sz = 5000, other = 7000;
    struct psm2_optkey key1 = {PSM2_MQ_RNDV_SHM_SZ, &shm_sz}, key2 = {PSM2_MQ_RNDV_SHM_SZ, &other};
    CHECK_OK(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_NONE, &key1, 1, &mq));
    CHECK(mq != NULL);
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_RNDV_SHM_SZ, &v));
    CHECK(v == 5000);
    CHECK_OK(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_ALL, &key2, 1, &mq2));
    CHECK(mq2 == mq);
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_RNDV_SHM_SZ, &v));
    CHECK(v == 5000);

    /* Case 33: nothing happens, nothing is reported. */
    t_quiesce(ep);
    CHECK_ERR(psm2_poll(ep), PSM2_OK_NO_PROGRESS);

    /* Case 8: connecting to itself. */
    psm2_epaddr_t self = t_connect(ep, epid);
    psm2_epaddr_t again = t_connect(ep, epid);
    CHECK(again == self);

    /* Case 9: duplicates, and masked-out entries (epids never initialized, as psm2-demo leaves
     * them) are left as they were. */
    psm2_epid_t epids[8];
    psm2_error_t errs[8];
    psm2_epaddr_t addrs[8];
    int mask[8];
    for (int i = 0; i < 8; ++i) {
        epids[i] = 0xDEAD0000BEEF0000ULL + (unsigned)i; /* garbage */
        errs[i] = (psm2_error_t)77;
        addrs[i] = (psm2_epaddr_t)(uintptr_t)(0x1000u + (unsigned)i);
        mask[i] = 0;
    }
    epids[2] = epids[5] = epid;
    mask[2] = mask[5] = 1;
    CHECK_OK(psm2_ep_connect(ep, 8, epids, mask, errs, addrs, 0));
    for (int i = 0; i < 8; ++i) {
        if (i == 2 || i == 5) {
            CHECK(errs[i] == PSM2_OK && addrs[i] == self);
        } else {
            CHECKF(errs[i] == (psm2_error_t)77 && addrs[i] == (psm2_epaddr_t)(uintptr_t)(0x1000u + (unsigned)i),
                   "masked entry %d was written", i);
        }
    }

    /* Case 10: an epid nobody has fails (the 2 s minimum applies); per-entry reasons; a good
     * entry beside it is still connected. Context 9 of this process has no endpoint, and the
     * process id 0 is never given out. */
    const psm2_epid_t nobody = (psm2_epid_nid(epid) << 32) | (psm2_epid_port(epid) << 8) | 9;
    const psm2_epid_t garbage = (psm2_epid_nid(epid) << 32) | 0x00000005;
    psm2_epid_t mixed[3] = {nobody, epid, garbage};
    psm2_error_t merrs[3] = {PSM2_OK, PSM2_INTERNAL_ERR, PSM2_OK};
    psm2_epaddr_t maddrs[3] = {(psm2_epaddr_t)(uintptr_t)0x77, NULL, (psm2_epaddr_t)(uintptr_t)0x78};
    const psm2_error_t overall = psm2_ep_connect(ep, 3, mixed, NULL, merrs, maddrs, 1000000);
    CHECKF(overall != PSM2_OK, "connect to an epid without an endpoint returned PSM2_OK");
    CHECK(merrs[0] != PSM2_OK && merrs[1] == PSM2_OK && merrs[2] != PSM2_OK);
    CHECK(maddrs[1] == self);
    CHECK(maddrs[0] == (psm2_epaddr_t)(uintptr_t)0x77 && maddrs[2] == (psm2_epaddr_t)(uintptr_t)0x78);
    CHECK_ERR(psm2_ep_connect(ep, -1, mixed, NULL, merrs, maddrs, 0), PSM2_PARAM_ERR);

    /* epaddr_to_epid. */
    psm2_epid_t back = 0;
    CHECK_ERR(psm2_epaddr_to_epid(NULL, &back), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_epaddr_to_epid(self, NULL), PSM2_PARAM_ERR);

    /* Case 11: shared memory with itself; garbage epids; lookups. */
    int shares = -1;
    CHECK_OK(psm2_ep_epid_share_memory(ep, epid, &shares));
    CHECK(shares == (t_tcp_only() ? 0 : 1));
    CHECK_ERR(psm2_ep_epid_share_memory(ep, garbage, &shares), PSM2_EPID_UNKNOWN);
    CHECK_ERR(psm2_ep_epid_share_memory(ep, 0, &shares), PSM2_EPID_UNKNOWN);
    memset(&conn, 0, sizeof conn);
    CHECK_OK(psm2_ep_epid_lookup(epid, &conn));
    CHECK(conn.addr == self && conn.ep == ep && conn.mq == mq);
    memset(&conn, 0, sizeof conn);
    CHECK_OK(psm2_ep_epid_lookup2(ep, epid, &conn));
    CHECK(conn.addr == self && conn.ep == ep && conn.mq == mq);
    CHECK_ERR(psm2_ep_epid_lookup2(ep, epid, NULL), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_ep_epid_lookup(garbage, &conn), PSM2_EPID_UNKNOWN);
    CHECK_ERR(psm2_ep_epid_lookup2(ep, garbage, &conn), PSM2_EPID_UNKNOWN);

    /* Case 37: the peer's context, through the call and through psm2_getopt/setopt; a label. */
    int marker = 0, other_marker = 0;
    CHECK(psm2_epaddr_getctxt(self) == NULL);
    psm2_epaddr_setctxt(self, &marker);
    CHECK(psm2_epaddr_getctxt(self) == &marker);
    void *got = NULL;
    uint64_t len = sizeof got;
    CHECK_OK(psm2_getopt(PSM2_COMPONENT_CORE, self, PSM2_CORE_OPT_EP_CTXT, &got, &len));
    CHECK(got == &marker && len == sizeof got);
    void *put = &other_marker;
    CHECK_OK(psm2_setopt(PSM2_COMPONENT_CORE, self, PSM2_CORE_OPT_EP_CTXT, &put, sizeof put));
    CHECK(psm2_epaddr_getctxt(self) == &other_marker);
    static const char label[] = "myself";
    psm2_epaddr_setlabel(self, label);
    CHECK(psm2_epaddr_getctxt(self) == &other_marker);

    /* A message to itself, before and after a disconnect (case 12). */
    char out[64] = "to myself", in[64] = {0};
    psm2_mq_req_t req = NULL;
    psm2_mq_status_t st;
    CHECK_OK(psm2_mq_irecv(mq, 0x77, ~0ULL, 0, in, sizeof in, NULL, &req));
    CHECK_OK(psm2_mq_send(mq, self, 0, 0x77, out, sizeof out));
    CHECK_OK(psm2_mq_wait(&req, &st));
    CHECK(req == PSM2_MQ_REQINVALID && st.nbytes == sizeof out && strcmp(in, out) == 0);

    psm2_epaddr_t gone = self;
    psm2_error_t derr = PSM2_INTERNAL_ERR;
    CHECK_OK(psm2_ep_disconnect(ep, 1, &gone, NULL, &derr, 0));
    CHECK(gone == NULL && derr == PSM2_OK);
    psm2_epaddr_t back_again = t_connect(ep, epid);
    memset(in, 0, sizeof in);
    CHECK_OK(psm2_mq_irecv(mq, 0x78, ~0ULL, 0, in, sizeof in, NULL, &req));
    CHECK_OK(psm2_mq_send(mq, back_again, 0, 0x78, out, sizeof out));
    CHECK_OK(psm2_mq_wait(&req, &st));
    CHECK(strcmp(in, out) == 0);
    /* Masked disconnect leaves the entry; disconnect2 FORCE NULLs it. */
    psm2_epaddr_t pair[2] = {back_again, back_again};
    psm2_error_t perrs[2] = {(psm2_error_t)77, (psm2_error_t)77};
    int pmask[2] = {0, 1};
    CHECK_OK(psm2_ep_disconnect2(ep, 2, pair, pmask, perrs, PSM2_EP_DISCONNECT_FORCE, 0));
    CHECK(pair[0] == back_again && perrs[0] == (psm2_error_t)77);
    CHECK(pair[1] == NULL && perrs[1] == PSM2_OK);
    CHECK_ERR(psm2_ep_disconnect2(ep, 1, pair, NULL, perrs, 7, 0), PSM2_PARAM_ERR);
    (void)t_connect(ep, epid);

    CHECK_OK(psm2_mq_finalize(mq));
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_FORCE, 0));
    n = 4;
    CHECK_ERR(psm2_ep_query(&n, info), PSM2_EP_WAS_CLOSED);
    CHECK_OK(psm2_finalize());
}

/* Case 34: options of every component, and thresholds deciding eager or rendezvous. */
static void phase_options(void) {
    t_init();
    psm2_epid_t epid;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &epid, &mq);
    uint32_t v = 0;
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_RNDV_HFI_SZ, &v));
    CHECK(v == 64000);
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_RNDV_SHM_SZ, &v));
    CHECK(v == 16000);
    v = 0xABCD; /* deprecated: accepted, nothing written (opa-psm2) */
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_MAX_SYSBUF_MBYTES, &v));
    CHECK(v == 0xABCD);
    const uint32_t sysbuf = 4;
    CHECK_OK(psm2_mq_setopt(mq, PSM2_MQ_MAX_SYSBUF_MBYTES, &sysbuf));
    CHECK_ERR(psm2_mq_getopt(mq, 0x999, &v), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_mq_setopt(mq, 0x999, &v), PSM2_PARAM_ERR);

    /* psm2_getopt: the size rule; MQ options are the same values. */
    uint64_t len = sizeof v;
    v = 0;
    CHECK_OK(psm2_getopt(PSM2_COMPONENT_MQ, mq, PSM2_MQ_OPT_RNDV_IB_SZ, &v, &len));
    CHECK(v == 64000 && len == sizeof v);
    len = 2;
    CHECK_ERR(psm2_getopt(PSM2_COMPONENT_MQ, mq, PSM2_MQ_OPT_RNDV_IB_SZ, &v, &len), PSM2_NO_MEMORY);
    CHECK(len == sizeof(uint32_t));
    const uint32_t shm_sz = 1000;
    CHECK_OK(psm2_setopt(PSM2_COMPONENT_MQ, mq, PSM2_MQ_OPT_RNDV_SHM_SZ, &shm_sz, sizeof shm_sz));
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_RNDV_SHM_SZ, &v));
    CHECK(v == 1000);
    const uint32_t hfi_sz = 1000;
    CHECK_OK(psm2_mq_setopt(mq, PSM2_MQ_RNDV_HFI_SZ, &hfi_sz));

    /* AM limits: readable, read-only, at least the minimums. */
    uint32_t frag = 0, nargs = 0, handlers = 0;
    len = sizeof frag;
    CHECK_OK(psm2_getopt(PSM2_COMPONENT_AM, ep, PSM2_AM_OPT_FRAG_SZ, &frag, &len));
    len = sizeof nargs;
    CHECK_OK(psm2_getopt(PSM2_COMPONENT_AM, ep, PSM2_AM_OPT_NARGS, &nargs, &len));
    len = sizeof handlers;
    CHECK_OK(psm2_getopt(PSM2_COMPONENT_AM, ep, PSM2_AM_OPT_HANDLERS, &handlers, &len));
    CHECK(frag == 8128 && nargs == 10 && handlers == 256); /* opa-psm2's, docs/PSM2.md */
    CHECK_ERR(psm2_setopt(PSM2_COMPONENT_AM, ep, PSM2_AM_OPT_FRAG_SZ, &frag, sizeof frag), PSM2_OPT_READONLY);
    CHECK_ERR(psm2_setopt(PSM2_COMPONENT_AM, ep, PSM2_AM_OPT_HANDLERS, &frag, sizeof frag), PSM2_OPT_READONLY);

    /* Unknown options and components. */
    len = sizeof v;
    CHECK_ERR(psm2_getopt(PSM2_COMPONENT_CORE, NULL, 0x1FF, &v, &len), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_setopt(PSM2_COMPONENT_CORE, NULL, 0x1FF, &v, sizeof v), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_getopt(PSM2_COMPONENT_AM, ep, 0x4FF, &v, &len), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_getopt((psm2_component_t)77, mq, PSM2_MQ_OPT_RNDV_IB_SZ, &v, &len), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_setopt((psm2_component_t)77, mq, PSM2_MQ_OPT_RNDV_IB_SZ, &v, sizeof v), PSM2_PARAM_ERR);
    unsigned debug = 0;
    len = sizeof debug;
    CHECK_OK(psm2_getopt(PSM2_COMPONENT_CORE, NULL, PSM2_CORE_OPT_DEBUG, &debug, &len));

    /* The thresholds at work (on itself): 1000 is eager, 1001 rendezvous; then raised. */
    psm2_epaddr_t self = t_connect(ep, epid);

    /* Per-connection info queries, with opa-psm2's argument counts (psm2.h; psm.c). */
    psm2_info_query_arg_t qa[4];
    memset(qa, 0, sizeof qa);
    qa[0].mq = mq;
    qa[1].epaddr = self;
    v = 0;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_CONFIG, &v, 2, qa));
    CHECK(v == PSM2_INFO_QUERY_CONFIG_SELF);
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_MTU, &v, 2, qa));
    CHECK(v == 8192);
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_LINK_SPEED, &v, 2, qa));
    qa[2].mstq = PSM2_INFO_QUERY_THRESH_IPS_RNDV; /* opa-psm2 answers these for network peers only */
    CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_THRESH, &v, 3, qa), PSM2_INTERNAL_ERR);
    char name[32];
    memset(name, 'x', sizeof name);
    qa[2].length = sizeof name;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_DEVICE_NAME, name, 3, qa));
    CHECK(strcmp(name, "portico_0") == 0);
    qa[0].length = sizeof name;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_NETWORK_TYPE, name, 1, qa));
    CHECK(strcmp(name, "Portico") == 0);
    qa[0].length = 3;
    CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_NETWORK_TYPE, name, 1, qa), PSM2_INTERNAL_ERR);
    qa[0].mq = mq;
    /* One argument more or fewer than the query takes is PARAM_ERR, as in opa-psm2. */
    CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_CONFIG, &v, 3, qa), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_DEVICE_NAME, name, 4, qa), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_NUM_UNITS, &v, 1, qa), PSM2_PARAM_ERR);
    CHECK_ERR(psm2_info_query(PSM2_INFO_QUERY_UNIT_PORT_STATUS, &v, 1, qa), PSM2_PARAM_ERR);
    qa[0].unit = 0;
    qa[1].port = 1;
    CHECK_OK(psm2_info_query(PSM2_INFO_QUERY_UNIT_PORT_STATUS, &v, 2, qa));
    CHECK(v == 1);
    qa[0].mq = mq;
    qa[1].epaddr = self;
    static uint8_t out[200000], in[200000];
    struct {
        uint32_t threshold, size;
        int rndv;
    } steps[] = {{1000, 1000, 0}, {1000, 1001, 1}, {1000, 0, 0}, {150000, 100000, 0}, {150000, 150001, 1}};
    psm2_mq_stats_t before, after;
    uint64_t sent_bytes = 0, recv_bytes = 0;
    psm2_mq_get_stats(mq, &before);
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; ++i) {
        CHECK_OK(psm2_mq_setopt(mq, PSM2_MQ_RNDV_SHM_SZ, &steps[i].threshold));
        CHECK_OK(psm2_mq_setopt(mq, PSM2_MQ_RNDV_HFI_SZ, &steps[i].threshold));
        psm2_mq_stats_t s0, s1;
        psm2_mq_get_stats(mq, &s0);
        t_fill(out, steps[i].size, (uint32_t)i);
        psm2_mq_req_t r = NULL, s = NULL;
        psm2_mq_status_t st;
        CHECK_OK(psm2_mq_irecv(mq, 0x500 + i, ~0ULL, 0, in, sizeof in, NULL, &r));
        CHECK_OK(psm2_mq_isend(mq, self, 0, 0x500 + i, out, steps[i].size, NULL, &s));
        CHECK_OK(psm2_mq_wait(&r, &st));
        CHECK_OK(psm2_mq_wait(&s, NULL));
        CHECK(st.error_code == PSM2_OK && st.msg_length == steps[i].size && st.nbytes == steps[i].size);
        CHECK_DATA(in, steps[i].size, (uint32_t)i);
        psm2_mq_get_stats(mq, &s1);
        CHECKF(s1.tx_rndv_num - s0.tx_rndv_num == (uint64_t)steps[i].rndv &&
                   s1.tx_eager_num - s0.tx_eager_num == (uint64_t)!steps[i].rndv,
               "step %zu: %u bytes with threshold %u: rendezvous %" PRIu64 ", eager %" PRIu64, i, steps[i].size,
               steps[i].threshold, s1.tx_rndv_num - s0.tx_rndv_num, s1.tx_eager_num - s0.tx_eager_num);
        sent_bytes += steps[i].size;
        recv_bytes += steps[i].size;
    }
    psm2_mq_get_stats(mq, &after);
    /* Stats are consistent: every send is eager or rendezvous, bytes add up. */
    const uint64_t nsteps = sizeof steps / sizeof steps[0];
    CHECK(after.tx_num - before.tx_num == nsteps);
    CHECK((after.tx_eager_num - before.tx_eager_num) + (after.tx_rndv_num - before.tx_rndv_num) == nsteps);
    CHECK((after.tx_eager_bytes - before.tx_eager_bytes) + (after.tx_rndv_bytes - before.tx_rndv_bytes) == sent_bytes);
    CHECK(after.rx_user_num - before.rx_user_num == nsteps);
    CHECK(after.rx_user_bytes - before.rx_user_bytes == recv_bytes);

    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
}

/* The thresholds' environment variables, read when the endpoint opens. */
static void phase_threshold_env(void) {
    setenv("PSM2_MQ_RNDV_HFI_THRESH", "12345", 1);
    setenv("PSM2_MQ_RNDV_SHM_THRESH", "2345", 1);
    t_init();
    psm2_epid_t epid;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &epid, &mq);
    uint32_t v = 0;
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_RNDV_HFI_SZ, &v));
    CHECK(v == 12345);
    CHECK_OK(psm2_mq_getopt(mq, PSM2_MQ_RNDV_SHM_SZ, &v));
    CHECK(v == 2345);
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
}

/* Thresholds from the environment beyond what a receiver can buffer: messages still arrive whole
 * (the library caps them). Four 6 MiB messages to itself, all sent before any is received. */
static void phase_huge_threshold_env(void) {
    setenv("PSM2_MQ_RNDV_HFI_THRESH", "100000000", 1);
    setenv("PSM2_MQ_RNDV_SHM_THRESH", "100000000", 1);
    t_init();
    psm2_epid_t epid;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &epid, &mq);
    psm2_epaddr_t self = t_connect(ep, epid);
    enum { N = 4 };
    const uint32_t len = 6u << 20;
    uint8_t *out[N], *in = t_malloc(len);
    psm2_mq_req_t sends[N];
    for (uint32_t i = 0; i < N; ++i) {
        out[i] = t_malloc(len);
        t_fill(out[i], len, 600 + i);
        CHECK_OK(psm2_mq_isend(mq, self, 0, 0x600 + i, out[i], len, NULL, &sends[i]));
    }
    for (uint32_t i = 0; i < N; ++i) {
        psm2_mq_req_t r = NULL;
        psm2_mq_status_t st;
        memset(in, 0, len);
        CHECK_OK(psm2_mq_irecv(mq, 0x600 + i, ~0ULL, 0, in, len, NULL, &r));
        CHECK_OK(psm2_mq_wait(&r, &st));
        CHECK(st.error_code == PSM2_OK && st.nbytes == len);
        CHECK_DATA(in, len, 600 + i);
    }
    for (uint32_t i = 0; i < N; ++i) {
        CHECK_OK(psm2_mq_wait(&sends[i], NULL));
        free(out[i]);
    }
    free(in);
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
}

/* ---- case 35: error handlers --------------------------------------------------------------------- */

static struct {
    int calls;
    psm2_ep_t ep;
    psm2_error_t error;
    char text[PSM2_ERRSTRING_MAXLEN];
    int token_seen;
} g_h1, g_h2;

static psm2_error_t handler1(psm2_ep_t ep, const psm2_error_t error, const char *text, psm2_error_token_t token) {
    ++g_h1.calls;
    g_h1.ep = ep;
    g_h1.error = error;
    snprintf(g_h1.text, sizeof g_h1.text, "%s", text ? text : "");
    g_h1.token_seen = token != NULL;
    return PSM2_TIMEOUT; /* what the failing call returns */
}

static psm2_error_t handler2(psm2_ep_t ep, const psm2_error_t error, const char *text, psm2_error_token_t token) {
    ++g_h2.calls;
    g_h2.ep = ep;
    g_h2.error = error;
    snprintf(g_h2.text, sizeof g_h2.text, "%s", text ? text : "");
    g_h2.token_seen = token != NULL;
    return error;
}

static void phase_handlers(void) {
    /* The default returns codes: no handler registered. */
    int major = 9, minor = 0;
    CHECK_ERR(psm2_init(&major, &minor), PSM2_INIT_BAD_API_VERSION);

    /* A global user handler, registered before init: its arguments, its return value. */
    CHECK_OK(psm2_error_register_handler(NULL, handler1));
    major = 3;
    CHECK_ERR(psm2_init(&major, &minor), PSM2_TIMEOUT);
    CHECK(g_h1.calls == 1 && g_h1.ep == NULL && g_h1.error == PSM2_INIT_BAD_API_VERSION);
    CHECK(g_h1.text[0] != '\0' && g_h1.token_seen);
    t_init();

    /* The endpoint inherits it at open. */
    psm2_epid_t epid;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(NULL, &epid, &mq);
    uint32_t v = 0;
    CHECK_ERR(psm2_mq_getopt(mq, 0x999, &v), PSM2_TIMEOUT);
    CHECK(g_h1.calls == 2 && g_h1.ep == ep && g_h1.error == PSM2_PARAM_ERR && g_h1.text[0] != '\0');

    /* A handler of the endpoint's own takes the endpoint's errors; EP-less ones stay global. */
    CHECK_OK(psm2_error_register_handler(ep, handler2));
    CHECK_ERR(psm2_mq_getopt(mq, 0x999, &v), PSM2_PARAM_ERR);
    CHECK(g_h2.calls == 1 && g_h2.ep == ep && g_h2.error == PSM2_PARAM_ERR && g_h2.token_seen);
    CHECK(g_h1.calls == 2);
    psm2_uuid_t key = {0};
    psm2_ep_t ep2 = NULL;
    psm2_epid_t epid2 = 0;
    CHECK_ERR(psm2_ep_open(key, NULL, &ep2, &epid2), PSM2_TIMEOUT);
    CHECK(g_h1.calls == 3 && g_h1.ep == NULL && g_h1.error == PSM2_TOO_MANY_ENDPOINTS);
    CHECK(g_h2.calls == 1);

    /* NO_HANDLER on the endpoint: codes come back, nobody is called. */
    CHECK_OK(psm2_error_register_handler(ep, PSM2_ERRHANDLER_NO_HANDLER));
    CHECK_ERR(psm2_mq_getopt(mq, 0x999, &v), PSM2_PARAM_ERR);
    psm2_epid_t bad = 0;
    psm2_error_t err = PSM2_OK;
    psm2_epaddr_t addr = NULL;
    CHECK_ERR(psm2_ep_connect(ep, 1, &bad, NULL, &err, &addr, 1), PSM2_EPID_UNKNOWN);
    CHECK(g_h1.calls == 3 && g_h2.calls == 1);
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
}

/* Children whose exit is the point. */
static void child_psm_handler(void) {
    CHECK_OK(psm2_error_register_handler(NULL, PSM2_ERRHANDLER_PSM_HANDLER));
    psm2_uuid_t key = {0};
    psm2_ep_t ep = NULL;
    psm2_epid_t epid = 0;
    (void)psm2_ep_open(key, NULL, &ep, &epid); /* before init: fatal */
    printf("psm2_ep_open returned to its caller under PSM2_ERRHANDLER_PSM_HANDLER\n");
    exit(0);
}

static psm2_error_t deferring(psm2_ep_t ep, const psm2_error_t error, const char *text, psm2_error_token_t token) {
    (void)ep;
    (void)error;
    (void)text;
    return psm2_error_defer(token);
}

static void child_defer(void) {
    CHECK_OK(psm2_error_register_handler(NULL, PSM2_ERRHANDLER_DEFAULT)); /* replaced below */
    CHECK_OK(psm2_error_register_handler(NULL, deferring));
    psm2_uuid_t key = {0};
    psm2_ep_t ep = NULL;
    psm2_epid_t epid = 0;
    (void)psm2_ep_open(key, NULL, &ep, &epid);
    printf("psm2_error_defer returned for a fatal error\n");
    exit(0);
}

/* ---- driver ------------------------------------------------------------------------------------ */

static int run(const char *name, void (*phase)(void), int want_failure) {
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        phase();
        exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    const int ok =
        want_failure ? WIFEXITED(status) && WEXITSTATUS(status) == 255 : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("%s: %s (%s %d)\n", name, ok ? "ok" : "FAILED", WIFEXITED(status) ? "exit" : "signal",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return ok;
}

int main(void) {
    t_begin("psm2_core_test");
    CHECKF(t_size == 1, "runs as one process");
    unsetenv("PSM2_MULTI_EP");
    unsetenv("PSM2_MQ_RNDV_HFI_THRESH");
    unsetenv("PSM2_MQ_RNDV_SHM_THRESH");
    int ok = 1;
    ok &= run("lifetime", phase_lifetime, 0);
    ok &= run("strings", phase_strings, 0);
    ok &= run("endpoints", phase_endpoints, 0);
    ok &= run("options", phase_options, 0);
    ok &= run("threshold environment", phase_threshold_env, 0);
    ok &= run("huge thresholds in the environment", phase_huge_threshold_env, 0);
    ok &= run("error handlers", phase_handlers, 0);
    ok &= run("PSM_HANDLER exits on a fatal error", child_psm_handler, 1);
    ok &= run("psm2_error_defer exits on a fatal error", child_defer, 1);
    CHECKF(ok, "a phase failed (see above)");
    t_end();
    return 0;
}
