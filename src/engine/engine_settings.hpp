// SPDX-License-Identifier: BSD-3-Clause
// Settings of the engine (see common/settings.hpp): waiting and progress, the transport choice,
// and the defaults of the NI limits (PtlNIInit's desired values can only lower them).
#pragma once

#include <climits>

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Number kWaitSpinUs{"PORTICO_WAIT_SPIN_US",
                                    "engine",
                                    100,
                                    0,
                                    UINT64_MAX,
                                    "microseconds a thread in PtlEQWait/PtlEQPoll/PtlCTWait/PtlCTPoll polls the "
                                    "transport itself before it sleeps and leaves progress to the progress thread "
                                    "(wins over portico_set_wait_spin_us)"};
inline constexpr Number kWaitPauseUs{"PORTICO_WAIT_PAUSE_US",
                                     "engine",
                                     5,
                                     0,
                                     UINT64_MAX,
                                     "microseconds a waiting thread polls before it offers its core (sched_yield) "
                                     "on every turn"};
inline constexpr Number kProgressSpinUs{"PORTICO_PROGRESS_SPIN_US",
                                        "engine",
                                        10,
                                        0,
                                        UINT64_MAX,
                                        "microseconds the progress thread keeps polling after its last work "
                                        "before it parks or sleeps"};
inline constexpr Number kProgressParkUs{"PORTICO_PROGRESS_PARK_US",
                                        "engine",
                                        250,
                                        1,
                                        UINT64_MAX,
                                        "microseconds the progress thread first parks while the application "
                                        "polls by itself; about the longest a message waits when the application "
                                        "stops calling Portals after a short run of calls"};
inline constexpr Number kProgressParkMaxUs{"PORTICO_PROGRESS_PARK_MAX_US",
                                           "engine",
                                           4000,
                                           1,
                                           UINT64_MAX,
                                           "microseconds the progress thread's park grows to, doubling from "
                                           "PORTICO_PROGRESS_PARK_US each time it wakes to find the application still "
                                           "polling; the longest a message waits when the application stops calling "
                                           "Portals (frames that TCP holds end a longer park at once)"};
inline constexpr Number kMaxEntries{
    "PORTICO_MAX_ENTRIES", "engine", 1 << 20, 1, INT_MAX, "NI limit max_entries (LEs/MEs per NI)"};
inline constexpr Number kMaxUnexpectedHeaders{"PORTICO_MAX_UNEXPECTED_HEADERS",
                                              "engine",
                                              1 << 20,
                                              1,
                                              INT_MAX,
                                              "NI limit max_unexpected_headers (checked per portal table entry)"};
inline constexpr Number kMaxMds{"PORTICO_MAX_MDS", "engine", 1 << 20, 1, INT_MAX, "NI limit max_mds"};
inline constexpr Number kMaxCts{"PORTICO_MAX_CTS", "engine", 1 << 16, 1, INT_MAX, "NI limit max_cts"};
inline constexpr Number kMaxEqs{"PORTICO_MAX_EQS", "engine", 1 << 12, 1, INT_MAX, "NI limit max_eqs"};
// The spec asks for at least 250 portal table entries.
inline constexpr Number kMaxPtIndex{"PORTICO_MAX_PT_INDEX",
                                    "engine",
                                    255,
                                    249,
                                    1 << 16,
                                    "NI limit max_pt_index (the portal table has max_pt_index+1 entries)"};
inline constexpr Number kMaxIovecs{"PORTICO_MAX_IOVECS", "engine", 1 << 16, 1, INT_MAX, "NI limit max_iovecs"};
inline constexpr Number kMaxListSize{"PORTICO_MAX_LIST_SIZE",
                                     "engine",
                                     1 << 20,
                                     1,
                                     INT_MAX,
                                     "NI limit max_list_size (entries per list of one portal table entry)"};
inline constexpr Number kMaxTriggeredOps{"PORTICO_MAX_TRIGGERED_OPS",
                                         "engine",
                                         1 << 16,
                                         1,
                                         INT_MAX,
                                         "NI limit max_triggered_ops (pending triggered operations per NI)"};
inline constexpr Bytes kMaxAtomicSize{"PORTICO_MAX_ATOMIC_SIZE",
                                      "engine",
                                      32 * 1024,
                                      0,
                                      UINT64_MAX,
                                      "NI limit max_atomic_size (lowered to what one frame holds)"};
inline constexpr Bytes kMaxFetchAtomicSize{"PORTICO_MAX_FETCH_ATOMIC_SIZE",
                                           "engine",
                                           32 * 1024,
                                           0,
                                           UINT64_MAX,
                                           "NI limit max_fetch_atomic_size (lowered to what one frame holds)"};
// 2^62: larger than any address space, yet a client's rounding-up arithmetic on it (the fragment
// count (len + max - 1) / max, len + max) cannot wrap a 64-bit size for any len up to it, as it
// did with PTL_SIZE_MAX (Open MPI's mtl computed 0 fragments; README, Limits).
inline constexpr uint64_t kMsgSizeCeiling = uint64_t{1} << 62;
inline constexpr Bytes kMaxMsgSize{"PORTICO_MAX_MSG_SIZE", "engine",
                                   kMsgSizeCeiling,        1,
                                   kMsgSizeCeiling,        "NI limit max_msg_size (longest put, get or reply)"};
inline constexpr Bytes kMaxVolatileSize{"PORTICO_MAX_VOLATILE_SIZE",
                                        "engine",
                                        64 * 1024,
                                        0,
                                        UINT64_MAX,
                                        "NI limit max_volatile_size (PTL_MD_VOLATILE puts up to this are copied)"};

inline constexpr Boolean kFastPath{"PORTICO_FAST_PATH", "engine", true,
                                   "the target applies a put whose payload is all in one frame at once and matches "
                                   "through the entry that matched last (docs/FASTPATH.md, step 4); off: every "
                                   "message takes the generic path (for comparing and testing the two)"};

inline constexpr Text kTrace{"PORTICO_TRACE", "engine", nullptr,
                             "path prefix: each process writes a trace of its counting events, triggered operations "
                             "and matching to <prefix>.<pid> (engine/trace.hpp)"};

inline constexpr const Setting *kEngineSettings[] = {&kWaitSpinUs,
                                                     &kWaitPauseUs,
                                                     &kProgressSpinUs,
                                                     &kProgressParkUs,
                                                     &kProgressParkMaxUs,
                                                     &kMaxEntries,
                                                     &kMaxUnexpectedHeaders,
                                                     &kMaxMds,
                                                     &kMaxCts,
                                                     &kMaxEqs,
                                                     &kMaxPtIndex,
                                                     &kMaxIovecs,
                                                     &kMaxListSize,
                                                     &kMaxTriggeredOps,
                                                     &kMaxAtomicSize,
                                                     &kMaxFetchAtomicSize,
                                                     &kMaxMsgSize,
                                                     &kMaxVolatileSize,
                                                     &kFastPath,
                                                     &kTrace};

} // namespace portico::settings
