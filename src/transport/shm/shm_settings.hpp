// SPDX-License-Identifier: BSD-3-Clause
// Settings of the shared-memory transport (see common/settings.hpp).
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Bytes kShmRingBytes{"PORTICO_SHM_RING_BYTES",
                                     "transport.shm",
                                     256 * 1024,
                                     4 * 1024,
                                     uint64_t{1} << 30,
                                     "bytes of each of the two rings of a link (one per direction); also bounds "
                                     "the frame size (min(64 KiB, ring/4) minus header). Unset: 256 KiB, or less "
                                     "when many processes of the job share this machine, so that one process's "
                                     "links hold PORTICO_SHM_LINK_MEMORY (4 KiB at the least); the processes that "
                                     "talk must use the same value",
                                     true};
inline constexpr Bytes kShmLinkMemory{"PORTICO_SHM_LINK_MEMORY",
                                      "transport.shm",
                                      8 * 1024 * 1024,
                                      64 * 1024,
                                      UINT64_MAX,
                                      "what the rings of one process's links hold together when "
                                      "PORTICO_SHM_RING_BYTES is unset (a link's two rings count half to each of "
                                      "its processes): each ring is this divided by the other processes of the job "
                                      "on this machine, and all of them together at most an eighth of its memory"};
inline constexpr Number kShmMaxLinks{"PORTICO_SHM_MAX_LINKS",
                                     "transport.shm",
                                     4096,
                                     1,
                                     UINT64_MAX,
                                     "most shared-memory links (peers) one interface keeps"};
inline constexpr Boolean kShmSingleCopy{"PORTICO_SHM_SINGLE_COPY", "transport.shm", true,
                                        "copy large contiguous puts/gets once with process_vm_readv/writev when "
                                        "the kernel allows it (the process calls prctl(PR_SET_PTRACER_ANY)); 0: "
                                        "always through the rings"};
inline constexpr Bytes kShmSingleCopyBytes{
    "PORTICO_SHM_SINGLE_COPY_BYTES",
    "transport.shm",
    32 * 1024,
    0,
    UINT64_MAX,
    "smallest put/get sent single copy; unset: 32 KiB, or half the ring when the rings are sized by the "
    "number of processes and that is less (a message that fills the ring waits for the consumer ring-full by "
    "ring-full)"};

inline constexpr Text kShmDir{"PORTICO_SHM_DIR", "transport.shm", nullptr,
                              "directory where this user's shared-memory endpoints meet (a socket and a lock "
                              "file per endpoint): owned by the user, entered by nobody else (made 0700), the "
                              "same in every process of the user on this machine; unset: "
                              "/dev/shm/portico-<uid> (/tmp/portico-<uid> without /dev/shm)"};

inline constexpr const Setting *kShmSettings[] = {&kShmRingBytes,  &kShmLinkMemory,      &kShmMaxLinks,
                                                  &kShmSingleCopy, &kShmSingleCopyBytes, &kShmDir};

} // namespace portico::settings
