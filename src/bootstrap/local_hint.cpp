// SPDX-License-Identifier: BSD-3-Clause
#include "bootstrap/local_hint.hpp"

#include <cstdlib>
#include <string>

#include "bootstrap/bootstrap_settings.hpp"

namespace portico::bootstrap {

namespace {

// A non-negative decimal number from the environment, or -1.
int64_t env_count(const char *name) {
    const char *v = std::getenv(name);
    if (!v || *v < '0' || *v > '9') return -1;
    char *end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    return *end == '\0' && n < (1ull << 31) ? static_cast<int64_t>(n) : -1;
}

} // namespace

uint32_t slurm_tasks_on_node(const char *per_node, uint32_t index) {
    if (!per_node) return 0;
    const std::string s(per_node);
    size_t at = 0;
    uint64_t node = 0;
    while (at < s.size()) {
        size_t used = 0;
        unsigned long count = 0, repeat = 1;
        try {
            count = std::stoul(s.substr(at), &used);
        } catch (const std::exception &) {
            return 0;
        }
        at += used;
        if (s.compare(at, 2, "(x") == 0) {
            try {
                repeat = std::stoul(s.substr(at + 2), &used);
            } catch (const std::exception &) {
                return 0;
            }
            at += 2 + used;
            if (at >= s.size() || s[at] != ')') return 0;
            ++at;
        }
        if (index < node + repeat) return static_cast<uint32_t>(count);
        node += repeat;
        if (at < s.size() && s[at++] != ',') return 0;
    }
    return 0;
}

LocalHint local_hint() {
    LocalHint h;
    const uint64_t portico_size = settings::kLocalSize.get();
    if (portico_size > 0 && portico_size < (1u << 31)) {
        h.processes = static_cast<uint32_t>(portico_size);
        h.rank = settings::kLocalRank.is_set() ? static_cast<int32_t>(settings::kLocalRank.get()) : -1;
        return h;
    }
    struct Pair {
        const char *size, *rank;
    };
    for (const Pair &p : {Pair{"MPI_LOCALNRANKS", "MPI_LOCALRANKID"},
                          Pair{"OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}}) {
        const int64_t n = env_count(p.size);
        if (n > 0) {
            h.processes = static_cast<uint32_t>(n);
            h.rank = static_cast<int32_t>(env_count(p.rank));
            return h;
        }
    }
    const int64_t node = env_count("SLURM_NODEID");
    if (node >= 0) {
        h.processes = slurm_tasks_on_node(std::getenv("SLURM_STEP_TASKS_PER_NODE"), static_cast<uint32_t>(node));
        if (h.processes > 0) h.rank = static_cast<int32_t>(env_count("SLURM_LOCALID"));
    }
    return h;
}

} // namespace portico::bootstrap
