// SPDX-License-Identifier: BSD-3-Clause
// Conformance: message and data ordering, I/O vectors, volatile MDs (spec §2.7, §3.10.1-2,
// §3.12.1 PTL_IOVEC).
//
// Rank 0 is the target, rank 1 the initiator.
#include <map>
#include <sched.h>
#include <set>
#include <vector>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class Ordering : public PtlTest {};
constexpr ptl_pt_index_t kPt = 80;

// Message order (§2.7, §2.7.2): messages of any size from one initiator are matched in the
// order they were sent, so a series of use-once MEs takes them one by one in order. With
// PTL_MD_UNORDERED every message still arrives exactly once.
TEST_F(Ordering, MatchingOrderIsKeptForAllSizesUnlessUnordered) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    static const ptl_size_t sizes[] = {1, 64, 4096, 65536, 300000, 0, 8, 131072};
    constexpr size_t kN = 24;
    constexpr ptl_size_t kMax = 300000;
    for (bool unordered : {false, true}) {
        SCOPED_TRACE(unordered ? "PTL_MD_UNORDERED" : "ordered");
        std::vector<std::vector<uint8_t>> bufs;
        ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
        const ptl_pt_index_t pt = kPt + (unordered ? 1 : 0);
        if (rank() == 0) {
            eq = make_eq(ni, 4 * kN);
            make_pt(ni, eq, 0, pt);
            bufs.resize(kN);
            for (size_t i = 0; i < kN; ++i) {
                bufs[i].assign(kMax, 0);
                append_me(ni, pt, me_desc(bufs[i].data(), kMax, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0x59),
                          PTL_PRIORITY_LIST, tag(i), eq);
            }
        }
        barrier();
        if (rank() == 1) {
            std::vector<uint8_t> src(kMax * 2);
            fill_pattern(src.data(), src.size(), 59);
            ptl_handle_eq_t ieq = make_eq(ni, 4 * kN);
            ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), ieq, PTL_CT_NONE,
                                         (unordered ? PTL_MD_UNORDERED : 0u) | PTL_MD_EVENT_SEND_DISABLE);
            for (size_t i = 0; i < kN; ++i)
                ASSERT_PTL(PtlPut(md, 1000 * i, sizes[i % std::size(sizes)], PTL_ACK_REQ, ni.id_of(0), pt, 0x59, 0,
                                  tag(i), i));
            std::set<uintptr_t> acked;
            for (size_t i = 0; i < kN; ++i) {
                ptl_event_t ev = expect_event(ieq, PTL_EVENT_ACK);
                EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
                const uintptr_t k = reinterpret_cast<uintptr_t>(ev.user_ptr);
                EXPECT_TRUE(acked.insert(k).second) << describe(ev);
                EXPECT_EQ(sizes[k % std::size(sizes)], ev.mlength) << describe(ev);
            }
        } else if (rank() == 0) {
            std::set<ptl_hdr_data_t> seen;
            for (size_t k = 0; k < 2 * kN; ++k) {
                ptl_event_t ev = wait_event(eq);
                if (ev.type == PTL_EVENT_AUTO_UNLINK) continue;
                ASSERT_EQ(Kind{PTL_EVENT_PUT}, Kind{ev.type}) << describe(ev);
                const size_t me = reinterpret_cast<uintptr_t>(ev.user_ptr);
                const ptl_hdr_data_t msg = ev.hdr_data;
                ASSERT_LT(msg, kN) << describe(ev);
                EXPECT_TRUE(seen.insert(msg).second) << describe(ev);
                if (!unordered) {
                    EXPECT_EQ(msg, me) << "message " << msg << " matched ME " << me;
                }
                const ptl_size_t len = sizes[msg % std::size(sizes)];
                EXPECT_EQ(len, ev.mlength) << describe(ev);
                EXPECT_EQ(-1, check_pattern(bufs[me].data(), len, 59, 1000 * msg))
                    << "message " << msg << " in ME " << me;
            }
            EXPECT_EQ(kN, seen.size());
        }
        barrier();
    }
}

