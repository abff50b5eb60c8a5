// SPDX-License-Identifier: BSD-3-Clause
// Settings of src/common (see common/settings.hpp): how this machine's nid is chosen, diagnostics.
#pragma once

#include <string>

#include "common/settings.hpp"

namespace portico::settings {

// Validators of the two (common/netif.cpp): a nid must parse, an interface must exist with an IPv4
// address; anything else is reported and ignored rather than turned into 0.0.0.0 or 127.0.0.1.
std::string nid_problem(const char *text);
std::string iface_problem(const char *text);
// PORTICO_LOG_LEVEL's syntax (common/log.cpp).
std::string log_level_problem(const char *text);

inline constexpr Text kNid{"PORTICO_NID", "common", nullptr,
                           "force this machine's nid: a dotted IPv4 address, or a number (0x for hex) below "
                           "2^32; unset: the IPv4 address of PORTICO_IFACE",
                           nid_problem};
inline constexpr Text kIface{"PORTICO_IFACE", "common", nullptr,
                             "network interface whose IPv4 address is the nid and where TCP (and portico-run's "
                             "PMI port) listens; unset: the first non-loopback interface with an IPv4 address, "
                             "else 127.0.0.1",
                             iface_problem};
inline constexpr Text kLogLevel{"PORTICO_LOG_LEVEL", "common", "warn",
                                "what every layer and client writes on stderr: a level (error, warn, info, debug, "
                                "trace), then optionally LAYER=LEVEL items: warn,engine=debug,transport.shm=trace. "
                                "Errors are always written",
                                log_level_problem};

inline constexpr const Setting *kCommonSettings[] = {&kNid, &kIface, &kLogLevel};

} // namespace portico::settings
