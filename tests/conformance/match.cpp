// SPDX-License-Identifier: BSD-3-Clause
// Conformance: matching, truncation, use-once, locally managed offsets, min_free and drops
// (spec §2.5, §3.11, §3.12, §4.2.2).
//
// Runs with three ranks: rank 0 is the target, rank 1 (and, for match_id, rank 2) the initiators.
// Every barrier is executed by every rank.
#include <map>
#include <set>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class Match : public PtlTest {};
constexpr ptl_pt_index_t kPt = 30;

// §3.12.1, §2.5.2: ((in ^ match_bits) & ~ignore_bits) == 0 selects the first matching
// ME in list order.
TEST_F(Match, MatchAndIgnoreBitsInListOrder) {
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> buf(4 * 64, 0);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    ptl_handle_me_t a = PTL_INVALID_HANDLE;
    struct Entry {
        ptl_match_bits_t bits, ignore;
    };
    const Entry entries[4] = {{0x10, 0x0F}, {0x15, 0}, {0xFF00000000000000ull, 0x00FFFFFFFFFFFFFFull}, {0, ~0ull}};
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        for (int i = 0; i < 4; ++i) {
            ptl_handle_me_t h =
                append_me(ni, kPt, me_desc(buf.data() + 64 * i, 64, PTL_ME_OP_PUT, entries[i].bits, entries[i].ignore),
                          PTL_PRIORITY_LIST, tag(i + 1), teq);
            if (i == 0) a = h;
        }
    }
    barrier();
    // (match bits, entry expected) for the first phase, then again after unlinking entry 1.
    const std::pair<ptl_match_bits_t, int> phase1[] = {
        {0x15, 1}, {0x1F, 1}, {0x20, 4}, {0xFF00000000001234ull, 3}, {0xFE00000000000000ull, 4}, {0x10, 1}};
    const std::pair<ptl_match_bits_t, int> phase2[] = {{0x15, 2}, {0x1A, 4}, {0xFFFFFFFFFFFFFFFFull, 3}};
    auto run = [&](const std::pair<ptl_match_bits_t, int> *p, size_t n, ptl_hdr_data_t first) {
        if (rank() == 1) {
            Sender s(ni, 8, 12);
            for (size_t i = 0; i < n; ++i) s.put(kPt, 8, p[i].first, 0, first + i, 8, 0);
        } else if (rank() == 0) {
            for (size_t i = 0; i < n; ++i) {
                const int e = p[i].second;
                check_target_event(wait_event(teq),
                                   {.type = PTL_EVENT_PUT,
                                    .initiator = 1,
                                    .pt_index = kPt,
                                    .match_bits = p[i].first,
                                    .rlength = 8,
                                    .mlength = 8,
                                    .remote_offset = 0,
                                    .start = buf.data() + 64 * (e - 1),
                                    .user_ptr = tag(e),
                                    .hdr_data = first + i},
                                   ni);
            }
        }
    };
    run(phase1, std::size(phase1), 100);
    barrier();
    if (rank() == 0) {
        ASSERT_PTL(PtlMEUnlink(a));
    }
    barrier();
    run(phase2, std::size(phase2), 200);
}

