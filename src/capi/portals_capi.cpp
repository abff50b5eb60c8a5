// SPDX-License-Identifier: BSD-3-Clause
// The C ABI of portals4.h: argument plumbing only; the engine does the work.
#include <portals4.h>
#include <portico_ext.h>

#include "engine/engine.hpp"

using portico::engine::Engine;

namespace {
// The process's one engine (the NIC every Portals call goes to), and whether PtlInit started it.
Engine &the_engine() { return Engine::instance(); }
bool engine_started() { return the_engine().initialized(); }
ptl_me_t as_me(const ptl_le_t *le) {
    // An LE is an ME that matches everything (used on non-matching NIs only).
    ptl_me_t me{};
    me.start = le->start;
    me.length = le->length;
    me.ct_handle = le->ct_handle;
    me.uid = le->uid;
    me.options = le->options;
    me.match_id.phys.nid = PTL_NID_ANY;
    me.match_id.phys.pid = PTL_PID_ANY;
    me.ignore_bits = ~ptl_match_bits_t{0};
    return me;
}
} // namespace

#define PORTICO_API extern "C" __attribute__((visibility("default")))
#define REQUIRE_INIT                                                                                                   \
    if (!engine_started()) return PTL_NO_INIT

PORTICO_API int PtlInit(void) { return the_engine().init(); }
PORTICO_API void PtlFini(void) { the_engine().fini(); }
PORTICO_API void PtlAbort(void) { the_engine().abort(); }

