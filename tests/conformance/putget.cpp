// SPDX-License-Identifier: BSD-3-Clause
// Conformance: put, get, memory descriptors and event fields (spec §3.10, §3.11, §3.13, §3.15.1-3;
// §2.2 unreliable puts, and Portico's PTL_NI_SEGV decision).
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <map>
#include <sched.h>

#include <portico_ext.h>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class PutGet : public PtlTest, public ::testing::WithParamInterface<unsigned> {};
class PutGetMd : public PtlTest {};

constexpr ptl_pt_index_t kPt = 20;
constexpr ptl_match_bits_t kBits = 0xABCDEF0123456789ull;

// §3.15.2, Table 3-3: a put, both ranks at once: data, every PUT field, SEND and ACK.
TEST_P(PutGet, PutAllFieldsBothDirections) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(GetParam());
    if (rank() < 2) {
        ptl_handle_eq_t teq = make_eq(ni), ieq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        std::vector<uint8_t> rbuf(4096, 0), sbuf(2048);
        fill_pattern(sbuf.data(), sbuf.size(), 70 + rank());
        append_entry(ni, kPt, me_desc(rbuf.data(), rbuf.size(), PTL_ME_OP_PUT, kBits), PTL_PRIORITY_LIST,
                     tag(0x100 + rank()), teq);
        ptl_handle_md_t md = bind_md(ni, sbuf.data(), sbuf.size(), ieq);
        barrier();
        const ptl_hdr_data_t hdr = 0xDEADBEEF00000000ull | static_cast<unsigned>(rank());
        ASSERT_PTL(PtlPut(md, 16, 1000, PTL_ACK_REQ, ni.id_of(peer()), kPt, kBits, 100, tag(0x200 + rank()), hdr));
        expect_send_and_ack(ieq, tag(0x200 + rank()), 1000, 1000, 100);
        check_target_event(wait_event(teq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = peer(),
                            .pt_index = kPt,
                            .match_bits = kBits,
                            .rlength = 1000,
                            .mlength = 1000,
                            .remote_offset = 100,
                            .start = rbuf.data() + 100,
                            .user_ptr = tag(0x100 + rank()),
                            .hdr_data = 0xDEADBEEF00000000ull | static_cast<unsigned>(peer())},
                           ni);
        EXPECT_EQ(-1, check_pattern(rbuf.data() + 100, 1000, 70 + peer(), 16));
        EXPECT_EQ(-1, check_fill(rbuf.data(), 100, 0));
        EXPECT_EQ(-1, check_fill(rbuf.data() + 1100, rbuf.size() - 1100, 0));
        EXPECT_EQ(-1, check_pattern(sbuf.data(), sbuf.size(), 70 + rank()))
            << "the source buffer of a put must not be modified";
        barrier();
        expect_eq_empty(ieq);
        expect_eq_empty(teq);
        EXPECT_PTL(PtlMDRelease(md));
    } else {
        barrier();
        barrier();
    }
}

// §3.15.3, Table 3-3: a get, both ranks at once: REPLY data and fields, GET fields, and
// no SEND event for a get.
TEST_P(PutGet, GetAllFieldsBothDirections) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(GetParam());
    if (rank() < 2) {
        ptl_handle_eq_t teq = make_eq(ni), ieq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        std::vector<uint8_t> tbuf(4096), dbuf(1024, 0);
        fill_pattern(tbuf.data(), tbuf.size(), 50 + rank());
        append_entry(ni, kPt, me_desc(tbuf.data(), tbuf.size(), PTL_ME_OP_GET, kBits), PTL_PRIORITY_LIST,
                     tag(0x300 + rank()), teq);
        ptl_handle_md_t md = bind_md(ni, dbuf.data(), dbuf.size(), ieq);
        barrier();
        ASSERT_PTL(PtlGet(md, 8, 500, ni.id_of(peer()), kPt, kBits, 32, tag(0x400 + rank())));
        check_init_event(wait_event(ieq), {.type = PTL_EVENT_REPLY,
                                           .user_ptr = tag(0x400 + rank()),
                                           .mlength = 500,
                                           .remote_offset = 32,
                                           .list = PTL_PRIORITY_LIST});
        EXPECT_EQ(-1, check_pattern(dbuf.data() + 8, 500, 50 + peer(), 32));
        EXPECT_EQ(-1, check_fill(dbuf.data(), 8, 0));
        EXPECT_EQ(-1, check_fill(dbuf.data() + 508, dbuf.size() - 508, 0));
        // GET: hdr_data is undefined for GET events, so it is not checked.
        check_target_event(wait_event(teq),
                           {.type = PTL_EVENT_GET,
                            .initiator = peer(),
                            .pt_index = kPt,
                            .match_bits = kBits,
                            .rlength = 500,
                            .mlength = 500,
                            .remote_offset = 32,
                            .start = tbuf.data() + 32,
                            .user_ptr = tag(0x300 + rank())},
                           ni);
        EXPECT_EQ(-1, check_pattern(tbuf.data(), tbuf.size(), 50 + rank()))
            << "a get must not modify the target buffer";
        barrier();
        expect_eq_empty(ieq, "(a get raises REPLY only)");
        expect_eq_empty(teq);
        EXPECT_PTL(PtlMDRelease(md));
    } else {
        barrier();
        barrier();
    }
}

