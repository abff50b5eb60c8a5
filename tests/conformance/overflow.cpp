// SPDX-License-Identifier: BSD-3-Clause
// Conformance: overflow list, unexpected headers, search, AUTO_UNLINK/AUTO_FREE (spec §2.5,
// §3.11.2-4, §3.12.1-4, §3.13.1).
//
// Rank 0 is the target, rank 1 the initiator. Portico decisions used here: a use-once append served
// from the unexpected list raises AUTO_UNLINK but no LINK; a search's CT counts without CT_COMM.
#include <map>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class Overflow : public PtlTest {};
constexpr ptl_pt_index_t kPt = 50;
constexpr ptl_match_bits_t kAny = ~0ull; // ignore bits of a catch-all entry

// Target-side state of most tests: one PT with an EQ and a catch-all overflow ME.
struct Target {
    const Ni &ni;
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    std::vector<uint8_t> obuf;
    ptl_handle_me_t over = PTL_INVALID_HANDLE;

    // `manage_local`: the overflow ME packs messages; otherwise they land at their remote offset.
    Target(const Ni &n, bool manage_local, unsigned extra_options = 0, ptl_handle_ct_t ct = PTL_CT_NONE,
           ptl_size_t min_free = 0, size_t size = 4096)
        : ni(n), obuf(size, 0) {
        eq = make_eq(ni);
        make_pt(ni, eq, 0, kPt);
        ptl_me_t d = me_desc(obuf.data(), obuf.size(),
                             PTL_ME_OP_PUT | PTL_ME_OP_GET | extra_options | (manage_local ? PTL_ME_MANAGE_LOCAL : 0u),
                             0, kAny, ct);
        d.min_free = min_free;
        over = append_me(ni, kPt, d, PTL_OVERFLOW_LIST, tag(0x0F), eq);
    }
    // The PUT event of a message that landed in the overflow ME at `used` (the offset used).
    void expect_put(ptl_size_t len, ptl_match_bits_t bits, ptl_size_t roff, ptl_size_t used, ptl_hdr_data_t hdr,
                    const void *user = tag(0x0F)) {
        check_target_event(wait_event(eq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = bits,
                            .rlength = len,
                            .mlength = len,
                            .remote_offset = roff,
                            .start = obuf.data() + used,
                            .user_ptr = user,
                            .hdr_data = hdr},
                           ni);
    }
    // An overflow (or SEARCH) event for that message, reported to `user`.
    void expect_overflow(ptl_event_kind_t type, ptl_size_t len, ptl_match_bits_t bits, ptl_size_t roff, ptl_size_t used,
                         std::optional<ptl_hdr_data_t> hdr, const void *user) {
        check_target_event(wait_event(eq),
                           {.type = type,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = bits,
                            .rlength = len,
                            .mlength = len,
                            .remote_offset = roff,
                            .start = obuf.data() + used,
                            .user_ptr = user,
                            .hdr_data = hdr},
                           ni);
    }
    void expect_no_match(const void *user) {
        ptl_event_t ev = expect_event(eq, PTL_EVENT_SEARCH);
        EXPECT_EQ(Fail{PTL_NI_NO_MATCH}, Fail{ev.ni_fail_type}) << describe(ev);
        EXPECT_EQ(user, ev.user_ptr) << describe(ev);
    }
    void search(ptl_match_bits_t bits, ptl_search_op_t op, bool use_once, const void *user,
                ptl_handle_ct_t ct = PTL_CT_NONE, ptl_match_bits_t ignore = 0) {
        ptl_me_t d = me_desc(nullptr, 0, PTL_ME_OP_PUT | (use_once ? PTL_ME_USE_ONCE : 0u), bits, ignore, ct);
        EXPECT_PTL(PtlMESearch(ni.h, kPt, &d, op, const_cast<void *>(user)));
    }
    // A priority append that may match unexpected headers (its events are checked by the caller).
    ptl_handle_me_t append(void *buf, ptl_size_t len, unsigned options, ptl_match_bits_t bits, const void *user,
                           ptl_size_t min_free = 0) {
        ptl_me_t d = me_desc(buf, len, options, bits);
        d.min_free = min_free;
        ptl_handle_me_t h = PTL_INVALID_HANDLE;
        EXPECT_PTL(PtlMEAppend(ni.h, kPt, &d, PTL_PRIORITY_LIST, const_cast<void *>(user), &h));
        return h;
    }
};

