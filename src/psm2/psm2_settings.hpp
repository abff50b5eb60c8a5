// SPDX-License-Identifier: BSD-3-Clause
// PSM2's environment variables, named as opa-psm2 names them (docs/PSM2.md, *Environment*),
// declared in the settings system (common/settings.hpp): portico-info lists them, and a bad value
// is reported once and replaced by the default.
#pragma once

#include <string>
#include <string_view>

#include "common/settings.hpp"

namespace portico::settings {

// PSM2_DEVICES: a comma-separated list of self, shm (shmem), hfi (ips).
inline std::string check_psm2_devices(const char *text) {
    std::string_view list(text);
    while (true) {
        const size_t comma = list.find(',');
        const std::string_view name = list.substr(0, comma);
        if (name != "self" && name != "shm" && name != "shmem" && name != "hfi" && name != "ips")
            return "'" + std::string(name) + "' is not a device (self, shm, hfi)";
        if (comma == std::string_view::npos) return "";
        list.remove_prefix(comma + 1);
    }
}

inline constexpr Text kPsm2Devices{"PSM2_DEVICES", "psm2", nullptr,
                                   "the paths an endpoint may use, comma-separated: self, shm (shmem: peers on this "
                                   "machine), hfi (ips: the network transport, every other peer); unset: all",
                                   check_psm2_devices};
inline constexpr Boolean kPsm2MultiEp{"PSM2_MULTI_EP", "psm2", false,
                                      "several endpoints per process (read at the first psm2_init)"};
inline constexpr Number kPsm2ConnectTimeout{"PSM2_CONNECT_TIMEOUT",
                                            "psm2",
                                            0,
                                            0,
                                            uint64_t{1} << 31,
                                            "seconds psm2_ep_connect waits when called with timeout 0; 0: forever"};
inline constexpr Bytes kPsm2RndvHfiThresh{"PSM2_MQ_RNDV_HFI_THRESH",
                                          "psm2",
                                          64000,
                                          0,
                                          uint64_t{2} << 20,
                                          "messages to network peers from this size on go by rendezvous"};
inline constexpr Bytes kPsm2RndvShmThresh{"PSM2_MQ_RNDV_SHM_THRESH",
                                          "psm2",
                                          16000,
                                          0,
                                          uint64_t{2} << 20,
                                          "messages to peers on this machine from this size on go by rendezvous"};
inline constexpr Number kPsm2TraceMask{
    "PSM2_TRACEMASK", "psm2", 1, 0, UINT32_MAX, "reported by psm2_getopt(PSM2_CORE_OPT_DEBUG)"};

inline constexpr const Setting *kPsm2Settings[] = {&kPsm2Devices,       &kPsm2MultiEp,       &kPsm2ConnectTimeout,
                                                   &kPsm2RndvHfiThresh, &kPsm2RndvShmThresh, &kPsm2TraceMask};

} // namespace portico::settings