// Many puts and gets of many sizes (0 B .. 256 KiB) in flight at once in both directions; every
// event counted and every byte checked.
TEST_P(PutGet, ManyConcurrentPutsAndGetsBothDirections) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(GetParam());
    if (rank() >= 2) {
        barrier();
        barrier();
        return;
    }
    static const ptl_size_t sizes[] = {0,    1,    8,     63,    64,     65,     1000, 4096,
                                       8191, 8192, 65536, 65537, 100000, 262144, 3,    777};
    constexpr size_t n = sizeof sizes / sizeof sizes[0];
    std::vector<ptl_size_t> off(n + 1, 0);
    for (size_t i = 0; i < n; ++i) off[i + 1] = off[i] + sizes[i];
    const ptl_size_t total = off[n];
    // Target entry: puts land in [0, total), gets read from [total, 2*total).
    std::vector<uint8_t> tbuf(2 * total, 0);
    fill_pattern(tbuf.data() + total, total, 90 + rank());
    // Initiator: puts come from [0, total) of sbuf, replies land in [0, total) of gbuf.
    std::vector<uint8_t> sbuf(total), gbuf(total, 0);
    fill_pattern(sbuf.data(), total, 80 + rank());
    ptl_handle_eq_t teq = make_eq(ni, 4 * n), ieq = make_eq(ni, 4 * n);
    make_pt(ni, teq, 0, kPt);
    append_entry(ni, kPt, me_desc(tbuf.data(), tbuf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, 5), PTL_PRIORITY_LIST,
                 tag(0xE), teq);
    ptl_handle_md_t smd = bind_md(ni, sbuf.data(), total, ieq);
    ptl_handle_md_t gmd = bind_md(ni, gbuf.data(), total, ieq);
    barrier();
    for (size_t i = 0; i < n; ++i) {
        ASSERT_PTL(PtlPut(smd, off[i], sizes[i], PTL_ACK_REQ, ni.id_of(peer()), kPt, 5, off[i], tag(0x1000 + i), i));
        ASSERT_PTL(PtlGet(gmd, off[i], sizes[i], ni.id_of(peer()), kPt, 5, total + off[i], tag(0x2000 + i)));
    }
    std::vector<int> sends(n), acks(n), replies(n), puts(n), gets(n);
    for (size_t k = 0; k < 3 * n; ++k) {
        ptl_event_t ev = wait_event(ieq);
        const uintptr_t u = reinterpret_cast<uintptr_t>(ev.user_ptr);
        const size_t i = u & 0xFFF;
        ASSERT_LT(i, n) << describe(ev);
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        if (ev.type == PTL_EVENT_SEND && (u & ~0xFFFu) == 0x1000) {
            ++sends[i];
            EXPECT_EQ(sizes[i], ev.mlength) << describe(ev);
        } else if (ev.type == PTL_EVENT_ACK && (u & ~0xFFFu) == 0x1000) {
            ++acks[i];
            EXPECT_EQ(sizes[i], ev.mlength) << describe(ev);
            EXPECT_EQ(off[i], ev.remote_offset) << describe(ev);
            EXPECT_EQ(static_cast<int>(PTL_PRIORITY_LIST), static_cast<int>(ev.ptl_list));
        } else if (ev.type == PTL_EVENT_REPLY && (u & ~0xFFFu) == 0x2000) {
            ++replies[i];
            EXPECT_EQ(sizes[i], ev.mlength) << describe(ev);
            EXPECT_EQ(total + off[i], ev.remote_offset) << describe(ev);
            EXPECT_EQ(-1, check_pattern(gbuf.data() + off[i], sizes[i], 90 + peer(), off[i]))
                << "reply " << i << " of " << sizes[i] << " bytes";
        } else {
            ADD_FAILURE() << "unexpected " << describe(ev);
        }
    }
    for (size_t k = 0; k < 2 * n; ++k) {
        ptl_event_t ev = wait_event(teq);
        if (ev.type == PTL_EVENT_PUT) {
            const size_t i = ev.hdr_data;
            ASSERT_LT(i, n) << describe(ev);
            ++puts[i];
            check_target_event(ev,
                               {.type = PTL_EVENT_PUT,
                                .initiator = peer(),
                                .pt_index = kPt,
                                .match_bits = 5,
                                .rlength = sizes[i],
                                .mlength = sizes[i],
                                .remote_offset = off[i],
                                .start = tbuf.data() + off[i],
                                .user_ptr = tag(0xE),
                                .hdr_data = i},
                               ni);
        } else if (ev.type == PTL_EVENT_GET) {
            // (offset, length) identifies the get.
            size_t j = 0;
            while (j < n && !(total + off[j] == ev.remote_offset && sizes[j] == ev.rlength)) ++j;
            ASSERT_LT(j, n) << describe(ev);
            ++gets[j];
            check_target_event(ev,
                               {.type = PTL_EVENT_GET,
                                .initiator = peer(),
                                .pt_index = kPt,
                                .match_bits = 5,
                                .rlength = sizes[j],
                                .mlength = sizes[j],
                                .remote_offset = total + off[j],
                                .start = tbuf.data() + total + off[j],
                                .user_ptr = tag(0xE)},
                               ni);
        } else {
            ADD_FAILURE() << "unexpected " << describe(ev);
        }
    }
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(1, sends[i]) << i;
        EXPECT_EQ(1, acks[i]) << i;
        EXPECT_EQ(1, replies[i]) << i;
        EXPECT_EQ(1, puts[i]) << i;
        EXPECT_EQ(1, gets[i]) << i;
    }
    EXPECT_EQ(-1, check_pattern(tbuf.data(), total, 80 + peer()));
    barrier();
    expect_eq_empty(ieq);
    expect_eq_empty(teq);
}

INSTANTIATE_TEST_SUITE_P(AllNiKinds, PutGet,
                         ::testing::Values(kMatchingPhysical, kNonMatchingPhysical, kMatchingLogical,
                                           kNonMatchingLogical),
                         [](const ::testing::TestParamInfo<unsigned> &param) { return ni_kind_name(param.param); });

