// SPDX-License-Identifier: BSD-3-Clause
// Settings of the transport layer as a whole (each transport declares its own beside it).
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Text kTransport{
    "PORTICO_TRANSPORT", "transport", "auto",
    "which transports an endpoint uses: auto (every registered one; each peer goes over the first that "
    "reaches it: shm on this machine, then tcp), or a comma-separated list in order of preference, e.g. "
    "tcp (TCP even on this machine) or shm (this machine only); portico-info lists them; an unknown name "
    "fails PtlNIInit"};

inline constexpr const Setting *kTransportSettings[] = {&kTransport};

} // namespace portico::settings
