// SPDX-License-Identifier: BSD-3-Clause
// The engine in one process: two or three Engine objects (each its own endpoint, so its own
// peer) talk through the in-memory loopback transport. Each test asserts the values the
// Portals 4.3 spec requires of events (type, ni_fail_type, mlength, rlength, remote_offset,
// match_bits, initiator, user_ptr, hdr_data, ptl_list, pt_index), counts and return codes.
//
// Nothing here sleeps or times anything: a test waits for the events it expects (PtlEQPoll with a
// long timeout that only a broken engine reaches), and what must not have happened is checked
// after something that is ordered after it (the ACK that follows the target's event, or a
// trigger that fires synchronously inside PtlCTInc).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "clientkit.hpp"
#include "common/futex.hpp"
#include "engine/engine.hpp"
#include "loopback_transport.hpp"

namespace {

using portico::engine::Engine;
namespace lb = portico::loopback;
namespace ck = portico::clientkit;

// Milliseconds an expected event may take before the test fails instead of hanging. A correct
// engine delivers in microseconds; this bounds a broken one.
constexpr ptl_time_t kPatience = 20000;
constexpr ptl_match_bits_t kAnyBits = ~ptl_match_bits_t{0};

// One process's worth of Portals: an engine, a matching physical NI and an event queue.
struct Peer {
    std::unique_ptr<Engine> e;
    ptl_handle_ni_t ni = 0;
    ptl_process_t id{};
    ptl_handle_eq_t eq = 0;

    Engine *operator->() const { return e.get(); }
};

// An ME any initiator may use (clientkit's descriptor), parameters in the order the tests think.
ptl_me_t me_desc(void *buf, ptl_size_t len, ptl_match_bits_t bits, ptl_match_bits_t ignore = 0,
                 unsigned options = PTL_ME_OP_PUT | PTL_ME_OP_GET) {
    return ck::me_desc(buf, len, options, bits, ignore);
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(seed + i * 7 + i / 251);
    return v;
}

class EngineLoopback : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        lb::register_loopback();
        setenv("PORTICO_TRANSPORT", "loopback", 1); // before the first ni_init reads it
    }

    void SetUp() override {
        open(a_);
        open(b_);
    }
    void TearDown() override {
        for (Peer *p : {&c_, &b_, &a_})
            if (p->e) p->e->fini();
    }

    static void open(Peer &p) {
        p.e = std::make_unique<Engine>();
        ASSERT_EQ(PTL_OK, p->init());
        ASSERT_EQ(PTL_OK, p->ni_init(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr,
                                     nullptr, &p.ni));
        ASSERT_EQ(PTL_OK, p->get_phys_id(p.ni, &p.id));
        ASSERT_EQ(PTL_OK, p->eq_alloc(p.ni, 1024, &p.eq));
    }

    static ptl_pt_index_t pt_alloc(Peer &p, unsigned options = 0) {
        ptl_pt_index_t pt = 0;
        EXPECT_EQ(PTL_OK, p->pt_alloc(p.ni, options, p.eq, PTL_PT_ANY, &pt));
        return pt;
    }

    // The next event on eq (the peer's own by default); a failure, not a hang, if none comes.
    static ptl_event_t next(Peer &p, ptl_handle_eq_t eq = 0) {
        const ptl_handle_eq_t q = eq ? eq : p.eq;
        ptl_event_t ev{};
        unsigned which = 0;
        const int rc = p->eq_poll(&q, 1, kPatience, &ev, &which);
        EXPECT_EQ(PTL_OK, rc) << "no event came";
        if (rc != PTL_OK) ev.type = PTL_EVENT_ERROR;
        return ev;
    }
    static void expect_empty(Peer &p, ptl_handle_eq_t eq = 0) {
        ptl_event_t ev{};
        EXPECT_EQ(PTL_EQ_EMPTY, p->eq_get(eq ? eq : p.eq, &ev)) << "unexpected event of type " << ev.type;
    }

    // Appends a match list entry and takes its LINK event.
    static ptl_handle_me_t append(Peer &p, ptl_pt_index_t pt, const ptl_me_t &me, void *user_ptr,
                                  ptl_list_t list = PTL_PRIORITY_LIST) {
        ptl_handle_me_t h = 0;
        EXPECT_EQ(PTL_OK, p->append(p.ni, pt, me, true, list, user_ptr, &h));
        const ptl_event_t ev = next(p);
        EXPECT_EQ(PTL_EVENT_LINK, ev.type);
        EXPECT_EQ(user_ptr, ev.user_ptr);
        EXPECT_EQ(pt, ev.pt_index);
        EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
        return h;
    }

    static ptl_handle_md_t bind(Peer &p, void *buf, ptl_size_t len, ptl_handle_ct_t ct = PTL_CT_NONE,
                                unsigned options = 0, ptl_handle_eq_t eq = 0) {
        const ptl_md_t md = ck::md_desc(buf, len, options, eq ? eq : p.eq, ct);
        ptl_handle_md_t h = 0;
        EXPECT_EQ(PTL_OK, p->md_bind(p.ni, &md, &h));
        return h;
    }

    static ptl_handle_ct_t ct_alloc(Peer &p) {
        ptl_handle_ct_t ct = 0;
        EXPECT_EQ(PTL_OK, p->ct_alloc(p.ni, &ct));
        return ct;
    }
    static ptl_ct_event_t ct_get(Peer &p, ptl_handle_ct_t ct) {
        ptl_ct_event_t v{};
        EXPECT_EQ(PTL_OK, p->ct_get(ct, &v));
        return v;
    }
    static ptl_ct_event_t ct_wait(Peer &p, ptl_handle_ct_t ct, ptl_size_t test) {
        ptl_ct_event_t v{};
        unsigned which = 0;
        EXPECT_EQ(PTL_OK, p->ct_poll(&ct, &test, 1, kPatience, &v, &which)) << "the count never reached " << test;
        return v;
    }

    static ptl_sr_value_t status(Peer &p, ptl_sr_index_t reg) {
        ptl_sr_value_t v = -1;
        EXPECT_EQ(PTL_OK, p->ni_status(p.ni, reg, &v));
        return v;
    }

    static void expect_from(const ptl_event_t &ev, const Peer &initiator) {
        EXPECT_EQ(initiator.id.phys.nid, ev.initiator.phys.nid);
        EXPECT_EQ(initiator.id.phys.pid, ev.initiator.phys.pid);
    }

    // A put with an ack from `from`'s md; takes the SEND event, returns the ACK event.
    static ptl_event_t put_acked(Peer &from, ptl_handle_md_t md, ptl_size_t off, ptl_size_t len, const Peer &to,
                                 ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr,
                                 ptl_hdr_data_t hdr = 0) {
        EXPECT_EQ(PTL_OK, from->put(md, off, len, PTL_ACK_REQ, to.id, pt, bits, roff, user_ptr, hdr));
        ptl_event_t ev = next(from);
        EXPECT_EQ(PTL_EVENT_SEND, ev.type);
        EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
        EXPECT_EQ(user_ptr, ev.user_ptr);
        EXPECT_EQ(len, ev.mlength);
        ev = next(from);
        EXPECT_EQ(PTL_EVENT_ACK, ev.type);
        EXPECT_EQ(user_ptr, ev.user_ptr);
        return ev;
    }

    Peer a_, b_, c_;
};

// ---- matching ----------------------------------------------------------------------------------

TEST_F(EngineLoopback, MatchAndIgnoreBitsSelectTheEntry) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> wide(64, 0), exact(64, 0);
    int wide_tag = 0, exact_tag = 0;
    // Matches 0x12xx (the low byte is ignored), and exactly 0x5.
    append(b_, pt, me_desc(wide.data(), wide.size(), 0x1200, 0x00FF), &wide_tag);
    append(b_, pt, me_desc(exact.data(), exact.size(), 0x5), &exact_tag);
    auto src = pattern(64, 3);
    int put_tag = 0;
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    ptl_event_t ack = put_acked(a_, md, 0, 20, b_, pt, 0x12AB, 8, &put_tag, 0xABCDEF);
    EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
    EXPECT_EQ(20u, ack.mlength);
    EXPECT_EQ(8u, ack.remote_offset);
    EXPECT_EQ(PTL_PRIORITY_LIST, ack.ptl_list);
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
    EXPECT_EQ(&wide_tag, ev.user_ptr);
    EXPECT_EQ(0x12ABu, ev.match_bits);
    EXPECT_EQ(20u, ev.rlength);
    EXPECT_EQ(20u, ev.mlength);
    EXPECT_EQ(8u, ev.remote_offset);
    EXPECT_EQ(0xABCDEFu, ev.hdr_data);
    EXPECT_EQ(pt, ev.pt_index);
    EXPECT_EQ(PTL_PRIORITY_LIST, ev.ptl_list);
    EXPECT_EQ(wide.data() + 8, ev.start);
    expect_from(ev, a_);
    ptl_uid_t uid = 0;
    ASSERT_EQ(PTL_OK, a_->get_uid(a_.ni, &uid));
    EXPECT_EQ(uid, ev.uid);
    EXPECT_EQ(0, std::memcmp(wide.data() + 8, src.data(), 20));

    ack = put_acked(a_, md, 0, 4, b_, pt, 0x5, 0, &put_tag, 1);
    EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&exact_tag, ev.user_ptr);
    EXPECT_EQ(0x5u, ev.match_bits);

    // A bit outside the ignore mask differs: nothing matches, the message is dropped (§3.13.3).
    ack = put_acked(a_, md, 0, 4, b_, pt, 0x13AB, 0, &put_tag);
    EXPECT_EQ(PTL_NI_DROPPED, ack.ni_fail_type);
    EXPECT_EQ(0u, ack.mlength);
    EXPECT_EQ(1, status(b_, PTL_SR_DROP_COUNT));
    expect_empty(b_);
}