// §2.5.1, §4.2.2: a non-matching NI always delivers into the first LE of the list,
// whatever the match bits; a use-once first LE hands over to the next one.
// Portico extension (portico_ext.h): a put whose source and a get whose destination lie in a
// shared segment. On one machine the target copies through its own mapping of the initiator's
// segment instead of reading or writing the initiator's memory; every byte and event is what it
// is for ordinary memory (and over TCP, where no single copy happens, too). Sizes below the
// segments' threshold (2 KiB), between it and the single-copy one (32 KiB), and above both; MDs
// that start inside the segment, at an odd offset.
TEST_F(PutGetMd, SharedSegmentSourceAndDestination) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(PTL_NI_MATCHING | PTL_NI_PHYSICAL);
    if (rank() < 2) {
        constexpr size_t kSeg = 1 << 20;
        void *seg = nullptr;
        portico_segment_t id;
        ASSERT_PTL(portico_segment_create(kSeg, nullptr, &seg, &id));
        auto *sbase = static_cast<uint8_t *>(seg);
        ptl_handle_eq_t teq = make_eq(ni), ieq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        std::vector<uint8_t> target(kSeg / 2, 0);
        fill_pattern(target.data(), target.size(), 90 + rank());
        append_entry(ni, kPt, me_desc(target.data(), target.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, kBits),
                     PTL_PRIORITY_LIST, tag(0x500 + rank()), teq);
        // Source of the puts at offset 4097 of the segment, destination of the gets in its second half.
        ptl_handle_md_t md = bind_md(ni, sbase + 4097, kSeg - 4097, ieq);
        fill_pattern(sbase + 4097, 300000, 30 + rank());
        barrier();
        size_t off = 0;
        for (size_t len : {1000u, 5000u, 70000u, 300000u}) {
            ASSERT_PTL(PtlPut(md, 0, len, PTL_ACK_REQ, ni.id_of(peer()), kPt, kBits, off, tag(0x600 + rank()), 0));
            expect_send_and_ack(ieq, tag(0x600 + rank()), len, len, off);
            const ptl_event_t ev = wait_event(teq);
            EXPECT_EQ(PTL_EVENT_PUT, ev.type);
            EXPECT_EQ(len, ev.mlength);
            off += len;
        }
        barrier(); // both targets have all three puts
        off = 0;
        for (size_t len : {1000u, 5000u, 70000u, 300000u}) {
            EXPECT_EQ(-1, check_pattern(target.data() + off, len, 30 + peer())) << len << " bytes put";
            off += len;
        }
        barrier(); // nobody reads the target buffers any more: refill them for the gets
        fill_pattern(target.data(), target.size(), 90 + rank());
        barrier();
        const size_t dst = kSeg / 2 + 3; // into the segment's second half, through the same MD
        for (size_t len : {1000u, 5000u, 70000u, 300000u}) {
            std::memset(sbase + dst, 0, len);
            ASSERT_PTL(PtlGet(md, dst - 4097, len, ni.id_of(peer()), kPt, kBits, 16, tag(0x700 + rank())));
            check_init_event(wait_event(ieq), {.type = PTL_EVENT_REPLY,
                                               .user_ptr = tag(0x700 + rank()),
                                               .mlength = len,
                                               .remote_offset = 16,
                                               .list = PTL_PRIORITY_LIST});
            EXPECT_EQ(-1, check_pattern(sbase + dst, len, 90 + peer(), 16)) << len << " bytes got";
            EXPECT_EQ(PTL_EVENT_GET, wait_event(teq).type);
        }
        barrier();
        expect_eq_empty(ieq);
        expect_eq_empty(teq);
        EXPECT_PTL(PtlMDRelease(md));
        EXPECT_PTL(portico_segment_destroy(seg, &id));
    } else {
        for (int i = 0; i < 5; ++i) barrier();
    }
}

TEST_F(PutGetMd, NonMatchingNiUsesFirstLe) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kNonMatchingPhysical);
    std::vector<uint8_t> b1(64, 0), b2(64, 0), b3(64, 0), b4(64, 0), src(64);
    fill_pattern(src.data(), src.size(), 9);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE, ieq = PTL_INVALID_HANDLE;
    ptl_handle_le_t le1 = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    const ptl_pt_index_t pa = 21, pb = 22;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, pa);
        make_pt(ni, teq, 0, pb);
        le1 = append_le(ni, pa, le_desc(b1.data(), 64, PTL_LE_OP_PUT), PTL_PRIORITY_LIST, tag(1), teq);
        append_le(ni, pa, le_desc(b2.data(), 64, PTL_LE_OP_PUT), PTL_PRIORITY_LIST, tag(2), teq);
        append_le(ni, pb, le_desc(b3.data(), 64, PTL_LE_OP_PUT | PTL_LE_USE_ONCE), PTL_PRIORITY_LIST, tag(3), teq);
        append_le(ni, pb, le_desc(b4.data(), 64, PTL_LE_OP_PUT), PTL_PRIORITY_LIST, tag(4), teq);
    } else if (rank() == 1) {
        ieq = make_eq(ni);
        md = bind_md(ni, src.data(), src.size(), ieq);
    }
    barrier();
    auto put = [&](ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff, uintptr_t id) {
        ASSERT_PTL(PtlPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), pt, bits, roff, tag(id), id));
        expect_send_and_ack(ieq, tag(id), 8, 8, roff);
    };
    auto expect_put = [&](ptl_pt_index_t pt, const void *user, uint8_t *buf, ptl_size_t roff, ptl_hdr_data_t hdr) {
        check_target_event(wait_event(teq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = pt,
                            .match_bits = 0,
                            .rlength = 8,
                            .mlength = 8,
                            .remote_offset = roff,
                            .start = buf + roff,
                            .user_ptr = user,
                            .hdr_data = hdr},
                           ni);
    };
    if (rank() == 1) {
        put(pa, 0x1, 0, 1);
        put(pa, 0x2, 8, 2);
        put(pb, 0x3, 0, 3);
        put(pb, 0x4, 8, 4);
    } else if (rank() == 0) {
        expect_put(pa, tag(1), b1.data(), 0, 1);
        expect_put(pa, tag(1), b1.data(), 8, 2);
        expect_put(pb, tag(3), b3.data(), 0, 3);
        check_entry_event(wait_event(teq), PTL_EVENT_AUTO_UNLINK, pb, tag(3));
        expect_put(pb, tag(4), b4.data(), 8, 4);
        EXPECT_EQ(-1, check_pattern(b1.data(), 8, 9));
        EXPECT_EQ(-1, check_pattern(b1.data() + 8, 8, 9));
        EXPECT_EQ(-1, check_fill(b2.data(), 64, 0));
        // Unlinking the first LE makes the second one first.
        ASSERT_PTL(PtlLEUnlink(le1));
    }
    barrier();
    if (rank() == 1) {
        put(pa, 0x1, 16, 5);
    } else if (rank() == 0) {
        expect_put(pa, tag(2), b2.data(), 16, 5);
        expect_eq_empty(teq);
    }
}