// §3.12.1 match_id: nid/pid with PTL_NID_ANY/PTL_PID_ANY wildcards on a physical NI,
// rank with PTL_RANK_ANY on a logical NI.
TEST_F(Match, MatchIdFiltersInitiators) {
    REQUIRE_RANKS(3);
    for (unsigned kind : {kMatchingPhysical, kMatchingLogical}) {
        SCOPED_TRACE(ni_kind_name(kind));
        Ni ni = open_ni(kind);
        const bool logical = ni.logical();
        ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
        std::vector<ptl_handle_me_t> me;
        static uint8_t buf[8];
        // A pid (or rank) of nobody in the job.
        ptl_process_t nobody{};
        if (logical) {
            nobody.rank = static_cast<ptl_rank_t>(nranks() + 5);
        } else {
            std::set<ptl_pid_t> pids;
            for (const auto &p : ni.phys) pids.insert(p.phys.pid);
            nobody.phys.nid = PTL_NID_ANY;
            nobody.phys.pid = 1;
            while (pids.count(nobody.phys.pid)) ++nobody.phys.pid;
        }
        std::vector<ptl_process_t> ids;
        ids.push_back(nobody);
        ids.push_back(ni.id_of(2)); // entry 1: rank 2 exactly
        ptl_process_t p{};
        if (logical) {
            p.rank = 1;
            ids.push_back(p); // entry 2: rank 1
            p.rank = PTL_RANK_ANY;
            ids.push_back(p); // entry 3: anyone
            ids.push_back(p); // entry 4: anyone
        } else {
            p.phys.nid = PTL_NID_ANY;
            p.phys.pid = ni.phys[1].phys.pid;
            ids.push_back(p); // entry 2: rank 1's pid on any node
            p.phys.nid = ni.phys[1].phys.nid;
            p.phys.pid = PTL_PID_ANY;
            ids.push_back(p); // entry 3: any process on rank 1's node
            p.phys.nid = PTL_NID_ANY;
            ids.push_back(p); // entry 4: anyone
        }
        if (rank() == 0) {
            teq = make_eq(ni);
            make_pt(ni, teq, 0, kPt);
            for (size_t i = 0; i < ids.size(); ++i) {
                ptl_me_t d = me_desc(buf, sizeof buf, PTL_ME_OP_PUT, 7);
                d.match_id = ids[i];
                me.push_back(append_me(ni, kPt, d, PTL_PRIORITY_LIST, tag(i), teq));
            }
        }
        barrier();
        // One put from `from`, expected in entry `entry`.
        auto step = [&](int from, size_t entry, ptl_hdr_data_t hdr) {
            if (rank() == from) {
                Sender s(ni, 8, 13);
                s.put(kPt, 8, 7, 0, hdr, 8, 0);
            } else if (rank() == 0) {
                check_target_event(wait_event(teq),
                                   {.type = PTL_EVENT_PUT,
                                    .initiator = from,
                                    .pt_index = kPt,
                                    .match_bits = 7,
                                    .rlength = 8,
                                    .mlength = 8,
                                    .remote_offset = 0,
                                    .start = buf,
                                    .user_ptr = tag(entry),
                                    .hdr_data = hdr},
                                   ni);
            }
            barrier();
        };
        step(1, 2, 1);
        step(2, 1, 2);
        if (rank() == 0) {
            ASSERT_PTL(PtlMEUnlink(me[1]));
            ASSERT_PTL(PtlMEUnlink(me[2]));
        }
        barrier();
        step(1, 3, 3);
        const bool same_node = logical || ni.phys[2].phys.nid == ni.phys[1].phys.nid;
        step(2, same_node ? 3 : 4, 4);
        if (rank() == 0) expect_eq_empty(teq);
        barrier();
        close_ni(ni);
    }
}

// §3.12.1 PTL_ME_NO_TRUNCATE: a message that does not fit moves on to the next ME; a
// 0-byte message always fits.
TEST_F(Match, NoTruncateMovesToNextEntry) {
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> b1(64, 0), b2(1024, 0);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(b1.data(), 64, PTL_ME_OP_PUT | PTL_ME_NO_TRUNCATE, 1), PTL_PRIORITY_LIST, tag(1),
                  teq);
        append_me(ni, kPt, me_desc(b2.data(), 1024, PTL_ME_OP_PUT, 1), PTL_PRIORITY_LIST, tag(2), teq);
    }
    barrier();
    struct Step {
        ptl_size_t len, roff;
        int entry;
    };
    const Step steps[] = {{100, 0, 2}, {64, 0, 1}, {40, 32, 2}, {32, 32, 1}, {0, 1000, 1}, {65, 0, 2}};
    if (rank() == 1) {
        Sender s(ni, 128, 15);
        for (size_t i = 0; i < std::size(steps); ++i)
            s.put(kPt, steps[i].len, 1, steps[i].roff, i, steps[i].len, steps[i].roff);
    } else if (rank() == 0) {
        for (size_t i = 0; i < std::size(steps); ++i) {
            uint8_t *base = steps[i].entry == 1 ? b1.data() : b2.data();
            check_target_event(wait_event(teq),
                               {.type = PTL_EVENT_PUT,
                                .initiator = 1,
                                .pt_index = kPt,
                                .match_bits = 1,
                                .rlength = steps[i].len,
                                .mlength = steps[i].len,
                                .remote_offset = steps[i].roff,
                                .start = reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(base) + steps[i].roff),
                                .user_ptr = tag(steps[i].entry),
                                .hdr_data = i},
                               ni);
        }
        EXPECT_EQ(-1, check_pattern(b1.data(), 32, 15));
        EXPECT_EQ(-1, check_pattern(b1.data() + 32, 32, 15));
        EXPECT_EQ(-1, check_pattern(b2.data(), 65, 15));
    }
    barrier();
}

