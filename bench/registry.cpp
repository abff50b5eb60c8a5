// The test registry and the statistics helpers.
#include <algorithm>

#include "bench.hpp"

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

} // namespace portico::bench
