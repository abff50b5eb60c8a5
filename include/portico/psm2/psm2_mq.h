/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psm2_mq.h — PSM2 Matched Queues: tagged point-to-point messages between endpoints, with 64-bit
 * tags (the original calls) or 96-bit tags plus source selection (the calls ending in 2).
 *
 * Same ABI contract as psm2.h: names, values, parameter types and layouts are those of the PSM2
 * 11.2 headers (PSM2_VERNO 0x0202), include guard included.
 *
 * Matching: a receive (rtag, rtagsel) takes a message sent with stag when
 * ((stag ^ rtag) & rtagsel) == 0. A 64-bit tag is the 96-bit tag with tag0 = low half,
 * tag1 = high half and tag2 = 0, so both families of calls interoperate on one queue.
 * Requests are completed (and freed) by psm2_mq_wait or psm2_mq_test, which set them to
 * PSM2_MQ_REQINVALID.
 */
#ifndef PSM2_MQ_H
#define PSM2_MQ_H

#include "psm2.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- queues -------------------------------------------------------------------------------- */
/* The second argument of psm2_mq_init once was an ordering mask; both values are still accepted
 * and both mean nothing (messages from one sender always match in order). */
#define PSM2_MQ_ORDERMASK_NONE 0ULL
#define PSM2_MQ_ORDERMASK_ALL 0xffffffffffffffffULL

/* Creates ep's queue, or returns the one it has (options apply the first time only).
 * PSM2_PARAM_ERR (bad option key or value). */
psm2_error_t psm2_mq_init(psm2_ep_t ep, uint64_t ignored, const struct psm2_optkey *opts, int numopts, psm2_mq_t *mq);
/* Ends mq; the handle is dead afterwards. PSM2_OK. */
psm2_error_t psm2_mq_finalize(psm2_mq_t mq);

/* ---- tags and status ----------------------------------------------------------------------- */
/* Four words of room, three used: the fourth pads the tag to 16 bytes. */
#define PSM2_MQ_TAG_ELEMENTS 4

typedef union psm2_mq_tag {
    uint32_t tag[PSM2_MQ_TAG_ELEMENTS];
    struct {
        uint32_t tag0;
        uint32_t tag1;
        uint32_t tag2;
    };
} psm2_mq_tag_t;

/* A completed 64-bit operation. Sends fill error_code and context only. */
typedef struct psm2_mq_status {
    uint64_t msg_tag;
    uint32_t msg_length; /* what the sender sent */
    uint32_t nbytes;     /* what was delivered (less when truncated) */
    psm2_error_t error_code;
    void *context;
} psm2_mq_status_t;

/* A completed 96-bit operation; msg_peer is the sender, usable even if never connected. The
 * 16-byte alignment of the tag is part of the layout (64 bytes in all). */
typedef struct psm2_mq_status2 {
    psm2_epaddr_t msg_peer;
    psm2_mq_tag_t msg_tag __attribute__((aligned(16)));
    uint32_t msg_length;
    uint32_t nbytes;
    psm2_error_t error_code;
    void *context;
} psm2_mq_status2_t;

typedef struct psm2_mq_req *psm2_mq_req_t;

/* A request as psm2_mq_ipeek_dequeue_multi shows it to the copy callback; user_reserved is the
 * caller's. */
struct psm2_mq_req_user {
    psm2_epaddr_t peer;
    psm2_mq_tag_t tag __attribute__((aligned(16)));
    psm2_mq_tag_t tagsel;
    uint8_t *buf;
    uint32_t buf_len;
    uint32_t error_code;
    uint32_t recv_msglen;
    uint32_t send_msglen;
    void *context;
    uint64_t user_reserved[4];
};

/* ---- queue options ------------------------------------------------------------------------- */
/* Reads option (PSM2_MQ_RNDV_HFI_SZ, PSM2_MQ_RNDV_SHM_SZ, PSM2_MQ_MAX_SYSBUF_MBYTES: uint32_t).
 * PSM2_PARAM_ERR. Older than psm2_getopt, which supersedes it. */
psm2_error_t psm2_mq_getopt(psm2_mq_t mq, int option, void *value);
/* Sets one of those options. PSM2_PARAM_ERR. Superseded by psm2_setopt. */
psm2_error_t psm2_mq_setopt(psm2_mq_t mq, int option, const void *value);

/* ---- flags and special values -------------------------------------------------------------- */
/* A send that completes only once the receiver has matched it. */
#define PSM2_MQ_FLAG_SENDSYNC 0x01