PORTICO_API int PtlNIInit(ptl_interface_t iface, unsigned int options, ptl_pid_t pid, const ptl_ni_limits_t *desired,
                          ptl_ni_limits_t *actual, ptl_handle_ni_t *ni_handle) {
    REQUIRE_INIT;
    return the_engine().ni_init(iface, options, pid, desired, actual, ni_handle);
}
PORTICO_API int PtlNIFini(ptl_handle_ni_t ni) {
    REQUIRE_INIT;
    return the_engine().ni_fini(ni);
}
PORTICO_API int PtlNIStatus(ptl_handle_ni_t ni, ptl_sr_index_t status_register, ptl_sr_value_t *status) {
    REQUIRE_INIT;
    return the_engine().ni_status(ni, status_register, status);
}
PORTICO_API int PtlNIHandle(ptl_handle_any_t h, ptl_handle_ni_t *ni) {
    REQUIRE_INIT;
    return the_engine().ni_handle(h, ni);
}
PORTICO_API int PtlSetMap(ptl_handle_ni_t ni, ptl_size_t map_size, const ptl_process_t *map) {
    REQUIRE_INIT;
    return the_engine().set_map(ni, map_size, map);
}
PORTICO_API int PtlGetMap(ptl_handle_ni_t ni, ptl_size_t map_size, ptl_process_t *map, ptl_size_t *actual) {
    REQUIRE_INIT;
    return the_engine().get_map(ni, map_size, map, actual);
}
PORTICO_API int PtlPTAlloc(ptl_handle_ni_t ni, unsigned int options, ptl_handle_eq_t eq, ptl_pt_index_t req,
                           ptl_pt_index_t *pt_index) {
    REQUIRE_INIT;
    return the_engine().pt_alloc(ni, options, eq, req, pt_index);
}
PORTICO_API int PtlPTFree(ptl_handle_ni_t ni, ptl_pt_index_t pt_index) {
    REQUIRE_INIT;
    return the_engine().pt_free(ni, pt_index);
}
PORTICO_API int PtlPTDisable(ptl_handle_ni_t ni, ptl_pt_index_t pt_index) {
    REQUIRE_INIT;
    return the_engine().pt_disable(ni, pt_index);
}
PORTICO_API int PtlPTEnable(ptl_handle_ni_t ni, ptl_pt_index_t pt_index) {
    REQUIRE_INIT;
    return the_engine().pt_enable(ni, pt_index);
}
PORTICO_API int PtlGetUid(ptl_handle_ni_t ni, ptl_uid_t *uid) {
    REQUIRE_INIT;
    return the_engine().get_uid(ni, uid);
}
PORTICO_API int PtlGetId(ptl_handle_ni_t ni, ptl_process_t *id) {
    REQUIRE_INIT;
    return the_engine().get_id(ni, id);
}
PORTICO_API int PtlGetPhysId(ptl_handle_ni_t ni, ptl_process_t *id) {
    REQUIRE_INIT;
    return the_engine().get_phys_id(ni, id);
}
PORTICO_API int PtlMDBind(ptl_handle_ni_t ni, const ptl_md_t *md, ptl_handle_md_t *md_handle) {
    REQUIRE_INIT;
    return the_engine().md_bind(ni, md, md_handle);
}
PORTICO_API int PtlMDRelease(ptl_handle_md_t md_handle) {
    REQUIRE_INIT;
    return the_engine().md_release(md_handle);
}
PORTICO_API int PtlLEAppend(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_le_t *le, ptl_list_t list, void *user_ptr,
                            ptl_handle_le_t *le_handle) {
    REQUIRE_INIT;
    if (!le) return PTL_ARG_INVALID;
    return the_engine().append(ni, pt, as_me(le), false, list, user_ptr, le_handle);
}
PORTICO_API int PtlLEUnlink(ptl_handle_le_t le_handle) {
    REQUIRE_INIT;
    return the_engine().unlink(le_handle, false);
}
PORTICO_API int PtlLESearch(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_le_t *le, ptl_search_op_t op,
                            void *user_ptr) {
    REQUIRE_INIT;
    if (!le) return PTL_ARG_INVALID;
    return the_engine().search(ni, pt, as_me(le), false, op, user_ptr);
}
PORTICO_API int PtlMEAppend(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_me_t *me, ptl_list_t list, void *user_ptr,
                            ptl_handle_me_t *me_handle) {
    REQUIRE_INIT;
    if (!me) return PTL_ARG_INVALID;
    return the_engine().append(ni, pt, *me, true, list, user_ptr, me_handle);
}
PORTICO_API int portico_me_append_wide(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_me_t *me,
                                       const portico_match_hi_t *hi, ptl_list_t list, void *user_ptr,
                                       ptl_handle_me_t *me_handle) {
    REQUIRE_INIT;
    if (!me || !hi) return PTL_ARG_INVALID;
    return the_engine().append(ni, pt, *me, true, list, user_ptr, me_handle, {hi->match_bits_hi, hi->ignore_bits_hi});
}
PORTICO_API int PtlMEUnlink(ptl_handle_me_t me_handle) {
    REQUIRE_INIT;
    return the_engine().unlink(me_handle, true);
}
PORTICO_API int PtlMESearch(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_me_t *me, ptl_search_op_t op,
                            void *user_ptr) {
    REQUIRE_INIT;
    if (!me) return PTL_ARG_INVALID;
    return the_engine().search(ni, pt, *me, true, op, user_ptr);
}
PORTICO_API int portico_me_search_wide(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_me_t *me,
                                       const portico_match_hi_t *hi, ptl_search_op_t op, void *user_ptr) {
    REQUIRE_INIT;
    if (!me || !hi) return PTL_ARG_INVALID;
    return the_engine().search(ni, pt, *me, true, op, user_ptr, {hi->match_bits_hi, hi->ignore_bits_hi});
}
PORTICO_API int PtlEQAlloc(ptl_handle_ni_t ni, ptl_size_t count, ptl_handle_eq_t *eq_handle) {
    REQUIRE_INIT;
    return the_engine().eq_alloc(ni, count, eq_handle);
}
PORTICO_API int PtlEQFree(ptl_handle_eq_t eq_handle) {
    REQUIRE_INIT;
    return the_engine().eq_free(eq_handle);
}
PORTICO_API int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *ev) {
    REQUIRE_INIT;
    return the_engine().eq_get(eq_handle, ev);
}
PORTICO_API int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *ev) {
    REQUIRE_INIT;
    return the_engine().eq_poll(&eq_handle, 1, PTL_TIME_FOREVER, ev, nullptr);
}
PORTICO_API int PtlEQPoll(const ptl_handle_eq_t *eq_handles, unsigned int size, ptl_time_t timeout, ptl_event_t *ev,
                          unsigned int *which) {
    REQUIRE_INIT;
    return the_engine().eq_poll(eq_handles, size, timeout, ev, which);
}
PORTICO_API int portico_eq_poll_passive(const ptl_handle_eq_t *eq_handles, unsigned int size, ptl_time_t timeout,
                                        ptl_event_t *ev, unsigned int *which) {
    REQUIRE_INIT;
    return the_engine().eq_poll(eq_handles, size, timeout, ev, which, portico::engine::WaitStyle::Passive);
}
PORTICO_API int PtlCTAlloc(ptl_handle_ni_t ni, ptl_handle_ct_t *ct_handle) {
    REQUIRE_INIT;
    return the_engine().ct_alloc(ni, ct_handle);
}
PORTICO_API int PtlCTFree(ptl_handle_ct_t ct_handle) {
    REQUIRE_INIT;
    return the_engine().ct_free(ct_handle);
}
PORTICO_API int PtlCTCancelTriggered(ptl_handle_ct_t ct_handle) {
    REQUIRE_INIT;
    return the_engine().ct_cancel_triggered(ct_handle);
}
PORTICO_API int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *ev) {
    REQUIRE_INIT;
    return the_engine().ct_get(ct_handle, ev);
}
PORTICO_API int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *ev) {
    REQUIRE_INIT;
    return the_engine().ct_poll(&ct_handle, &test, 1, PTL_TIME_FOREVER, ev, nullptr);
}
PORTICO_API int PtlCTPoll(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests, unsigned int size,
                          ptl_time_t timeout, ptl_ct_event_t *ev, unsigned int *which) {
    REQUIRE_INIT;
    return the_engine().ct_poll(ct_handles, tests, size, timeout, ev, which);
}
PORTICO_API int portico_ct_poll_passive(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests, unsigned int size,
                                        ptl_time_t timeout, ptl_ct_event_t *ev, unsigned int *which) {
    REQUIRE_INIT;
    return the_engine().ct_poll(ct_handles, tests, size, timeout, ev, which, portico::engine::WaitStyle::Passive);
}
PORTICO_API int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct) {
    REQUIRE_INIT;
    return the_engine().ct_set(ct_handle, new_ct);
}
PORTICO_API int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment) {
    REQUIRE_INIT;
    return the_engine().ct_inc(ct_handle, increment);
}
PORTICO_API int PtlPut(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                       ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                       void *user_ptr, ptl_hdr_data_t hdr_data) {
    REQUIRE_INIT;
    return the_engine().put(md, local_offset, length, ack, target, pt, bits, remote_offset, user_ptr, hdr_data);
}
PORTICO_API int portico_put_wide(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                                 ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, uint64_t bits_hi,
                                 ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data) {
    REQUIRE_INIT;
    return the_engine().put(md, local_offset, length, ack, target, pt, bits, remote_offset, user_ptr, hdr_data,
                            bits_hi);
}
PORTICO_API int portico_peer_shares_memory(ptl_handle_ni_t ni, ptl_process_t peer, int *shares) {
    REQUIRE_INIT;
    return the_engine().peer_shares_memory(ni, peer, shares);
}
PORTICO_API int PtlGet(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target,
                       ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr) {
    REQUIRE_INIT;
    return the_engine().get(md, local_offset, length, target, pt, bits, remote_offset, user_ptr);
}
PORTICO_API int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2) { return handle1 == handle2; }

