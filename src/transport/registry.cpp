// SPDX-License-Identifier: BSD-3-Clause
#include "transport/registry.hpp"

#include <algorithm>

namespace portico::transport {

// Generated from the portico_transport() calls (cmake/PorticoRecipes.cmake): registered_transports.cpp.
extern const std::span<const TransportInfo *const> kBuiltinTransports;

namespace {
std::vector<const TransportInfo *> &added() {
    static std::vector<const TransportInfo *> v;
    return v;
}
} // namespace

std::vector<const TransportInfo *> registered() {
    std::vector<const TransportInfo *> all(kBuiltinTransports.begin(), kBuiltinTransports.end());
    all.insert(all.end(), added().begin(), added().end());
    std::stable_sort(all.begin(), all.end(), [](auto *a, auto *b) { return a->priority > b->priority; });
    return all;
}

const TransportInfo *find_transport(std::string_view name) {
    for (const TransportInfo *t : registered())
        if (name == t->name) return t;
    return nullptr;
}

void add_transport(const TransportInfo *info) {
    if (!find_transport(info->name)) added().push_back(info);
}

bool select_transports(std::string_view text, Selection *out, std::string *error) {
    *out = Selection{};
    if (text.empty() || text == "auto") {
        out->transports = registered();
        return true;
    }
    out->named = true;
    while (!text.empty()) {
        const size_t comma = text.find(',');
        const std::string_view name = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        const TransportInfo *t = find_transport(name);
        if (!t || std::find(out->transports.begin(), out->transports.end(), t) != out->transports.end()) {
            std::string known;
            for (const TransportInfo *r : registered()) known += std::string(known.empty() ? "" : ", ") + r->name;
            *error = "PORTICO_TRANSPORT: " + std::string(t ? "'" : "no transport '") + std::string(name) +
                     (t ? "' is named twice" : "'") + " (the transports: auto, or a list of " + known + ")";
            return false;
        }
        out->transports.push_back(t);
    }
    return true;
}

} // namespace portico::transport