// §3.11, §3.12, §3.15.3: a truncating entry delivers min(rlength, length - offset)
// bytes; an offset past the end gives mlength 0 and no fault; replies are truncated as well.
TEST_F(Match, TruncationOnMeLeAndZeroLengthEntry) {
    Ni m = open_ni(kMatchingPhysical);
    Ni n = open_ni(kNonMatchingPhysical);
    std::vector<uint8_t> tb(200, 0x11), lb(200, 0x22);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE, leq = PTL_INVALID_HANDLE;
    const ptl_pt_index_t zpt = kPt + 1;
    if (rank() == 0) {
        teq = make_eq(m);
        make_pt(m, teq, 0, kPt);
        append_me(m, kPt, me_desc(tb.data(), 100, PTL_ME_OP_PUT | PTL_ME_OP_GET, 1), PTL_PRIORITY_LIST, tag(1), teq);
        leq = make_eq(n);
        make_pt(n, leq, 0, kPt);
        make_pt(n, leq, 0, zpt);
        append_le(n, kPt, le_desc(lb.data(), 100, PTL_LE_OP_PUT), PTL_PRIORITY_LIST, tag(2), leq);
        append_le(n, zpt, le_desc(nullptr, 0, PTL_LE_OP_PUT), PTL_PRIORITY_LIST, tag(3), leq);
    }
    barrier();
    if (rank() == 1) {
        Sender s(m, 256, 16);
        s.put(kPt, 150, 1, 0, 1, 100, 0);
        s.put(kPt, 50, 1, 80, 2, 20, 80);
        s.put(kPt, 10, 1, 200, 3, 0, 200);
        // A get of 150 bytes from the 100-byte entry.
        std::vector<uint8_t> dst(150, 0x33);
        ptl_handle_md_t gmd = bind_md(m, dst.data(), dst.size(), s.eq);
        ASSERT_PTL(PtlGet(gmd, 0, 150, m.id_of(0), kPt, 1, 0, tag(4)));
        check_init_event(wait_event(s.eq), {.type = PTL_EVENT_REPLY,
                                            .user_ptr = tag(4),
                                            .mlength = 100,
                                            .remote_offset = 0,
                                            .list = PTL_PRIORITY_LIST});
        // Data of the first two puts: [0,80) from put 1, [80,100) from put 2.
        EXPECT_EQ(-1, check_pattern(dst.data(), 80, 16));
        EXPECT_EQ(-1, check_pattern(dst.data() + 80, 20, 16));
        EXPECT_EQ(-1, check_fill(dst.data() + 100, 50, 0x33)) << "beyond mlength must stay untouched";

        Sender l(n, 256, 17);
        l.put(kPt, 150, 0, 0, 5, 100, 0);
        l.put(zpt, 10, 0, 0, 6, 0, 0);
    } else if (rank() == 0) {
        auto ev = [&](ptl_handle_eq_t eq, const Ni &ni, ptl_event_kind_t type, ptl_size_t rlen, ptl_size_t mlen,
                      ptl_size_t roff, const void *start, uintptr_t user, std::optional<ptl_hdr_data_t> hdr,
                      ptl_match_bits_t bits) {
            check_target_event(wait_event(eq),
                               {.type = type,
                                .initiator = 1,
                                .pt_index = kPt,
                                .match_bits = bits,
                                .rlength = rlen,
                                .mlength = mlen,
                                .remote_offset = roff,
                                .start = start,
                                .user_ptr = tag(user),
                                .hdr_data = hdr},
                               ni);
        };
        ev(teq, m, PTL_EVENT_PUT, 150, 100, 0, tb.data(), 1, 1, 1);
        ev(teq, m, PTL_EVENT_PUT, 50, 20, 80, tb.data() + 80, 1, 2, 1);
        ev(teq, m, PTL_EVENT_PUT, 10, 0, 200, tb.data() + 200, 1, 3, 1);
        ev(teq, m, PTL_EVENT_GET, 150, 100, 0, tb.data(), 1, std::nullopt, 1);
        EXPECT_EQ(-1, check_fill(tb.data() + 100, 100, 0x11)) << "truncated bytes were written";
        ev(leq, n, PTL_EVENT_PUT, 150, 100, 0, lb.data(), 2, 5, 0);
        EXPECT_EQ(-1, check_pattern(lb.data(), 100, 17));
        EXPECT_EQ(-1, check_fill(lb.data() + 100, 100, 0x22));
        ptl_event_t z = wait_event(leq);
        EXPECT_EQ(Kind{PTL_EVENT_PUT}, Kind{z.type});
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{z.ni_fail_type});
        EXPECT_EQ(zpt, z.pt_index);
        EXPECT_EQ(10u, z.rlength);
        EXPECT_EQ(0u, z.mlength);
        EXPECT_EQ(tag(3), z.user_ptr);
        EXPECT_EQ(nullptr, z.start);
    }
    barrier();
}