PORTICO_API int PtlAtomic(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                          ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                          void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t op, ptl_datatype_t type) {
    REQUIRE_INIT;
    return the_engine().atomic(md, local_offset, length, ack, target, pt, bits, remote_offset, user_ptr, hdr_data, op,
                               type);
}
PORTICO_API int PtlFetchAtomic(ptl_handle_md_t get_md, ptl_size_t local_get_offset, ptl_handle_md_t put_md,
                               ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
                               ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                               ptl_op_t op, ptl_datatype_t type) {
    REQUIRE_INIT;
    return the_engine().fetch_atomic(get_md, local_get_offset, put_md, local_put_offset, length, target, pt, bits,
                                     remote_offset, user_ptr, hdr_data, nullptr, op, type, false);
}
PORTICO_API int PtlSwap(ptl_handle_md_t get_md, ptl_size_t local_get_offset, ptl_handle_md_t put_md,
                        ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target, ptl_pt_index_t pt,
                        ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                        const void *operand, ptl_op_t op, ptl_datatype_t type) {
    REQUIRE_INIT;
    return the_engine().fetch_atomic(get_md, local_get_offset, put_md, local_put_offset, length, target, pt, bits,
                                     remote_offset, user_ptr, hdr_data, operand, op, type, true);
}
PORTICO_API int PtlAtomicSync(void) {
    REQUIRE_INIT;
    return the_engine().atomic_sync();
}
PORTICO_API int PtlTriggeredPut(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                                ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
                                ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                                ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    REQUIRE_INIT;
    return the_engine().trigger_put(md, local_offset, length, ack, target, pt, bits, remote_offset, user_ptr, hdr_data,
                                    trig_ct, threshold);
}
PORTICO_API int PtlTriggeredGet(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target,
                                ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                                ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    REQUIRE_INIT;
    return the_engine().trigger_get(md, local_offset, length, target, pt, bits, remote_offset, user_ptr, trig_ct,
                                    threshold);
}
PORTICO_API int PtlTriggeredAtomic(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
                                   ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
                                   ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t op,
                                   ptl_datatype_t type, ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    REQUIRE_INIT;
    return the_engine().trigger_atomic(md, local_offset, length, ack, target, pt, bits, remote_offset, user_ptr,
                                       hdr_data, op, type, trig_ct, threshold);
}
PORTICO_API int PtlTriggeredFetchAtomic(ptl_handle_md_t get_md, ptl_size_t local_get_offset, ptl_handle_md_t put_md,
                                        ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target,
                                        ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset,
                                        void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t op, ptl_datatype_t type,
                                        ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    REQUIRE_INIT;
    return the_engine().trigger_fetch_atomic(get_md, local_get_offset, put_md, local_put_offset, length, target, pt,
                                             bits, remote_offset, user_ptr, hdr_data, nullptr, op, type, false, trig_ct,
                                             threshold);
}
PORTICO_API int PtlTriggeredSwap(ptl_handle_md_t get_md, ptl_size_t local_get_offset, ptl_handle_md_t put_md,
                                 ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target,
                                 ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t remote_offset, void *user_ptr,
                                 ptl_hdr_data_t hdr_data, const void *operand, ptl_op_t op, ptl_datatype_t type,
                                 ptl_handle_ct_t trig_ct, ptl_size_t threshold) {
    REQUIRE_INIT;
    return the_engine().trigger_fetch_atomic(get_md, local_get_offset, put_md, local_put_offset, length, target, pt,
                                             bits, remote_offset, user_ptr, hdr_data, operand, op, type, true, trig_ct,
                                             threshold);
}
PORTICO_API int PtlTriggeredCTInc(ptl_handle_ct_t ct, ptl_ct_event_t increment, ptl_handle_ct_t trig_ct,
                                  ptl_size_t threshold) {
    REQUIRE_INIT;
    return the_engine().trigger_ct(ct, increment, false, trig_ct, threshold);
}
PORTICO_API int PtlTriggeredCTSet(ptl_handle_ct_t ct, ptl_ct_event_t new_ct, ptl_handle_ct_t trig_ct,
                                  ptl_size_t threshold) {
    REQUIRE_INIT;
    return the_engine().trigger_ct(ct, new_ct, true, trig_ct, threshold);
}
PORTICO_API int PtlStartBundle(ptl_handle_ni_t ni) {
    REQUIRE_INIT;
    return the_engine().start_bundle(ni);
}
PORTICO_API int PtlEndBundle(ptl_handle_ni_t ni) {
    REQUIRE_INIT;
    return the_engine().end_bundle(ni);
}
