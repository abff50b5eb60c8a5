// SPDX-License-Identifier: BSD-3-Clause
// GASNET_SEGMENT_EVERYTHING: the whole address space is the segment. Puts, gets, memset and Long
// AMs reach the peer's heap, static data and stack (addresses exchanged by AM).
#define GASNET_SEGMENT_EVERYTHING 1
#include <gasnet.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "test_util.h"

namespace {
constexpr int H_ADDR = 150, H_LONG = 151, H_LONG_REP = 152;
char static_area[65536];
std::atomic<int> addrs_seen{0}, long_replies{0};
uint64_t peer_addr[3];

void addr_handler(gasnet_token_t, gasnet_handlerarg_t which, gasnet_handlerarg_t hi, gasnet_handlerarg_t lo) {
    peer_addr[which] = (uint64_t(uint32_t(hi)) << 32) | uint32_t(lo);
    addrs_seen.fetch_add(1);
}
void long_handler(gasnet_token_t t, void *buf, size_t n) {
    const auto *p = static_cast<const unsigned char *>(buf);
    for (size_t j = 0; j < n; ++j) CHECK_EQ(p[j], (unsigned char)(j * 5 + 1));
    GASNET_SAFE(gasnet_AMReplyShort0(t, H_LONG_REP));
}
void long_rep(gasnet_token_t) { long_replies.fetch_add(1); }
} // namespace

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    CHECK(gasnet_getMaxLocalSegmentSize() == ~uintptr_t(0));
    gasnet_handlerentry_t tab[] = {
        {H_ADDR, (void (*)())addr_handler}, {H_LONG, (void (*)())long_handler}, {H_LONG_REP, (void (*)())long_rep}};
    GASNET_SAFE(gasnet_attach(tab, 3, 0, 0)); // segsize and minheapoffset are ignored
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes(), right = (me + 1) % n, left = (me + n - 1) % n;
    std::vector<gasnet_seginfo_t> si(n);
    GASNET_SAFE(gasnet_getSegmentInfo(si.data(), int(n)));
    CHECK(si[me].addr == nullptr && si[me].size == ~uintptr_t(0));

    std::vector<char> heap(1u << 20, 0);
    char stack_area[4096];
    memset(stack_area, 0, sizeof stack_area);
    const uint64_t mine[3] = {reinterpret_cast<uint64_t>(heap.data()), reinterpret_cast<uint64_t>(static_area),
                              reinterpret_cast<uint64_t>(stack_area)};
    for (int w = 0; w < 3; ++w)
        GASNET_SAFE(gasnet_AMRequestShort3(left, H_ADDR, w, gasnet_handlerarg_t(mine[w] >> 32),
                                           gasnet_handlerarg_t(mine[w] & 0xffffffffu)));
    GASNET_BLOCKUNTIL(addrs_seen.load() == 3); // the right neighbour's addresses
    test_barrier();

    std::vector<unsigned char> buf(1u << 20), back(1u << 20);
    for (size_t j = 0; j < buf.size(); ++j) buf[j] = (unsigned char)(j * 5 + 1);
    const size_t sizes[3] = {1u << 20, sizeof static_area, sizeof stack_area};
    for (int w = 0; w < 3; ++w) {
        char *remote = reinterpret_cast<char *>(peer_addr[w]);
        gasnet_put_bulk(right, remote, buf.data(), sizes[w]);
        gasnet_get(back.data(), right, remote, sizes[w]);
        CHECK(memcmp(back.data(), buf.data(), sizes[w]) == 0);
        gasnet_memset(right, remote + 1, 0x33, 10);
        CHECK_EQ(gasnet_get_val(right, remote + 5, 1), 0x33);
        GASNET_SAFE(gasnet_AMRequestLong0(right, H_LONG, buf.data(), sizes[w] / 2, remote));
        GASNET_BLOCKUNTIL(long_replies.load() == w + 1);
    }
    test_barrier();
    // What the left neighbour wrote last is on our stack.
    for (size_t j = 0; j < sizeof stack_area / 2; ++j)
        CHECK_EQ((unsigned char)stack_area[j], (unsigned char)(j * 5 + 1));
    test_barrier();
    if (me == 0) printf("everything_test: OK (%u nodes)\n", n);
    gasnet_exit(0);
}