// Data order (§2.7.1): for messages shorter than max_waw_ordered_size (write after write,
// read after write) and max_war_ordered_size (write after read) between one pair, the bytes at one
// offset of one ME are accessed in message order. A chain get, put, get, put, ... of 4-byte
// messages on one word must read 0, 1, 2, ...; a burst of 32-byte puts at one offset leaves the
// last one's data.
TEST_F(Ordering, ShortMessagesKeepPerAddressDataOrder) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    ASSERT_GE(ni.limits.max_waw_ordered_size, 64u);
    ASSERT_GE(ni.limits.max_war_ordered_size, 8u);
    constexpr uint32_t kChain = 200;
    constexpr size_t kBurst = 200;
    std::vector<uint8_t> word(64, 0);
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        eq = make_eq(ni, 2048);
        make_pt(ni, eq, 0, kPt);
        append_me(ni, kPt, me_desc(word.data(), word.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_COMM_DISABLE),
                  PTL_PRIORITY_LIST, tag(1), eq);
    }
    barrier();
    if (rank() == 1) {
        ptl_handle_eq_t ieq = make_eq(ni, 4 * kChain + 4 * kBurst);
        // Chain: put i writes value i (4 bytes at offset 0); get i reads offset 0.
        std::vector<uint32_t> values(kChain + 1), replies(kChain + 1, 0xFFFFFFFFu);
        for (uint32_t i = 0; i <= kChain; ++i) values[i] = i;
        ptl_handle_md_t vmd =
            bind_md(ni, values.data(), values.size() * 4, ieq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
        ptl_handle_md_t rmd = bind_md(ni, replies.data(), replies.size() * 4, ieq);
        for (uint32_t i = 0; i <= kChain; ++i) {
            ASSERT_PTL(PtlGet(rmd, 4 * i, 4, ni.id_of(0), kPt, 0, 0, tag(i)));
            if (i < kChain) {
                ASSERT_PTL(PtlPut(vmd, 4 * (i + 1), 4, PTL_NO_ACK_REQ, ni.id_of(0), kPt, 0, 0, tag(1000 + i), 0));
            }
        }
        for (uint32_t k = 0; k <= kChain; ++k) {
            ptl_event_t ev = expect_event(ieq, PTL_EVENT_REPLY);
            EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        }
        for (uint32_t i = 0; i <= kChain; ++i) EXPECT_EQ(i, replies[i]) << "get " << i << " saw another put's value";

        // Burst: kBurst puts of 32 bytes at offset 16, put j filled with byte j+1; the last one acked.
        std::vector<uint8_t> burst(32 * kBurst);
        for (size_t j = 0; j < kBurst; ++j) std::memset(burst.data() + 32 * j, static_cast<int>(j + 1), 32);
        ptl_handle_md_t bmd = bind_md(ni, burst.data(), burst.size(), ieq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
        for (size_t j = 0; j < kBurst; ++j)
            ASSERT_PTL(PtlPut(bmd, 32 * j, 32, j + 1 == kBurst ? PTL_ACK_REQ : PTL_NO_ACK_REQ, ni.id_of(0), kPt, 0, 16,
                              tag(5000 + j), 0));
        ptl_event_t ev = expect_event(ieq, PTL_EVENT_ACK);
        EXPECT_EQ(tag(5000 + kBurst - 1), ev.user_ptr);
        // Read after write: a get of the word after the burst sees the last put.
        std::vector<uint8_t> check(32, 0);
        ptl_handle_md_t cmd = bind_md(ni, check.data(), check.size(), ieq);
        ASSERT_PTL(PtlGet(cmd, 0, 32, ni.id_of(0), kPt, 0, 16, tag(9999)));
        expect_event(ieq, PTL_EVENT_REPLY);
        EXPECT_EQ(-1, check_fill(check.data(), 32, static_cast<uint8_t>(kBurst)));
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(-1, check_fill(word.data() + 16, 32, static_cast<uint8_t>(kBurst)));
    }
    // The NI goes before `word` does: the reply to the last get may have reached rank 1 (and rank 1
    // the barrier) while this rank's progress thread is still inside the sendmsg that carried it,
    // and ASan's sendmsg checks the iovecs after the system call returns (a use-after-free report
    // about bytes that already left, 1 run in ~150).
    close_ni(ni);
}

// §3.3 (the NI makes progress without the application): a burst of small puts that the transport
// coalesces (PORTICO_TCP_COALESCE_US) all arrive while the initiator is away from Portals, here
// blocked in the launcher's barrier, with no call that would poll. Held frames must leave through
// the initiator's progress thread, which may be resting when the burst starts (it has nothing to
// do while the initiator waits in the previous round's barrier); if they waited for the
// initiator's next call, the target would wait forever.
TEST_F(Ordering, BurstArrivesWhileTheInitiatorIsAway) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    constexpr size_t kBurst = 100;
    constexpr size_t kSlot = 64;
    constexpr int kRounds = 20;
    std::vector<uint8_t> buf(kBurst * kSlot, 0);
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        ct = make_ct(ni);
        make_pt(ni, PTL_EQ_NONE, 0, kPt + 2);
        append_me(ni, kPt + 2,
                  me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE,
                          0x77, 0, ct),
                  PTL_PRIORITY_LIST, tag(1), PTL_EQ_NONE);
    } else if (rank() == 1) {
        md = bind_md(ni, buf.data(), buf.size(), PTL_EQ_NONE);
    }
    barrier();
    for (int round = 0; round < kRounds; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        if (rank() == 1) {
            fill_pattern(buf.data(), buf.size(), static_cast<uint32_t>(round));
            // Sizes 1..64 bytes, each put into its own slot.
            for (size_t i = 0; i < kBurst; ++i)
                ASSERT_PTL(PtlPut(md, kSlot * i, 1 + i % kSlot, PTL_NO_ACK_REQ, ni.id_of(0), kPt + 2, 0x77, kSlot * i,
                                  nullptr, 0));
        } else if (rank() == 0) {
            const ptl_size_t want = kBurst * static_cast<ptl_size_t>(round + 1);
            EXPECT_EQ((Ct{want, 0}), ct_wait(ct, want));
            std::vector<uint8_t> sent(buf.size());
            fill_pattern(sent.data(), sent.size(), static_cast<uint32_t>(round));
            for (size_t i = 0; i < kBurst; ++i) {
                const size_t n = 1 + i % kSlot;
                ASSERT_EQ(0, std::memcmp(sent.data() + kSlot * i, buf.data() + kSlot * i, n)) << "put " << i;
            }
        }
        barrier();
    }
}

