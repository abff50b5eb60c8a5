/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * portico_ext.h — Portico's extensions to the Portals 4.3 API: settings a client (a library
 * built on Portals, such as Portico's GASNet) may choose for the engine instead of setting
 * PORTICO_* environment variables behind the application's back (the variables, their defaults
 * and ranges are listed by `portico-info` and in the README), and shared segments.
 */
#ifndef PORTICO_EXT_H
#define PORTICO_EXT_H

#include <portals4.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How long (microseconds) a thread waiting in PtlEQWait, PtlEQPoll, PtlCTWait or PtlCTPoll
 * polls the network itself before it sleeps and leaves progress to the engine's progress thread
 * (PORTICO_WAIT_SPIN_US; default 100). Longer spins answer sooner once a message comes, at the
 * cost of a busy core while nothing comes.
 *
 * Callable before or after PtlInit, from any thread; the value is process-wide and applies to
 * every wait that starts after the call (a wait already under way keeps the spin it started
 * with), until the next call. PtlFini does not reset it.
 *
 * An explicit PORTICO_WAIT_SPIN_US in the environment (set and not empty) wins: the user's
 * setting is kept and the call returns PTL_IGNORED. Otherwise it returns PTL_OK. */
int portico_set_wait_spin_us(unsigned us);

/* The transports the NIs this process opens from now on use, as PORTICO_TRANSPORT names them:
 * "auto", or a comma-separated list in order of preference ("tcp": every peer over TCP, this
 * machine's too; `portico-info` lists the transports). A client that needs one (Portico's PSM2
 * without its shm device) asks for it here instead of setting the variable, which would reach
 * every other Portals client of the process and its children. Like a PORTICO_TRANSPORT that
 * names transports, a transport chosen here that cannot open makes PtlNIInit fail.
 *
 * Callable before or after PtlInit, from any thread; it applies to the endpoints opened after the
 * call (an NI whose process already has an endpoint for its pid shares it), until the next call.
 * An explicit PORTICO_TRANSPORT (set and not empty) wins: PTL_IGNORED. PTL_ARG_INVALID: NULL,
 * empty, or a name no transport has (the reason is logged). Otherwise PTL_OK. */
int portico_set_transport(const char *transports);

/* PtlEQPoll and PtlCTPoll for a thread that watches for a rare event (a client's exit watcher):
 * same arguments, results and wake-ups, but the thread never moves the network itself and goes
 * to sleep at once, without the polling phase of PORTICO_WAIT_SPIN_US, and its wait does not
 * count as the application calling Portals. What arrives is delivered by the process's other
 * Portals calls or by the engine's progress thread, which does so within
 * PORTICO_PROGRESS_PARK_US when nobody calls. Such a watcher costs the job nothing while it
 * sleeps: PtlEQPoll's polling phase scans every link of the endpoint (one per peer on this
 * machine) and makes the progress thread park as if the application were busy. */
int portico_eq_poll_passive(const ptl_handle_eq_t *eq_handles, unsigned int size, ptl_time_t timeout,
                            ptl_event_t *event, unsigned int *which);
int portico_ct_poll_passive(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests, unsigned int size,
                            ptl_time_t timeout, ptl_ct_event_t *event, unsigned int *which);

/* The secret with which this process's TCP peers authenticate each other, proposed by a client
 * library that knows what all its processes share (Portico's PSM2 proposes the PSM2 job key), so
 * that processes started without a Portico launcher reach each other. PORTICO_JOB_SECRET (set
 * and not empty) and a Portico launcher's secret win. Call it before the first PtlNIInit.
 * PTL_OK; PTL_IGNORED (one of those decides, or the secret is already in use);
 * PTL_ARG_INVALID (NULL or empty). */
int portico_set_job_secret(const char *secret);