// §3.12.2, §3.13.1, Table 3-3 ptl_list: delivery into an overflow ME raises PUT
// and an ACK with ptl_list = OVERFLOW; a later use-once priority append consumes the header with
// PUT_OVERFLOW (start in the overflow buffer, original lengths, requested offset) and AUTO_UNLINK,
// is not linked (no LINK, later messages still go to the overflow list), and its handle is stale:
// PtlMEUnlink answers PTL_ARG_INVALID.
TEST_F(Overflow, UseOnceAppendConsumesUnexpectedHeader) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, true);
    barrier();
    if (rank() == 1) {
        Sender s(ni, 256, 21);
        s.put(kPt, 100, 0x42, 5, 1, 100, 0, PTL_OVERFLOW_LIST);
        barrier();
        barrier();
        s.put(kPt, 50, 0x42, 7, 2, 50, 100, PTL_OVERFLOW_LIST, 100);
    } else if (rank() == 0) {
        barrier();
        t->expect_put(100, 0x42, 5, 0, 1);
        EXPECT_EQ(-1, check_pattern(t->obuf.data(), 100, 21));
        std::vector<uint8_t> pbuf(256, 0);
        ptl_handle_me_t p = t->append(pbuf.data(), pbuf.size(), PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0x42, tag(0xA1));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 100, 0x42, 5, 0, 1, tag(0xA1));
        check_entry_event(wait_event(t->eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0xA1));
        EXPECT_RC(PTL_ARG_INVALID, PtlMEUnlink(p)) << "the entry unlinked itself";
        barrier();
        t->expect_put(50, 0x42, 7, 100, 2);
        EXPECT_EQ(-1, check_pattern(t->obuf.data() + 100, 50, 21, 100));
        EXPECT_EQ(-1, check_fill(pbuf.data(), pbuf.size(), 0));
        expect_eq_empty(t->eq, "(no LINK for a use-once append served from the unexpected list)");
    } else {
        barrier();
        barrier();
    }
}

// §3.12.2: a persistent append consumes every matching header, one overflow event each in
// arrival order, then links (LINK) and takes later messages in the priority list.
TEST_F(Overflow, PersistentAppendConsumesAllMatchingHeaders) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, true);
    barrier();
    std::vector<uint8_t> pbuf(256, 0);
    if (rank() == 1) {
        Sender s(ni, 256, 22);
        s.put(kPt, 10, 7, 0, 0, 10, 0, PTL_OVERFLOW_LIST);
        s.put(kPt, 20, 7, 0, 1, 20, 10, PTL_OVERFLOW_LIST, 10);
        s.put(kPt, 30, 7, 0, 2, 30, 30, PTL_OVERFLOW_LIST, 30);
        s.put(kPt, 5, 8, 0, 3, 5, 60, PTL_OVERFLOW_LIST, 60);
        barrier();
        barrier();
        s.put(kPt, 16, 7, 8, 4, 16, 8, PTL_PRIORITY_LIST);
        barrier();
    } else if (rank() == 0) {
        const ptl_size_t len[4] = {10, 20, 30, 5}, used[4] = {0, 10, 30, 60};
        for (int i = 0; i < 4; ++i) t->expect_put(len[i], i == 3 ? 8 : 7, 0, used[i], i);
        barrier();
        t->append(pbuf.data(), pbuf.size(), PTL_ME_OP_PUT, 7, tag(0xB1));
        for (int i = 0; i < 3; ++i) t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, len[i], 7, 0, used[i], i, tag(0xB1));
        check_entry_event(wait_event(t->eq), PTL_EVENT_LINK, kPt, tag(0xB1));
        barrier();
        barrier();
        check_target_event(wait_event(t->eq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = 7,
                            .rlength = 16,
                            .mlength = 16,
                            .remote_offset = 8,
                            .start = pbuf.data() + 8,
                            .user_ptr = tag(0xB1),
                            .hdr_data = 4},
                           ni);
        // The header with other match bits is still there.
        t->search(8, PTL_SEARCH_ONLY, false, tag(0xB2));
        t->expect_overflow(PTL_EVENT_SEARCH, 5, 8, 0, 60, 3, tag(0xB2));
        t->expect_no_match(tag(0xB2));
        expect_eq_empty(t->eq);
    } else {
        barrier();
        barrier();
        barrier();
    }
}

