// SPDX-License-Identifier: BSD-3-Clause
// 65,535 operations in flight (spec §3.3.1): explicit-handle puts and gets, implicit-handle puts
// and gets, and an access region, each issued 65,535 times before a single synchronization.
#include <gasnet.h>

#include <cstdint>
#include <vector>

#include "test_util.h"

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    constexpr size_t kOps = 65535;
    GASNET_SAFE(gasnet_attach(nullptr, 0, 4u << 20, 0));
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes(), right = (me + 1) % n;
    std::vector<gasnet_seginfo_t> segs(n);
    GASNET_SAFE(gasnet_getSegmentInfo(segs.data(), int(n)));
    auto *remote = static_cast<uint64_t *>(segs[right].addr);
    std::vector<uint64_t> vals(kOps), back(kOps);
    std::vector<gasnet_handle_t> hs(kOps);

    for (int round = 0; round < 3; ++round) {
        TEST_SECTION(round == 0   ? "65535 explicit-handle puts and gets"
                     : round == 1 ? "65535 implicit-handle puts and gets"
                                  : "65535 operations in one access region");
        for (size_t i = 0; i < kOps; ++i) vals[i] = (uint64_t(round) << 48) ^ (uint64_t(me) << 32) ^ (i * 2654435761u);
        if (round == 0) {
            for (size_t i = 0; i < kOps; ++i) hs[i] = gasnet_put_nb(right, remote + i, &vals[i], sizeof(uint64_t));
            gasnet_wait_syncnb_all(hs.data(), kOps);
            for (size_t i = 0; i < kOps; ++i) hs[i] = gasnet_get_nb(&back[i], right, remote + i, sizeof(uint64_t));
            gasnet_wait_syncnb_all(hs.data(), kOps);
            for (size_t i = 0; i < kOps; ++i) CHECK(hs[i] == GASNET_INVALID_HANDLE);
        } else if (round == 1) {
            for (size_t i = 0; i < kOps; ++i) gasnet_put_nbi(right, remote + i, &vals[i], sizeof(uint64_t));
            gasnet_wait_syncnbi_puts();
            for (size_t i = 0; i < kOps; ++i) gasnet_get_nbi_bulk(&back[i], right, remote + i, sizeof(uint64_t));
            gasnet_wait_syncnbi_gets();
        } else {
            gasnet_begin_nbi_accessregion();
            for (size_t i = 0; i < kOps; ++i) gasnet_put_nbi_bulk(right, remote + i, &vals[i], sizeof(uint64_t));
            gasnet_handle_t h = gasnet_end_nbi_accessregion();
            gasnet_wait_syncnb(h);
            gasnet_begin_nbi_accessregion();
            for (size_t i = 0; i < kOps; ++i) gasnet_get_nbi(&back[i], right, remote + i, sizeof(uint64_t));
            gasnet_wait_syncnb(gasnet_end_nbi_accessregion());
        }
        for (size_t i = 0; i < kOps; ++i) CHECK_EQ(back[i], vals[i]);
        test_barrier();
    }
    if (me == 0) printf("inflight_test: OK (%u nodes)\n", n);
    gasnet_exit(0);
}
