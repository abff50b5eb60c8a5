/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psm2_am.h — PSM2 Active Messages: short requests that run a registered handler on the target
 * endpoint, and replies sent from within that handler. Not in the Programmer's Guide; libfabric's
 * psm2 provider relies on it.
 *
 * Same ABI contract as psm2.h: names, values, parameter types and layouts are those of the PSM2
 * 11.2 headers (PSM2_VERNO 0x0202), include guard included.
 */
#ifndef PSM2_AM_H
#define PSM2_AM_H

#include <stddef.h>
#include <stdint.h>
#include "psm2.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An index returned by psm2_am_register_handlers[_2]. */
typedef uint32_t psm2_handler_t;
/* The message a handler was called for, as psm2_am_reply_short and psm2_am_get_source take it. */
typedef void *psm2_am_token_t;

/* psm2_am_request_short/psm2_am_reply_short flags. ASYNC: src is not copied and must stay valid
 * until completion_fn runs; NOREPLY: the handler will not reply. */
#define PSM2_AM_FLAG_NONE 0
#define PSM2_AM_FLAG_ASYNC 1
#define PSM2_AM_FLAG_NOREPLY 2

/* One 64-bit argument, readable as halves or quarters (on x86-64, u16w0/u32w0 are the high-order
 * ends: the names count words from the top). */
typedef struct psm2_amarg {
    union {
        struct {
            uint16_t u16w3;
            uint16_t u16w2;
            uint16_t u16w1;
            uint16_t u16w0;
        };
        struct {
            uint32_t u32w1;
            uint32_t u32w0;
        };
        uint64_t u64w0;
        uint64_t u64;
    };
} psm2_amarg_t;

/* A handler runs during progress on the target with the message's arguments and payload (both
 * valid only during the call) and returns 0; the _2 form also receives the pointer registered
 * with it. */
typedef int (*psm2_am_handler_fn_t)(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len);
typedef int (*psm2_am_handler_2_fn_t)(psm2_am_token_t token, psm2_amarg_t *args, int nargs, void *src, uint32_t len,
                                      void *hctx);
/* Runs on the sender once the request (or reply) is done with, i.e. its handler has run. */
typedef void (*psm2_am_completion_fn_t)(void *context);

/* Registers num_handlers handlers on ep; handlers_idx receives their indices. Repeatable.
 * PSM2_EP_NO_RESOURCES (table full), PSM2_PARAM_ERR. */
psm2_error_t psm2_am_register_handlers(psm2_ep_t ep, const psm2_am_handler_fn_t *handlers, int num_handlers,
                                       int *handlers_idx);
/* psm2_am_register_handlers with a context pointer per handler (hctx[i]). */
psm2_error_t psm2_am_register_handlers_2(psm2_ep_t ep, const psm2_am_handler_2_fn_t *handlers, int num_handlers,
                                         void **hctx, int *handlers_idx);
/* Forgets every handler registered on ep. */
void psm2_am_unregister_handlers(psm2_ep_t ep);

/* Runs handler on epaddr's endpoint with nargs args and len bytes of src, within the limits of
 * psm2_am_get_parameters; args (and src, unless ASYNC) are free again on return. PSM2_OK. */
psm2_error_t psm2_am_request_short(psm2_epaddr_t epaddr, psm2_handler_t handler, psm2_amarg_t *args, int nargs,
                                   void *src, size_t len, int flags, psm2_am_completion_fn_t completion_fn,
                                   void *completion_ctxt);
/* Runs handler back on the requester; only from a request handler, at most once, never for a
 * NOREPLY request. PSM2_OK. */
psm2_error_t psm2_am_reply_short(psm2_am_token_t token, psm2_handler_t handler, psm2_amarg_t *args, int nargs,
                                 void *src, size_t len, int flags, psm2_am_completion_fn_t completion_fn,
                                 void *completion_ctxt);
/* The sender of the message token stands for. PSM2_PARAM_ERR (bad token, NULL epaddr_out). */
psm2_error_t psm2_am_get_source(psm2_am_token_t token, psm2_epaddr_t *epaddr_out);

/* The limits of ep's active messages; every library offers at least 64 handlers, 2 args and
 * 256-byte payloads. */
struct psm2_am_parameters {
    uint32_t max_handlers;
    uint32_t max_nargs;
    uint32_t max_request_short; /* payload bytes */
    uint32_t max_reply_short;
};

/* Copies min(sizeof_parameters_in, the library's size) bytes of the limits into *parameters, so
 * that older and newer callers both work; *sizeof_parameters_out: the bytes written.
 * PSM2_PARAM_ERR. */
psm2_error_t psm2_am_get_parameters(psm2_ep_t ep, struct psm2_am_parameters *parameters, size_t sizeof_parameters_in,
                                    size_t *sizeof_parameters_out);

#ifdef __cplusplus
}
#endif

#endif /* PSM2_AM_H */