// §3.11.1/§3.12.1 USE_ONCE, §3.11.3/§3.12.3, §3.13.1 AUTO_UNLINK: a use-once
// entry takes one message, AUTO_UNLINK follows its PUT, the next message goes to the next entry,
// and unlinking the auto-unlinked entry returns PTL_ARG_INVALID (its handle is stale).
TEST_F(Match, UseOnceAutoUnlinkAndLateUnlink) {
    for (unsigned kind : {kMatchingPhysical, kNonMatchingPhysical}) {
        SCOPED_TRACE(ni_kind_name(kind));
        Ni ni = open_ni(kind);
        std::vector<uint8_t> b1(64, 0), b2(64, 0);
        ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
        ptl_handle_any_t once = PTL_INVALID_HANDLE, persistent = PTL_INVALID_HANDLE;
        if (rank() == 0) {
            teq = make_eq(ni);
            make_pt(ni, teq, 0, kPt);
            once = append_entry(ni, kPt, me_desc(b1.data(), 64, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 1), PTL_PRIORITY_LIST,
                                tag(1), teq);
            persistent =
                append_entry(ni, kPt, me_desc(b2.data(), 64, PTL_ME_OP_PUT, 1), PTL_PRIORITY_LIST, tag(2), teq);
        }
        barrier();
        if (rank() == 1) {
            Sender s(ni, 64, 17);
            s.put(kPt, 16, 1, 0, 1, 16, 0);
            s.put(kPt, 16, 1, 8, 2, 16, 8);
            s.put(kPt, 16, 1, 24, 3, 16, 24);
        } else if (rank() == 0) {
            auto put_ev = [&](uintptr_t entry, uint8_t *base, ptl_size_t roff, ptl_hdr_data_t hdr) {
                check_target_event(wait_event(teq),
                                   {.type = PTL_EVENT_PUT,
                                    .initiator = 1,
                                    .pt_index = kPt,
                                    .match_bits = 1,
                                    .rlength = 16,
                                    .mlength = 16,
                                    .remote_offset = roff,
                                    .start = base + roff,
                                    .user_ptr = tag(entry),
                                    .hdr_data = hdr},
                                   ni);
            };
            put_ev(1, b1.data(), 0, 1);
            check_entry_event(wait_event(teq), PTL_EVENT_AUTO_UNLINK, kPt, tag(1));
            put_ev(2, b2.data(), 8, 2);
            put_ev(2, b2.data(), 24, 3);
            EXPECT_RC(PTL_ARG_INVALID, unlink_entry(ni, once))
                << "the entry already unlinked itself: its handle is stale";
            EXPECT_PTL(unlink_entry(ni, persistent));
            expect_eq_empty(teq, "(an explicit unlink raises no event)");
        }
        barrier();
        close_ni(ni);
    }
}