// Event-disable flags, initiator side (§3.10.1): SEND_DISABLE and SUCCESS_DISABLE suppress
// successful full events (counting events are unaffected) but never failures.
TEST_F(PutGetMd, MdEventDisableFlags) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> buf(256, 0), src(64);
    fill_pattern(src.data(), src.size(), 41);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT, 1), PTL_PRIORITY_LIST, tag(1), teq);
        // Bits 2: an entry that refuses puts.
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_GET, 2), PTL_PRIORITY_LIST, tag(2), teq);
    }
    barrier();
    if (rank() == 1) {
        ptl_handle_eq_t ieq = make_eq(ni);
        // SEND_DISABLE: only the ACK.
        ptl_handle_md_t md1 = bind_md(ni, src.data(), 64, ieq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
        ASSERT_PTL(PtlPut(md1, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, 1, 0, tag(11), 11));
        check_init_event(
            wait_event(ieq),
            {.type = PTL_EVENT_ACK, .user_ptr = tag(11), .mlength = 64, .remote_offset = 0, .list = PTL_PRIORITY_LIST});
        // SUCCESS_DISABLE with a CT counting SEND and ACK: no full event for success...
        ptl_handle_ct_t ct = make_ct(ni);
        ptl_handle_md_t md2 = bind_md(ni, src.data(), 64, ieq, ct,
                                      PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK);
        ASSERT_PTL(PtlPut(md2, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, 1, 64, tag(12), 12));
        EXPECT_EQ((Ct{2, 0}), ct_wait(ct, 2));
        // ... but a failed ACK is delivered, and counted as a failure.
        ASSERT_PTL(PtlPut(md2, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, 2, 0, tag(13), 13));
        check_init_event(wait_event(ieq), {.type = PTL_EVENT_ACK, .user_ptr = tag(13), .fail = PTL_NI_OP_VIOLATION});
        EXPECT_EQ((Ct{3, 1}), ct_reach(ct, Ct{3, 1})) << "SEND success counted, ACK failure counted";
        expect_eq_empty(ieq);
    }
    barrier();
    if (rank() == 0) {
        for (uintptr_t h : {11, 12}) {
            ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
            EXPECT_EQ(h, ev.hdr_data) << describe(ev);
        }
        expect_eq_empty(teq);
        EXPECT_EQ(-1, check_pattern(buf.data(), 64, 41));
        EXPECT_EQ(-1, check_pattern(buf.data() + 64, 64, 41));
    }
}

// Event-disable flags, target side (§3.11.1, §3.12.1): LINK/COMM/SUCCESS/UNLINK_DISABLE suppress
// their events; counting events still count.
TEST_F(PutGetMd, EntryEventDisableFlags) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> b(5 * 64, 0), src(64);
    fill_pattern(src.data(), src.size(), 141);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    ptl_handle_ct_t ct_comm = PTL_INVALID_HANDLE, ct_succ = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        ct_comm = make_ct(ni);
        ct_succ = make_ct(ni);
        append_me(
            ni, kPt,
            me_desc(b.data(), 64, PTL_ME_OP_PUT | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_CT_COMM, 1, 0, ct_comm),
            PTL_PRIORITY_LIST, tag(1), teq);
        append_me(ni, kPt,
                  me_desc(b.data() + 64, 64, PTL_ME_OP_PUT | PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_CT_COMM, 2, 0,
                          ct_succ),
                  PTL_PRIORITY_LIST, tag(2), teq);
        append_me(ni, kPt,
                  me_desc(b.data() + 128, 64, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_UNLINK_DISABLE, 3),
                  PTL_PRIORITY_LIST, tag(3), teq);
        append_me(ni, kPt, me_desc(b.data() + 192, 64, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 4), PTL_PRIORITY_LIST,
                  tag(4), teq);
        append_me(ni, kPt, me_desc(b.data() + 256, 64, PTL_ME_OP_PUT, 5), PTL_PRIORITY_LIST, tag(5), teq);
        expect_eq_empty(teq, "after appends (LINK_DISABLE)");
    }
    barrier();
    if (rank() == 1) {
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 64, ieq);
        for (uintptr_t bits = 1; bits <= 5; ++bits) {
            ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, bits, 0, tag(bits), bits));
            expect_send_and_ack(ieq, tag(bits), 64, 64, 0);
        }
    } else if (rank() == 0) {
        // Bits 1 (COMM_DISABLE) and 2 (SUCCESS_DISABLE) raise no PUT; bits 3 (UNLINK_DISABLE)
        // raises its PUT but no AUTO_UNLINK; bits 4 (LINK_DISABLE) and 5 raise their PUTs.
        for (uintptr_t bits : {3, 4, 5}) {
            ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
            EXPECT_EQ(bits, ev.hdr_data) << describe(ev);
            EXPECT_EQ(tag(bits), ev.user_ptr) << describe(ev);
        }
        EXPECT_EQ((Ct{1, 0}), ct_wait(ct_comm, 1));
        EXPECT_EQ((Ct{1, 0}), ct_wait(ct_succ, 1));
        for (int i = 0; i < 5; ++i) EXPECT_EQ(-1, check_pattern(b.data() + 64 * i, 64, 141)) << "entry " << i + 1;
    }
    barrier();
    if (rank() == 0) expect_eq_empty(teq, "(COMM/SUCCESS/UNLINK disabled)");
}