TEST_F(EngineLoopback, MatchIdSelectsTheInitiator) {
    open(c_);
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> only_c(16), anyone(16);
    int only_c_tag = 0, anyone_tag = 0;
    ptl_me_t me = me_desc(only_c.data(), only_c.size(), 7);
    me.match_id = c_.id; // this initiator only
    append(b_, pt, me, &only_c_tag);
    me = me_desc(anyone.data(), anyone.size(), 7);
    me.match_id.phys.nid = PTL_NID_ANY;
    me.match_id.phys.pid = PTL_PID_ANY;
    append(b_, pt, me, &anyone_tag);
    auto src = pattern(16, 1);

    const ptl_handle_md_t md_a = bind(a_, src.data(), src.size());
    EXPECT_EQ(PTL_NI_OK, put_acked(a_, md_a, 0, 16, b_, pt, 7, 0, nullptr).ni_fail_type);
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&anyone_tag, ev.user_ptr); // A is not C: the first entry does not match
    expect_from(ev, a_);

    const ptl_handle_md_t md_c = bind(c_, src.data(), src.size());
    EXPECT_EQ(PTL_NI_OK, put_acked(c_, md_c, 0, 16, b_, pt, 7, 0, nullptr).ni_fail_type);
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&only_c_tag, ev.user_ptr);
    expect_from(ev, c_);
}

// The wide-match extension (portico_ext.h): the upper 64 bits select like match_bits, on posted
// entries, unexpected headers (search and append) alike; PtlMEAppend's entries ignore them.
TEST_F(EngineLoopback, WideMatchBitsSelectEntriesAndUnexpectedHeaders) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> hi5(16, 0), hi_low_any(16, 0), plain(16, 0), over(256, 0);
    int hi5_tag = 0, hi_low_any_tag = 0, plain_tag = 0, over_tag = 0;
    ptl_handle_me_t h = 0;
    // Exactly hi 5; then hi 0x7_0000_00xx (the low byte ignored); then a plain entry.
    ASSERT_EQ(PTL_OK,
              b_->append(b_.ni, pt, me_desc(hi5.data(), hi5.size(), 9), true, PTL_PRIORITY_LIST, &hi5_tag, &h, {5, 0}));
    EXPECT_EQ(PTL_EVENT_LINK, next(b_).type);
    ASSERT_EQ(PTL_OK, b_->append(b_.ni, pt, me_desc(hi_low_any.data(), hi_low_any.size(), 9), true, PTL_PRIORITY_LIST,
                                 &hi_low_any_tag, &h, {0x700000000ull, 0xFF}));
    EXPECT_EQ(PTL_EVENT_LINK, next(b_).type);
    auto src = pattern(16, 5);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());
    auto put_wide = [&](uint64_t hi) {
        EXPECT_EQ(PTL_OK, a_->put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 9, 0, nullptr, 0, hi));
        EXPECT_EQ(PTL_EVENT_SEND, next(a_).type);
        return next(a_); // the ACK
    };
    EXPECT_EQ(PTL_NI_OK, put_wide(0x7000000AB).ni_fail_type);
    EXPECT_EQ(&hi_low_any_tag, next(b_).user_ptr) << "hi 0x7000000AB skips the hi-5 entry";
    EXPECT_EQ(PTL_NI_OK, put_wide(5).ni_fail_type);
    EXPECT_EQ(&hi5_tag, next(b_).user_ptr);
    EXPECT_EQ(PTL_NI_DROPPED, put_wide(6).ni_fail_type) << "one upper bit differs: no entry matches";

    append(b_, pt, me_desc(plain.data(), plain.size(), 9, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE), &plain_tag);
    EXPECT_EQ(PTL_NI_OK, put_wide(6).ni_fail_type);
    EXPECT_EQ(&plain_tag, next(b_).user_ptr) << "a PtlMEAppend entry ignores the upper bits";
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, next(b_).type);

    // Unexpected headers keep their upper bits for searches and later appends.
    append(b_, pt, me_desc(over.data(), over.size(), 0, kAnyBits, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL), &over_tag,
           PTL_OVERFLOW_LIST);
    EXPECT_EQ(PTL_OVERFLOW_LIST, put_wide(0x1234).ptl_list);
    EXPECT_EQ(PTL_EVENT_PUT, next(b_).type);
    int probe_tag = 0;
    const ptl_me_t probe = me_desc(nullptr, 0, 9, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE);
    ASSERT_EQ(PTL_OK, b_->search(b_.ni, pt, probe, true, PTL_SEARCH_ONLY, &probe_tag, {0x1235, 0}));
    EXPECT_EQ(PTL_NI_NO_MATCH, next(b_).ni_fail_type);
    ASSERT_EQ(PTL_OK, b_->search(b_.ni, pt, probe, true, PTL_SEARCH_ONLY, &probe_tag, {0x1234, 0}));
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_SEARCH, ev.type);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
    std::vector<unsigned char> late(16, 0);
    int late_tag = 0;
    ASSERT_EQ(PTL_OK, b_->append(b_.ni, pt, me_desc(late.data(), late.size(), 9, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE),
                                 true, PTL_PRIORITY_LIST, &late_tag, &h, {0x1200, 0xFF}));
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT_OVERFLOW, ev.type);
    EXPECT_EQ(&late_tag, ev.user_ptr);
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, next(b_).type);
    expect_empty(b_);
}

TEST_F(EngineLoopback, PriorityListIsSearchedBeforeOverflow) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> over(64), prio(64);
    int over_tag = 0, prio_tag = 0;
    // The overflow entry is appended first; the priority list still wins.
    append(b_, pt, me_desc(over.data(), over.size(), 0, kAnyBits), &over_tag, PTL_OVERFLOW_LIST);
    const ptl_handle_me_t prio_me = append(b_, pt, me_desc(prio.data(), prio.size(), 0, kAnyBits), &prio_tag);
    auto src = pattern(8, 9);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    ptl_event_t ack = put_acked(a_, md, 0, 8, b_, pt, 1, 0, nullptr);
    EXPECT_EQ(PTL_PRIORITY_LIST, ack.ptl_list);
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&prio_tag, ev.user_ptr);
    EXPECT_EQ(PTL_PRIORITY_LIST, ev.ptl_list);

    ASSERT_EQ(PTL_OK, b_->unlink(prio_me, true));
    ack = put_acked(a_, md, 0, 8, b_, pt, 2, 0, nullptr);
    EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
    EXPECT_EQ(PTL_OVERFLOW_LIST, ack.ptl_list);
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&over_tag, ev.user_ptr);
    EXPECT_EQ(PTL_OVERFLOW_LIST, ev.ptl_list);
    EXPECT_EQ(0, std::memcmp(over.data(), src.data(), 8));
}

TEST_F(EngineLoopback, UseOnceEntryUnlinksAfterItsMessage) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> buf(32);
    int tag = 0;
    append(b_, pt, me_desc(buf.data(), buf.size(), 3, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE), &tag);
    auto src = pattern(32, 5);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    EXPECT_EQ(PTL_NI_OK, put_acked(a_, md, 0, 32, b_, pt, 3, 0, nullptr).ni_fail_type);
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(32u, ev.mlength);
    // AUTO_UNLINK comes after the entry's last PUT event (§3.13.1).
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, ev.type);
    EXPECT_EQ(&tag, ev.user_ptr);
    EXPECT_EQ(pt, ev.pt_index);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);

    // The entry is gone: the same message now finds nothing.
    EXPECT_EQ(PTL_NI_DROPPED, put_acked(a_, md, 0, 32, b_, pt, 3, 0, nullptr).ni_fail_type);
    EXPECT_EQ(1, status(b_, PTL_SR_DROP_COUNT));
    expect_empty(b_);
}

