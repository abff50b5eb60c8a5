// SPDX-License-Identifier: BSD-3-Clause
// The UPC runtime's environment variables (docs/UPC.md, *Environment*), named as GCC UPC names
// them, declared in the settings system (common/settings.hpp): portico-info lists them, and a
// bad value is reported once and replaced by the default.
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Bytes kUpcSharedHeapSize{
    "UPC_SHARED_HEAP_SIZE", "upc",
    uint64_t{256} << 20,    0,
    uint64_t{1} << 46,      "shared heap bytes per thread (K/M/G/T suffixes, as GCC UPC; at least 64 KiB are kept)"};
inline constexpr Boolean kUpcNodeLocalMem{"UPC_NODE_LOCAL_MEM", "upc", true,
                                          "threads on one machine reach each other's shared memory with loads and "
                                          "stores (0: everything through Portals)"};
inline constexpr Boolean kUpcCollCheck{"UPC_COLL_CHECK", "upc", false,
                                       "collectives check that every thread passed thread 0's arguments"};

inline constexpr const Setting *kUpcSettings[] = {&kUpcSharedHeapSize, &kUpcNodeLocalMem, &kUpcCollCheck};

} // namespace portico::settings
