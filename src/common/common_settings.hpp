// Settings of src/common (see common/settings.hpp): how this machine's nid is chosen, diagnostics.
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

inline constexpr Text kNid{"PORTICO_NID", Layer::common, nullptr,
                           "force this machine's nid (a number, strtoul base 0: 0x for hex; not dotted); "
                           "unset: the IPv4 address of PORTICO_IFACE"};
inline constexpr Text kIface{"PORTICO_IFACE", Layer::common, nullptr,
                             "network interface whose IPv4 address is the nid and where TCP (and portico-run's "
                             "PMI port) listens; unset: the first non-loopback interface with an IPv4 address, "
                             "else 127.0.0.1"};
inline constexpr Boolean kDebug{"PORTICO_DEBUG", Layer::common, false, "debug messages on stderr"};

inline constexpr const Setting *kCommonSettings[] = {&kNid, &kIface, &kDebug};

} // namespace portico::settings