TEST_F(EngineLoopback, ManageLocalPacksMessagesAndMinFreeUnlinks) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> buf(100, 0);
    int tag = 0;
    ptl_me_t me = me_desc(buf.data(), buf.size(), 1, 0, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL);
    me.min_free = 40;
    append(b_, pt, me, &tag);
    auto src = pattern(90, 11);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    // The initiator's offset (999) is ignored: the entry's local offset goes 0, 30, 60. After the
    // third message 10 bytes are left, fewer than min_free: the entry unlinks.
    for (ptl_size_t k = 0; k < 3; ++k) {
        const ptl_event_t ack = put_acked(a_, md, 30 * k, 30, b_, pt, 1, 999, nullptr);
        EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
        EXPECT_EQ(30u, ack.mlength);
        EXPECT_EQ(30 * k, ack.remote_offset) << "the offset used at the target";
        const ptl_event_t ev = next(b_);
        EXPECT_EQ(PTL_EVENT_PUT, ev.type);
        EXPECT_EQ(30u, ev.mlength);
        EXPECT_EQ(999u, ev.remote_offset) << "at the target: the offset requested";
        EXPECT_EQ(buf.data() + 30 * k, ev.start);
    }
    const ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, ev.type);
    EXPECT_EQ(&tag, ev.user_ptr);
    EXPECT_EQ(0, std::memcmp(buf.data(), src.data(), 90));
    EXPECT_EQ(PTL_NI_DROPPED, put_acked(a_, md, 0, 30, b_, pt, 1, 0, nullptr).ni_fail_type);
}

TEST_F(EngineLoopback, NoTruncateEntriesRefuseLongMessagesOthersTruncate) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> strict(16, 0), loose(16, 0);
    int strict_tag = 0, loose_tag = 0;
    append(b_, pt, me_desc(strict.data(), strict.size(), 4, 0, PTL_ME_OP_PUT | PTL_ME_NO_TRUNCATE), &strict_tag);
    auto src = pattern(32, 2);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    // 32 bytes do not fit a NO_TRUNCATE entry of 16: it does not match, nothing else does.
    ptl_event_t ack = put_acked(a_, md, 0, 32, b_, pt, 4, 0, nullptr);
    EXPECT_EQ(PTL_NI_DROPPED, ack.ni_fail_type);
    EXPECT_EQ(1, status(b_, PTL_SR_DROP_COUNT));
    expect_empty(b_);
    EXPECT_EQ(std::vector<unsigned char>(16, 0), strict);

    // A truncating entry behind it takes the first 16 bytes.
    append(b_, pt, me_desc(loose.data(), loose.size(), 4, 0, PTL_ME_OP_PUT), &loose_tag);
    ack = put_acked(a_, md, 0, 32, b_, pt, 4, 0, nullptr);
    EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
    EXPECT_EQ(16u, ack.mlength);
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&loose_tag, ev.user_ptr);
    EXPECT_EQ(32u, ev.rlength);
    EXPECT_EQ(16u, ev.mlength);
    EXPECT_EQ(0, std::memcmp(loose.data(), src.data(), 16));

    // A message that fits goes to the first entry.
    ack = put_acked(a_, md, 0, 16, b_, pt, 4, 0, nullptr);
    EXPECT_EQ(16u, ack.mlength);
    ev = next(b_);
    EXPECT_EQ(&strict_tag, ev.user_ptr);
    EXPECT_EQ(16u, ev.mlength);
    EXPECT_EQ(0, std::memcmp(strict.data(), src.data(), 16));
}

// ---- the cached entry (docs/FASTPATH.md §4, step 2; Engine::find_entry) ------------------------
// Each PT remembers the entry that matched last. These tests repeat a message so that the second
// one could take the cached entry, then send one that must not: an earlier entry matches it, the
// cached entry is gone, or the checks after matching refuse it. With PORTICO_FAST_PATH=0 (the
// engine.generic.* registration) the same tests hold for the walk alone.

TEST_F(EngineLoopback, CachedEntryNeverHidesAnEarlierEntryThatMatches) {
    open(c_);
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> exact(16), from_c(16), strict(8), anything(64);
    int exact_tag = 0, from_c_tag = 0, strict_tag = 0, anything_tag = 0;
    append(b_, pt, me_desc(exact.data(), exact.size(), 0x1), &exact_tag);
    ptl_me_t me = me_desc(from_c.data(), from_c.size(), 0x2);
    me.match_id = c_.id;
    append(b_, pt, me, &from_c_tag);
    append(b_, pt, me_desc(strict.data(), strict.size(), 0x3, 0, PTL_ME_OP_PUT | PTL_ME_NO_TRUNCATE), &strict_tag);
    append(b_, pt, me_desc(anything.data(), anything.size(), 0, kAnyBits), &anything_tag); // last
    auto src = pattern(64, 9);
    const ptl_handle_md_t md_a = bind(a_, src.data(), src.size());
    const ptl_handle_md_t md_c = bind(c_, src.data(), src.size());
    auto lands_in = [&](Peer &from, ptl_handle_md_t md, ptl_size_t len, ptl_match_bits_t bits, ptl_size_t roff) {
        EXPECT_EQ(PTL_NI_OK, put_acked(from, md, 0, len, b_, pt, bits, roff, nullptr).ni_fail_type);
        const ptl_event_t ev = next(b_);
        EXPECT_EQ(PTL_EVENT_PUT, ev.type);
        EXPECT_EQ(bits, ev.match_bits);
        return ev.user_ptr;
    };

    // Other match bits: the last entry, twice (the second time through the cache); then the bits
    // of the first entry must find the first entry, not the cached last one.
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 8, 0x7, 0));
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 8, 0x7, 0));
    EXPECT_EQ(&exact_tag, lands_in(a_, md_a, 8, 0x1, 0));
    // Another source: A's message for C's entry goes on to the last entry; C's own takes C's entry.
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 8, 0x2, 0));
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 8, 0x2, 0));
    EXPECT_EQ(&from_c_tag, lands_in(c_, md_c, 8, 0x2, 0));
    // Another length: 16 bytes do not fit the NO_TRUNCATE entry of 8, 8 bytes do.
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 16, 0x3, 0));
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 16, 0x3, 0));
    EXPECT_EQ(&strict_tag, lands_in(a_, md_a, 8, 0x3, 0));
    // Another offset: 4 bytes at 6 do not fit it either, at 4 they do.
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 4, 0x3, 6));
    EXPECT_EQ(&anything_tag, lands_in(a_, md_a, 4, 0x3, 6));
    EXPECT_EQ(&strict_tag, lands_in(a_, md_a, 4, 0x3, 4));
    EXPECT_EQ(0, std::memcmp(strict.data() + 4, src.data(), 4));
    expect_empty(b_);
}

TEST_F(EngineLoopback, UnlinkAppendAndSpentEntriesInvalidateTheCachedEntry) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> first(16), local(32), later(16), anything(16);
    int first_tag = 0, local_tag = 0, later_tag = 0, anything_tag = 0;
    const ptl_handle_me_t first_h = append(b_, pt, me_desc(first.data(), first.size(), 0x1), &first_tag);
    ptl_me_t me = me_desc(local.data(), local.size(), 0x2, 0, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL);
    me.min_free = 16;
    append(b_, pt, me, &local_tag);
    append(b_, pt, me_desc(anything.data(), anything.size(), 0, kAnyBits), &anything_tag);
    auto src = pattern(16, 4);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());
    auto lands_in = [&](ptl_match_bits_t bits) {
        EXPECT_EQ(PTL_NI_OK, put_acked(a_, md, 0, 8, b_, pt, bits, 0, nullptr).ni_fail_type);
        const ptl_event_t ev = next(b_);
        EXPECT_EQ(PTL_EVENT_PUT, ev.type);
        return ev.user_ptr;
    };

    // The first entry, cached as the head of the list; unlinked, then an entry for the same bits
    // appended (it may reuse the unlinked entry's memory): the message now belongs to the entry
    // that was behind the unlinked one.
    EXPECT_EQ(&first_tag, lands_in(0x1));
    EXPECT_EQ(&first_tag, lands_in(0x1));
    ASSERT_EQ(PTL_OK, b_->unlink(first_h, true));
    append(b_, pt, me_desc(later.data(), later.size(), 0x1), &later_tag);
    EXPECT_EQ(&anything_tag, lands_in(0x1));
    EXPECT_EQ(&anything_tag, lands_in(0x1));

    // A locally managed entry spends itself (min_free) on its third message and unlinks: the
    // fourth goes past it.
    EXPECT_EQ(&local_tag, lands_in(0x2));
    EXPECT_EQ(&local_tag, lands_in(0x2));
    EXPECT_EQ(&local_tag, lands_in(0x2));
    const ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, ev.type);
    EXPECT_EQ(&local_tag, ev.user_ptr);
    EXPECT_EQ(&anything_tag, lands_in(0x2));
    expect_empty(b_);
}

