// SPDX-License-Identifier: BSD-3-Clause
// Settings of portico-run (see common/settings.hpp). The variables it sets for its ranks are
// declared where they are read (bootstrap/bootstrap_settings.hpp).
#pragma once

#include "common/settings.hpp"

namespace portico::settings {

// portico-run parses the value itself (parse_timeout), with an error naming the variable.
inline constexpr Text kTimeout{"PORTICO_TIMEOUT", "launcher", nullptr,
                               "default of portico-run --timeout: seconds (decimal) before the job is killed, 0 "
                               "= none"};
inline constexpr Text kRsh{"PORTICO_RSH", "launcher", "ssh",
                           "default of portico-run --rsh: the remote shell command, split on spaces"};
inline constexpr Text kPmiAddr{"PORTICO_PMI_ADDR", "launcher", nullptr,
                               "default of portico-run --pmi-addr: the address remote ranks call back to; unset: "
                               "the address of PORTICO_IFACE, else all addresses"};

inline constexpr const Setting *kLauncherSettings[] = {&kTimeout, &kRsh, &kPmiAddr};

} // namespace portico::settings
