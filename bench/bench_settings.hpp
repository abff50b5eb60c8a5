// SPDX-License-Identifier: BSD-3-Clause
// Settings of portico-bench (see common/settings.hpp).
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Choice kBenchTcpRecv{"PORTICO_BENCH_TCP_RECV", "bench", "busy", "busy|block",
                                      "how portico-bench's raw TCP baselines receive: busy polling or "
                                      "blocking reads"};

inline constexpr Boolean kBenchSegment{"PORTICO_BENCH_SEGMENT", "bench", false,
                                       "put_bw and get_bw keep their buffers in shared segments "
                                       "(portico_ext.h): on one machine the target copies through its "
                                       "mapping of the initiator's segment"};

inline constexpr const Setting *kBenchSettings[] = {&kBenchTcpRecv, &kBenchSegment};

} // namespace portico::settings