TEST_F(EngineLoopback, PermissionsAndRoomStillApplyToTheCachedEntry) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> put_only(16), foreign(16), room(16);
    int put_only_tag = 0, foreign_tag = 0, room_tag = 0;
    append(b_, pt, me_desc(put_only.data(), put_only.size(), 0x5, 0, PTL_ME_OP_PUT), &put_only_tag);
    ptl_uid_t uid = 0;
    ASSERT_EQ(PTL_OK, a_->get_uid(a_.ni, &uid));
    ptl_me_t me = me_desc(foreign.data(), foreign.size(), 0x6);
    me.uid = uid + 1; // someone else's
    append(b_, pt, me, &foreign_tag);
    append(b_, pt, me_desc(room.data(), room.size(), 0x7, 0, PTL_ME_OP_PUT | PTL_ME_NO_TRUNCATE | PTL_ME_MANAGE_LOCAL),
           &room_tag);
    auto src = pattern(16, 6);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    // A put fills the cache with the put-only entry; a get to it is refused by the same check.
    for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(PTL_NI_OK, put_acked(a_, md, 0, 8, b_, pt, 0x5, 0, nullptr).ni_fail_type);
        EXPECT_EQ(&put_only_tag, next(b_).user_ptr);
    }
    std::vector<unsigned char> back(8, 0xEE);
    const ptl_handle_md_t back_md = bind(a_, back.data(), back.size());
    for (int k = 0; k < 2; ++k) {
        ASSERT_EQ(PTL_OK, a_->get(back_md, 0, 8, b_.id, pt, 0x5, 0, nullptr));
        const ptl_event_t reply = next(a_);
        EXPECT_EQ(PTL_EVENT_REPLY, reply.type);
        EXPECT_EQ(PTL_NI_OP_VIOLATION, reply.ni_fail_type);
    }
    EXPECT_EQ(2, status(b_, PTL_SR_OPERATION_VIOLATIONS));
    EXPECT_EQ(std::vector<unsigned char>(8, 0xEE), back);

    // An entry of another uid matches and refuses, the second time as the first.
    for (int k = 0; k < 2; ++k)
        EXPECT_EQ(PTL_NI_PERM_VIOLATION, put_acked(a_, md, 0, 8, b_, pt, 0x6, 0, nullptr).ni_fail_type);
    EXPECT_EQ(2, status(b_, PTL_SR_PERMISSION_VIOLATIONS));
    EXPECT_EQ(std::vector<unsigned char>(16, 0), foreign);

    // A locally managed NO_TRUNCATE entry of 16 takes two messages of 8; the third finds no room.
    for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(PTL_NI_OK, put_acked(a_, md, 0, 8, b_, pt, 0x7, 0, nullptr).ni_fail_type);
        EXPECT_EQ(&room_tag, next(b_).user_ptr);
    }
    EXPECT_EQ(PTL_NI_DROPPED, put_acked(a_, md, 0, 8, b_, pt, 0x7, 0, nullptr).ni_fail_type);
    EXPECT_EQ(1, status(b_, PTL_SR_DROP_COUNT));
    expect_empty(b_);
}

TEST_F(EngineLoopback, WithoutAMatchingEntryPutsAndGetsAreDropped) {
    const ptl_pt_index_t pt = pt_alloc(b_); // no entry at all, no flow control
    std::vector<unsigned char> buf(8, 0xEE);
    const ptl_handle_md_t md = bind(a_, buf.data(), buf.size());
    int tag = 0;
    const ptl_event_t ack = put_acked(a_, md, 0, 8, b_, pt, 0, 0, &tag);
    EXPECT_EQ(PTL_NI_DROPPED, ack.ni_fail_type);
    EXPECT_EQ(0u, ack.mlength);

    ASSERT_EQ(PTL_OK, a_->get(md, 0, 8, b_.id, pt, 0, 0, &tag));
    const ptl_event_t reply = next(a_);
    EXPECT_EQ(PTL_EVENT_REPLY, reply.type);
    EXPECT_EQ(PTL_NI_DROPPED, reply.ni_fail_type);
    EXPECT_EQ(&tag, reply.user_ptr);
    EXPECT_EQ(std::vector<unsigned char>(8, 0xEE), buf);

    // A PT index that was never allocated drops as well.
    EXPECT_EQ(PTL_NI_DROPPED, put_acked(a_, md, 0, 8, b_, pt + 1, 0, 0, &tag).ni_fail_type);
    EXPECT_EQ(3, status(b_, PTL_SR_DROP_COUNT));
    expect_empty(b_);
}

TEST_F(EngineLoopback, MessagesLongerThanOneFrameArriveWhole) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    constexpr size_t kLong = 3 * lb::kFramePayload + 123; // a first frame and three continuation frames
    std::vector<unsigned char> buf(kLong, 0), small(kLong / 2, 0);
    int tag = 0, small_tag = 0;
    append(b_, pt, me_desc(buf.data(), buf.size(), 1), &tag);
    append(b_, pt, me_desc(small.data(), small.size(), 2), &small_tag);
    auto src = pattern(kLong, 17);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    const uint64_t data_before = lb::data_frames_sent();
    ptl_event_t ack = put_acked(a_, md, 0, kLong, b_, pt, 1, 0, nullptr);
    EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
    EXPECT_EQ(kLong, ack.mlength);
    EXPECT_EQ(data_before + 3, lb::data_frames_sent()); // the ack is one frame
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(kLong, ev.mlength);
    EXPECT_EQ(src, buf);

    // Truncated over several frames: the rest of the payload is consumed, not taken for a message.
    ack = put_acked(a_, md, 0, kLong, b_, pt, 2, 0, nullptr);
    EXPECT_EQ(kLong / 2, ack.mlength);
    ev = next(b_);
    EXPECT_EQ(&small_tag, ev.user_ptr);
    EXPECT_EQ(kLong, ev.rlength);
    EXPECT_EQ(kLong / 2, ev.mlength);
    EXPECT_EQ(0, std::memcmp(small.data(), src.data(), kLong / 2));

    // A get whose reply spans several frames.
    std::vector<unsigned char> back(kLong, 0);
    const ptl_handle_md_t back_md = bind(a_, back.data(), back.size());
    int get_tag = 0;
    ASSERT_EQ(PTL_OK, a_->get(back_md, 0, kLong, b_.id, pt, 1, 0, &get_tag));
    ev = next(a_);
    EXPECT_EQ(PTL_EVENT_REPLY, ev.type);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
    EXPECT_EQ(&get_tag, ev.user_ptr);
    EXPECT_EQ(kLong, ev.mlength);
    EXPECT_EQ(src, back);
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_GET, ev.type);
    EXPECT_EQ(kLong, ev.mlength);
    EXPECT_EQ(&tag, ev.user_ptr);
}

// ---- overflow list and unexpected headers -------------------------------------------------------