// §3.12.1 MANAGE_LOCAL, Table 3-3: a locally managed offset packs puts and gets one after
// another; the target event reports the requested offset, the ACK/REPLY the offset used.
TEST_F(Match, ManageLocalPacksMessages) {
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> buf(1000);
    fill_pattern(buf.data(), buf.size(), 5);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(buf.data(), buf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_MANAGE_LOCAL, 3),
                  PTL_PRIORITY_LIST, tag(1), teq);
    }
    barrier();
    struct Op {
        bool get;
        ptl_size_t local_off, len, roff, used, mlength;
    };
    const Op ops[] = {{false, 0, 100, 777, 0, 100},   {false, 100, 200, 777, 100, 200}, {false, 300, 50, 5, 300, 50},
                      {true, 1500, 50, 999, 350, 50}, {false, 350, 700, 0, 400, 600},   {false, 0, 10, 0, 1000, 0}};
    if (rank() == 1) {
        std::vector<uint8_t> src(2048);
        fill_pattern(src.data(), src.size(), 18);
        ptl_handle_eq_t ieq = make_eq(ni);
        ptl_handle_md_t md = bind_md(ni, src.data(), src.size(), ieq);
        for (size_t i = 0; i < std::size(ops); ++i) {
            if (ops[i].get) {
                ASSERT_PTL(PtlGet(md, ops[i].local_off, ops[i].len, ni.id_of(0), kPt, 3, ops[i].roff, tag(i)));
            } else {
                ASSERT_PTL(
                    PtlPut(md, ops[i].local_off, ops[i].len, PTL_ACK_REQ, ni.id_of(0), kPt, 3, ops[i].roff, tag(i), i));
            }
        }
        std::map<std::pair<int, size_t>, int> seen;
        for (size_t k = 0; k < std::size(ops) * 2 - 1; ++k) {
            ptl_event_t ev = wait_event(ieq);
            const size_t i = reinterpret_cast<uintptr_t>(ev.user_ptr);
            ASSERT_LT(i, std::size(ops)) << describe(ev);
            ++seen[{ev.type, i}];
            if (ev.type == PTL_EVENT_SEND) {
                check_init_event(ev, {.type = PTL_EVENT_SEND, .user_ptr = tag(i), .mlength = ops[i].len});
            } else {
                check_init_event(ev, {.type = ops[i].get ? PTL_EVENT_REPLY : PTL_EVENT_ACK,
                                      .user_ptr = tag(i),
                                      .mlength = ops[i].mlength,
                                      .remote_offset = ops[i].used,
                                      .list = PTL_PRIORITY_LIST});
            }
        }
        EXPECT_EQ(11u, seen.size());
        // The get read the untouched part of the target buffer at offset 350.
        EXPECT_EQ(-1, check_pattern(src.data() + 1500, 50, 5, 350));
    } else if (rank() == 0) {
        for (size_t k = 0; k < std::size(ops); ++k) {
            ptl_event_t ev = wait_event(teq);
            size_t i = ev.type == PTL_EVENT_GET ? 3 : ev.hdr_data;
            ASSERT_LT(i, std::size(ops)) << describe(ev);
            check_target_event(ev,
                               {.type = ops[i].get ? PTL_EVENT_GET : PTL_EVENT_PUT,
                                .initiator = 1,
                                .pt_index = kPt,
                                .match_bits = 3,
                                .rlength = ops[i].len,
                                .mlength = ops[i].mlength,
                                .remote_offset = ops[i].roff,
                                .start = buf.data() + ops[i].used,
                                .user_ptr = tag(1),
                                .hdr_data = ops[i].get ? std::nullopt : std::optional<ptl_hdr_data_t>(i)},
                               ni);
        }
        EXPECT_EQ(-1, check_pattern(buf.data(), 350, 18));
        EXPECT_EQ(-1, check_pattern(buf.data() + 350, 50, 5, 350));
        EXPECT_EQ(-1, check_pattern(buf.data() + 400, 600, 18, 350));
    }
    barrier();
}