/* What a completed request becomes; wait and test return at once on it. */
#define PSM2_MQ_REQINVALID ((psm2_mq_req_t)NULL)
/* The source of a 96-bit receive or probe that takes any sender. */
#define PSM2_MQ_ANY_ADDR ((psm2_epaddr_t)NULL)

/* ---- send and receive ---------------------------------------------------------------------- */
/* What psm2_mq_fp_msg does. */
enum psm2_mq_fp_op {
    PSM2_MQ_ISEND_FP = 1,
    PSM2_MQ_IRECV_FP,
};

/* A send or receive posted from inside an AM handler, where the progress lock is already held;
 * otherwise psm2_mq_isend2/psm2_mq_irecv2. PSM2_PARAM_ERR, PSM2_NO_MEMORY. */
psm2_error_t psm2_mq_fp_msg(psm2_ep_t ep, psm2_mq_t mq, psm2_epaddr_t addr, psm2_mq_tag_t *tag, psm2_mq_tag_t *tagsel,
                            uint32_t flags, void *buf, uint32_t len, void *context, enum psm2_mq_fp_op fp_type,
                            psm2_mq_req_t *req);

/* Posts a receive of up to len bytes for (rtag, rtagsel) from any sender. PSM2_PARAM_ERR,
 * PSM2_NO_MEMORY. */
psm2_error_t psm2_mq_irecv(psm2_mq_t mq, uint64_t rtag, uint64_t rtagsel, uint32_t flags, void *buf, uint32_t len,
                           void *context, psm2_mq_req_t *req);
/* psm2_mq_irecv with 96-bit tags, from src only (PSM2_MQ_ANY_ADDR: anyone). */
psm2_error_t psm2_mq_irecv2(psm2_mq_t mq, psm2_epaddr_t src, psm2_mq_tag_t *rtag, psm2_mq_tag_t *rtagsel,
                            uint32_t flags, void *buf, uint32_t len, void *context, psm2_mq_req_t *req);
/* Receives the message that psm2_mq_improbe[2] took out of matching (*reqo: its request in, the
 * receive out). PSM2_PARAM_ERR. */
psm2_error_t psm2_mq_imrecv(psm2_mq_t mq, uint32_t flags, void *buf, uint32_t len, void *context, psm2_mq_req_t *reqo);

/* Sends and returns once buf may be reused (SENDSYNC: once matched). PSM2_PARAM_ERR, errors of
 * the connection. */
psm2_error_t psm2_mq_send(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, uint64_t stag, const void *buf,
                          uint32_t len);
/* psm2_mq_send with a 96-bit tag. */
psm2_error_t psm2_mq_send2(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, psm2_mq_tag_t *stag, const void *buf,
                           uint32_t len);
/* Starts a send; buf stays the library's until *req completes. PSM2_PARAM_ERR, PSM2_NO_MEMORY. */
psm2_error_t psm2_mq_isend(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, uint64_t stag, const void *buf,
                           uint32_t len, void *context, psm2_mq_req_t *req);
/* psm2_mq_isend with a 96-bit tag. */
psm2_error_t psm2_mq_isend2(psm2_mq_t mq, psm2_epaddr_t dest, uint32_t flags, psm2_mq_tag_t *stag, const void *buf,
                            uint32_t len, void *context, psm2_mq_req_t *req);

/* ---- probes -------------------------------------------------------------------------------- */
/* Looks for a matching unexpected message without taking it: PSM2_OK and *status, or
 * PSM2_MQ_INCOMPLETE. */
psm2_error_t psm2_mq_iprobe(psm2_mq_t mq, uint64_t rtag, uint64_t rtagsel, psm2_mq_status_t *status);
/* psm2_mq_iprobe with 96-bit tags and a source. */
psm2_error_t psm2_mq_iprobe2(psm2_mq_t mq, psm2_epaddr_t src, psm2_mq_tag_t *rtag, psm2_mq_tag_t *rtagsel,
                             psm2_mq_status2_t *status);
/* psm2_mq_iprobe that also takes the message out of matching, for psm2_mq_imrecv(*req).
 * PSM2_OK or PSM2_MQ_INCOMPLETE. */
psm2_error_t psm2_mq_improbe(psm2_mq_t mq, uint64_t rtag, uint64_t rtagsel, psm2_mq_req_t *req,
                             psm2_mq_status_t *status);
