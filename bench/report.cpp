// SPDX-License-Identifier: BSD-3-Clause
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

// JSON has no NaN or infinity. Six significant digits whatever the magnitude.
std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// About four significant digits, without an exponent, for the table.
std::string num(double v) {
    if (!std::isfinite(v)) return "-";
    const double a = std::fabs(v);
    const int decimals = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : a >= 0.1 ? 3 : 4;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string stats_cell(const Stats &s, const std::string &unit) {
    return num(s.median) + " [" + num(s.min) + " .. " + num(s.max) + "] " + unit;
}

} // namespace

void Result::set_baseline2(const std::vector<double> &values, std::string kind) {
    set_baseline2(Stats::of(values), std::move(kind));
}

void Result::set_baseline2(const Stats &stats, std::string kind) {
    has_baseline2 = true;
    baseline2 = stats;
    baseline2_kind = std::move(kind);
}

Result Result::of(std::string test, int procs, uint64_t size, std::vector<double> value, std::vector<double> baseline,
                  std::string baseline_kind, int reps, uint64_t iters, uint64_t warmup) {
    Result r;
    r.test = std::move(test);
    r.procs = procs;
    r.size = size;
    r.value = Stats::of(std::move(value));
    r.has_baseline = true;
    r.baseline = Stats::of(std::move(baseline));
    r.baseline_kind = std::move(baseline_kind);
    r.reps = reps;
    r.iters = iters;
    r.warmup = warmup;
    return r;
}

double Result::ratio() const { return has_baseline && baseline.median > 0 ? value.median / baseline.median : NAN; }

double Result::ratio2() const { return has_baseline2 && baseline2.median > 0 ? value.median / baseline2.median : NAN; }

std::string to_json(const Result &r) {
    std::string line = "{\"test\":" + json_string(r.test);
    if (!r.variant.empty()) line += ",\"variant\":" + json_string(r.variant);
    line += ",\"transport\":" + json_string(r.transport) + ",\"procs\":" + std::to_string(r.procs) +
            ",\"size\":" + std::to_string(r.size) + ",\"value\":" + json_number(r.value.median) +
            ",\"unit\":" + json_string(r.unit);
    if (r.has_baseline)
        line += ",\"baseline\":" + json_number(r.baseline.median) + ",\"ratio\":" + json_number(r.ratio());
    line += ",\"better\":" + json_string(r.better) + ",\"min\":" + json_number(r.value.min) +
            ",\"max\":" + json_number(r.value.max);
    if (r.has_baseline)
        line += ",\"baseline_min\":" + json_number(r.baseline.min) +
                ",\"baseline_max\":" + json_number(r.baseline.max) +
                ",\"baseline_kind\":" + json_string(r.baseline_kind);
    if (r.has_baseline2)
        line += ",\"baseline2\":" + json_number(r.baseline2.median) + ",\"ratio2\":" + json_number(r.ratio2()) +
                ",\"baseline2_min\":" + json_number(r.baseline2.min) +
                ",\"baseline2_max\":" + json_number(r.baseline2.max) +
                ",\"baseline2_kind\":" + json_string(r.baseline2_kind);
    line += ",\"reps\":" + std::to_string(r.reps) + ",\"iters\":" + std::to_string(r.iters) +
            ",\"warmup\":" + std::to_string(r.warmup) + "}";
    return line;
}

void Reporter::begin(const std::string &title, const std::string &details, const std::string &second) {
    second_ = second;
    if (!printing_ || json_) return;
    std::printf("# %s\n# %s\n", title.c_str(), details.c_str());
    std::printf("%-17s %8s  %-36s %-36s %7s", "test", "size", "value [min .. max]", "baseline [min .. max]", "ratio");
    if (!second.empty()) std::printf("  %-36s %7s", second.c_str(), "ratio2");
    std::printf("\n");
    std::fflush(stdout);
}

void Reporter::note(const std::string &line) {
    if (!printing_ || json_) return;
    std::printf("# %s\n", line.c_str());
    std::fflush(stdout);
}

void Reporter::result(Result r) {
    r.transport = transport_;
    results_.push_back(r);
    if (!printing_) return;
    if (json_) {
        std::printf("%s\n", to_json(r).c_str());
    } else {
        std::string base = "-", ratio = "-";
        if (r.has_baseline) {
            base = stats_cell(r.baseline, r.unit);
            ratio = num(r.ratio());
        }
        const std::string name = r.variant.empty() ? r.test : r.test + " " + r.variant;
        std::printf("%-17s %8llu  %-36s %-36s %7s", name.c_str(), static_cast<unsigned long long>(r.size),
                    stats_cell(r.value, r.unit).c_str(), base.c_str(), ratio.c_str());
        if (r.has_baseline2)
            std::printf("  %-36s %7s", stats_cell(r.baseline2, r.unit).c_str(), num(r.ratio2()).c_str());
        std::printf("\n");
    }
    std::fflush(stdout);
}

} // namespace portico::bench