// §3.12.1 PTL_ME_LOCAL_INC_UH_RLENGTH: the local offset advances by each consumed
// header's rlength; when that breaks min_free the ME is not linked and raises AUTO_UNLINK.
TEST_F(Overflow, IncUhRlengthAdvancesOffsetAndMinFreeUnlinks) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, true, 0, PTL_CT_NONE, 0, 8192);
    barrier();
    std::vector<uint8_t> p1(1000, 0), p2(1000, 0);
    const unsigned inc = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_LOCAL_INC_UH_RLENGTH;
    if (rank() == 1) {
        Sender s(ni, 1024, 23);
        ptl_size_t used = 0;
        for (ptl_size_t len : {100, 200, 300}) {
            s.put(kPt, len, 9, 0, len, len, used, PTL_OVERFLOW_LIST);
            used += len;
        }
        for (ptl_size_t len : {300, 250, 100}) {
            s.put(kPt, len, 10, 0, len + 1, len, used, PTL_OVERFLOW_LIST);
            used += len;
        }
        barrier();
        barrier();
        s.put(kPt, 50, 9, 0, 7, 50, 600, PTL_PRIORITY_LIST);
        barrier();
    } else if (rank() == 0) {
        ptl_size_t used = 0;
        for (ptl_size_t len : {100, 200, 300}) {
            t->expect_put(len, 9, 0, used, len);
            used += len;
        }
        for (ptl_size_t len : {300, 250, 100}) {
            t->expect_put(len, 10, 0, used, len + 1);
            used += len;
        }
        barrier();
        // Persistent, min_free 0: consumes the three bits-9 headers, offset 600, then links.
        t->append(p1.data(), 1000, inc, 9, tag(0xC1));
        used = 0;
        for (ptl_size_t len : {100, 200, 300}) {
            t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, len, 9, 0, used, len, tag(0xC1));
            used += len;
        }
        check_entry_event(wait_event(t->eq), PTL_EVENT_LINK, kPt, tag(0xC1));
        // min_free 500 of 1000: 300 (free 700) is fine, 250 (free 450) breaks it: no link.
        t->append(p2.data(), 1000, inc, 10, tag(0xC2), 500);
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 300, 10, 0, 600, 301, tag(0xC2));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 250, 10, 0, 900, 251, tag(0xC2));
        check_entry_event(wait_event(t->eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0xC2));
        // The third bits-10 header was not consumed.
        t->search(10, PTL_SEARCH_ONLY, false, tag(0xC3));
        t->expect_overflow(PTL_EVENT_SEARCH, 100, 10, 0, 1150, 101, tag(0xC3));
        t->expect_no_match(tag(0xC3));
        barrier();
        barrier();
        check_target_event(wait_event(t->eq),
                           {.type = PTL_EVENT_PUT,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = 9,
                            .rlength = 50,
                            .mlength = 50,
                            .remote_offset = 0,
                            .start = p1.data() + 600,
                            .user_ptr = tag(0xC1),
                            .hdr_data = 7},
                           ni);
        EXPECT_EQ(-1, check_pattern(p1.data() + 600, 50, 23));
        expect_eq_empty(t->eq);
    } else {
        barrier();
        barrier();
        barrier();
    }
}

