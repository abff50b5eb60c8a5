// SPDX-License-Identifier: BSD-3-Clause
#include "common/log.hpp"

#include "common/common_settings.hpp"

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace portico {

namespace {

const char *const kLevelNames[] = {"error", "warn", "info", "debug", "trace"};

std::atomic<int> g_rank{-1};

struct Filter {
    LogLevel level = LogLevel::warn;
    LogLevel most = LogLevel::warn; // the most verbose level any layer asks for
    std::vector<std::pair<std::string, LogLevel>> layers;
};

bool level_named(std::string_view name, LogLevel *out) {
    for (unsigned i = 0; i < std::size(kLevelNames); ++i)
        if (name == kLevelNames[i]) {
            *out = static_cast<LogLevel>(i);
            return true;
        }
    return false;
}

const Filter &filter() {
    // Read once: the setting's validator has reported a bad value, which leaves the default.
    static const Filter f = [] {
        Filter r;
        const std::string text = settings::kLogLevel.get();
        std::string_view rest(text);
        bool first = true;
        while (!rest.empty()) {
            const size_t comma = rest.find(',');
            const std::string_view item = rest.substr(0, comma);
            rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            const size_t eq = item.find('=');
            LogLevel l;
            if (eq == std::string_view::npos) {
                if (first && level_named(item, &l)) r.level = l;
            } else if (level_named(item.substr(eq + 1), &l)) {
                r.layers.emplace_back(std::string(item.substr(0, eq)), l);
            }
            first = false;
        }
        r.most = r.level;
        for (auto &[name, l] : r.layers) r.most = std::max(r.most, l);
        return r;
    }();
    return f;
}

} // namespace

namespace settings {
std::string log_level_problem(const char *text) {
    std::string_view rest(text);
    bool first = true;
    while (true) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        const size_t eq = item.find('=');
        LogLevel l;
        if (eq == std::string_view::npos ? !(first && level_named(item, &l))
                                         : eq == 0 || !level_named(item.substr(eq + 1), &l))
            return "'" + std::string(item) +
                   "': expected a level (error, warn, info, debug, trace), then LAYER=LEVEL items";
        if (comma == std::string_view::npos) return "";
        rest.remove_prefix(comma + 1);
        first = false;
    }
}
} // namespace settings

const char *log_layer_of(const char *file, char *buf, unsigned size) {
    // .../src/<layer>/[<sub>/]file or .../layer-views/<target>/<layer>/[<sub>/]file (a header seen
    // through its layer's view); tools/<tool>/file and bench/file for the programs.
    std::string_view path(file ? file : "");
    std::string_view rest;
    if (const size_t v = path.rfind("/layer-views/"); v != std::string_view::npos) {
        rest = path.substr(v + 13);
        rest = rest.substr(std::min(rest.size(), rest.find('/') + 1));
    } else if (const size_t s = path.rfind("/src/"); s != std::string_view::npos) {
        rest = path.substr(s + 5);
    } else if (const size_t t = path.rfind("/tools/"); t != std::string_view::npos) {
        rest = path.substr(t + 7);
    } else {
        rest = "portico/";
    }
    std::string layer(rest.substr(0, rest.find('/')));
    const std::string_view after = rest.substr(std::min(rest.size(), layer.size() + 1));
    // The transports are layers of their own: transport/shm/x.cpp is "transport.shm".
    if (layer == "transport" && after.find('/') != std::string_view::npos)
        layer += "." + std::string(after.substr(0, after.find('/')));
    std::snprintf(buf, size, "%s", layer.c_str());
    return buf;
}

bool log_enabled(LogLevel level, const char *file) {
    const Filter &f = filter();
    if (level <= f.level && f.layers.empty()) return true;
    if (level > f.most) return false;
    char layer[64];
    log_layer_of(file, layer, sizeof layer);
    for (auto &[name, l] : f.layers)
        if (name == layer) return level <= l;
    return level <= f.level;
}

void set_log_rank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }

void log_line(LogLevel level, const char *file, const char *fmt, ...) {
    // Errors always, whatever the filter says: they explain a failure the caller reports.
    if (level != LogLevel::error && !log_enabled(level, file)) return;
    char layer[64];
    log_layer_of(file, layer, sizeof layer);
    char line[1024];
    const int rank = g_rank.load(std::memory_order_relaxed);
    char rank_text[24] = "";
    if (rank >= 0) std::snprintf(rank_text, sizeof rank_text, " rank %d", rank);
    const int n = std::snprintf(line, sizeof line, "portico[%d]%s %s %s: ", static_cast<int>(getpid()), rank_text,
                                layer, kLevelNames[static_cast<unsigned>(level)]);
    if (n < 0 || n >= static_cast<int>(sizeof line)) return;
    va_list ap;
    va_start(ap, fmt);
    const int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n) - 1, fmt, ap);
    va_end(ap);
    if (m < 0) return;
    size_t len = static_cast<size_t>(n) + std::min(static_cast<size_t>(m), sizeof line - static_cast<size_t>(n) - 2);
    line[len++] = '\n';
    // One write() per line so that lines of concurrent processes do not interleave.
    [[maybe_unused]] ssize_t w = ::write(2, line, len);
}

} // namespace portico
