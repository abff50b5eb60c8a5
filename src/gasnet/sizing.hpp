// SPDX-License-Identifier: BSD-3-Clause
// How much memory GASNet's active messages take, sized by the number of nodes (docs/GASNET.md,
// "Memory"): pure functions, so that the unit tests check the rules the library uses.
//
// Per class (requests, replies) a node keeps a landing zone that can take every message all
// senders may still send: nodes x credit bytes. A fixed credit per peer made that N x 256 KiB per
// class (a 256-node job on one machine: 64 MiB per class per process, 29 GB for the machine), so
// the credit shrinks with the number of nodes to keep the zone at a budget, and messages larger
// than half the credit (a Medium payload may be 64 KiB) stay with the sender for the target to pull.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace gasnetp::sizing {

// The zone a class keeps when the credit is chosen automatically (GASNET_AM_ZONE_BYTES): 8 nodes
// still get the full credit, as before.
constexpr uint64_t kDefaultZoneBytes = uint64_t{2} << 20;
// Credit per peer and class: at most what a pair of nodes ever needed to stream (and the old
// fixed value), at least room for eight of the smallest charges (kMinCharge, 128 bytes).
constexpr uint64_t kMaxAutoCredit = uint64_t{256} << 10;
constexpr uint64_t kMinCredit = 1024;
constexpr uint64_t kMaxCredit = uint64_t{1} << 30;
// The largest message one put carries: a Long destination, 16 arguments and a maximal Medium
// payload, rounded to 16.
constexpr uint64_t kMaxMessage = 65536;

// The credit per peer and class: the one asked for (GASNET_AM_CREDIT_BYTES; 0: not set) within
// its bounds, else the zone divided among the nodes, a power of two within the bounds.
constexpr uint64_t credit_bytes(uint64_t nodes, uint64_t zone_bytes, uint64_t asked) {
    if (asked) return std::clamp(asked, kMinCredit, kMaxCredit) & ~uint64_t{15};
    const uint64_t share = zone_bytes / std::max<uint64_t>(nodes, 1);
    return std::clamp(share ? std::bit_floor(share) : 0, kMinCredit, kMaxAutoCredit);
}

// The largest message sent in one put: half the credit (so that a sender whose target has not yet
// reported the other half can always send it), at most kMaxMessage, a multiple of 16.
constexpr uint64_t eager_bytes(uint64_t credit) { return std::min(kMaxMessage, credit / 2) & ~uint64_t{15}; }

// The length of one landing buffer: a quarter of the zone (GASNET_AM_BUFFER_BYTES: the one asked
// for), at least four of the largest messages, at most 64 MiB, a multiple of 64.
constexpr uint64_t buffer_bytes(uint64_t nodes, uint64_t credit, uint64_t asked) {
    const uint64_t want = asked ? asked : nodes * credit / 4;
    return (std::clamp<uint64_t>(want, 4 * eager_bytes(credit), uint64_t{64} << 20) + 63) & ~uint64_t{63};
}

// What the landing zones of one node hold at most: the zone of each class and the buffer beyond it
// that a zone may be filling (top_up links buffers until the zone is covered).
constexpr uint64_t zones_bytes(uint64_t nodes, uint64_t credit, uint64_t buffer) {
    return 2 * (nodes * credit + buffer);
}

} // namespace gasnetp::sizing