TEST_F(EngineLoopback, SearchFindsTheUnexpectedHeaderAndAPriorityAppendConsumesIt) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> over(256, 0);
    int over_tag = 0;
    append(b_, pt, me_desc(over.data(), over.size(), 0, kAnyBits, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL), &over_tag,
           PTL_OVERFLOW_LIST);
    auto src = pattern(10, 21);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());
    EXPECT_EQ(PTL_OVERFLOW_LIST, put_acked(a_, md, 0, 10, b_, pt, 7, 0, nullptr, 0x99).ptl_list);
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(PTL_OVERFLOW_LIST, ev.ptl_list);
    EXPECT_EQ(&over_tag, ev.user_ptr);

    // PTL_SEARCH_ONLY reports the header and leaves it.
    int search_tag = 0;
    const ptl_me_t probe = me_desc(nullptr, 0, 7, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE);
    for (int round = 0; round < 2; ++round) {
        ASSERT_EQ(PTL_OK, b_->search(b_.ni, pt, probe, true, PTL_SEARCH_ONLY, &search_tag));
        ev = next(b_);
        EXPECT_EQ(PTL_EVENT_SEARCH, ev.type);
        EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
        EXPECT_EQ(&search_tag, ev.user_ptr);
        EXPECT_EQ(7u, ev.match_bits);
        EXPECT_EQ(10u, ev.rlength);
        EXPECT_EQ(10u, ev.mlength);
        EXPECT_EQ(0x99u, ev.hdr_data);
        EXPECT_EQ(over.data(), ev.start);
        expect_from(ev, a_);
        expect_empty(b_); // use-once: one match, no closing NO_MATCH
    }
    ASSERT_EQ(PTL_OK,
              b_->search(b_.ni, pt, me_desc(nullptr, 0, 8, 0, PTL_ME_USE_ONCE), true, PTL_SEARCH_ONLY, &search_tag));
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_SEARCH, ev.type);
    EXPECT_EQ(PTL_NI_NO_MATCH, ev.ni_fail_type);
    EXPECT_EQ(&search_tag, ev.user_ptr);

    // A use-once priority append takes the header: PUT_OVERFLOW, then AUTO_UNLINK and no LINK.
    std::vector<unsigned char> prio(10, 0);
    int prio_tag = 0;
    ptl_handle_me_t h = 0;
    ASSERT_EQ(PTL_OK, b_->append(b_.ni, pt, me_desc(prio.data(), prio.size(), 7, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE),
                                 true, PTL_PRIORITY_LIST, &prio_tag, &h));
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT_OVERFLOW, ev.type);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
    EXPECT_EQ(&prio_tag, ev.user_ptr);
    EXPECT_EQ(7u, ev.match_bits);
    EXPECT_EQ(10u, ev.rlength);
    EXPECT_EQ(10u, ev.mlength);
    EXPECT_EQ(0x99u, ev.hdr_data);
    EXPECT_EQ(over.data(), ev.start) << "the data stays where the overflow entry took it";
    expect_from(ev, a_);
    EXPECT_EQ(0, std::memcmp(over.data(), src.data(), 10));
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, ev.type);
    EXPECT_EQ(&prio_tag, ev.user_ptr);
    expect_empty(b_);

    // Nothing is left to find.
    ASSERT_EQ(PTL_OK, b_->search(b_.ni, pt, probe, true, PTL_SEARCH_ONLY, &search_tag));
    EXPECT_EQ(PTL_NI_NO_MATCH, next(b_).ni_fail_type);
}

TEST_F(EngineLoopback, SearchDeleteTakesEveryMatchingHeader) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> over(256, 0);
    append(b_, pt, me_desc(over.data(), over.size(), 0, kAnyBits, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL), nullptr,
           PTL_OVERFLOW_LIST);
    auto src = pattern(24, 4);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());
    put_acked(a_, md, 0, 8, b_, pt, 9, 0, nullptr, 1);
    put_acked(a_, md, 8, 8, b_, pt, 5, 0, nullptr, 2);
    put_acked(a_, md, 16, 8, b_, pt, 9, 0, nullptr, 3);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(PTL_EVENT_PUT, next(b_).type);

    // A persistent search: one overflow event per match in arrival order, then NO_MATCH.
    int tag = 0;
    ASSERT_EQ(PTL_OK, b_->search(b_.ni, pt, me_desc(nullptr, 0, 9, 0, PTL_ME_OP_PUT), true, PTL_SEARCH_DELETE, &tag));
    for (ptl_hdr_data_t want : {1, 3}) {
        const ptl_event_t ev = next(b_);
        EXPECT_EQ(PTL_EVENT_PUT_OVERFLOW, ev.type);
        EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
        EXPECT_EQ(want, ev.hdr_data);
        EXPECT_EQ(&tag, ev.user_ptr);
        EXPECT_EQ(8u, ev.mlength);
    }
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_SEARCH, ev.type);
    EXPECT_EQ(PTL_NI_NO_MATCH, ev.ni_fail_type);

    // They are gone: a priority append for 9 links without an overflow event; 5 is still there.
    std::vector<unsigned char> prio(8);
    append(b_, pt, me_desc(prio.data(), prio.size(), 9, 0, PTL_ME_OP_PUT), &tag);
    expect_empty(b_);
    ptl_handle_me_t h = 0;
    ASSERT_EQ(PTL_OK, b_->append(b_.ni, pt, me_desc(prio.data(), prio.size(), 5, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE),
                                 true, PTL_PRIORITY_LIST, &tag, &h));
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT_OVERFLOW, ev.type);
    EXPECT_EQ(2u, ev.hdr_data);
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, next(b_).type);
}

// ---- flow control -------------------------------------------------------------------------------

TEST_F(EngineLoopback, FlowControlDisablesThePtUntilEnabled) {
    const ptl_pt_index_t pt = pt_alloc(b_, PTL_PT_FLOWCTRL);
    auto src = pattern(16, 8);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());

    // No entry: flow control, not a silent drop.
    ptl_event_t ack = put_acked(a_, md, 0, 16, b_, pt, 1, 0, nullptr);
    EXPECT_EQ(PTL_NI_PT_DISABLED, ack.ni_fail_type);
    ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PT_DISABLED, ev.type);
    EXPECT_EQ(PTL_NI_PT_DISABLED, ev.ni_fail_type);
    EXPECT_EQ(pt, ev.pt_index);

    // Local operations go on while it is disabled; messages do not, even with an entry there.
    std::vector<unsigned char> buf(16, 0);
    int tag = 0;
    append(b_, pt, me_desc(buf.data(), buf.size(), 1, 0, PTL_ME_OP_PUT), &tag);
    ack = put_acked(a_, md, 0, 16, b_, pt, 1, 0, nullptr);
    EXPECT_EQ(PTL_NI_PT_DISABLED, ack.ni_fail_type);
    expect_empty(b_); // one PT_DISABLED per disabling, none per refused message
    EXPECT_EQ(std::vector<unsigned char>(16, 0), buf);

    ASSERT_EQ(PTL_OK, b_->pt_enable(b_.ni, pt));
    ack = put_acked(a_, md, 0, 16, b_, pt, 1, 0, nullptr);
    EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
    EXPECT_EQ(16u, ack.mlength);
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&tag, ev.user_ptr);
    EXPECT_EQ(0, std::memcmp(buf.data(), src.data(), 16));
}

TEST_F(EngineLoopback, AFullEventQueueTriggersFlowControl) {
    // An EQ of 3 on a flow-controlled PT: three events fit; the message that would need a fourth
    // disables the PT, and its PT_DISABLED still finds room (§2.8: the implementation keeps it).
    ptl_handle_eq_t small = 0;
    ASSERT_EQ(PTL_OK, b_->eq_alloc(b_.ni, 3, &small));
    ptl_pt_index_t pt = 0;
    ASSERT_EQ(PTL_OK, b_->pt_alloc(b_.ni, PTL_PT_FLOWCTRL, small, PTL_PT_ANY, &pt));
    std::vector<unsigned char> buf(64, 0);
    int tag = 0;
    ptl_handle_me_t h = 0;
    ASSERT_EQ(PTL_OK, b_->append(b_.ni, pt,
                                 me_desc(buf.data(), buf.size(), 0, kAnyBits,
                                         PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_LINK_DISABLE),
                                 true, PTL_PRIORITY_LIST, &tag, &h));
    auto src = pattern(8, 5);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());
    for (int i = 0; i < 3; ++i) EXPECT_EQ(PTL_NI_OK, put_acked(a_, md, 0, 8, b_, pt, 0, 0, nullptr).ni_fail_type);
    EXPECT_EQ(PTL_NI_PT_DISABLED, put_acked(a_, md, 0, 8, b_, pt, 0, 0, nullptr).ni_fail_type);
    for (int i = 0; i < 3; ++i) {
        const ptl_event_t ev = next(b_, small);
        EXPECT_EQ(PTL_EVENT_PUT, ev.type);
        EXPECT_EQ(&tag, ev.user_ptr);
    }
    ptl_event_t ev{};
    EXPECT_EQ(PTL_OK, b_->eq_get(small, &ev)) << "no event was dropped";
    EXPECT_EQ(PTL_EVENT_PT_DISABLED, ev.type);
    EXPECT_EQ(PTL_NI_PT_DISABLED, ev.ni_fail_type);
    EXPECT_EQ(pt, ev.pt_index);
    EXPECT_EQ(std::vector<unsigned char>(40, 0), std::vector<unsigned char>(buf.begin() + 24, buf.end()));

    // Room again, and enabled: the next message is delivered after the first three.
    ASSERT_EQ(PTL_OK, b_->pt_enable(b_.ni, pt));
    const ptl_event_t ack = put_acked(a_, md, 0, 8, b_, pt, 0, 0, nullptr);
    EXPECT_EQ(PTL_NI_OK, ack.ni_fail_type);
    EXPECT_EQ(24u, ack.remote_offset);
    EXPECT_EQ(PTL_EVENT_PUT, next(b_, small).type);
}

// ---- triggered operations -----------------------------------------------------------------------

