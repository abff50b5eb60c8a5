// SPDX-License-Identifier: BSD-3-Clause
// Settings: every PORTICO_* environment variable is declared once, as a constexpr object next to
// the code that reads it (common_settings.hpp, engine/engine_settings.hpp, ...). The declaration
// carries what portico-info and the README print (name, type, default, range, description,
// layer), so the documentation comes from the same place as the value. Each layer (the engine's,
// a transport, a client library, a tool) lists its declarations in one table and registers it in
// its CMakeLists.txt with portico_settings_table() (cmake/PorticoSettings.cmake); portico-info
// and the unit tests enumerate the registry (tables()), so no list of the layers exists here.
//
// A bad value never stops a process and is never silently replaced: get() reports it on stderr
// (once per variable and process) and goes on with
//   - the default, when the text is not a value of the setting's type;
//   - the nearest bound, when the number is outside the range (as the code clamped before);
//   - the next power of two down, for sizes that must be powers of two.
// Callers that must refuse a bad value instead (PORTICO_TRANSPORT: PtlNIInit fails) use
// resolve(), which returns the error text and leaves reporting to them.
//
// Numbers: decimal, 0x hex or a leading 0 for octal (strtoull base 0), optionally followed by one
// K, M, G or T suffix (x 1024, 1024^2, 1024^3, 1024^4), itself optionally followed by B or iB
// ("4M", "4MB", "4MiB": the clients' standards write sizes all three ways); nothing else may follow. Booleans: yes/no,
// true/false, on/off, or a plain decimal number (non-zero is on; no suffix, at most 20 digits).
// Unset and empty are the same: the default.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::settings {

enum class Type : uint8_t { number, bytes, boolean, choice, text };

const char *type_name(Type type); // "integer", "bytes", "boolean", "choice", "string"

// Parsers of the value syntax above; on failure they return nothing and say why in *why.
std::optional<uint64_t> parse_number(std::string_view text, std::string *why);
std::optional<bool> parse_boolean(std::string_view text, std::string *why);

// A resolved value: what get() returns, and the complaint get() reports (empty if none).
template <typename T> struct Resolved {
    T value;
    std::string error;
    bool ok() const { return error.empty(); }
};

struct Setting {
    const char *name;
    Type type;
    const char *layer; // who reads it, as portico-info shows it: "transport.shm", "gasnet"
    const char *description;
    uint64_t def = 0; // number, bytes, boolean
    uint64_t lo = 0;  // number, bytes: the range
    uint64_t hi = UINT64_MAX;
    bool power_of_two = false;
    const char *def_text = nullptr; // choice, text: the default (nullptr: unset)
    const char *choices = nullptr;  // choice: "auto|shm|tcp"
    // text: what is wrong with a value ("" when nothing is), for values only code can judge (an
    // interface that must exist, an address that must parse).
    std::string (*validate)(const char *text) = nullptr;

    // The environment's text, nullptr when unset or empty.
    const char *raw() const {
        const char *v = std::getenv(name);
        return v && *v ? v : nullptr;
    }
    bool is_set() const { return raw() != nullptr; }

    std::string default_text() const; // "262144 (256 KiB)", "auto", "" (unset)
    std::string range_text() const;   // "16 KiB .. 1 GiB, a power of two", "auto|shm|tcp", ""
    // What a value of the environment would be, for display: "" when text is acceptable, else
    // the complaint get() would report.
    std::string check(const char *text) const;

protected:
    Resolved<uint64_t> resolve_number(const char *text) const;
    Resolved<std::string> resolve_string(const char *text) const;
};

// Reports a complaint of get() on stderr, once per variable and process.
void report(const Setting &s, const std::string &error);

struct Number : Setting {
    constexpr Number(const char *n, const char *l, uint64_t d, uint64_t low, uint64_t high, const char *desc,
                     Type t = Type::number, bool pow2 = false)
        : Setting{n, t, l, desc, d, low, high, pow2} {}
    Resolved<uint64_t> resolve() const { return resolve_number(raw()); }
    Resolved<uint64_t> resolve(const char *text) const { return resolve_number(text); }
    uint64_t get() const {
        auto r = resolve();
        if (!r.ok()) report(*this, r.error);
        return r.value;
    }
};

// A size in bytes: the same syntax as Number (so the suffixes read naturally), shown in KiB/MiB.
struct Bytes : Number {
    constexpr Bytes(const char *n, const char *l, uint64_t d, uint64_t low, uint64_t high, const char *desc,
                    bool pow2 = false)
        : Number(n, l, d, low, high, desc, Type::bytes, pow2) {}
};

struct Boolean : Setting {
    constexpr Boolean(const char *n, const char *l, bool d, const char *desc) : Setting{n, Type::boolean, l, desc, d} {}
    Resolved<bool> resolve() const { return resolve(raw()); }
    Resolved<bool> resolve(const char *text) const {
        auto r = resolve_number(text);
        return {r.value != 0, r.error};
    }
    bool get() const {
        auto r = resolve();
        if (!r.ok()) report(*this, r.error);
        return r.value;
    }
};

// One of a fixed set of words ("auto|shm|tcp"), in any case; get() answers the word as declared.
struct Choice : Setting {
    constexpr Choice(const char *n, const char *l, const char *d, const char *words, const char *desc)
        : Setting{n, Type::choice, l, desc, 0, 0, UINT64_MAX, false, d, words} {}
    Resolved<std::string> resolve() const { return resolve_string(raw()); }
    Resolved<std::string> resolve(const char *text) const { return resolve_string(text); }
    std::string get() const {
        auto r = resolve();
        if (!r.ok()) report(*this, r.error);
        return r.value;
    }
};

// Free text. def nullptr: unset (""). With a validator, a value it finds wrong is reported and
// the default used instead; without one any value is acceptable.
struct Text : Setting {
    constexpr Text(const char *n, const char *l, const char *d, const char *desc,
                   std::string (*validator)(const char *) = nullptr)
        : Setting{n, Type::text, l, desc, 0, 0, UINT64_MAX, false, d, nullptr, validator} {}
    Resolved<std::string> resolve() const { return resolve_string(raw()); }
    std::string get() const {
        auto r = resolve();
        if (!r.ok()) report(*this, r.error);
        return r.value;
    }
};

// The registry. A layer's table is registered by an object portico_settings_table() generates;
// only the programs that list settings (portico-info, the unit tests) link those objects.
using Table = std::span<const Setting *const>;
void register_table(Table table);
// Every registered table, in the order of their layers' names (then of registration).
std::vector<Table> tables();
struct Registration {
    explicit Registration(Table table) { register_table(table); }
};

} // namespace portico::settings
