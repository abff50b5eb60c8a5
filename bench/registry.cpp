// SPDX-License-Identifier: BSD-3-Clause
// The test registry and the statistics helpers.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "bench.hpp"
#include "bench_settings.hpp"
#include "common/common_settings.hpp"
#include "engine/engine_settings.hpp"
#include "transport/shm/shm_settings.hpp"
#include "transport/transport_settings.hpp"

namespace portico::bench {

namespace {
// A function-local static: registration runs from other files' static initialisers, in any order.
std::vector<TestInfo> &registry() {
    static std::vector<TestInfo> tests;
    return tests;
}
} // namespace

bool register_test(const TestInfo &t) {
    registry().push_back(t);
    std::sort(registry().begin(), registry().end(),
              [](const TestInfo &a, const TestInfo &b) { return std::string(a.name) < b.name; });
    return true;
}

const std::vector<TestInfo> &all_tests() { return registry(); }

const TestInfo *find_test(const std::string &name) {
    for (const TestInfo &t : registry())
        if (name == t.name) return &t;
    return nullptr;
}

Stats Stats::of(std::vector<double> v) {
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    s.min = v.front();
    s.max = v.back();
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return s;
}

std::vector<size_t> sizes_of(const Options &o, const std::vector<size_t> &full, const std::vector<size_t> &short_sizes,
                             size_t lo, size_t hi) {
    if (o.sizes.empty()) return o.short_mode ? short_sizes : full;
    std::vector<size_t> out;
    for (uint64_t s : o.sizes) {
        if (s < lo || s > hi)
            throw Error("size " + std::to_string(s) + " out of this test's range " + std::to_string(lo) + ".." +
                        std::to_string(hi));
        out.push_back(static_cast<size_t>(s));
    }
    return out;
}

std::string env_note() {
    std::string s;
    using namespace settings;
    const Setting *const noted[] = {&kTransport,    &kWaitSpinUs,    &kProgressSpinUs,
                                    &kShmRingBytes, &kShmSingleCopy, &kShmSingleCopyBytes,
                                    &kIface,        &kNid,           &kBenchTcpRecv};
    for (const Setting *x : noted)
        if (const char *v = x->raw()) s += std::string(s.empty() ? "" : " ") + x->name + "=" + v;
    return s;
}

void write_stamp(unsigned char *buf, size_t size, uint64_t stamp) {
    std::memcpy(buf, &stamp, sizeof stamp);
    std::memcpy(buf + size - sizeof stamp, &stamp, sizeof stamp);
}

void check_stamp(const unsigned char *buf, size_t size, uint64_t stamp, const std::string &what) {
    uint64_t head = 0, tail = 0;
    std::memcpy(&head, buf, sizeof head);
    std::memcpy(&tail, buf + size - sizeof tail, sizeof tail);
    if (head != stamp || tail != stamp)
        throw Error(what + " of " + std::to_string(size) + " bytes: received stamps " + std::to_string(head) + "/" +
                    std::to_string(tail) + ", expected " + std::to_string(stamp));
}

} // namespace portico::bench