// §3.15.1, §3.15.2: NO_ACK_REQ gives no ACK; an MD without EQ and CT gets no ACK;
// a CT-only MD counts SEND and ACK but no ACK for NO_ACK_REQ.
TEST_F(PutGetMd, NoAckReqAndMdWithoutEqOrCt) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> buf(1024, 0), src(64);
    fill_pattern(src.data(), src.size(), 44);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT, 0, ~0ull), PTL_PRIORITY_LIST, tag(1), teq);
    }
    barrier();
    if (rank() == 1) {
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), 64, ieq);
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_NO_ACK_REQ, ni.id_of(0), kPt, 0, 0, tag(1), 1));
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 64, tag(2), 2));
        int send1 = 0, send2 = 0, ack2 = 0;
        for (int i = 0; i < 3; ++i) {
            ptl_event_t ev = wait_event(ieq);
            EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
            if (ev.type == PTL_EVENT_SEND && ev.user_ptr == tag(1))
                ++send1;
            else if (ev.type == PTL_EVENT_SEND && ev.user_ptr == tag(2))
                ++send2;
            else if (ev.type == PTL_EVENT_ACK && ev.user_ptr == tag(2))
                ++ack2;
            else
                ADD_FAILURE() << "unexpected " << describe(ev);
        }
        EXPECT_EQ(1, send1);
        EXPECT_EQ(1, send2);
        EXPECT_EQ(1, ack2);

        // CT only: SEND and ACK counted, no ACK for NO_ACK_REQ.
        ptl_handle_ct_t ct = make_ct(ni);
        ptl_handle_md_t mdc = bind_md(ni, src.data(), 64, PTL_EQ_NONE, ct, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK);
        ASSERT_PTL(PtlPut(mdc, 0, 64, PTL_NO_ACK_REQ, ni.id_of(0), kPt, 0, 128, tag(3), 3));
        ASSERT_PTL(PtlPut(mdc, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 192, tag(4), 4));
        EXPECT_EQ((Ct{3, 0}), ct_wait(ct, 3));

        // Neither EQ nor CT: the put works, no ACK is generated (nothing is dropped for it).
        const Sr before = read_sr(ni);
        ptl_handle_md_t bare = bind_md(ni, src.data(), 64, PTL_EQ_NONE, PTL_CT_NONE);
        ASSERT_PTL(PtlPut(bare, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 256, tag(5), 5));
        // Marker on the first MD: its ACK comes after the target processed the bare put.
        ASSERT_PTL(PtlPut(md, 0, 64, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 320, tag(6), 6));
        expect_send_and_ack(ieq, tag(6), 64, 64, 320);
        barrier(); // the target saw all its puts
        EXPECT_EQ(before, read_sr(ni));
        EXPECT_EQ((Ct{3, 0}), ct_get(ct)) << "no ACK may be counted for NO_ACK_REQ";
        EXPECT_PTL(PtlMDRelease(bare));
        expect_eq_empty(ieq);
    } else if (rank() == 0) {
        std::set<ptl_hdr_data_t> seen;
        for (int i = 0; i < 6; ++i) {
            ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
            EXPECT_TRUE(seen.insert(ev.hdr_data).second) << describe(ev);
            EXPECT_EQ((ev.hdr_data - 1) * 64, ev.remote_offset) << describe(ev);
        }
        for (int i = 0; i < 6; ++i) EXPECT_EQ(-1, check_pattern(buf.data() + 64 * i, 64, 44)) << "put " << i + 1;
        barrier();
    } else {
        barrier();
    }
}

