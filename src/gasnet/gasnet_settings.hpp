// SPDX-License-Identifier: BSD-3-Clause
// GASNet's environment variables, named as GASNet names them (docs/GASNET.md, *Environment
// variables*), declared in the settings system (common/settings.hpp): portico-info lists them,
// and a bad value is reported once and replaced by the default instead of ending the job.
#pragma once

#include <cstdlib>
#include <string>

#include "common/settings.hpp"
#include "sizing.hpp"

namespace portico::settings {

// GASNET_MAX_SEGSIZE's syntax: "<size>" (settings' number syntax, "512MB", "4G") or a fraction of
// physical memory ("0.5", at most 1), either optionally followed by "/H" (divided among the
// processes of this host). The segment code parses with it, the declaration validates with it.
struct MaxSegsize {
    bool fraction = false;
    double of_memory = 0; // fraction
    uint64_t bytes = 0;   // !fraction
    bool per_host = false;
};
inline std::string parse_max_segsize(const char *text, MaxSegsize *out) {
    std::string s(text);
    *out = MaxSegsize{};
    if (const size_t slash = s.find('/'); slash != std::string::npos) {
        const std::string rest = s.substr(slash + 1);
        if (rest != "H" && rest != "h") return "expected SIZE or SIZE/H";
        out->per_host = true;
        s.resize(slash);
    }
    if (s.find('.') != std::string::npos) {
        char *end = nullptr;
        const double f = std::strtod(s.c_str(), &end);
        if (s.empty() || *end || !(f > 0 && f <= 1)) return "not a fraction of memory in (0, 1]";
        out->fraction = true;
        out->of_memory = f;
        return "";
    }
    std::string why;
    const auto n = parse_number(s, &why);
    if (!n) return why;
    out->bytes = *n;
    return "";
}
inline std::string check_max_segsize(const char *text) {
    MaxSegsize unused;
    return parse_max_segsize(text, &unused);
}

// Seconds, a decimal number (GASNET_EXITTIMEOUT).
inline std::string check_seconds(const char *text) {
    char *end = nullptr;
    const double v = std::strtod(text, &end);
    return end != text && *end == '\0' && v >= 0 && v < 1e9 ? "" : "not a number of seconds";
}

inline constexpr Text kGasnetMaxSegsize{
    "GASNET_MAX_SEGSIZE", "gasnet", nullptr,
    "largest segment: a size (512MB, 4G) or a fraction of physical memory (0.5), optionally /H: divided among the "
    "processes of this host; unset: 0.85/H. The FAST segment mode caps it at physical memory",
    check_max_segsize};
inline constexpr Boolean kGasnetPshm{"GASNET_PSHM", "gasnet", true,
                                     "shared segments between the nodes of this machine (0: their puts and gets go "
                                     "through Portals too)"};
inline constexpr Bytes kGasnetAmZoneBytes{"GASNET_AM_ZONE_BYTES",
                                          "gasnet",
                                          gasnetp::sizing::kDefaultZoneBytes,
                                          gasnetp::sizing::kMinCredit,
                                          uint64_t{1} << 30,
                                          "what each AM class's landing zone keeps for all senders when the credit is "
                                          "automatic: credit = this / nodes, a power of two in 1 KiB .. 256 KiB"};
inline constexpr Bytes kGasnetAmCreditBytes{"GASNET_AM_CREDIT_BYTES",
                                            "gasnet",
                                            0,
                                            0,
                                            gasnetp::sizing::kMaxCredit,
                                            "AM credit per peer and class (at least 1 KiB); 0: automatic "
                                            "(GASNET_AM_ZONE_BYTES / nodes)"};
inline constexpr Bytes kGasnetAmBufferBytes{"GASNET_AM_BUFFER_BYTES",
                                            "gasnet",
                                            0,
                                            0,
                                            uint64_t{64} << 20,
                                            "size of one AM landing buffer (raised to 4 x the largest message); 0: "
                                            "automatic (nodes x credit / 4)"};
inline constexpr Number kGasnetOpsEqSize{"GASNET_OPS_EQ_SIZE",
                                         "gasnet",
                                         16384,
                                         64,
                                         uint64_t{1} << 24,
                                         "completion queue size: operations whose completion is outstanding in the "
                                         "engine at once (more may be issued)"};
inline constexpr Text kGasnetExitTimeout{"GASNET_EXITTIMEOUT", "gasnet", "2.0",
                                         "seconds to wait for exit acks, for a client SIGQUIT handler to exit, and "
                                         "for an exit message after an operation failed",
                                         check_seconds};
inline constexpr Choice kGasnetWaitMode{"GASNET_WAIT_MODE", "gasnet", "SPINBLOCK", "SPINBLOCK|SPIN|BLOCK",
                                        "how long blocking waits poll before sleeping: SPIN 1 ms, SPINBLOCK 200 us "
                                        "when this machine's processes fit its CPUs, BLOCK the engine's default"};
inline constexpr Boolean kGasnetBacktrace{"GASNET_BACKTRACE", "gasnet", false, "print a backtrace on fatal errors"};
inline constexpr Text kGasnetBacktraceType{"GASNET_BACKTRACE_TYPE", "gasnet", nullptr,
                                           "the backtrace mechanisms to try, in order, comma-separated (EXECINFO, or "
                                           "the client's gasnett_backtrace_user); unset: the client's, then EXECINFO"};
inline constexpr Boolean kGasnetVerboseEnv{"GASNET_VERBOSEENV", "gasnet", false,
                                           "report the environment settings GASNet's tools read (node 0)"};

inline constexpr const Setting *kGasnetSettings[] = {&kGasnetMaxSegsize,    &kGasnetPshm,          &kGasnetAmZoneBytes,
                                                     &kGasnetAmCreditBytes, &kGasnetAmBufferBytes, &kGasnetOpsEqSize,
                                                     &kGasnetExitTimeout,   &kGasnetWaitMode,      &kGasnetBacktrace,
                                                     &kGasnetBacktraceType, &kGasnetVerboseEnv};

} // namespace portico::settings

namespace gasnetp {
namespace settings = portico::settings;
} // namespace gasnetp