// §3.12.1 UNEXPECTED_HDR_DISABLE, §3.13.1 AUTO_FREE: an overflow entry with this option
// keeps no header (no overflow event for a later append, searches find nothing) and raises no
// AUTO_FREE after its AUTO_UNLINK.
TEST_F(Overflow, UnexpectedHdrDisableKeepsNoHeader) {
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> obuf(64, 0), pbuf(64, 0);
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        eq = make_eq(ni);
        make_pt(ni, eq, 0, kPt);
        append_me(ni, kPt,
                  me_desc(obuf.data(), 64, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_UNEXPECTED_HDR_DISABLE, 0, kAny),
                  PTL_OVERFLOW_LIST, tag(0xD0), eq);
    }
    barrier();
    if (rank() == 1) {
        Sender s(ni, 64, 24);
        s.put(kPt, 16, 0x24, 0, 1, 16, 0, PTL_OVERFLOW_LIST);
    }
    barrier();
    if (rank() == 0) {
        ptl_event_t ev = expect_event(eq, PTL_EVENT_PUT);
        EXPECT_EQ(tag(0xD0), ev.user_ptr) << describe(ev);
        check_entry_event(wait_event(eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0xD0));
        ptl_me_t d = me_desc(nullptr, 0, PTL_ME_OP_PUT, 0x24);
        EXPECT_PTL(PtlMESearch(ni.h, kPt, &d, PTL_SEARCH_ONLY, tag(0xD1)));
        ev = expect_event(eq, PTL_EVENT_SEARCH);
        EXPECT_EQ(Fail{PTL_NI_NO_MATCH}, Fail{ev.ni_fail_type}) << describe(ev);
        EXPECT_EQ(tag(0xD1), ev.user_ptr);
        // The append finds nothing and links.
        append_me(ni, kPt, me_desc(pbuf.data(), 64, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0x24), PTL_PRIORITY_LIST,
                  tag(0xD2), eq);
        expect_eq_empty(eq, "(no AUTO_FREE with UNEXPECTED_HDR_DISABLE)");
        EXPECT_EQ(-1, check_pattern(obuf.data(), 16, 24));
    }
}

// §3.11, §3.12, §3.13.1 AUTO_FREE: an overflow ME that unlinked itself (min_free) raises
// AUTO_FREE only once every header it holds has been consumed, after the last of their events and
// with its counting events complete; unlinking it meanwhile returns PTL_IN_USE, and after AUTO_FREE
// its handle is stale (PTL_ARG_INVALID, README decision 21).
TEST_F(Overflow, AutoFreeAfterAllHeadersConsumed) {
    Ni ni = open_ni(kMatchingPhysical);
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    std::optional<Target> t;
    if (rank() == 0) {
        ct = make_ct(ni);
        t.emplace(ni, true, PTL_ME_EVENT_CT_COMM, ct, 100, 256);
    }
    barrier();
    if (rank() == 1) {
        Sender s(ni, 256, 25);
        s.put(kPt, 100, 0xA, 0, 1, 100, 0, PTL_OVERFLOW_LIST);
        s.put(kPt, 100, 0xB, 0, 2, 100, 100, PTL_OVERFLOW_LIST, 100);
    }
    barrier();
    if (rank() == 0) {
        t->expect_put(100, 0xA, 0, 0, 1);
        t->expect_put(100, 0xB, 0, 100, 2);
        check_entry_event(wait_event(t->eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0x0F));
        expect_eq_empty(t->eq, "(headers still refer to the buffer: no AUTO_FREE yet)");
        EXPECT_RC(PTL_IN_USE, PtlMEUnlink(t->over));
        std::vector<uint8_t> p1(128), p2(128);
        t->append(p1.data(), p1.size(), PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0xA, tag(0xE1));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 100, 0xA, 0, 0, 1, tag(0xE1));
        check_entry_event(wait_event(t->eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0xE1));
        expect_eq_empty(t->eq, "(one header left: no AUTO_FREE yet)");
        t->append(p2.data(), p2.size(), PTL_ME_OP_PUT, 0xB, tag(0xE2));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 100, 0xB, 0, 100, 2, tag(0xE2));
        // LINK of the new entry and AUTO_FREE of the overflow entry, in either order.
        bool link = false, free = false;
        for (int k = 0; k < 2; ++k) {
            ptl_event_t ev = wait_event(t->eq);
            if (ev.type == PTL_EVENT_LINK && !link) {
                link = true;
                check_entry_event(ev, PTL_EVENT_LINK, kPt, tag(0xE2));
            } else {
                free = true;
                check_entry_event(ev, PTL_EVENT_AUTO_FREE, kPt, tag(0x0F));
                EXPECT_EQ((Ct{2, 0}), ct_get(ct)) << "AUTO_FREE comes after the buffer's counts";
            }
        }
        EXPECT_TRUE(link && free);
        expect_eq_empty(t->eq);
        EXPECT_RC(PTL_ARG_INVALID, PtlMEUnlink(t->over)) << "nothing is left of it after AUTO_FREE";
    }
}