// §3.12.1 min_free: once length - local offset < min_free the ME unlinks itself
// (AUTO_UNLINK after its PUTs) and later messages go to the next entry.
TEST_F(Match, MinFreeAutoUnlinks) {
    Ni ni = open_ni(kMatchingPhysical);
    std::vector<uint8_t> b1(1000, 0), b2(64, 0);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    ptl_handle_me_t m1 = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        ptl_me_t d = me_desc(b1.data(), 1000, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL, 4);
        d.min_free = 300;
        m1 = append_me(ni, kPt, d, PTL_PRIORITY_LIST, tag(1), teq);
        append_me(ni, kPt, me_desc(b2.data(), 64, PTL_ME_OP_PUT, 4), PTL_PRIORITY_LIST, tag(2), teq);
    }
    barrier();
    if (rank() == 1) {
        Sender s(ni, 512, 19);
        s.put(kPt, 500, 4, 0, 1, 500, 0);
        s.put(kPt, 250, 4, 0, 2, 250, 500);
        s.put(kPt, 10, 4, 0, 3, 10, 0);
    } else if (rank() == 0) {
        auto put_ev = [&](const ptl_event_t &ev, ptl_size_t len, const void *start, uintptr_t user,
                          ptl_hdr_data_t hdr) {
            check_target_event(ev,
                               {.type = PTL_EVENT_PUT,
                                .initiator = 1,
                                .pt_index = kPt,
                                .match_bits = 4,
                                .rlength = len,
                                .mlength = len,
                                .remote_offset = 0,
                                .start = start,
                                .user_ptr = tag(user),
                                .hdr_data = hdr},
                               ni);
        };
        put_ev(wait_event(teq), 500, b1.data(), 1, 1);
        put_ev(wait_event(teq), 250, b1.data() + 500, 1, 2);
        // AUTO_UNLINK of entry 1 follows its PUTs; its order relative to entry 2's PUT is free.
        bool unlink = false, third = false;
        for (int k = 0; k < 2; ++k) {
            ptl_event_t ev = wait_event(teq);
            if (ev.type == PTL_EVENT_AUTO_UNLINK && !unlink) {
                unlink = true;
                check_entry_event(ev, PTL_EVENT_AUTO_UNLINK, kPt, tag(1));
            } else {
                third = true;
                put_ev(ev, 10, b2.data(), 2, 3);
            }
        }
        EXPECT_TRUE(unlink && third);
        EXPECT_RC(PTL_ARG_INVALID, PtlMEUnlink(m1));
        EXPECT_EQ(-1, check_pattern(b1.data(), 500, 19));
        EXPECT_EQ(-1, check_pattern(b1.data() + 500, 250, 19));
        expect_eq_empty(teq);
    }
    barrier();
}