// Portico's decision on §3.10.4: PtlMDRelease is refused with PTL_IN_USE while a get
// awaits its REPLY; it is allowed once a put's SEND has arrived, and the late ACK is then discarded
// (DROP_COUNT + 1 at the initiator, no event). The target is held with SIGSTOP so that the REPLY
// and the ACK are certainly late; a put's SEND is local (§3.13.1) and must not need the target.
TEST_F(PutGetMd, MdReleaseInUseAndLateAckDropped) {
    REQUIRE_RANKS(2);
    if (!same_host()) GTEST_SKIP() << "needs all ranks on one host (SIGSTOP of the target)";
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<pid_t> pids = job().allgather_pod(getpid());
    std::vector<uint8_t> tbuf(256), dbuf(64, 0), src(8);
    fill_pattern(tbuf.data(), tbuf.size(), 62);
    fill_pattern(src.data(), src.size(), 162);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(tbuf.data(), tbuf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, 0, ~0ull),
                  PTL_PRIORITY_LIST, tag(1), teq);
    }
    barrier();
    if (rank() == 1) {
        ptl_handle_eq_t geq = make_eq(ni), peq = make_eq(ni), meq = make_eq(ni);
        ptl_handle_md_t gmd = bind_md(ni, dbuf.data(), dbuf.size(), geq);
        ptl_handle_md_t pmd = bind_md(ni, src.data(), src.size(), peq);
        ptl_handle_md_t mmd = bind_md(ni, src.data(), src.size(), meq);
        // Over TCP both processes take part in opening a connection; open it before freezing
        // the target (a put of its own, counted below).
        ASSERT_PTL(PtlPut(mmd, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 192, tag(4), 4));
        expect_send_and_ack(meq, tag(4), 8, 8, 192);
        const Sr before = read_sr(ni);
        ASSERT_EQ(0, kill(pids[0], SIGSTOP));
        wait_until_stopped(pids[0]);
        ASSERT_PTL(PtlGet(gmd, 0, 64, ni.id_of(0), kPt, 0, 0, tag(1)));
        EXPECT_RC(PTL_IN_USE, PtlMDRelease(gmd)) << "a get still awaits its REPLY";
        ASSERT_PTL(PtlPut(pmd, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 128, tag(2), 2));
        check_init_event(expect_event(peq, PTL_EVENT_SEND), {.type = PTL_EVENT_SEND, .user_ptr = tag(2), .mlength = 8});
        EXPECT_PTL(PtlMDRelease(pmd)) << "releasing after SEND, before the ACK, is allowed";
        ASSERT_EQ(0, kill(pids[0], SIGCONT));

        check_init_event(wait_event(geq), {.type = PTL_EVENT_REPLY,
                                           .user_ptr = tag(1),
                                           .mlength = 64,
                                           .remote_offset = 0,
                                           .list = PTL_PRIORITY_LIST});
        EXPECT_EQ(-1, check_pattern(dbuf.data(), 64, 62));
        EXPECT_PTL(PtlMDRelease(gmd));
        // A later put's ACK; then the discarded ACK must show in DROP_COUNT (spin, no sleep).
        ASSERT_PTL(PtlPut(mmd, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 136, tag(3), 3));
        expect_send_and_ack(meq, tag(3), 8, 8, 136);
        Sr now = read_sr(ni);
        while (now.drop == before.drop) {
            sched_yield();
            now = read_sr(ni);
        }
        EXPECT_EQ(sr_plus(before, 1, 0, 0), now) << "the late ACK is dropped exactly once";
        expect_eq_empty(peq, "on the EQ of the released MD");
        expect_eq_empty(meq);
    } else if (rank() == 0) {
        std::map<int, int> kinds;
        for (int i = 0; i < 4; ++i) ++kinds[wait_event(teq).type];
        EXPECT_EQ(1, kinds[PTL_EVENT_GET]);
        EXPECT_EQ(3, kinds[PTL_EVENT_PUT]);
        EXPECT_EQ(-1, check_pattern(tbuf.data() + 128, 8, 162));
    }
}

void *map_inaccessible_page() {
    void *p = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(MAP_FAILED, p);
    return p;
}

// Portico decision on §3.10 (whole-address-space MD): a put whose source is unmapped completes
// with PTL_NI_SEGV in its SEND or its ACK; nothing crashes and the NI keeps working.
TEST_F(PutGetMd, SegvOnUnmappedSource) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> buf(128, 0);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT, 0, ~0ull), PTL_PRIORITY_LIST, tag(1), teq);
    }
    barrier();
    if (rank() == 1) {
        void *hole = map_inaccessible_page();
        std::vector<uint8_t> ok(64);
        fill_pattern(ok.data(), ok.size(), 63);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t all = bind_md(ni, nullptr, PTL_SIZE_MAX, ieq);
        ASSERT_PTL(PtlPut(all, reinterpret_cast<uintptr_t>(hole), 64, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 0, tag(1), 1));
        ptl_event_t ev = wait_event(ieq);
        bool segv = false;
        if (ev.type == PTL_EVENT_SEND && ev.ni_fail_type == PTL_NI_SEGV) {
            segv = true; // a local failure: no ACK follows (§3.13.3)
        } else {
            // Either order of SEND and ACK; one of them must report the fault.
            ptl_event_t ev2 = wait_event(ieq);
            for (const ptl_event_t *e : {&ev, &ev2}) {
                EXPECT_TRUE(e->type == PTL_EVENT_SEND || e->type == PTL_EVENT_ACK) << describe(*e);
                EXPECT_EQ(tag(1), e->user_ptr) << describe(*e);
                segv = segv || e->ni_fail_type == PTL_NI_SEGV;
            }
            EXPECT_NE(ev.type, ev2.type);
        }
        EXPECT_TRUE(segv) << "no completion of the put reported PTL_NI_SEGV";
        // The same MD still works for a mapped source.
        ASSERT_PTL(
            PtlPut(all, reinterpret_cast<uintptr_t>(ok.data()), 64, PTL_ACK_REQ, ni.id_of(0), kPt, 0, 64, tag(2), 2));
        for (;;) { // skip a possible late event of the first put
            ptl_event_t e = wait_event(ieq);
            if (e.user_ptr == tag(1)) continue;
            EXPECT_EQ(tag(2), e.user_ptr);
            EXPECT_EQ(Fail{PTL_NI_OK}, Fail{e.ni_fail_type}) << describe(e);
            if (e.type == PTL_EVENT_ACK) {
                check_init_event(e, {.type = PTL_EVENT_ACK,
                                     .user_ptr = tag(2),
                                     .mlength = 64,
                                     .remote_offset = 64,
                                     .list = PTL_PRIORITY_LIST});
                break;
            }
        }
    } else if (rank() == 0) {
        for (;;) { // the faulty put may or may not have reached the target
            ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
            if (ev.hdr_data == 1) continue;
            check_target_event(ev,
                               {.type = PTL_EVENT_PUT,
                                .initiator = 1,
                                .pt_index = kPt,
                                .match_bits = 0,
                                .rlength = 64,
                                .mlength = 64,
                                .remote_offset = 64,
                                .start = buf.data() + 64,
                                .user_ptr = tag(1),
                                .hdr_data = 2},
                               ni);
            break;
        }
        EXPECT_EQ(-1, check_pattern(buf.data() + 64, 64, 63));
    }
}

