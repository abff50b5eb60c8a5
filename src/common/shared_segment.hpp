// SPDX-License-Identifier: BSD-3-Clause
// Shared segments: memory one process allocates and the other processes of the machine (of the
// same user) map, so that they reach it with plain loads, stores and memcpy.
//
// A segment is an anonymous memory file (memfd) mapped MAP_SHARED; its identity is the owner's
// pid, the descriptor number and the file's inode, and a peer maps it by opening
// /proc/<pid>/fd/<fd> (same user; unlike pidfd_getfd or process_vm_readv it needs no ptrace
// attach rights, so Yama's ptrace_scope does not stand in the way) after checking that the id is
// this machine's (its boot id), and checking the inode, so that a recycled pid or descriptor
// number is refused rather than mapped. Pages are allocated on first
// touch, by whichever process touches them; a mapping stays valid after its owner exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace portico {

struct SharedSegmentId {
    int32_t pid = 0;
    int32_t fd = -1;
    uint64_t inode = 0;
    uint64_t length = 0;
    uint64_t boot = 0; // of the machine (its boot id): pids, descriptors and inodes repeat across machines
};
static_assert(sizeof(SharedSegmentId) == 32);

// Creates a segment of length bytes (a multiple of the page size), mapped at hint if that range
// is free (else anywhere). Returns the address, or nullptr with *error set.
void *shared_segment_create(size_t length, void *hint, SharedSegmentId *id, std::string *error);
// Maps a segment another process of this machine created (or this one). nullptr with *error set
// when it cannot be reached: another machine's, gone, another user's, or not what id says.
void *shared_segment_attach(const SharedSegmentId &id, std::string *error);
// Unmaps a segment this process attached at addr (the segment lives on while its owner or others
// map it). False when addr is not such a mapping of id.
bool shared_segment_detach(void *addr, const SharedSegmentId &id);
// Unmaps a segment this process created at addr and closes its descriptor: no new peer can
// attach afterwards. False when addr is not a segment of id created here.
bool shared_segment_destroy(void *addr, const SharedSegmentId &id);

// For the engine's single copy: the segment (created or attached here) that holds all of
// [addr, addr + length), and where in it addr is; false when no segment does.
bool shared_segment_find(const void *addr, size_t length, SharedSegmentId *id, uint64_t *offset);
// This process's own mapping of id: where it created it, else a mapping kept for the process's
// lifetime (attached on first use); *mapped_length is how much of the segment it covers (a
// peer's id may claim more). nullptr when id cannot be mapped here.
char *shared_segment_mapping(const SharedSegmentId &id, uint64_t *mapped_length);

} // namespace portico
