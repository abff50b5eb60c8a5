// SPDX-License-Identifier: BSD-3-Clause
// The extended API: put/get of 1 B .. 4 MiB, aligned and unaligned, blocking, non-blocking with
// explicit and implicit handles, access regions; value put/get; memset; the synchronization rules
// (INVALID handles, try/wait all/some, nbi sets); put-then-AM ordering. Each node writes into its
// right neighbour's segment and reads it back, and checks what its left neighbour wrote.
#include <gasnet.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "test_util.h"

namespace {

constexpr size_t kSeg = 32u << 20;
constexpr size_t kArea = 12u << 20; // [0, kArea): written by the left neighbour
constexpr size_t kGetArea = kArea;  // [kArea, 2 kArea): filled by the owner, read by others
constexpr size_t kMisc = 2 * kArea; // scratch for the smaller tests
constexpr int H_CHECK = 200, H_CHECK_REP = 201;

gasnet_seginfo_t *segs;
char *seg(gasnet_node_t n) { return static_cast<char *>(segs[n].addr); }

unsigned char pat(size_t j, uint32_t seed) { return (unsigned char)((j * 2654435761u + seed * 97u + (j >> 8)) >> 3); }
void fill(void *p, size_t n, uint32_t seed) {
    auto *b = static_cast<unsigned char *>(p);
    for (size_t j = 0; j < n; ++j) b[j] = pat(j, seed);
}
void expect(const void *p, size_t n, uint32_t seed, const char *what, size_t size, size_t off) {
    const auto *b = static_cast<const unsigned char *>(p);
    for (size_t j = 0; j < n; ++j)
        if (b[j] != pat(j, seed)) {
            fprintf(stderr, "node %u: %s (size %zu, offset %zu): byte %zu is %u, expected %u\n", gasnet_mynode(), what,
                    size, off, j, b[j], pat(j, seed));
            gasnet_exit(1);
        }
}

enum Variant { kBlocking, kBlockingBulk, kNb, kNbBulk, kNbi, kNbiBulk, kRegion, kVariants };
const char *variant_name(int v) {
    static const char *names[] = {"blocking", "blocking bulk", "nb", "nb bulk", "nbi", "nbi bulk", "access region"};
    return names[v];
}

void put_v(int v, gasnet_node_t node, void *dst, void *src, size_t n) {
    switch (v) {
    case kBlocking: gasnet_put(node, dst, src, n); break;
    case kBlockingBulk: gasnet_put_bulk(node, dst, src, n); break;
    case kNb: gasnet_wait_syncnb(gasnet_put_nb(node, dst, src, n)); break;
    case kNbBulk: {
        gasnet_handle_t h = gasnet_put_nb_bulk(node, dst, src, n);
        while (gasnet_try_syncnb(h) != GASNET_OK) {
        }
        break;
    }
    case kNbi:
        gasnet_put_nbi(node, dst, src, n);
        gasnet_wait_syncnbi_puts();
        break;
    case kNbiBulk:
        gasnet_put_nbi_bulk(node, dst, src, n);
        gasnet_wait_syncnbi_all();
        break;
    case kRegion: {
        gasnet_begin_nbi_accessregion();
        gasnet_put_nbi_bulk(node, dst, src, n / 2);
        gasnet_put_nbi(node, static_cast<char *>(dst) + n / 2, static_cast<char *>(src) + n / 2, n - n / 2);
        gasnet_handle_t h = gasnet_end_nbi_accessregion();
        gasnet_wait_syncnb(h);
        break;
    }
    }
}
void get_v(int v, void *dst, gasnet_node_t node, void *src, size_t n) {
    switch (v) {
    case kBlocking: gasnet_get(dst, node, src, n); break;
    case kBlockingBulk: gasnet_get_bulk(dst, node, src, n); break;
    case kNb: {
        gasnet_handle_t h = gasnet_get_nb(dst, node, src, n);
        gasnet_wait_syncnb_all(&h, 1);
        CHECK(h == GASNET_INVALID_HANDLE);
        break;
    }
    case kNbBulk: gasnet_wait_syncnb(gasnet_get_nb_bulk(dst, node, src, n)); break;
    case kNbi:
        gasnet_get_nbi(dst, node, src, n);
        gasnet_wait_syncnbi_gets();
        break;
    case kNbiBulk:
        gasnet_get_nbi_bulk(dst, node, src, n);
        while (gasnet_try_syncnbi_all() != GASNET_OK) {
        }
        break;
    case kRegion: {
        gasnet_begin_nbi_accessregion();
        gasnet_get_nbi(dst, node, src, n / 3);
        gasnet_get_nbi_bulk(static_cast<char *>(dst) + n / 3, node, static_cast<char *>(src) + n / 3, n - n / 3);
        gasnet_wait_syncnb(gasnet_end_nbi_accessregion());
        break;
    }
    }
}

std::atomic<int> check_replies{0};
// Put-then-AM: the handler sees the value the blocking put wrote before the request was sent.
void check_req(gasnet_token_t t, gasnet_handlerarg_t off, gasnet_handlerarg_t v) {
    int32_t seen;
    memcpy(&seen, seg(gasnet_mynode()) + off, sizeof seen);
    CHECK_EQ(seen, v);
    GASNET_SAFE(gasnet_AMReplyShort0(t, H_CHECK_REP));
}
void check_rep(gasnet_token_t) { check_replies.fetch_add(1); }

} // namespace

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    gasnet_handlerentry_t tab[] = {{H_CHECK, (void (*)())check_req}, {H_CHECK_REP, (void (*)())check_rep}};
    GASNET_SAFE(gasnet_attach(tab, 2, kSeg, GASNET_PAGESIZE));
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes();
    const gasnet_node_t right = (me + 1) % n, left = (me + n - 1) % n;
    segs = new gasnet_seginfo_t[n];
    GASNET_SAFE(gasnet_getSegmentInfo(segs, int(n)));
    for (gasnet_node_t k = 0; k < n; ++k) {
        CHECK(segs[k].size >= kSeg);
        CHECK((uintptr_t)segs[k].addr % GASNET_PAGESIZE == 0);
        CHECK(segs[k].size % GASNET_PAGESIZE == 0);
    }
    // The get area: written by its owner (first touch of fresh pages happens remotely for the rest).
    fill(seg(me) + kGetArea, kArea, 1000 + me);
    test_barrier();

    const size_t sizes[] = {0,    1,    2,    3,    4,     7,     8,     15,    16,    31,     64,       100,
                            1000, 4095, 4096, 4097, 32767, 32768, 65535, 65536, 65537, 100000, 1u << 20, 4u << 20};
    const size_t offsets[] = {0, 1, 3, 7};
    std::vector<unsigned char> src(4u << 20), dst((4u << 20) + 8);
    TEST_SECTION("put/get: sizes 0 .. 4 MiB x aligned/unaligned x 7 ways");
    for (int v = 0; v < kVariants; ++v) {
        uint32_t last_seed = 0;
        size_t last_n = 0, last_off = 0;
        for (size_t sz : sizes)
            for (size_t off : offsets) {
                const uint32_t seed = uint32_t(v * 100000 + sz * 7 + off * 3 + me);
                fill(src.data(), sz, seed);
                char *remote = seg(right) + off;
                put_v(v, right, remote, src.data(), sz);
                memset(dst.data(), 0x5A, sz + 8);
                get_v(v, dst.data() + off, right, remote, sz); // read back what we wrote
                expect(dst.data() + off, sz, seed, variant_name(v), sz, off);
                for (size_t j = 0; j < off; ++j) CHECK_EQ(dst[j], 0x5A);
                CHECK_EQ(dst[off + sz], 0x5A);
                // Read the owner-filled area at the same size and offset.
                get_v(v, dst.data(), right, seg(right) + kGetArea + off, sz);
                for (size_t j = 0; j < sz; ++j)
                    if (dst[j] != pat(off + j, 1000 + right)) {
                        fprintf(stderr, "node %u: get (%s) size %zu offset %zu: byte %zu wrong\n", me, variant_name(v),
                                sz, off, j);
                        gasnet_exit(1);
                    }
                last_seed = seed;
                last_n = sz;
                last_off = off;
            }
        test_barrier();
        // What the left neighbour wrote last is in place here.
        const uint32_t left_seed = last_seed - me + left;
        expect(seg(me) + last_off, last_n, left_seed, "target-side check", last_n, last_off);
        test_barrier();
    }

    TEST_SECTION("non-bulk sources may be reused at once");
    {
        char *remote = seg(right) + kMisc;
        std::vector<unsigned char> buf(200000);
        for (size_t sz : {size_t(8), size_t(4096), size_t(65536), size_t(200000)}) {
            fill(buf.data(), sz, 7);
            gasnet_handle_t h = gasnet_put_nb(right, remote, buf.data(), sz);
            memset(buf.data(), 0, sz); // allowed right after initiation
            gasnet_wait_syncnb(h);
            gasnet_get(dst.data(), right, remote, sz);
            expect(dst.data(), sz, 7, "put_nb source reuse", sz, 0);
            fill(buf.data(), sz, 8);
            gasnet_put_nbi(right, remote, buf.data(), sz);
            memset(buf.data(), 0, sz);
            gasnet_wait_syncnbi_puts();
            gasnet_get(dst.data(), right, remote, sz);
            expect(dst.data(), sz, 8, "put_nbi source reuse", sz, 0);
        }
    }
    test_barrier();

    TEST_SECTION("memset, memset_nb, memset_nbi");
    {
        char *remote = seg(right) + kMisc;
        for (size_t sz : {size_t(1), size_t(100), size_t(65536), size_t(300001)}) {
            for (int way = 0; way < 3; ++way) {
                std::vector<unsigned char> ones(sz + 2, 0x11);
                gasnet_put(right, remote, ones.data(), sz + 2);
                if (way == 0)
                    gasnet_memset(right, remote + 1, 0x1AB, sz);
                else if (way == 1)
                    gasnet_wait_syncnb(gasnet_memset_nb(right, remote + 1, 0x1AB, sz));
                else {
                    gasnet_memset_nbi(right, remote + 1, 0x1AB, sz);
                    gasnet_wait_syncnbi_puts();
                }
                gasnet_get(dst.data(), right, remote, sz + 2);
                CHECK_EQ(dst[0], 0x11);
                for (size_t j = 1; j <= sz; ++j) CHECK_EQ(dst[j], 0xAB);
                CHECK_EQ(dst[sz + 1], 0x11);
            }
        }
    }
    test_barrier();

    TEST_SECTION("value put/get");
    {
        char *remote = seg(right) + kMisc + 64;
        const gasnet_register_value_t v = 0x8877665544332211ull;
        for (size_t nb = 1; nb <= 8; ++nb) {
            std::vector<unsigned char> ff(16, 0xFF);
            gasnet_put(right, remote - 4, ff.data(), 16);
            if (nb % 3 == 0)
                gasnet_put_val(right, remote, v, nb);
            else if (nb % 3 == 1)
                gasnet_wait_syncnb(gasnet_put_nb_val(right, remote, v, nb));
            else {
                gasnet_put_nbi_val(right, remote, v, nb);
                gasnet_wait_syncnbi_all();
            }
            gasnet_get(dst.data(), right, remote - 4, 16);
            for (int j = 0; j < 4; ++j) CHECK_EQ(dst[j], 0xFF);
            for (size_t j = 0; j < nb; ++j) CHECK_EQ(dst[4 + j], (v >> (8 * j)) & 0xFF); // low bytes, native order
            for (size_t j = 4 + nb; j < 16; ++j) CHECK_EQ(dst[j], 0xFF);
            const gasnet_register_value_t mask = nb == 8 ? ~0ull : ((1ull << (8 * nb)) - 1);
            CHECK_EQ(gasnet_get_val(right, remote, nb), v & mask);
            gasnet_valget_handle_t vh = gasnet_get_nb_val(right, remote, nb);
            CHECK_EQ(gasnet_wait_syncnb_valget(vh), v & mask);
            // Zero-extended, never sign-extended.
            CHECK_EQ(gasnet_get_val(right, remote - 1, 1), 255);
        }
    }
    test_barrier();

    TEST_SECTION("synchronization rules");
    {
        gasnet_wait_syncnb(GASNET_INVALID_HANDLE);
        CHECK_EQ(gasnet_try_syncnb(GASNET_INVALID_HANDLE), GASNET_OK);
        gasnet_handle_t zero;
        memset(&zero, 0, sizeof zero); // NOLINT(bugprone-sizeof-expression): the handle is a pointer, on purpose
        CHECK(zero == GASNET_INVALID_HANDLE);
        CHECK_EQ(gasnet_try_syncnb_all(nullptr, 0), GASNET_OK);
        CHECK_EQ(gasnet_try_syncnb_some(nullptr, 0), GASNET_OK);
        gasnet_wait_syncnb_all(nullptr, 0);
        gasnet_wait_syncnb_some(nullptr, 0);
        CHECK_EQ(gasnet_try_syncnbi_gets(), GASNET_OK);
        CHECK_EQ(gasnet_try_syncnbi_puts(), GASNET_OK);
        CHECK_EQ(gasnet_try_syncnbi_all(), GASNET_OK);
        // try_syncnb goes from NOT_READY (maybe) to OK, with the data in place.
        char *remote = seg(right) + kGetArea;
        gasnet_handle_t h = gasnet_get_nb_bulk(dst.data(), right, remote, 1u << 20);
        int rc;
        while ((rc = gasnet_try_syncnb(h)) == GASNET_ERR_NOT_READY) {
        }
        CHECK_EQ(rc, GASNET_OK);
        for (size_t j = 0; j < (1u << 20); j += 4099) CHECK_EQ(dst[j], pat(j, 1000 + right));
        // Arrays with INVALID entries.
        std::vector<gasnet_handle_t> hs(64, GASNET_INVALID_HANDLE);
        std::vector<std::vector<unsigned char>> bufs(64, std::vector<unsigned char>(8192));
        for (size_t i = 0; i < hs.size(); i += 2) hs[i] = gasnet_get_nb(bufs[i].data(), right, remote + i * 8192, 8192);
        while (gasnet_try_syncnb_all(hs.data(), hs.size()) == GASNET_ERR_NOT_READY) {
        }
        for (gasnet_handle_t x : hs) CHECK(x == GASNET_INVALID_HANDLE);
        for (size_t i = 0; i < hs.size(); i += 2) CHECK_EQ(bufs[i][100], pat(i * 8192 + 100, 1000 + right));
        for (size_t i = 1; i < hs.size(); i += 3)
            hs[i] = gasnet_put_nb_bulk(right, seg(right) + kMisc + i * 8192, bufs[i].data(), 8192);
        size_t left_valid = 0;
        for (gasnet_handle_t x : hs) left_valid += x != GASNET_INVALID_HANDLE;
        while (left_valid) {
            gasnet_wait_syncnb_some(hs.data(), hs.size());
            size_t now = 0;
            for (gasnet_handle_t x : hs) now += x != GASNET_INVALID_HANDLE;
            CHECK(now < left_valid); // at least one completed and was set INVALID
            left_valid = now;
        }
        CHECK_EQ(gasnet_try_syncnb_some(hs.data(), hs.size()), GASNET_OK); // all INVALID
        // nbi gets and puts are separate sets.
        gasnet_get_nbi_bulk(dst.data(), right, remote, 1u << 20);
        gasnet_put_nbi_bulk(right, seg(right) + kMisc, src.data(), 1u << 20);
        gasnet_wait_syncnbi_puts();
        gasnet_wait_syncnbi_gets();
        CHECK_EQ(gasnet_try_syncnbi_all(), GASNET_OK);
        for (size_t j = 0; j < (1u << 20); j += 4097) CHECK_EQ(dst[j], pat(j, 1000 + right));
    }
    test_barrier();

    TEST_SECTION("access regions");
    {
        char *remote = seg(right) + kMisc;
        gasnet_begin_nbi_accessregion();
        gasnet_handle_t empty = gasnet_end_nbi_accessregion(); // an empty region is fine
        gasnet_wait_syncnb(empty);
        fill(src.data(), 1u << 20, 55);
        gasnet_put_nbi(right, remote + (2u << 20), src.data(), 4096); // outside the region
        gasnet_begin_nbi_accessregion();
        for (int i = 0; i < 256; ++i)
            gasnet_put_nbi_bulk(right, remote + size_t(i) * 4096, src.data() + size_t(i) * 4096, 4096);
        gasnet_get_nbi(dst.data(), right, seg(right) + kGetArea, 65536);
        gasnet_handle_t inner =
            gasnet_get_nb(dst.data() + 65536, right, seg(right) + kGetArea + 65536, 100); // explicit: its own sync
        gasnet_wait_syncnb(inner);
        gasnet_handle_t region = gasnet_end_nbi_accessregion();
        gasnet_wait_syncnbi_puts(); // syncs the put outside the region only
        gasnet_wait_syncnb(region);
        gasnet_get(dst.data() + 100000, right, remote, 1u << 20);
        expect(dst.data() + 100000, 1u << 20, 55, "access region puts", 1u << 20, 0);
        for (size_t j = 0; j < 65536 + 100; j += 7) CHECK_EQ(dst[j], pat(j, 1000 + right));
    }
    test_barrier();

    TEST_SECTION("a blocking put is visible to an AM handler sent after it");
    for (int i = 0; i < 200; ++i) {
        const int32_t val = int32_t(i * 7919 + me);
        const size_t off = kMisc + 4 * size_t(i % 1000);
        gasnet_put(right, seg(right) + off, const_cast<int32_t *>(&val), sizeof val);
        const int before = check_replies.load();
        GASNET_SAFE(gasnet_AMRequestShort2(right, H_CHECK, gasnet_handlerarg_t(off), val));
        GASNET_BLOCKUNTIL(check_replies.load() == before + 1);
    }
    test_barrier();
    if (me == 0) printf("putget_test: OK (%u nodes)\n", n);
    gasnet_exit(0);
}
