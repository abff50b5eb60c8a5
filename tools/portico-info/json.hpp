// SPDX-License-Identifier: BSD-3-Clause
// A minimal streaming JSON writer (objects, arrays, strings, integers, booleans, null).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace portico::info {

class JsonWriter {
public:
    void begin_object() { open('{'); }
    void end_object() { close('}'); }
    void begin_array() { open('['); }
    void end_array() { close(']'); }

    void key(const std::string &k) {
        comma();
        string(k);
        out_ += ':';
        after_key_ = true;
    }
    void value(const std::string &s) {
        comma();
        string(s);
    }
    void value(const char *s) { value(std::string(s)); }
    void value(uint64_t v) {
        comma();
        char buf[32];
        std::snprintf(buf, sizeof buf, "%" PRIu64, v);
        out_ += buf;
    }
    void value(int64_t v) {
        comma();
        char buf[32];
        std::snprintf(buf, sizeof buf, "%" PRId64, v);
        out_ += buf;
    }
    void value(int v) { value(static_cast<int64_t>(v)); }
    void value(bool b) {
        comma();
        out_ += b ? "true" : "false";
    }
    void null() {
        comma();
        out_ += "null";
    }

    template <class T> void kv(const std::string &k, const T &v) {
        key(k);
        value(v);
    }
    void kv_null(const std::string &k) {
        key(k);
        null();
    }

    const std::string &str() const { return out_; }

private:
    void open(char c) {
        comma();
        out_ += c;
        first_.push_back(true);
    }
    void close(char c) {
        out_ += c;
        first_.pop_back();
    }
    // Separates the elements of the innermost container.
    void comma() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (first_.empty()) return;
        if (!first_.back()) out_ += ',';
        first_.back() = false;
    }
    void string(const std::string &s) {
        out_ += '"';
        for (const char ch : s) {
            const auto c = static_cast<unsigned char>(ch);
            switch (c) {
            case '"': out_ += "\\\""; break;
            case '\\': out_ += "\\\\"; break;
            case '\n': out_ += "\\n"; break;
            case '\r': out_ += "\\r"; break;
            case '\t': out_ += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out_ += buf;
                } else {
                    out_ += static_cast<char>(c);
                }
            }
        }
        out_ += '"';
    }

    std::string out_;
    std::vector<bool> first_;
    bool after_key_ = false;
};

} // namespace portico::info
