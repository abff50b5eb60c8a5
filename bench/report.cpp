#include "report.hpp"

#include <cmath>
#include <cstdio>

namespace portico::bench {

namespace {

std::string json_string(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out.push_back(c);
            }
        }
    }
    return out + "\"";
}

// JSON has no NaN or infinity.
std::string json_number(double v, const char *fmt = "%.4f") {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

double ratio_of(const Result &r) {
    return r.baseline.median > 0 ? r.value.median / r.baseline.median : NAN;
}

} // namespace

void Reporter::begin(const std::string &title, const std::string &details) {
    if (!printing_ || json_) return;
    std::printf("# %s\n# %s\n", title.c_str(), details.c_str());
    std::printf("%-10s %7s  %-28s %-28s %7s\n", "test", "size", "value [min .. max]", "baseline [min .. max]", "ratio");
    std::fflush(stdout);
}

void Reporter::note(const std::string &line) {
    if (!printing_ || json_) return;
    std::printf("# %s\n", line.c_str());
    std::fflush(stdout);
}

void Reporter::result(const Result &r) {
    if (!printing_) return;
    if (json_) {
        std::string line = "{\"test\":" + json_string(r.test) + ",\"transport\":" + json_string(r.transport) +
                           ",\"procs\":" + std::to_string(r.procs) + ",\"size\":" + std::to_string(r.size) +
                           ",\"value\":" + json_number(r.value.median) + ",\"unit\":" + json_string(r.unit);
        if (r.has_baseline) {
            line += ",\"baseline\":" + json_number(r.baseline.median) + ",\"ratio\":" + json_number(ratio_of(r), "%.3f");
        }
        line += ",\"better\":" + json_string(r.better) + ",\"min\":" + json_number(r.value.min) +
                ",\"max\":" + json_number(r.value.max);
        if (r.has_baseline) {
            line += ",\"baseline_min\":" + json_number(r.baseline.min) + ",\"baseline_max\":" +
                    json_number(r.baseline.max) + ",\"baseline_kind\":" + json_string(r.baseline_kind);
        }
        line += ",\"reps\":" + std::to_string(r.reps) + ",\"iters\":" + std::to_string(r.iters) +
                ",\"warmup\":" + std::to_string(r.warmup) + "}";
        std::printf("%s\n", line.c_str());
    } else {
        char value[64], base[64] = "-", ratio[32] = "-";
        std::snprintf(value, sizeof value, "%.3f [%.3f .. %.3f] %s", r.value.median, r.value.min, r.value.max,
                      r.unit.c_str());
        if (r.has_baseline) {
            std::snprintf(base, sizeof base, "%.3f [%.3f .. %.3f] %s", r.baseline.median, r.baseline.min,
                          r.baseline.max, r.unit.c_str());
            std::snprintf(ratio, sizeof ratio, "%.2f", ratio_of(r));
        }
        std::printf("%-10s %7llu  %-28s %-28s %7s\n", r.test.c_str(), static_cast<unsigned long long>(r.size), value,
                    base, ratio);
    }
    std::fflush(stdout);
}

} // namespace portico::bench