// §3.12.4 PtlMEUnlink, §3.13.1 AUTO_UNLINK: once an entry unlinked itself (a use-once entry
// consumed by a put, get, atomic or fetch-atomic), its handle is stale: PtlMEUnlink/PtlLEUnlink
// answer PTL_ARG_INVALID, every time, never PTL_IN_USE (a program that retries on IN_USE would
// spin for ever). An entry that was not consumed unlinks with PTL_OK, and then it is stale too.
TEST_F(Match, UnlinkOfConsumedUseOnceEntryIsStale) {
    for (unsigned kind : {kMatchingPhysical, kNonMatchingPhysical}) {
        SCOPED_TRACE(ni_kind_name(kind));
        Ni ni = open_ni(kind);
        constexpr int kOps = 4; // put, get, atomic, fetch-atomic
        std::vector<uint8_t> bufs(kOps * 16, 0);
        std::vector<uint8_t> spare(16, 0);
        ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
        std::vector<ptl_handle_any_t> once(kOps, PTL_INVALID_HANDLE);
        if (rank() == 0) {
            teq = make_eq(ni);
            make_pt(ni, teq, 0, kPt);
            for (int i = 0; i < kOps; ++i)
                once[static_cast<size_t>(i)] = append_entry(
                    ni, kPt, me_desc(bufs.data() + 16 * i, 16, PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_USE_ONCE, 5),
                    PTL_PRIORITY_LIST, tag(10 + static_cast<uintptr_t>(i)), teq);
        }
        barrier();
        if (rank() == 1) {
            std::vector<uint8_t> src(16), dst(16);
            fill_pattern(src.data(), src.size(), 31);
            ptl_handle_eq_t ieq = make_eq(ni);
            ptl_handle_md_t md = bind_md(ni, src.data(), 16, ieq);
            ptl_handle_md_t gmd = bind_md(ni, dst.data(), 16, ieq);
            ASSERT_PTL(PtlPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 5, 0, tag(1), 0));
            expect_send_and_ack(ieq, tag(1), 8, 8, 0);
            ASSERT_PTL(PtlGet(gmd, 0, 8, ni.id_of(0), kPt, 5, 0, tag(2)));
            check_init_event(wait_event(ieq), {.type = PTL_EVENT_REPLY, .user_ptr = tag(2), .mlength = 8});
            ASSERT_PTL(PtlAtomic(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 5, 0, tag(3), 0, PTL_SUM, PTL_UINT64_T));
            expect_send_and_ack(ieq, tag(3), 8, 8, 0);
            ASSERT_PTL(PtlFetchAtomic(gmd, 0, md, 0, 8, ni.id_of(0), kPt, 5, 0, tag(4), 0, PTL_SUM, PTL_UINT64_T));
            for (int k = 0; k < 2; ++k) { // SEND and REPLY, in either order
                ptl_event_t ev = wait_event(ieq);
                EXPECT_TRUE(ev.type == PTL_EVENT_SEND || ev.type == PTL_EVENT_REPLY) << describe(ev);
                EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
            }
        }
        barrier();
        if (rank() == 0) {
            const ptl_event_kind_t comm[kOps] = {PTL_EVENT_PUT, PTL_EVENT_GET, PTL_EVENT_ATOMIC,
                                                 PTL_EVENT_FETCH_ATOMIC};
            for (int i = 0; i < kOps; ++i) {
                ptl_event_t ev = expect_event(teq, comm[i]);
                EXPECT_EQ(tag(10 + static_cast<uintptr_t>(i)), ev.user_ptr) << describe(ev);
                check_entry_event(wait_event(teq), PTL_EVENT_AUTO_UNLINK, kPt, tag(10 + static_cast<uintptr_t>(i)));
            }
            for (int i = 0; i < kOps; ++i)
                for (int attempt = 0; attempt < 3; ++attempt)
                    EXPECT_RC(PTL_ARG_INVALID, unlink_entry(ni, once[static_cast<size_t>(i)]))
                        << "entry " << i << " consumed itself; attempt " << attempt;
            // Appending again (which frees retired entries) does not bring the handles back.
            ptl_handle_any_t fresh =
                append_entry(ni, kPt, me_desc(spare.data(), 16, PTL_ME_OP_PUT, 6), PTL_PRIORITY_LIST, tag(20), teq);
            for (int i = 0; i < kOps; ++i) EXPECT_RC(PTL_ARG_INVALID, unlink_entry(ni, once[static_cast<size_t>(i)]));
            EXPECT_PTL(unlink_entry(ni, fresh));
            EXPECT_RC(PTL_ARG_INVALID, unlink_entry(ni, fresh)) << "unlinked twice";
            expect_eq_empty(teq);
        }
        barrier();
        close_ni(ni);
    }
}