TEST_F(EngineLoopback, TriggeredPutsFireAtTheirThresholdInThresholdOrder) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> buf(64);
    append(b_, pt, me_desc(buf.data(), buf.size(), 0, kAnyBits, PTL_ME_OP_PUT), nullptr);
    auto src = pattern(8, 1);
    // `sent` counts the puts that have started: a fired put is sent inside the PtlCTInc that
    // fires it, so the count says exactly what fired, with no waiting.
    const ptl_handle_ct_t sent = ct_alloc(a_);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size(), sent, PTL_MD_EVENT_SEND_DISABLE | PTL_MD_EVENT_CT_SEND);
    const ptl_handle_ct_t ct = ct_alloc(a_);
    int t1 = 0, t2 = 0, t2b = 0, t3 = 0;
    // Posted out of order; equal thresholds fire in posting order (§3.16).
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 0, 0, &t3, 3, ct, 3));
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 0, 0, &t2, 2, ct, 2));
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 0, 0, &t1, 1, ct, 1));
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 0, 0, &t2b, 22, ct, 2));
    EXPECT_EQ(0u, ct_get(a_, sent).success); // nothing before its threshold
    const ptl_ct_event_t one{1, 0};

    ASSERT_EQ(PTL_OK, a_->ct_inc(ct, one)); // 1: only the first
    EXPECT_EQ(1u, ct_get(a_, sent).success);
    ptl_event_t ev = next(a_);
    EXPECT_EQ(PTL_EVENT_ACK, ev.type);
    EXPECT_EQ(&t1, ev.user_ptr);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
    EXPECT_EQ(1u, next(b_).hdr_data);

    ASSERT_EQ(PTL_OK, a_->ct_inc(ct, one)); // 2: both of threshold 2, in posting order
    EXPECT_EQ(3u, ct_get(a_, sent).success);
    EXPECT_EQ(&t2, next(a_).user_ptr);
    EXPECT_EQ(&t2b, next(a_).user_ptr);
    EXPECT_EQ(2u, next(b_).hdr_data);
    EXPECT_EQ(22u, next(b_).hdr_data);

    ASSERT_EQ(PTL_OK, a_->ct_inc(ct, one));
    EXPECT_EQ(4u, ct_get(a_, sent).success);
    EXPECT_EQ(&t3, next(a_).user_ptr);
    EXPECT_EQ(3u, next(b_).hdr_data);

    // A threshold already reached fires at once, when posted.
    int now = 0;
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 0, 0, &now, 4, ct, 1));
    EXPECT_EQ(5u, ct_get(a_, sent).success);
    EXPECT_EQ(&now, next(a_).user_ptr);
    EXPECT_EQ(4u, next(b_).hdr_data);
    const ptl_ct_event_t v = ct_get(a_, ct);
    EXPECT_EQ(3u, v.success);
    EXPECT_EQ(0u, v.failure);
    expect_empty(a_);
    expect_empty(b_);
}

TEST_F(EngineLoopback, TriggeredCtIncAndCtSetChainOperations) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> buf(64);
    append(b_, pt, me_desc(buf.data(), buf.size(), 0, kAnyBits, PTL_ME_OP_PUT), nullptr);
    auto src = pattern(8, 1);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size(), PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
    const ptl_handle_ct_t ct_a = ct_alloc(a_), ct_b = ct_alloc(a_), ct_c = ct_alloc(a_);
    // The spec's example (§3.16.6): a put and an increment of B on A's threshold, a second put on
    // B's: the second put comes after the first. Then B also sets C, which fires a third put.
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_NO_ACK_REQ, b_.id, pt, 0, 0, nullptr, 1, ct_a, 1));
    ASSERT_EQ(PTL_OK, a_->trigger_ct(ct_b, ptl_ct_event_t{1, 0}, false, ct_a, 1));
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_NO_ACK_REQ, b_.id, pt, 0, 0, nullptr, 2, ct_b, 1));
    ASSERT_EQ(PTL_OK, a_->trigger_ct(ct_c, ptl_ct_event_t{5, 0}, true, ct_b, 1));
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_NO_ACK_REQ, b_.id, pt, 0, 0, nullptr, 3, ct_c, 5));
    EXPECT_EQ(0u, ct_get(a_, ct_b).success);

    ASSERT_EQ(PTL_OK, a_->ct_inc(ct_a, ptl_ct_event_t{1, 0}));
    EXPECT_EQ(1u, ct_get(a_, ct_a).success);
    EXPECT_EQ(1u, ct_get(a_, ct_b).success);
    const ptl_ct_event_t c = ct_get(a_, ct_c);
    EXPECT_EQ(5u, c.success);
    EXPECT_EQ(0u, c.failure);
    for (ptl_hdr_data_t want : {1, 2, 3}) {
        const ptl_event_t ev = next(b_);
        EXPECT_EQ(PTL_EVENT_PUT, ev.type);
        EXPECT_EQ(want, ev.hdr_data);
    }
    expect_empty(b_);
}

TEST_F(EngineLoopback, AnIncomingMessageFiresATriggerWithoutTheApplication) {
    // B: an entry that counts into ct, and a put back to A triggered by that count. B's
    // application makes no call after posting: its engine answers on its own.
    const ptl_pt_index_t pt_b = pt_alloc(b_), pt_a = pt_alloc(a_);
    const ptl_handle_ct_t ct = ct_alloc(b_);
    std::vector<unsigned char> in_b(8), in_a(8);
    ptl_me_t me = me_desc(in_b.data(), in_b.size(), 0, kAnyBits, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM);
    me.ct_handle = ct;
    append(b_, pt_b, me, nullptr);
    auto answer = pattern(8, 77);
    const ptl_handle_md_t md_b = bind(b_, answer.data(), answer.size(), PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
    ASSERT_EQ(PTL_OK, b_->trigger_put(md_b, 0, 8, PTL_NO_ACK_REQ, a_.id, pt_a, 0, 0, nullptr, 0x77, ct, 1));
    int tag = 0;
    append(a_, pt_a, me_desc(in_a.data(), in_a.size(), 0, kAnyBits, PTL_ME_OP_PUT), &tag);

    auto ping = pattern(8, 1);
    const ptl_handle_md_t md_a = bind(a_, ping.data(), ping.size(), PTL_CT_NONE, PTL_MD_EVENT_SEND_DISABLE);
    ASSERT_EQ(PTL_OK, a_->put(md_a, 0, 8, PTL_NO_ACK_REQ, b_.id, pt_b, 0, 0, nullptr, 0));
    const ptl_event_t ev = next(a_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&tag, ev.user_ptr);
    EXPECT_EQ(0x77u, ev.hdr_data);
    expect_from(ev, b_);
    EXPECT_EQ(answer, in_a);
}

TEST_F(EngineLoopback, CancelTriggeredDropsPendingOperations) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> buf(8);
    const ptl_handle_ct_t target_ct = ct_alloc(b_);
    ptl_me_t me = me_desc(buf.data(), buf.size(), 0, kAnyBits, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM);
    me.ct_handle = target_ct;
    append(b_, pt, me, nullptr);
    auto src = pattern(8, 1);
    const ptl_handle_md_t md = bind(a_, src.data(), src.size());
    const ptl_handle_ct_t ct = ct_alloc(a_), other = ct_alloc(a_);
    ASSERT_EQ(PTL_OK, a_->trigger_put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 0, 0, nullptr, 1, ct, 1));
    ASSERT_EQ(PTL_OK, a_->trigger_ct(other, ptl_ct_event_t{1, 0}, false, ct, 1));
    ASSERT_EQ(PTL_OK, a_->ct_set(ct, ptl_ct_event_t{0, 2})); // failures never trigger
    ASSERT_EQ(PTL_OK, a_->ct_cancel_triggered(ct));

    ASSERT_EQ(PTL_OK, a_->ct_inc(ct, ptl_ct_event_t{1, 0}));
    expect_empty(a_); // no SEND, no ACK: the put never started
    EXPECT_EQ(0u, ct_get(a_, other).success);
    const ptl_ct_event_t v = ct_get(a_, ct); // the rest of the counter's state is unchanged
    EXPECT_EQ(1u, v.success);
    EXPECT_EQ(2u, v.failure);
    EXPECT_EQ(PTL_OK, a_->md_release(md)); // nothing holds the MD any more

    // The link still works: an ordinary put arrives, and the target counter counts only it.
    const ptl_handle_md_t md2 = bind(a_, src.data(), src.size());
    EXPECT_EQ(PTL_NI_OK, put_acked(a_, md2, 0, 8, b_, pt, 0, 0, nullptr).ni_fail_type);
    EXPECT_EQ(1u, ct_wait(b_, target_ct, 1).success);
}

// ---- atomics ------------------------------------------------------------------------------------