// Portico decision on §3.12 (PTL_TARGET_BIND_INACCESSIBLE): a put into a whole-address-space ME at an
// unmapped address gives the target event PTL_NI_SEGV and a failed ACK; a 0-byte message never
// faults (§3.12); SUCCESS_DISABLE does not hide the failure (§3.12.1) and a CT_BYTES counter adds
// 1 for it (§3.14).
// A put from, and a get into, a shared segment whose target entry covers unmapped memory: the
// target copies through its mapping of the initiator's segment, and that copy is guarded like
// every other — PTL_NI_SEGV at the target, a failed ACK or REPLY at the initiator, and the target
// keeps serving (a later put lands).
TEST_F(PutGetMd, SharedSegmentIntoUnmappedTargetIsSegv) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    constexpr size_t kLen = 4096; // above the segments' 2 KiB threshold: the segment path on shm
    std::vector<uint8_t> good(kLen, 0);
    void *hole = nullptr;
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        hole = map_inaccessible_page();
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(nullptr, PTL_SIZE_MAX, PTL_ME_OP_PUT | PTL_ME_OP_GET, 1), PTL_PRIORITY_LIST, tag(1),
                  teq);
    }
    const uintptr_t hole_addr = job().allgather_pod(reinterpret_cast<uintptr_t>(hole)).at(0);
    const uintptr_t good_addr = job().allgather_pod(reinterpret_cast<uintptr_t>(good.data())).at(0);
    barrier();
    if (rank() == 1) {
        void *seg = nullptr;
        portico_segment_t id;
        ASSERT_PTL(portico_segment_create(4 * kLen, nullptr, &seg, &id));
        fill_pattern(seg, kLen, 77);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, seg, 4 * kLen, ieq, PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
        ASSERT_PTL(PtlPut(md, 0, kLen, PTL_ACK_REQ, ni.id_of(0), kPt, 1, hole_addr, tag(10), 0));
        ptl_event_t ack = expect_event(ieq, PTL_EVENT_ACK);
        EXPECT_NE(Fail{PTL_NI_OK}, Fail{ack.ni_fail_type}) << "the ACK must report the target's fault";
        ASSERT_PTL(PtlGet(md, kLen, kLen, ni.id_of(0), kPt, 1, hole_addr, tag(11)));
        ptl_event_t reply = expect_event(ieq, PTL_EVENT_REPLY);
        EXPECT_NE(Fail{PTL_NI_OK}, Fail{reply.ni_fail_type}) << "the REPLY must report the target's fault";
        ASSERT_PTL(PtlPut(md, 0, kLen, PTL_ACK_REQ, ni.id_of(0), kPt, 1, good_addr, tag(12), 0));
        ack = expect_event(ieq, PTL_EVENT_ACK);
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ack.ni_fail_type});
        barrier();
        EXPECT_PTL(PtlMDRelease(md));
        EXPECT_PTL(portico_segment_destroy(seg, &id));
    } else if (rank() == 0) {
        ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(Fail{PTL_NI_SEGV}, Fail{ev.ni_fail_type}) << describe(ev);
        ev = expect_event(teq, PTL_EVENT_GET);
        EXPECT_EQ(Fail{PTL_NI_SEGV}, Fail{ev.ni_fail_type}) << describe(ev);
        ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        barrier();
        EXPECT_EQ(-1, check_pattern(good.data(), kLen, 77));
        munmap(hole, 4096);
    } else {
        barrier();
    }
}