// §3.13.3 PTL_NI_DROPPED, §3.15.1, §4.2.2: without flow control, a message that matches
// nothing, or goes to a PT that does not exist, is dropped: DROP_COUNT + 1 each and no other
// register, and the initiator hears of it: an ACK (PTL_ACK_REQ, PTL_CT_ACK_REQ) or REPLY with
// PTL_NI_DROPPED, counted as a failure; a PTL_OC_ACK_REQ ack still reports success, because a drop
// for a failed match "does not represent an operational failure" (§3.15.1). README decision 11.
TEST_F(Match, NoMatchWithoutFlowControlIsDropped) {
    for (unsigned kind : {kMatchingPhysical, kNonMatchingPhysical}) {
        SCOPED_TRACE(ni_kind_name(kind));
        const bool matching = kind == kMatchingPhysical;
        Ni ni = open_ni(kind);
        std::vector<uint8_t> buf(64, 0);
        ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
        constexpr ptl_pt_index_t kEmptyPt = kPt + 1; // allocated, no entry at all
        Sr before;
        if (rank() == 0) {
            teq = make_eq(ni);
            make_pt(ni, teq, 0, kPt);
            make_pt(ni, teq, 0, kEmptyPt);
            if (matching) // an LE matches everything: on a non-matching NI only kEmptyPt drops
                append_entry(ni, kPt, me_desc(buf.data(), 64, PTL_ME_OP_PUT | PTL_ME_OP_GET, 1), PTL_PRIORITY_LIST,
                             tag(1), teq);
            before = read_sr(ni);
        }
        barrier();
        int drops = 0;
        if (rank() == 1) {
            std::vector<uint8_t> src(64), dst(64, 0xAB);
            fill_pattern(src.data(), src.size(), 20);
            ptl_handle_eq_t ieq = make_eq(ni);
            ptl_handle_ct_t ct = make_ct(ni);
            ptl_handle_md_t md = bind_md(ni, src.data(), 64, ieq);
            ptl_handle_md_t gmd = bind_md(ni, dst.data(), 64, ieq);
            ptl_handle_md_t ctmd = bind_md(ni, src.data(), 64, PTL_EQ_NONE, ct, PTL_MD_EVENT_CT_ACK);
            const ptl_pt_index_t miss = matching ? kPt : kEmptyPt; // PT with no matching entry
            const ptl_match_bits_t bits = matching ? 2 : 0;
            auto failed_reply = [&](uintptr_t id) {
                check_init_event(wait_event(ieq),
                                 {.type = PTL_EVENT_REPLY, .user_ptr = tag(id), .mlength = 0, .fail = PTL_NI_DROPPED});
            };
            // Put and get that match nothing, a put to a PT that does not exist, a get from an
            // allocated PT with no entry.
            ASSERT_PTL(PtlPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), miss, bits, 0, tag(1), 1));
            expect_send_and_failed_ack(ieq, tag(1), 8, PTL_NI_DROPPED);
            ASSERT_PTL(PtlGet(gmd, 0, 8, ni.id_of(0), miss, bits, 0, tag(2)));
            failed_reply(2);
            ASSERT_PTL(PtlPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt + 7, 1, 0, tag(3), 3));
            expect_send_and_failed_ack(ieq, tag(3), 8, PTL_NI_DROPPED);
            ASSERT_PTL(PtlGet(gmd, 0, 8, ni.id_of(0), kEmptyPt, 1, 0, tag(4)));
            failed_reply(4);
            // Atomics travel the same way.
            ASSERT_PTL(PtlAtomic(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), miss, bits, 0, tag(5), 5, PTL_SUM, PTL_INT64_T));
            expect_send_and_failed_ack(ieq, tag(5), 8, PTL_NI_DROPPED);
            ASSERT_PTL(PtlFetchAtomic(gmd, 0, md, 0, 8, ni.id_of(0), miss, bits, 0, tag(6), 6, PTL_SUM, PTL_INT64_T));
            check_init_event(wait_event(ieq), {.type = PTL_EVENT_SEND, .user_ptr = tag(6)});
            failed_reply(6);
            EXPECT_EQ(-1, check_fill(dst.data(), dst.size(), 0xAB)) << "a dropped get wrote the MD";
            // Counting acks: CT_ACK_REQ counts the drop as a failure, OC_ACK_REQ as done.
            ASSERT_PTL(PtlPut(ctmd, 0, 8, PTL_CT_ACK_REQ, ni.id_of(0), miss, bits, 0, nullptr, 7));
            EXPECT_EQ((Ct{0, 1}), ct_reach(ct, Ct{0, 1}));
            ASSERT_PTL(PtlPut(ctmd, 0, 8, PTL_OC_ACK_REQ, ni.id_of(0), miss, bits, 0, nullptr, 8));
            EXPECT_EQ((Ct{1, 1}), ct_reach(ct, Ct{1, 1}));
            drops = 8;
            // The entry still takes what matches it.
            if (matching) {
                ASSERT_PTL(PtlPut(md, 0, 8, PTL_ACK_REQ, ni.id_of(0), kPt, 1, 0, tag(9), 9));
                expect_send_and_ack(ieq, tag(9), 8, 8, 0);
            }
            expect_eq_empty(ieq);
        }
        drops = job().allgather_pod(drops)[1];
        if (rank() == 0) {
            EXPECT_EQ(sr_plus(before, drops, 0, 0), read_sr(ni));
            if (matching) {
                ptl_event_t ev = expect_event(teq, PTL_EVENT_PUT);
                EXPECT_EQ(9u, ev.hdr_data) << describe(ev);
            }
            expect_eq_empty(teq, "(a dropped message raises no target event)");
        }
        barrier();
        close_ni(ni);
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