TEST_F(EngineLoopback, AtomicSumFetchAndCompareSwap) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    int64_t target[2] = {10, 20};
    int tag = 0;
    append(b_, pt, me_desc(target, sizeof target, 6, 0, PTL_ME_OP_PUT | PTL_ME_OP_GET), &tag);
    int64_t operand[2] = {5, 7};
    int64_t fetched[2] = {0, 0};
    const ptl_handle_md_t put_md = bind(a_, operand, sizeof operand);
    const ptl_handle_md_t get_md = bind(a_, fetched, sizeof fetched);
    int op_tag = 0;

    ASSERT_EQ(PTL_OK, a_->atomic(put_md, 0, 16, PTL_ACK_REQ, b_.id, pt, 6, 0, &op_tag, 0x42, PTL_SUM, PTL_INT64_T));
    EXPECT_EQ(PTL_EVENT_SEND, next(a_).type);
    ptl_event_t ev = next(a_);
    EXPECT_EQ(PTL_EVENT_ACK, ev.type);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
    EXPECT_EQ(16u, ev.mlength);
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_ATOMIC, ev.type);
    EXPECT_EQ(PTL_SUM, ev.atomic_operation);
    EXPECT_EQ(PTL_INT64_T, ev.atomic_type);
    EXPECT_EQ(16u, ev.mlength);
    EXPECT_EQ(0x42u, ev.hdr_data);
    EXPECT_EQ(&tag, ev.user_ptr);
    expect_from(ev, a_);
    EXPECT_EQ(15, target[0]);
    EXPECT_EQ(27, target[1]);

    // Fetch-and-add: the reply carries the values from before.
    operand[0] = operand[1] = 1;
    ASSERT_EQ(PTL_OK, a_->fetch_atomic(get_md, 0, put_md, 0, 16, b_.id, pt, 6, 0, &op_tag, 0, nullptr, PTL_SUM,
                                       PTL_INT64_T, false));
    EXPECT_EQ(PTL_EVENT_SEND, next(a_).type);
    ev = next(a_);
    EXPECT_EQ(PTL_EVENT_REPLY, ev.type);
    EXPECT_EQ(PTL_NI_OK, ev.ni_fail_type);
    EXPECT_EQ(16u, ev.mlength);
    EXPECT_EQ(&op_tag, ev.user_ptr);
    EXPECT_EQ(15, fetched[0]);
    EXPECT_EQ(27, fetched[1]);
    ev = next(b_);
    EXPECT_EQ(PTL_EVENT_FETCH_ATOMIC, ev.type);
    EXPECT_EQ(PTL_SUM, ev.atomic_operation);
    EXPECT_EQ(16, target[0]);
    EXPECT_EQ(28, target[1]);

    // Compare-and-swap: equal to the operand, the new value goes in; otherwise nothing changes.
    // Either way the old value comes back.
    int64_t swap_in = 100;
    const ptl_handle_md_t swap_md = bind(a_, &swap_in, sizeof swap_in);
    const int64_t compare = 16;
    for (const int64_t before : {int64_t{16}, int64_t{100}}) {
        ASSERT_EQ(PTL_OK, a_->fetch_atomic(get_md, 0, swap_md, 0, 8, b_.id, pt, 6, 0, &op_tag, 0, &compare, PTL_CSWAP,
                                           PTL_INT64_T, true));
        EXPECT_EQ(PTL_EVENT_SEND, next(a_).type);
        ev = next(a_);
        EXPECT_EQ(PTL_EVENT_REPLY, ev.type);
        EXPECT_EQ(8u, ev.mlength);
        EXPECT_EQ(before, fetched[0]);
        ev = next(b_);
        EXPECT_EQ(PTL_EVENT_FETCH_ATOMIC, ev.type);
        EXPECT_EQ(PTL_CSWAP, ev.atomic_operation);
        EXPECT_EQ(100, target[0]); // the first swap wrote it, the second (100 != 16) left it
        EXPECT_EQ(28, target[1]);
    }
}

// A put from an MD without EQ or CT takes no engine lock (docs/ARCHITECTURE.md, *Sending without
// the lock*): it carries what a
// locked put carries, and threads putting through MDs that another thread releases and binds
// again either send (PTL_OK, and the message arrives) or are told the handle is stale
// (PTL_ARG_INVALID), never reach a recycled MD's fields. Under TSan, the race detector's case for
// the MD table and the send path without the lock.
TEST_F(EngineLoopback, PutsWithoutTheLockArriveOrSeeAStaleHandleWhileOthersRebindTheirMds) {
    const ptl_pt_index_t pt = pt_alloc(b_);
    std::vector<unsigned char> first(24), landing(8);
    int tag = 0;
    append(b_, pt, me_desc(first.data(), first.size(), 0x5A, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE), &tag);
    const auto payload = pattern(8, 9);
    const ptl_md_t quiet =
        ck::md_desc(const_cast<unsigned char *>(payload.data()), payload.size(), 0, PTL_EQ_NONE, PTL_CT_NONE);
    ptl_handle_md_t md = 0;
    ASSERT_EQ(PTL_OK, a_->md_bind(a_.ni, &quiet, &md));
    ASSERT_EQ(PTL_OK, a_->put(md, 0, 8, PTL_ACK_REQ, b_.id, pt, 0x5A, 16, nullptr, 0xABCD));
    const ptl_event_t ev = next(b_);
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(&tag, ev.user_ptr);
    EXPECT_EQ(0x5Au, ev.match_bits);
    EXPECT_EQ(0xABCDu, ev.hdr_data);
    EXPECT_EQ(8u, ev.rlength);
    EXPECT_EQ(8u, ev.mlength);
    EXPECT_EQ(16u, ev.remote_offset);
    expect_from(ev, a_);
    EXPECT_EQ(payload, std::vector<unsigned char>(first.begin() + 16, first.end()));
    EXPECT_EQ(PTL_EVENT_AUTO_UNLINK, next(b_).type);
    EXPECT_EQ(PTL_ARG_INVALID, a_->put(md, 4, 8, PTL_NO_ACK_REQ, b_.id, pt, 0, 0, nullptr, 0)) << "past the MD's end";
    // An atomic from it takes the same way: two sums into one counter.
    int64_t sum = 5;
    const int64_t addend = 37;
    const ptl_md_t addend_md = ck::md_desc(const_cast<int64_t *>(&addend), sizeof addend, 0, PTL_EQ_NONE, PTL_CT_NONE);
    ptl_handle_md_t amd = 0;
    ASSERT_EQ(PTL_OK, a_->md_bind(a_.ni, &addend_md, &amd));
    int sum_tag = 0;
    append(b_, pt, me_desc(&sum, sizeof sum, 0x77, 0, PTL_ME_OP_PUT), &sum_tag);
    for (int i = 0; i < 2; ++i)
        ASSERT_EQ(PTL_OK, a_->atomic(amd, 0, 8, PTL_NO_ACK_REQ, b_.id, pt, 0x77, 0, nullptr, 0, PTL_SUM, PTL_INT64_T));
    EXPECT_EQ(PTL_ARG_INVALID,
              a_->atomic(amd, 0, 4, PTL_NO_ACK_REQ, b_.id, pt, 0x77, 0, nullptr, 0, PTL_SUM, PTL_INT64_T))
        << "not a whole item";
    for (int i = 0; i < 2; ++i) {
        const ptl_event_t aev = next(b_);
        EXPECT_EQ(PTL_EVENT_ATOMIC, aev.type);
        EXPECT_EQ(&sum_tag, aev.user_ptr);
        EXPECT_EQ(PTL_SUM, aev.atomic_operation);
        EXPECT_EQ(PTL_INT64_T, aev.atomic_type);
    }
    EXPECT_EQ(5 + 2 * 37, sum);
    EXPECT_EQ(PTL_OK, a_->md_release(amd));
    EXPECT_EQ(PTL_OK, a_->md_release(md));
    EXPECT_EQ(PTL_ARG_INVALID, a_->put(md, 0, 8, PTL_NO_ACK_REQ, b_.id, pt, 0, 0, nullptr, 0)) << "released";

    const ptl_handle_ct_t ct = ct_alloc(b_);
    ptl_me_t counted = me_desc(landing.data(), landing.size(), 0, kAnyBits,
                               PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE);
    counted.ct_handle = ct;
    append(b_, pt, counted, nullptr);
    constexpr int kSlots = 4, kRounds = 500;
    std::atomic<ptl_handle_md_t> mds[kSlots];
    for (auto &m : mds) {
        ptl_handle_md_t h = 0;
        ASSERT_EQ(PTL_OK, a_->md_bind(a_.ni, &quiet, &h));
        m.store(h);
    }
    std::atomic<bool> done{false};
    std::atomic<long> sent{0}, stale{0}, wrong{0}, turns{0};
    auto sender = [&] {
        unsigned k = 0;
        while (!done.load(std::memory_order_acquire)) {
            ++turns;
            const int rc = a_->put(mds[k++ % kSlots].load(), 0, 8, PTL_NO_ACK_REQ, b_.id, pt, 0, 0, nullptr, 0);
            rc == PTL_OK ? ++sent : rc == PTL_ARG_INVALID ? ++stale : ++wrong;
        }
    };
    std::thread senders[3] = {std::thread(sender), std::thread(sender), std::thread(sender)};
    int failures = 0; // EXPECT, not ASSERT: the senders must be joined
    for (int r = 0; r < kRounds && failures == 0; ++r) {
        ptl_handle_md_t h = 0;
        failures += a_->md_bind(a_.ni, &quiet, &h) != PTL_OK;
        failures += a_->md_release(mds[r % kSlots].exchange(h)) != PTL_OK;
        for (const long seen = turns.load(); turns.load() < seen + 3;) std::this_thread::yield();
    }
    done = true;
    for (auto &t : senders) t.join();
    EXPECT_EQ(0, failures) << "binding or releasing failed";
    EXPECT_EQ(0, wrong.load());
    EXPECT_GT(sent.load(), 0);
    const ptl_ct_event_t c = ct_wait(b_, ct, static_cast<ptl_size_t>(sent.load()));
    EXPECT_EQ(static_cast<ptl_size_t>(sent.load()), c.success) << "every put that said PTL_OK arrived, once";
    EXPECT_EQ(0u, c.failure);
    EXPECT_EQ(payload, landing);
    for (auto &m : mds) EXPECT_EQ(PTL_OK, a_->md_release(m.load()));
}