// §3.11.3, §3.12.3: PtlMEUnlink of an overflow ME that still has unexpected headers
// returns PTL_IN_USE; after the headers are consumed it succeeds (and raises no event).
TEST_F(Overflow, UnlinkOverflowEntryWithHeadersIsInUse) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, false);
    barrier();
    if (rank() == 1) {
        Sender s(ni, 64, 26);
        s.put(kPt, 32, 0x26, 8, 1, 32, 8, PTL_OVERFLOW_LIST);
    }
    barrier();
    if (rank() == 0) {
        t->expect_put(32, 0x26, 8, 8, 1);
        EXPECT_RC(PTL_IN_USE, PtlMEUnlink(t->over));
        t->search(0x26, PTL_SEARCH_DELETE, true, tag(0x61));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 32, 0x26, 8, 8, 1, tag(0x61));
        EXPECT_PTL(PtlMEUnlink(t->over));
        expect_eq_empty(t->eq, "(an explicit unlink raises no event)");
    }
}

// §3.12.4 PTL_SEARCH_ONLY: SEARCH with PTL_NI_OK and every field of the message, the
// header stays (the search is repeatable and a later append still finds it); a persistent search
// reports every match then NO_MATCH; a use-once search without a match reports NO_MATCH.
TEST_F(Overflow, SearchOnlyKeepsHeaders) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, false);
    barrier();
    if (rank() == 1) {
        Sender s(ni, 64, 28);
        s.put(kPt, 24, 0x28, 3, 7, 24, 3, PTL_OVERFLOW_LIST);
        s.put(kPt, 8, 0x29, 40, 8, 8, 40, PTL_OVERFLOW_LIST);
    }
    barrier();
    if (rank() == 0) {
        t->expect_put(24, 0x28, 3, 3, 7);
        t->expect_put(8, 0x29, 40, 40, 8);
        for (uintptr_t user : {0x71, 0x72}) {
            t->search(0x28, PTL_SEARCH_ONLY, true, tag(user));
            t->expect_overflow(PTL_EVENT_SEARCH, 24, 0x28, 3, 3, 7, tag(user));
        }
        t->search(0x28, PTL_SEARCH_ONLY, false, tag(0x73), PTL_CT_NONE, 0x01);
        t->expect_overflow(PTL_EVENT_SEARCH, 24, 0x28, 3, 3, 7, tag(0x73));
        t->expect_overflow(PTL_EVENT_SEARCH, 8, 0x29, 40, 40, 8, tag(0x73));
        t->expect_no_match(tag(0x73));
        t->search(0x99, PTL_SEARCH_ONLY, true, tag(0x74));
        t->expect_no_match(tag(0x74));
        std::vector<uint8_t> p(64);
        t->append(p.data(), p.size(), PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0x28, tag(0x75));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 24, 0x28, 3, 3, 7, tag(0x75));
        check_entry_event(wait_event(t->eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0x75));
        expect_eq_empty(t->eq);
    }
}