// §3.3 again, at the moment the application stops: while a process polls by itself (a long
// ping-pong of waits) its progress thread parks for longer and longer, and it must still take the
// traffic over once the application stops calling Portals. Rank 0 answers a ping-pong of puts
// with PtlCTWait, then spins on its own memory (loads only, no Portals call) until rank 1's last
// put lands there: only rank 0's progress thread can deliver it.
TEST_F(Ordering, ProgressTakesOverWhenTheApplicationStopsPolling) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    constexpr ptl_pt_index_t pt = kPt + 3;
    constexpr ptl_size_t kRounds = 3000;
    constexpr uint64_t kMarker = 0x600df00d;
    std::vector<uint64_t> box(2, 0);
    uint64_t out[2] = {0, 0};
    ptl_handle_ct_t ct = make_ct(ni);
    make_pt(ni, PTL_EQ_NONE, 0, pt);
    append_me(ni, pt,
              me_desc(box.data(), box.size() * sizeof box[0],
                      PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE, 0, 0, ct),
              PTL_PRIORITY_LIST, tag(1), PTL_EQ_NONE);
    const ptl_handle_md_t md = bind_md(ni, out, sizeof out, PTL_EQ_NONE);
    barrier();
    const ptl_process_t peer = ni.id_of(1 - rank());
    auto put = [&](uint64_t value, ptl_size_t at) {
        out[at / 8] = value;
        ASSERT_PTL(PtlPut(md, at, 8, PTL_NO_ACK_REQ, peer, pt, 0, at, nullptr, 0));
    };
    for (ptl_size_t i = 1; i <= kRounds; ++i) {
        if (rank() == 1) put(i, 0);
        ASSERT_EQ((Ct{i, 0}), ct_wait(ct, i));
        ASSERT_EQ(i, box[0]);
        if (rank() == 0) put(i, 0);
    }
    if (rank() == 1) {
        put(kMarker, 8);
    } else {
        // Loads only: the put can land only through the progress thread.
        while (__atomic_load_n(&box[1], __ATOMIC_ACQUIRE) != kMarker) sched_yield();
        // The count follows the data (the progress thread may be between the two): wait for it.
        EXPECT_EQ((Ct{kRounds + 1, 0}), ct_wait(ct, kRounds + 1));
    }
    barrier();
}