// PtlEQGet/PtlEQPoll/PtlCTGet/PtlCTPoll find their objects without the engine lock (Engine::pin)
// while other threads allocate and free them. A handle is either live, and then names the very
// object it was made for (each counter holds its own handle as its value, so a reader that reached
// a recycled object would see another value), or stale, and then PTL_ARG_INVALID. Under TSan this
// is the race detector's case for the handle tables.
TEST_F(EngineLoopback, HandlesFoundWithoutTheLockAreLiveOrRejectedWhileOthersFree) {
    constexpr int kSlots = 4;
    constexpr int kRounds = 500;
    std::atomic<uint64_t> eqs[kSlots], cts[kSlots];
    for (int i = 0; i < kSlots; ++i) {
        eqs[i].store(0);
        cts[i].store(0);
    }
    std::atomic<bool> done{false};
    std::atomic<long> live_reads{0}, stale_reads{0}, wrong{0}, turns{0};
    auto reader = [&] {
        unsigned k = 0;
        while (!done.load(std::memory_order_acquire)) {
            ++turns;
            const int i = static_cast<int>(k++ % kSlots);
            const ptl_handle_ct_t ct = cts[i].load(std::memory_order_acquire);
            const ptl_handle_eq_t eq = eqs[i].load(std::memory_order_acquire);
            if (ct == 0 || eq == 0) continue;
            ptl_ct_event_t v{};
            const int rc = a_->ct_get(ct, &v);
            if (rc == PTL_OK) {
                ++live_reads;
                if (v.success != ct || v.failure != 0) ++wrong;
            } else if (rc == PTL_ARG_INVALID) {
                ++stale_reads;
            } else {
                ++wrong;
            }
            ptl_event_t ev{};
            const int erc = a_->eq_get(eq, &ev);
            if (erc != PTL_EQ_EMPTY && erc != PTL_ARG_INVALID) ++wrong;
            unsigned which = 0;
            const ptl_handle_eq_t both[2] = {eq, a_.eq};
            const int prc = a_->eq_poll(both, 2, 0, &ev, &which);
            if (prc != PTL_EQ_EMPTY && prc != PTL_ARG_INVALID) ++wrong;
            const ptl_size_t never = ct + 1;
            const int crc = a_->ct_poll(&ct, &never, 1, 0, &v, &which);
            if (crc != PTL_CT_NONE_REACHED && crc != PTL_ARG_INVALID) ++wrong;
        }
    };
    std::thread readers[3] = {std::thread(reader), std::thread(reader), std::thread(reader)};
    int failures = 0; // EXPECT, not ASSERT: the readers must be joined
    for (int r = 0; r < kRounds && failures == 0; ++r) {
        const int i = r % kSlots;
        ptl_handle_eq_t eq = 0;
        ptl_handle_ct_t ct = 0;
        failures += a_->eq_alloc(a_.ni, 4, &eq) != PTL_OK;
        failures += a_->ct_alloc(a_.ni, &ct) != PTL_OK;
        failures += a_->ct_set(ct, ptl_ct_event_t{ct, 0}) != PTL_OK;
        const ptl_handle_eq_t old_eq = eqs[i].exchange(eq);
        const ptl_handle_ct_t old_ct = cts[i].exchange(ct);
        if (old_eq) failures += a_->eq_free(old_eq) != PTL_OK;
        if (old_ct) failures += a_->ct_free(old_ct) != PTL_OK;
        // Let the readers take a few turns between rounds, however the threads are scheduled.
        for (const long seen = turns.load(); turns.load() < seen + 3;) std::this_thread::yield();
    }
    EXPECT_EQ(0, failures) << "allocating or freeing failed";
    done = true;
    for (auto &t : readers) t.join();
    EXPECT_EQ(0, wrong.load());
    EXPECT_GT(live_reads.load() + stale_reads.load(), 0);
    for (int i = 0; i < kSlots; ++i) {
        EXPECT_EQ(PTL_OK, a_->eq_free(eqs[i].load()));
        EXPECT_EQ(PTL_OK, a_->ct_free(cts[i].load()));
    }
    // Freed handles stay rejected, also after their objects were reused.
    ptl_ct_event_t v{};
    EXPECT_EQ(PTL_ARG_INVALID, a_->ct_get(cts[0].load(), &v));
    ptl_event_t ev{};
    EXPECT_EQ(PTL_ARG_INVALID, a_->eq_get(eqs[0].load(), &ev));
}

// ---- waiting -----------------------------------------------------------------------------------

// A wait that times out looks at the transport once more before it says so. Here the receiver's
// progress path is stalled (the put becomes visible during the wait, and wakes nobody): the
// waiter's futex sleep runs out and the put must still be found, as after a host stall longer
// than the timeout. Only the outcome is asserted, which holds however the threads are scheduled.
TEST_F(EngineLoopback, AWaitThatTimesOutLooksAtTheTransportOnceMore) {
    constexpr ptl_time_t kTimeoutMs = 300;
    constexpr uint64_t kVisibleAfterNs = 30'000'000;
    const ptl_pt_index_t pt = pt_alloc(b_);
    const ptl_handle_ct_t target_ct = ct_alloc(b_);
    uint64_t landing[2] = {0, 0};
    ptl_me_t me = me_desc(landing, sizeof landing, 1);
    me.ct_handle = target_ct;
    me.options |= PTL_ME_EVENT_CT_COMM;
    append(b_, pt, me, nullptr);
    uint64_t words[2] = {0x1111, 0x2222};
    const ptl_handle_md_t md = bind(a_, words, sizeof words, PTL_CT_NONE, 0, PTL_EQ_NONE);

    // The full event: PtlEQPoll.
    lb::hide_arrivals_until(b_.id.phys.nid, b_.id.phys.pid, portico::monotonic_ns() + kVisibleAfterNs);
    ASSERT_EQ(PTL_OK, a_->put(md, 0, 8, PTL_NO_ACK_REQ, b_.id, pt, 1, 0, nullptr, 0));
    ptl_event_t ev{};
    unsigned which = 0;
    ASSERT_EQ(PTL_OK, b_->eq_poll(&b_.eq, 1, kTimeoutMs, &ev, &which)) << "the put was in the transport";
    EXPECT_EQ(PTL_EVENT_PUT, ev.type);
    EXPECT_EQ(8u, ev.mlength);
    EXPECT_EQ(0x1111u, landing[0]);

    // The count: PtlCTPoll.
    lb::hide_arrivals_until(b_.id.phys.nid, b_.id.phys.pid, portico::monotonic_ns() + kVisibleAfterNs);
    ASSERT_EQ(PTL_OK, a_->put(md, 8, 8, PTL_NO_ACK_REQ, b_.id, pt, 1, 8, nullptr, 0));
    const ptl_size_t two = 2;
    ptl_ct_event_t v{};
    ASSERT_EQ(PTL_OK, b_->ct_poll(&target_ct, &two, 1, kTimeoutMs, &v, &which)) << "the put was in the transport";
    EXPECT_EQ(2u, v.success);
    EXPECT_EQ(0x2222u, landing[1]);
    next(b_); // the second put's event
    EXPECT_EQ(PTL_OK, a_->md_release(md));
}

} // namespace