// §3.12.4 PTL_SEARCH_DELETE: overflow events for the matches, headers removed; a
// persistent search ends with SEARCH/NO_MATCH, a use-once one stops at its first match.
TEST_F(Overflow, SearchDeleteRemovesHeaders) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, true);
    barrier();
    if (rank() == 1) {
        Sender s(ni, 64, 29);
        for (ptl_hdr_data_t i = 0; i < 3; ++i) s.put(kPt, 8, 0x44, 0, i, 8, 8 * i, PTL_OVERFLOW_LIST);
        s.put(kPt, 8, 0x45, 0, 3, 8, 24, PTL_OVERFLOW_LIST);
    }
    barrier();
    if (rank() == 0) {
        for (ptl_hdr_data_t i = 0; i < 4; ++i) t->expect_put(8, i == 3 ? 0x45 : 0x44, 0, 8 * i, i);
        t->search(0x44, PTL_SEARCH_DELETE, false, tag(0x81));
        for (ptl_hdr_data_t i = 0; i < 3; ++i)
            t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 8, 0x44, 0, 8 * i, i, tag(0x81));
        t->expect_no_match(tag(0x81));
        t->search(0x44, PTL_SEARCH_ONLY, false, tag(0x82));
        t->expect_no_match(tag(0x82));
        t->search(0x45, PTL_SEARCH_DELETE, true, tag(0x83));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 8, 0x45, 0, 24, 3, tag(0x83));
        // The next event is this search's: the use-once delete raised no trailing NO_MATCH.
        t->search(0x45, PTL_SEARCH_ONLY, true, tag(0x84));
        t->expect_no_match(tag(0x84));
        expect_eq_empty(t->eq);
    }
}

// §3.11.4/§3.12.4 counting (Portico: no CT_COMM needed): a use-once search adds 1
// success on a hit, 1 failure without; a persistent search adds 1 success per hit and 1 failure at
// the end. Searches never touch status registers.
TEST_F(Overflow, SearchCountingEventsAndStatusRegisters) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, true);
    barrier();
    if (rank() == 1) {
        Sender s(ni, 64, 30);
        s.put(kPt, 8, 0x30, 0, 1, 8, 0, PTL_OVERFLOW_LIST);
        s.put(kPt, 8, 0x30, 0, 2, 8, 8, PTL_OVERFLOW_LIST);
    }
    barrier();
    if (rank() == 0) {
        t->expect_put(8, 0x30, 0, 0, 1);
        t->expect_put(8, 0x30, 0, 8, 2);
        const Sr before = read_sr(ni);
        struct Case {
            ptl_match_bits_t bits;
            ptl_search_op_t op;
            bool use_once;
            Ct want;
            int hits;
        };
        const Case cases[] = {{0x31, PTL_SEARCH_ONLY, true, {0, 1}, 0},
                              {0x30, PTL_SEARCH_ONLY, false, {2, 1}, 2},
                              {0x30, PTL_SEARCH_ONLY, true, {1, 0}, 1},
                              {0x30, PTL_SEARCH_DELETE, false, {2, 1}, 2},
                              {0x30, PTL_SEARCH_ONLY, false, {0, 1}, 0}};
        for (size_t i = 0; i < std::size(cases); ++i) {
            SCOPED_TRACE("search " + std::to_string(i));
            const Case &c = cases[i];
            ptl_handle_ct_t ct = make_ct(ni);
            t->search(c.bits, c.op, c.use_once, tag(0x90 + i), ct);
            for (int h = 0; h < c.hits; ++h) {
                ptl_event_t ev = wait_event(t->eq);
                EXPECT_EQ(Kind{c.op == PTL_SEARCH_ONLY ? PTL_EVENT_SEARCH : PTL_EVENT_PUT_OVERFLOW}, Kind{ev.type})
                    << describe(ev);
                EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
                EXPECT_EQ(static_cast<ptl_hdr_data_t>(h + 1), ev.hdr_data) << describe(ev);
            }
            if (!c.use_once || c.hits == 0) t->expect_no_match(tag(0x90 + i));
            EXPECT_EQ(c.want, ct_reach(ct, c.want));
        }
        expect_eq_empty(t->eq);
        EXPECT_EQ(before, read_sr(ni)) << "searches must not touch status registers";
    }
}