TEST_F(PutGetMd, SegvOnUnmappedTarget) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    ASSERT_NE(0u, ni.limits.features & PTL_TARGET_BIND_INACCESSIBLE);
    std::vector<uint8_t> good(128, 0);
    void *hole = nullptr;
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        hole = map_inaccessible_page();
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        ct = make_ct(ni);
        append_me(ni, kPt, me_desc(nullptr, PTL_SIZE_MAX, PTL_ME_OP_PUT, 1), PTL_PRIORITY_LIST, tag(1), teq);
        append_me(ni, kPt,
                  me_desc(nullptr, PTL_SIZE_MAX,
                          PTL_ME_OP_PUT | PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES,
                          2, 0, ct),
                  PTL_PRIORITY_LIST, tag(2), teq);
    }
    const uintptr_t hole_addr = job().allgather_pod(reinterpret_cast<uintptr_t>(hole)).at(0);
    const uintptr_t good_addr = job().allgather_pod(reinterpret_cast<uintptr_t>(good.data())).at(0);
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(64);
        fill_pattern(src.data(), src.size(), 64);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), ieq);
        auto send_and_ack = [&](uintptr_t bits, ptl_size_t len, uintptr_t roff, uintptr_t id, bool fault) {
            ASSERT_PTL(PtlPut(md, 0, len, PTL_ACK_REQ, ni.id_of(0), kPt, bits, roff, tag(id), id));
            for (int k = 0; k < 2; ++k) {
                ptl_event_t ev = wait_event(ieq);
                EXPECT_EQ(tag(id), ev.user_ptr) << describe(ev);
                if (ev.type == PTL_EVENT_SEND) {
                    EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << "the source is fine";
                } else {
                    ASSERT_EQ(Kind{PTL_EVENT_ACK}, Kind{ev.type}) << describe(ev);
                    if (fault) {
                        EXPECT_NE(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type})
                            << "the ACK must report the target's fault: " << describe(ev);
                    } else {
                        check_init_event(ev, {.type = PTL_EVENT_ACK,
                                              .user_ptr = tag(id),
                                              .mlength = len,
                                              .remote_offset = roff,
                                              .list = PTL_PRIORITY_LIST});
                    }
                }
            }
        };
        send_and_ack(1, 64, hole_addr, 1, true);
        send_and_ack(1, 0, hole_addr, 2, false);
        send_and_ack(1, 64, good_addr, 3, false);
        send_and_ack(2, 64, good_addr + 64, 4, false);
        send_and_ack(2, 64, hole_addr + 64, 5, true);
    } else if (rank() == 0) {
        ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(Fail{PTL_NI_SEGV}, Fail{ev.ni_fail_type}) << describe(ev);
        EXPECT_TRUE(same_process(ni.id_of(1), ev.initiator, false)) << describe(ev);
        EXPECT_EQ(kPt, ev.pt_index);
        EXPECT_EQ(ni.uids[1], ev.uid);
        EXPECT_EQ(1u, ev.match_bits);
        EXPECT_EQ(hole, ev.start) << describe(ev);
        EXPECT_EQ(tag(1), ev.user_ptr);
        EXPECT_EQ(1u, ev.hdr_data);
        check_target_event(wait_event(teq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = 1,
                            .rlength = 0,
                            .mlength = 0,
                            .remote_offset = hole_addr,
                            .start = hole,
                            .user_ptr = tag(1),
                            .hdr_data = 2},
                           ni);
        check_target_event(wait_event(teq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = 1,
                            .rlength = 64,
                            .mlength = 64,
                            .remote_offset = good_addr,
                            .start = good.data(),
                            .user_ptr = tag(1),
                            .hdr_data = 3},
                           ni);
        EXPECT_EQ(-1, check_pattern(good.data(), 64, 64));
        // Bits 2: the successful put raised no event, the faulty one did.
        ev = expect_event(teq, PTL_EVENT_PUT);
        EXPECT_EQ(Fail{PTL_NI_SEGV}, Fail{ev.ni_fail_type}) << describe(ev);
        EXPECT_EQ(tag(2), ev.user_ptr);
        EXPECT_EQ(5u, ev.hdr_data);
        EXPECT_EQ(-1, check_pattern(good.data() + 64, 64, 64));
        EXPECT_EQ((Ct{64, 1}), ct_reach(ct, Ct{64, 1})) << "bytes on success, 1 per failure";
        expect_eq_empty(teq);
        munmap(hole, 4096);
    }
}

// §2.2, §3.10.1 PTL_MD_UNRELIABLE: an unreliable put with NO_ACK_REQ
// completes locally; whatever arrives is intact (the network may drop unreliable messages).
TEST_F(PutGetMd, UnreliablePut) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    constexpr int kN = 16;
    std::vector<uint8_t> buf(kN * 128, 0);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT, 0, ~0ull), PTL_PRIORITY_LIST, tag(1), teq);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> src(128);
        fill_pattern(src.data(), src.size(), 163);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t umd = bind_md(ni, src.data(), src.size(), ieq, PTL_CT_NONE, PTL_MD_UNRELIABLE);
        for (int i = 0; i < kN; ++i) {
            ASSERT_PTL(PtlPut(umd, 0, 128, PTL_NO_ACK_REQ, ni.id_of(0), kPt, 1, 128 * i, tag(100 + i), i));
            check_init_event(expect_event(ieq, PTL_EVENT_SEND),
                             {.type = PTL_EVENT_SEND, .user_ptr = tag(100 + i), .mlength = 128});
        }
        // A reliable marker tells the target that the unreliable ones had their chance.
        ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), ieq);
        ASSERT_PTL(PtlPut(md, 0, 0, PTL_ACK_REQ, ni.id_of(0), kPt, 2, 0, tag(999), 999));
        expect_send_and_ack(ieq, tag(999), 0, 0, 0);
        barrier();
    } else if (rank() == 0) {
        int delivered = 0;
        for (;;) {
            ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
            EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
            if (ev.hdr_data == 999) break;
            ASSERT_LT(ev.hdr_data, static_cast<ptl_hdr_data_t>(kN));
            EXPECT_EQ(128u, ev.mlength);
            EXPECT_EQ(-1, check_pattern(buf.data() + 128 * ev.hdr_data, 128, 163));
            ++delivered;
        }
        barrier();
        // Stragglers (unordered delivery is not promised away for unreliable messages).
        ptl_event_t ev;
        while (PtlEQGet(teq, &ev) == PTL_OK) {
            EXPECT_EQ(-1, check_pattern(buf.data() + 128 * ev.hdr_data, 128, 163));
            ++delivered;
        }
        EXPECT_LE(delivered, kN);
        std::printf("[rank 0] %d of %d unreliable puts delivered\n", delivered, kN);
    } else {
        barrier();
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
