// SPDX-License-Identifier: BSD-3-Clause
// The benchmarks' Portals vocabulary: clientkit's (src/clientkit: owned handles, descriptors,
// names, check() throwing an exception that main() reports), plus the exchange of endpoints over
// the job's PMI, which only the benchmark has.
#pragma once

#include <vector>

#include <portals4.h>

#include "clientkit.hpp"

namespace portico::bench {

class Job;

namespace ck = portico::clientkit;
using ck::check;
using ck::check_event;
using ck::event_name;
using ck::fail_name;

// Every benchmark measures physical matching NIs: the job's ranks are ids exchanged over PMI.
constexpr unsigned kPhysicalMatching = PTL_NI_MATCHING | PTL_NI_PHYSICAL;

// Where a rank can be reached: its physical id and the portal table index it listens on.
struct Peer {
    ptl_process_t id{};
    ptl_pt_index_t pt = 0;
};

// Collective: every rank publishes its id and pt index; returns all of them in rank order.
std::vector<Peer> exchange_peers(Job &job, ptl_process_t self, ptl_pt_index_t pt);

} // namespace portico::bench
