// SPDX-License-Identifier: BSD-3-Clause
// The runtime's process-wide state, shared by job.cpp (start-up, teardown, the end of the job), gmem.cpp
// (data movement) and barrier.cpp. One UPC thread per process; the runtime's calls come from the
// program's thread (UPC threads are processes), its exit watcher only reads the exit counter.
#pragma once

#include "clientkit.hpp"
#include "runtime.hpp"

#include <portico_ext.h>

#include <atomic>
#include <thread>
#include <vector>

namespace portico::upc {

namespace ck = portico::clientkit;

struct Runtime {
    int me = 0;
    int n = 1;
    size_t seg_bytes = 0;
    uint64_t statics_offset = 0; // where the program's upc_shared section starts
    uint64_t statics_bytes = 0;
    uint64_t heap_base = 0;
    bool node_local = true;

    // Declared in set-up order: C++ destroys in reverse, which is the order Portals wants.
    std::unique_ptr<ck::Library> library;
    ck::Ni ni;
    ck::Eq fail_eq; // failure events of the data MDs (success events are disabled)
    ck::Ct put_ct, bulk_ct, get_ct, op_ct, notify_ct, fwd_ct;
    ck::Ct lock_ct, up_ct, down_ct, shutdown_ct, coll_ct;
    ck::Pt pt_gmem, pt_lock, pt_up, pt_down, pt_shutdown, pt_coll;
    ck::Le le_gmem, le_lock, le_up, le_down, le_shutdown, le_coll;
    ck::Md put_md;    // relaxed puts: counts ACKs on put_ct
    ck::Md bulk_md;   // puts from the caller's buffer: counts SENDs and ACKs on bulk_ct
    ck::Md get_md;    // gets: counts REPLYs on get_ct
    ck::Md op_md;     // atomics and counted puts, waited for one at a time: op_ct
    ck::Md notify_md; // barrier contributions: notify_ct
    ck::Md fwd_md;    // the barrier's triggered forwards: fwd_ct

    unsigned char *segment = nullptr;
    portico_segment_t segment_id{};
    std::vector<unsigned char *> bases; // mapped segments by thread, nullptr where not mapped

    // gmem
    uint64_t puts_issued = 0, bulk_issued = 0, gets_issued = 0, ops_issued = 0;
    std::vector<uint8_t> dirty; // threads with puts in flight from this thread
    std::vector<int> dirty_list;
    std::vector<unsigned char> bounce; // small relaxed puts are copied here, so src is free at once
    size_t bounce_used = 0;
    std::vector<unsigned char> staging; // copy and set through this process
    int staging_fill = -1;              // the byte set() left in all of staging, or -1
    bool pending_strict = false;
    ptl_size_t max_msg = 0;

    // exit
    std::thread exit_watcher;
    std::atomic<bool> stop_watcher{false};
    bool finalized = false;
};

Runtime *runtime_or_null();

// gmem.cpp's part of start-up.
void gmem_start(Runtime &r);
// barrier.cpp's part of start-up.
void barrier_start(Runtime &r);
// Checks a counter that must not have failed; on failure, names the failed events (fail_eq) and
// ends the job.
void check_ct(const Runtime &r, ptl_handle_ct_t ct, const ptl_ct_event_t &ev, const char *what);
// Waits until ct reaches `count` successes (fatal on failure).
void wait_ct_at(const Runtime &r, ptl_handle_ct_t ct, uint64_t count, const char *what);

} // namespace portico::upc
