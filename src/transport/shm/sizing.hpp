// SPDX-License-Identifier: BSD-3-Clause
// How large a shared-memory link's rings are (docs/ARCHITECTURE.md, "Shared-memory transport"):
// pure functions, so that the unit tests check the rules the transport uses.
//
// Every pair of processes of a machine that talk has a link of two rings, so with the 256 KiB
// rings of small jobs a process of a 1024-process job could hold 256 MiB of rings, and the machine
// 256 GiB: N^2. Unless PORTICO_SHM_RING_BYTES says otherwise, a ring is the process's link budget
// divided among the other processes of its job on this machine, so that a process holds about
// that budget whatever N is, down to the smallest ring that still carries frames of useful size.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace portico::transport::shm::sizing {

// The largest ring (the size every link had before; small jobs keep it) and the smallest (frames
// of min(64 KiB, ring/4) minus the header: 864 payload bytes, 3 pages per link).
constexpr uint64_t kMaxRingBytes = uint64_t{256} << 10;
constexpr uint64_t kMinRingBytes = uint64_t{4} << 10;
// What the rings of one process's links hold together unless PORTICO_SHM_LINK_MEMORY says
// otherwise; a link's two rings count half to each of its two processes.
constexpr uint64_t kDefaultLinkMemory = uint64_t{8} << 20;
// All the rings of a machine's processes together stay within this share of its memory.
constexpr uint64_t kMachineShare = 8;

// The link budget of one process: link_memory, at most the machine's share divided among its
// processes (local_processes 0: unknown, taken as one).
constexpr uint64_t link_budget(uint64_t link_memory, uint64_t machine_bytes, uint64_t local_processes) {
    const uint64_t share =
        machine_bytes ? machine_bytes / kMachineShare / std::max<uint64_t>(local_processes, 1) : link_memory;
    return std::min(link_memory, share);
}

// The ring of every link of a process whose job has local_processes processes on this machine: the
// budget divided among the others, a power of two within [kMinRingBytes, kMaxRingBytes].
constexpr uint64_t ring_bytes(uint64_t budget, uint64_t local_processes) {
    if (local_processes <= 1) return kMaxRingBytes;
    const uint64_t each = budget / (local_processes - 1);
    return std::clamp<uint64_t>(each ? std::bit_floor(each) : 0, kMinRingBytes, kMaxRingBytes);
}

// The largest payload of one frame in a ring: several frames must fit at once, or a large message
// would stall on every frame. header_bytes: the most a frame's headers take (transport and
// protocol), line: the record alignment.
constexpr size_t frame_payload(size_t ring, size_t header_bytes, size_t line) {
    return std::min<size_t>(64 * 1024, ring / 4) - header_bytes - line;
}

// The smallest message sent single copy when PORTICO_SHM_SINGLE_COPY_BYTES is unset: `wanted`, or
// half the ring when that is less. A message larger than half the ring makes its producer wait for
// the consumer to drain (a doorbell and a turn of each process per ring-full); with hundreds of
// processes per machine (8 KiB rings at 512 on 24 GiB) every such turn is a trip through a run queue of
// hundreds, and the 16 KiB halo puts of bench/memory took 60 times as long as at 256 processes.
// One single-copy read needs a single turn.
constexpr uint64_t single_copy_from(uint64_t wanted, uint64_t ring) { return std::min(wanted, ring / 2); }

// What the links of one process hold at most when every ring is full and every other process of
// the machine is a peer: half of each link's two rings (its pages are shared with the peer).
constexpr uint64_t process_link_bytes(uint64_t ring, uint64_t local_processes) {
    return local_processes > 1 ? (local_processes - 1) * ring : 0;
}

} // namespace portico::transport::shm::sizing
