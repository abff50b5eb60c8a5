// SPDX-License-Identifier: BSD-3-Clause
#include "common/settings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <strings.h>

#include "common/log.hpp"

namespace portico::settings {

const char *type_name(Type type) {
    switch (type) {
    case Type::number: return "integer";
    case Type::bytes: return "bytes";
    case Type::boolean: return "boolean";
    case Type::choice: return "choice";
    case Type::text: return "string";
    }
    return "?";
}

std::optional<uint64_t> parse_number(std::string_view text, std::string *why) {
    // strtoull needs a terminated string and would accept a sign and leading blanks, which
    // turned "-1" into 2^64-1 before: check the first character ourselves.
    const std::string s(text);
    if (s.empty() || s[0] < '0' || s[0] > '9') {
        *why = "not a number";
        return std::nullopt;
    }
    errno = 0;
    char *end = nullptr;
    unsigned long long x = std::strtoull(s.c_str(), &end, 0);
    if (errno == ERANGE) {
        *why = "too large";
        return std::nullopt;
    }
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        ++end;
        break;
    case 'm':
    case 'M':
        shift = 20;
        ++end;
        break;
    case 'g':
    case 'G':
        shift = 30;
        ++end;
        break;
    case 't':
    case 'T':
        shift = 40;
        ++end;
        break;
    default: break;
    }
    if (shift && (std::strcmp(end, "B") == 0 || std::strcmp(end, "iB") == 0)) end += std::strlen(end);
    if (*end != '\0') {
        *why = "not a number (trailing '" + std::string(end) + "'; suffixes: K, M, G, T, each optionally with B or iB)";
        return std::nullopt;
    }
    if (shift && x > (UINT64_MAX >> shift)) {
        *why = "too large";
        return std::nullopt;
    }
    return static_cast<uint64_t>(x) << shift;
}

std::optional<bool> parse_boolean(std::string_view text, std::string *why) {
    const std::string s(text);
    for (const char *yes : {"yes", "true", "on"})
        if (strcasecmp(s.c_str(), yes) == 0) return true;
    for (const char *no : {"no", "false", "off"})
        if (strcasecmp(s.c_str(), no) == 0) return false;
    // A plain decimal number only: "1G" or a number past 64 bits is a typo, not a wish.
    const bool decimal = !s.empty() && s.size() <= 20 && s.find_first_not_of("0123456789") == std::string::npos;
    std::optional<uint64_t> n;
    if (decimal) n = parse_number(text, why);
    if (!n) {
        *why = "not a boolean (0, 1, yes, no, true, false, on, off)";
        return std::nullopt;
    }
    return *n != 0;
}

namespace {

std::string with_unit(uint64_t v) {
    const char *units[] = {"KiB", "MiB", "GiB"};
    std::string s = std::to_string(v);
    int u = -1;
    while (v >= 1024 && v % 1024 == 0 && u < 2) {
        v /= 1024;
        ++u;
    }
    return u < 0 ? s : s + " (" + std::to_string(v) + " " + units[u] + ")";
}

std::string show(const Setting &s, uint64_t v) {
    if (v == UINT64_MAX) return "2^64-1";
    return s.type == Type::bytes ? with_unit(v) : std::to_string(v);
}

uint64_t floor_power_of_two(uint64_t v) {
    uint64_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

} // namespace

std::string Setting::default_text() const {
    switch (type) {
    case Type::number:
    case Type::bytes: return show(*this, def);
    case Type::boolean: return def ? "1" : "0";
    case Type::choice:
    case Type::text: return def_text ? def_text : "";
    }
    return "";
}

std::string Setting::range_text() const {
    switch (type) {
    case Type::number:
    case Type::bytes: {
        std::string r;
        if (lo != 0 && hi != UINT64_MAX)
            r = show(*this, lo) + " .. " + show(*this, hi);
        else if (lo != 0)
            r = "at least " + show(*this, lo);
        else if (hi != UINT64_MAX)
            r = "at most " + show(*this, hi);
        if (power_of_two) r += r.empty() ? "a power of two" : ", a power of two";
        return r;
    }
    case Type::boolean: return "0 or 1";
    case Type::choice: return choices;
    case Type::text: return "";
    }
    return "";
}

Resolved<uint64_t> Setting::resolve_number(const char *text) const {
    if (!text || !*text) return {def, {}};
    const std::string given = std::string(name) + "='" + text + "'";
    std::string why;
    if (type == Type::boolean) {
        auto b = parse_boolean(text, &why);
        if (!b) return {def, given + ": " + why + "; using the default " + default_text()};
        return {*b ? 1u : 0u, {}};
    }
    auto n = parse_number(text, &why);
    if (!n) return {def, given + ": " + why + "; using the default " + default_text()};
    if (*n < lo) return {lo, given + ": below the minimum; using " + show(*this, lo)};
    if (*n > hi) return {hi, given + ": above the maximum; using " + show(*this, hi)};
    if (power_of_two && (*n & (*n - 1)) != 0) {
        const uint64_t p = floor_power_of_two(*n);
        return {p, given + ": not a power of two; using " + show(*this, p)};
    }
    return {*n, {}};
}

Resolved<std::string> Setting::resolve_string(const char *text) const {
    const std::string d = def_text ? def_text : "";
    if (!text || !*text) return {d, {}};
    if (type != Type::choice) {
        if (!validate) return {text, {}};
        const std::string why = validate(text);
        if (why.empty()) return {text, {}};
        return {d, std::string(name) + "='" + text + "': " + why +
                       (d.empty() ? std::string("; ignored, as if unset") : "; using the default " + d)};
    }
    const std::string_view words(choices);
    size_t start = 0;
    while (start <= words.size()) {
        size_t bar = words.find('|', start);
        if (bar == std::string_view::npos) bar = words.size();
        // Any case ("spin" for GASNet's SPIN), answered as declared.
        const std::string word(words.substr(start, bar - start));
        if (strcasecmp(word.c_str(), text) == 0) return {word, {}};
        start = bar + 1;
    }
    return {d, std::string(name) + "='" + text + "': expected one of " + choices};
}

std::string Setting::check(const char *text) const {
    switch (type) {
    case Type::number:
    case Type::bytes:
    case Type::boolean: return resolve_number(text).error;
    case Type::choice:
    case Type::text: return resolve_string(text).error;
    }
    return "";
}

void report(const Setting &s, const std::string &error) {
    // Settings are read again at every PtlNIInit; one complaint per variable is enough.
    static std::mutex mutex;
    static std::set<std::string> *reported = new std::set<std::string>; // outlives atexit readers
    {
        std::lock_guard lock(mutex);
        if (!reported->insert(s.name).second) return;
    }
    log_error("%s", error.c_str());
}

namespace {
std::vector<Table> &registry() {
    static std::vector<Table> *all = new std::vector<Table>; // filled by static constructors
    return *all;
}
} // namespace

void register_table(Table table) {
    if (!table.empty()) registry().push_back(table);
}

std::vector<Table> tables() {
    std::vector<Table> all = registry();
    std::stable_sort(all.begin(), all.end(),
                     [](const Table &a, const Table &b) { return std::strcmp(a[0]->layer, b[0]->layer) < 0; });
    return all;
}

} // namespace portico::settings