// Builds an iovec array over separately allocated segments of the given sizes.
struct Segments {
    std::vector<std::vector<uint8_t>> seg;
    std::vector<ptl_iovec_t> iov;
    explicit Segments(std::initializer_list<size_t> sizes, uint8_t fill) {
        for (size_t s : sizes) seg.emplace_back(s, fill);
        for (auto &s : seg) iov.push_back({s.data(), s.size()});
    }
    size_t total() const {
        size_t n = 0;
        for (const auto &s : seg) n += s.size();
        return n;
    }
    // Logical byte i of the region.
    uint8_t &at(size_t i) {
        for (auto &s : seg) {
            if (i < s.size()) return s[i];
            i -= s.size();
        }
        static uint8_t none;
        ADD_FAILURE() << "offset past the iovec";
        return none;
    }
    void *address(size_t i) { return &at(i); }
};

// §3.10.1-2, §3.11.1, §3.12.1 PTL_IOVEC: I/O vector MDs, MEs and LEs behave as one
// contiguous region: offsets count across segments, data crosses segment boundaries, truncation
// applies to the total length, and the event start is the address of the first byte used.
TEST_F(Ordering, IovecRegionsActContiguous) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    Ni nm = open_ni(kNonMatchingPhysical);
    if (ni.limits.max_iovecs < 3 || nm.limits.max_iovecs < 3) GTEST_SKIP() << "max_iovecs < 3";
    Segments t({7, 300, 200}, 0); // target ME, 507 bytes
    Segments l({50, 1, 49}, 0);   // target LE, 100 bytes
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE, leq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        eq = make_eq(ni);
        make_pt(ni, eq, 0, kPt);
        append_me(ni, kPt, me_desc(t.iov.data(), t.iov.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_IOVEC, 6),
                  PTL_PRIORITY_LIST, tag(1), eq);
        leq = make_eq(nm);
        make_pt(nm, leq, 0, kPt);
        append_le(nm, kPt, le_desc(l.iov.data(), l.iov.size(), PTL_LE_OP_PUT | PTL_IOVEC), PTL_PRIORITY_LIST, tag(2),
                  leq);
    }
    barrier();
    struct Put {
        ptl_size_t local, len, roff, mlength;
    };
    const Put puts[] = {{5, 500, 3, 500}, {0, 300, 10, 300}, {100, 400, 300, 207}};
    if (rank() == 1) {
        Segments s({10, 1, 500}, 0); // initiator MD, 511 bytes
        for (size_t i = 0; i < s.total(); ++i) s.at(i) = pattern_byte(60, i);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, s.iov.data(), s.iov.size(), ieq, PTL_CT_NONE, PTL_IOVEC);
        for (size_t i = 0; i < std::size(puts); ++i) {
            ASSERT_PTL(
                PtlPut(md, puts[i].local, puts[i].len, PTL_ACK_REQ, ni.id_of(0), kPt, 6, puts[i].roff, tag(i), i));
            expect_send_and_ack(ieq, tag(i), puts[i].len, puts[i].mlength, puts[i].roff);
        }
        // A get from the iovec ME into the iovec MD, across segments on both sides.
        Segments d({3, 3, 394}, 0xAA);
        ptl_handle_md_t dmd = bind_md(ni, d.iov.data(), d.iov.size(), ieq, PTL_CT_NONE, PTL_IOVEC);
        ASSERT_PTL(PtlGet(dmd, 1, 390, ni.id_of(0), kPt, 6, 5, tag(10)));
        check_init_event(wait_event(ieq), {.type = PTL_EVENT_REPLY,
                                           .user_ptr = tag(10),
                                           .mlength = 390,
                                           .remote_offset = 5,
                                           .list = PTL_PRIORITY_LIST});
        // Target bytes after the three puts: [3,10) from put 0, [10,300) from put 1, [300,507)
        // from put 2 (its first 207 bytes).
        auto target_byte = [&](size_t off) -> uint8_t {
            if (off >= 300) return pattern_byte(60, 100 + (off - 300));
            if (off >= 10) return pattern_byte(60, off - 10);
            return pattern_byte(60, 5 + (off - 3));
        };
        EXPECT_EQ(0xAA, d.at(0));
        for (size_t i = 0; i < 390; ++i) ASSERT_EQ(target_byte(5 + i), d.at(1 + i)) << "reply byte " << i;
        for (size_t i = 391; i < d.total(); ++i) ASSERT_EQ(0xAA, d.at(i)) << "byte " << i << " beyond the reply";

        Sender n(nm, 128, 160);
        n.put(kPt, 100, 0, 40, 20, 60, 40);
    } else if (rank() == 0) {
        for (size_t i = 0; i < std::size(puts); ++i) {
            check_target_event(wait_event(eq),
                               {.type = PTL_EVENT_PUT,
                                .initiator = 1,
                                .pt_index = kPt,
                                .match_bits = 6,
                                .rlength = puts[i].len,
                                .mlength = puts[i].mlength,
                                .remote_offset = puts[i].roff,
                                .start = t.address(puts[i].roff),
                                .user_ptr = tag(1),
                                .hdr_data = i},
                               ni);
        }
        check_target_event(wait_event(eq),
                           {.type = PTL_EVENT_GET,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = 6,
                            .rlength = 390,
                            .mlength = 390,
                            .remote_offset = 5,
                            .start = t.address(5),
                            .user_ptr = tag(1)},
                           ni);
        for (size_t i = 0; i < 3; ++i) EXPECT_EQ(0, t.at(i)) << "byte " << i << " before the first put";
        for (size_t i = 0; i < 7; ++i) EXPECT_EQ(pattern_byte(60, 5 + i), t.at(3 + i));
        check_target_event(wait_event(leq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = 0,
                            .rlength = 100,
                            .mlength = 60,
                            .remote_offset = 40,
                            .start = l.address(40),
                            .user_ptr = tag(2),
                            .hdr_data = 20},
                           nm);
        for (size_t i = 0; i < 60; ++i) ASSERT_EQ(pattern_byte(160, i), l.at(40 + i)) << "LE byte " << 40 + i;
        for (size_t i = 0; i < 40; ++i) ASSERT_EQ(0, l.at(i));
    }
    barrier();
}