// §2.5, §3.12.2, §3.12.4: neither a search nor an append that matches an unexpected header
// checks permissions (the entries here allow no operation and another uid), and neither touches
// the status registers.
TEST_F(Overflow, UnexpectedMatchingSkipsPermissionChecks) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) t.emplace(ni, true);
    barrier();
    if (rank() == 1) {
        Sender s(ni, 64, 31);
        s.put(kPt, 8, 0x31, 0, 1, 8, 0, PTL_OVERFLOW_LIST);
        s.put(kPt, 8, 0x32, 0, 2, 8, 8, PTL_OVERFLOW_LIST);
    }
    barrier();
    if (rank() == 0) {
        t->expect_put(8, 0x31, 0, 0, 1);
        t->expect_put(8, 0x32, 0, 8, 2);
        const Sr before = read_sr(ni);
        const ptl_uid_t other = ni.uids[1] + 1;
        ptl_me_t d = me_desc(nullptr, 0, PTL_ME_USE_ONCE, 0x31);
        d.uid = other;
        EXPECT_PTL(PtlMESearch(ni.h, kPt, &d, PTL_SEARCH_ONLY, tag(0x31)));
        t->expect_overflow(PTL_EVENT_SEARCH, 8, 0x31, 0, 0, 1, tag(0x31));
        static uint8_t p[8];
        d = me_desc(p, sizeof p, PTL_ME_USE_ONCE, 0x32);
        d.uid = other;
        ptl_handle_me_t h;
        EXPECT_PTL(PtlMEAppend(ni.h, kPt, &d, PTL_PRIORITY_LIST, tag(0x32), &h));
        t->expect_overflow(PTL_EVENT_PUT_OVERFLOW, 8, 0x32, 0, 8, 2, tag(0x32));
        check_entry_event(wait_event(t->eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0x32));
        EXPECT_EQ(before, read_sr(ni));
        expect_eq_empty(t->eq);
    }
}

// The get side (§3.15.3, Table 3-3): a get matched in the overflow list replies from the
// overflow buffer with ptl_list = OVERFLOW; a later append raises GET_OVERFLOW.
TEST_F(Overflow, GetMatchedInOverflowList) {
    Ni ni = open_ni(kMatchingPhysical);
    std::optional<Target> t;
    if (rank() == 0) {
        t.emplace(ni, false);
        fill_pattern(t->obuf.data(), t->obuf.size(), 32);
    }
    barrier();
    if (rank() == 1) {
        std::vector<uint8_t> dst(64, 0);
        ptl_handle_eq_t eq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, dst.data(), dst.size(), eq);
        ASSERT_PTL(PtlGet(md, 0, 64, ni.id_of(0), kPt, 0x50, 16, tag(1)));
        check_init_event(wait_event(eq), {.type = PTL_EVENT_REPLY,
                                          .user_ptr = tag(1),
                                          .mlength = 64,
                                          .remote_offset = 16,
                                          .list = PTL_OVERFLOW_LIST});
        EXPECT_EQ(-1, check_pattern(dst.data(), 64, 32, 16));
    }
    barrier();
    if (rank() == 0) {
        t->expect_overflow(PTL_EVENT_GET, 64, 0x50, 16, 16, std::nullopt, tag(0x0F));
        std::vector<uint8_t> p(64);
        t->append(p.data(), p.size(), PTL_ME_OP_GET | PTL_ME_USE_ONCE, 0x50, tag(0x51));
        t->expect_overflow(PTL_EVENT_GET_OVERFLOW, 64, 0x50, 16, 16, std::nullopt, tag(0x51));
        check_entry_event(wait_event(t->eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0x51));
        expect_eq_empty(t->eq);
    }
}

