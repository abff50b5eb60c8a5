// SPDX-License-Identifier: BSD-3-Clause
#include "portals_util.hpp"

#include <cstdio>
#include <string>

#include "bench.hpp"
#include "job.hpp"

namespace portico::bench {

std::vector<Peer> exchange_peers(Job &job, ptl_process_t self, ptl_pt_index_t pt) {
    char mine[48];
    std::snprintf(mine, sizeof mine, "%x:%x:%x", self.phys.nid, self.phys.pid, pt);
    std::vector<Peer> peers;
    int r = 0;
    for (const std::string &v : job.allgather(mine)) {
        unsigned nid = 0, pid = 0, idx = 0;
        if (std::sscanf(v.c_str(), "%x:%x:%x", &nid, &pid, &idx) != 3)
            throw Error("rank " + std::to_string(r) + " published a malformed endpoint '" + v + "'");
        peers.push_back(Peer{ck::phys_id(nid, pid), idx});
        ++r;
    }
    return peers;
}

} // namespace portico::bench