// §3.10.1 PTL_MD_VOLATILE: with a volatile MD the buffer may be reused as soon as PtlPut
// returns, for lengths up to max_volatile_size; the target receives what the buffer held at the
// call.
TEST_F(Ordering, VolatileMdBufferIsReusableOnReturn) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    const ptl_size_t len = std::min<ptl_size_t>(ni.limits.max_volatile_size, 4096);
    if (len == 0) GTEST_SKIP() << "max_volatile_size is 0";
    constexpr size_t kN = 100;
    std::vector<uint8_t> buf(len * kN, 0);
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        eq = make_eq(ni, 2 * kN);
        make_pt(ni, eq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL), PTL_PRIORITY_LIST,
                  tag(1), eq);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(len);
        ptl_handle_eq_t ieq = make_eq(ni, 2 * kN + 8);
        ptl_handle_md_t md = bind_md(ni, src.data(), len, ieq, PTL_CT_NONE, PTL_MD_VOLATILE);
        for (size_t i = 0; i < kN; ++i) {
            fill_pattern(src.data(), len, static_cast<uint32_t>(600 + i));
            ASSERT_PTL(PtlPut(md, 0, len, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 0, tag(i), i));
            std::memset(src.data(), 0xFF, len); // allowed right away
        }
        int sends = 0, acks = 0;
        for (size_t k = 0; k < 2 * kN; ++k) {
            ptl_event_t ev = wait_event(ieq);
            EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
            sends += ev.type == PTL_EVENT_SEND;
            acks += ev.type == PTL_EVENT_ACK;
        }
        EXPECT_EQ(static_cast<int>(kN), sends);
        EXPECT_EQ(static_cast<int>(kN), acks);
    } else if (rank() == 0) {
        for (size_t k = 0; k < kN; ++k) expect_event(eq, PTL_EVENT_PUT);
        for (size_t i = 0; i < kN; ++i)
            EXPECT_EQ(-1, check_pattern(buf.data() + len * i, len, static_cast<uint32_t>(600 + i))) << "put " << i;
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
