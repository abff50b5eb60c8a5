// The central list of every PORTICO_* setting: each layer declares its own next to the code that
// reads it; this only collects them, for portico-info (text, --json, --markdown: the README's
// table) and the unit tests. A variable missing here is found by the settings.undeclared test.
#pragma once

#include <span>

#include "bench/bench_settings.hpp"
#include "bootstrap/bootstrap_settings.hpp"
#include "common/common_settings.hpp"
#include "engine/engine_settings.hpp"
#include "tools/portico-run/launcher_settings.hpp"
#include "transport/shm/shm_settings.hpp"
#include "transport/tcp/tcp_settings.hpp"
#include "transport/transport_settings.hpp"

namespace portico::settings {

// In the order the README shows them: the layers from the bottom up.
inline constexpr std::span<const Setting *const> kCatalog[] = {
    kCommonSettings, kBootstrapSettings, kTransportSettings, kShmSettings,
    kTcpSettings,    kEngineSettings,    kLauncherSettings,  kBenchSettings,
};

} // namespace portico::settings