/* Whether the NI reaches peer (a rank on a logical NI) through memory shared on this machine
 * (Portico's shared-memory transport), rather than over the network: *shares is 1 or 0. It
 * follows PORTICO_TRANSPORT (with tcp first, peers on this machine go over TCP and get 0), so a
 * client can choose its protocol by it (PSM2's rendezvous thresholds and share_memory).
 * PTL_OK; PTL_ARG_INVALID (bad NI, NULL, a rank outside the map). */
int portico_peer_shares_memory(ptl_handle_ni_t ni_handle, ptl_process_t peer, int *shares);

/* Shared segments: memory that the processes of one machine (of the same user) map, so that they
 * reach each other's segments with loads, stores and memcpy instead of messages — what GASNet's
 * PSHM and a UPC compiler's node-local accesses do. A segment is created by one process, its id
 * travels to the others (through portico_runtime_allgather, say), and each of them attaches it.
 * Ids are plain data of a fixed size; an id from another machine, or of a segment whose owner
 * has destroyed it or exited, does not attach. Pages are allocated when first touched, by
 * whichever process touches them. A segment is ordinary memory for Portals too: MDs, LEs and MEs
 * may cover it. Ordering between the processes is the application's business (a barrier, a
 * Portals message, or atomics in the segment). Available on Linux; no PtlInit needed. */
typedef struct {
    uint64_t opaque[4];
} portico_segment_t;

/* Creates a segment of length bytes (a non-zero multiple of the page size), mapped at hint when
 * that range is free and hint is not NULL, else where the system chooses; *addr receives the
 * address, *segment its id. PTL_OK; PTL_ARG_INVALID (NULL pointers, a bad length); PTL_NO_SPACE
 * (the system refused the memory). */
int portico_segment_create(size_t length, void *hint, void **addr, portico_segment_t *segment);
/* Maps another process's segment (or one's own, a second time); *addr receives the address.
 * PTL_OK; PTL_ARG_INVALID (NULL pointers); PTL_FAIL when the segment cannot be reached here
 * (another machine's, destroyed, its owner gone, another user's). */
int portico_segment_attach(const portico_segment_t *segment, void **addr);
/* Unmaps an attached segment. PTL_OK; PTL_ARG_INVALID (NULL, or not a mapping of that id). */
int portico_segment_detach(void *addr, const portico_segment_t *segment);
/* Unmaps a segment this process created and ends it: no process can attach it afterwards, and
 * its memory is freed once the last process that attached it detaches or exits.
 * PTL_OK; PTL_ARG_INVALID (NULL, or not a segment this process created at addr). */
int portico_segment_destroy(void *addr, const portico_segment_t *segment);

/* Wide matching: 64 match bits above Portals' own 64, for a client whose tags are wider (Portico's
 * PSM2 matches 96-bit tags and the sending endpoint). A message sent with portico_put_wide carries
 * match_bits_hi; a list entry appended or a search made with the _wide calls also requires
 * ((match_bits_hi ^ entry's match_bits_hi) & ~ignore_bits_hi) == 0. Everything else is as in
 * PtlMEAppend, PtlMESearch and PtlPut, errors included. Entries appended with PtlMEAppend ignore
 * the upper bits (as if ignore_bits_hi were all ones), and PtlPut sends them as zero, so the two
 * mix on one portal table. Full events do not report the upper bits: a client that needs them at
 * the target sends them in hdr_data too. On a non-matching NI the upper bits are ignored, like
 * match_bits. */
typedef struct {
    uint64_t match_bits_hi;
    uint64_t ignore_bits_hi;
} portico_match_hi_t;

int portico_me_append_wide(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
                           const portico_match_hi_t *hi, ptl_list_t ptl_list, void *user_ptr,
                           ptl_handle_me_t *me_handle);
int portico_me_search_wide(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
                           const portico_match_hi_t *hi, ptl_search_op_t ptl_search_op, void *user_ptr);
int portico_put_wide(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                     ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                     uint64_t match_bits_hi, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data);

#ifdef __cplusplus
}
#endif

#endif /* PORTICO_EXT_H */