/* psm2_mq_improbe with 96-bit tags and a source. */
psm2_error_t psm2_mq_improbe2(psm2_mq_t mq, psm2_epaddr_t src, psm2_mq_tag_t *rtag, psm2_mq_tag_t *rtagsel,
                              psm2_mq_req_t *reqo, psm2_mq_status2_t *status);

/* ---- completion ---------------------------------------------------------------------------- */
/* The oldest completed request, left in place (test or wait frees it); status may be NULL.
 * PSM2_OK or PSM2_MQ_INCOMPLETE. */
psm2_error_t psm2_mq_ipeek(psm2_mq_t mq, psm2_mq_req_t *req, psm2_mq_status_t *status);
/* psm2_mq_ipeek with a 96-bit status. */
psm2_error_t psm2_mq_ipeek2(psm2_mq_t mq, psm2_mq_req_t *req, psm2_mq_status2_t *status);

/* Called by psm2_mq_ipeek_dequeue_multi per completed request, to copy it into
 * status_array[entry_index]: < 0 error, 0 skip it, 1 taken, > 1 taken and stop. (The psmi_ name
 * is the ABI's.) */
typedef int (*psmi_mq_status_copy_user_t)(struct psm2_mq_req_user *req, void *status_array, int entry_index);
/* Dequeues up to *count completed requests through status_copy; *count: room in, taken out.
 * PSM2_OK, PSM2_MQ_INCOMPLETE, PSM2_INTERNAL_ERR (the callback failed). */
psm2_error_t psm2_mq_ipeek_dequeue_multi(psm2_mq_t mq, void *status_array, psmi_mq_status_copy_user_t status_copy,
                                         int *count);
/* Removes the oldest completed request from the queue without freeing it (psm2_mq_req_free does).
 * PSM2_OK or PSM2_MQ_INCOMPLETE. */
psm2_error_t psm2_mq_ipeek_dequeue(psm2_mq_t mq, psm2_mq_req_t *req);
/* Frees a request taken by psm2_mq_ipeek_dequeue; NULL is a no-op. PSM2_OK. */
psm2_error_t psm2_mq_req_free(psm2_mq_t mq, psm2_mq_req_t req);

/* Blocks (progressing) until *request completes, fills status (may be NULL), frees it. PSM2_OK;
 * the operation's outcome (PSM2_MQ_TRUNCATION, say) is status->error_code. */
psm2_error_t psm2_mq_wait(psm2_mq_req_t *request, psm2_mq_status_t *status);
/* psm2_mq_wait with a 96-bit status. */
psm2_error_t psm2_mq_wait2(psm2_mq_req_t *request, psm2_mq_status2_t *status);
/* psm2_mq_wait without blocking or progressing: PSM2_MQ_INCOMPLETE while not done (nothing freed). */
psm2_error_t psm2_mq_test(psm2_mq_req_t *request, psm2_mq_status_t *status);
/* psm2_mq_test with a 96-bit status. */
psm2_error_t psm2_mq_test2(psm2_mq_req_t *request, psm2_mq_status2_t *status);
/* Withdraws a receive not yet matched (it still completes through test or wait). PSM2_OK;
 * PSM2_MQ_INCOMPLETE (already matched); PSM2_PARAM_ERR (a send). */
psm2_error_t psm2_mq_cancel(psm2_mq_req_t *req);

/* ---- statistics ---------------------------------------------------------------------------- */
struct psm2_mq_stats {
    uint64_t rx_user_bytes; /* received straight into posted buffers */
    uint64_t rx_user_num;
    uint64_t rx_sys_bytes; /* received as unexpected messages */
    uint64_t rx_sys_num;
    uint64_t tx_num;
    uint64_t tx_eager_num;
    uint64_t tx_eager_bytes;
    uint64_t tx_rndv_num;
    uint64_t tx_rndv_bytes;
    uint64_t tx_shm_num;
    uint64_t rx_shm_num;
    uint64_t rx_sysbuf_num;
    uint64_t rx_sysbuf_bytes;
    uint64_t _reserved[16]; /* room to grow without changing the size */
};
typedef struct psm2_mq_stats psm2_mq_stats_t;

/* How many of the counters above are in use. */
#define PSM2_MQ_NUM_STATS 13

/* Copies mq's counters into *stats. */
void psm2_mq_get_stats(psm2_mq_t mq, psm2_mq_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif /* PSM2_MQ_H */