// Unexpected headers on a non-matching NI (§3.11.2, §3.11.4): every header matches an LE; a
// use-once append takes the oldest, a persistent one the rest and links.
TEST_F(Overflow, NonMatchingLeUnexpectedHeaders) {
    Ni ni = open_ni(kNonMatchingPhysical);
    std::vector<uint8_t> obuf(64, 0), p1(64, 0), p2(64, 0);
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        eq = make_eq(ni);
        make_pt(ni, eq, 0, kPt);
        append_le(ni, kPt, le_desc(obuf.data(), 64, PTL_LE_OP_PUT), PTL_OVERFLOW_LIST, tag(0x0F), eq);
    }
    barrier();
    std::optional<Sender> s;
    if (rank() == 1) {
        s.emplace(ni, 64, 33);
        s->put(kPt, 8, 0, 0, 1, 8, 0, PTL_OVERFLOW_LIST);
        s->put(kPt, 8, 0, 8, 2, 8, 8, PTL_OVERFLOW_LIST, 8);
    }
    barrier();
    auto ev = [&](ptl_event_kind_t type, ptl_size_t roff, const uint8_t *base, uintptr_t user, ptl_hdr_data_t hdr) {
        check_target_event(wait_event(eq),
                           {.type = type,
                            .initiator = 1,
                            .pt_index = kPt,
                            .match_bits = 0,
                            .rlength = 8,
                            .mlength = 8,
                            .remote_offset = roff,
                            .start = base + roff,
                            .user_ptr = tag(user),
                            .hdr_data = hdr},
                           ni);
    };
    if (rank() == 0) {
        ev(PTL_EVENT_PUT, 0, obuf.data(), 0x0F, 1);
        ev(PTL_EVENT_PUT, 8, obuf.data(), 0x0F, 2);
        ptl_le_t search = le_desc(nullptr, 0, PTL_LE_OP_PUT);
        EXPECT_PTL(PtlLESearch(ni.h, kPt, &search, PTL_SEARCH_ONLY, tag(0x20)));
        ev(PTL_EVENT_SEARCH, 0, obuf.data(), 0x20, 1);
        ev(PTL_EVENT_SEARCH, 8, obuf.data(), 0x20, 2);
        ptl_event_t nm = expect_event(eq, PTL_EVENT_SEARCH);
        EXPECT_EQ(Fail{PTL_NI_NO_MATCH}, Fail{nm.ni_fail_type});
        EXPECT_EQ(tag(0x20), nm.user_ptr);
        ptl_handle_le_t h;
        ptl_le_t once = le_desc(p1.data(), 64, PTL_LE_OP_PUT | PTL_LE_USE_ONCE);
        EXPECT_PTL(PtlLEAppend(ni.h, kPt, &once, PTL_PRIORITY_LIST, tag(0x21), &h));
        ev(PTL_EVENT_PUT_OVERFLOW, 0, obuf.data(), 0x21, 1);
        check_entry_event(wait_event(eq), PTL_EVENT_AUTO_UNLINK, kPt, tag(0x21));
        ptl_le_t persistent = le_desc(p2.data(), 64, PTL_LE_OP_PUT);
        EXPECT_PTL(PtlLEAppend(ni.h, kPt, &persistent, PTL_PRIORITY_LIST, tag(0x22), &h));
        ev(PTL_EVENT_PUT_OVERFLOW, 8, obuf.data(), 0x22, 2);
        check_entry_event(wait_event(eq), PTL_EVENT_LINK, kPt, tag(0x22));
    }
    barrier();
    if (rank() == 1) s->put(kPt, 8, 0, 16, 3, 8, 16, PTL_PRIORITY_LIST);
    barrier();
    if (rank() == 0) {
        ev(PTL_EVENT_PUT, 16, p2.data(), 0x22, 3);
        EXPECT_EQ(-1, check_pattern(p2.data() + 16, 8, 33));
        expect_eq_empty(eq);
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
