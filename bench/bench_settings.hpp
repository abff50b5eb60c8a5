// Settings of portico-bench (see common/settings.hpp).
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Choice kBenchTcpRecv{"PORTICO_BENCH_TCP_RECV", Layer::bench, "busy", "busy|block",
                                      "how portico-bench's raw TCP baselines receive: busy polling or "
                                      "blocking reads"};

inline constexpr const Setting *kBenchSettings[] = {&kBenchTcpRecv};

} // namespace portico::settings
