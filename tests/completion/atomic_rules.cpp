// SPDX-License-Identifier: BSD-3-Clause
// Completion conformance: the rules around atomics (spec §3.15.4-3.15.7, Table 3-4, §3.13,
// §3.14, §3.12.1 permissions: illegal combinations, sizes, counting events, permissions, the
// multi-item rejection of CSWAP and MSWAP, atomics that land in an overflow entry).
//
// Portico decisions used here: an illegal op/datatype/call combination, a length that is not a
// multiple of the datatype size, a CSWAP*/MSWAP of more than one item and a length above
// max_atomic_size (PtlAtomic) or max_fetch_atomic_size (fetch/swap) all return PTL_ARG_INVALID
// and send nothing; the target event of an atomic landing in an overflow entry reports
// ptl_list = PTL_OVERFLOW_LIST.
#include "completion_helpers.hpp"

using namespace cpltest;

namespace {

class AtomicRules : public CompletionTest {};
constexpr ptl_pt_index_t kPt = 22;
constexpr ptl_match_bits_t kAny = ~0ull;

// The six calls of the legality table: the three atomics and their triggered versions.
int call_any(Call call, bool triggered, ptl_handle_md_t get_md, ptl_size_t get_off, ptl_handle_md_t put_md,
             ptl_size_t put_off, ptl_size_t len, ptl_process_t target, ptl_match_bits_t bits, ptl_size_t roff,
             ptl_hdr_data_t hdr, const void *operand, int op, int dt, ptl_handle_ct_t trig) {
    const auto o = static_cast<ptl_op_t>(op);
    const auto d = static_cast<ptl_datatype_t>(dt);
    void *const user = tag(hdr + 1);
    switch (call) {
    case Call::Atomic:
        return triggered ? PtlTriggeredAtomic(put_md, put_off, len, PTL_ACK_REQ, target, kPt, bits, roff, user, hdr, o,
                                              d, trig, 1)
                         : PtlAtomic(put_md, put_off, len, PTL_ACK_REQ, target, kPt, bits, roff, user, hdr, o, d);
    case Call::FetchAtomic:
        return triggered
                   ? PtlTriggeredFetchAtomic(get_md, get_off, put_md, put_off, len, target, kPt, bits, roff, user, hdr,
                                             o, d, trig, 1)
                   : PtlFetchAtomic(get_md, get_off, put_md, put_off, len, target, kPt, bits, roff, user, hdr, o, d);
    case Call::Swap:
        return triggered
                   ? PtlTriggeredSwap(get_md, get_off, put_md, put_off, len, target, kPt, bits, roff, user, hdr,
                                      operand, o, d, trig, 1)
                   : PtlSwap(get_md, get_off, put_md, put_off, len, target, kPt, bits, roff, user, hdr, operand, o, d);
    }
    return -1;
}

constexpr Call kCalls[] = {Call::Atomic, Call::FetchAtomic, Call::Swap};
constexpr int kOps = PTL_OP_LAST + 1;         // every op plus one invalid value
constexpr int kTypes = PTL_DATATYPE_LAST + 1; // every datatype plus one invalid value

// Illegal combinations (Table 3-4): every op x datatype x call, for PtlAtomic,
// PtlFetchAtomic, PtlSwap and their triggered versions, plus an out-of-range op and datatype. Each
// illegal one returns PTL_ARG_INVALID and sends nothing; each legal one returns PTL_OK, and the
// plain ones reach the peer (both ranks at once) with the right event kind, op and datatype. The
// triggered legal ones stay pending (threshold never reached) and are cancelled.
TEST_F(AtomicRules, LegalityTableEveryOpTypeCall) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    if (rank() > 1) { // not involved, but in every barrier
        barrier();
        barrier();
        return;
    }
    const size_t slots = 3 * 2 * kOps * kTypes;
    Buf scratch(slots * 32), src(64), fetched(slots * 32, 0xEE), operand(32);
    ptl_handle_eq_t teq = make_eq(ni, 2 * slots);
    make_pt(ni, teq, 0, kPt);
    ptl_handle_ct_t tct = make_ct(ni);
    append_me(ni, kPt,
              me_desc(scratch.data(), scratch.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, 9, 0, tct),
              PTL_PRIORITY_LIST, tag(9), teq);
    ptl_handle_ct_t pct = make_ct(ni), gct = make_ct(ni), trig = make_ct(ni);
    ptl_handle_md_t put_md =
        bind_md(ni, src.data(), src.size(), PTL_EQ_NONE, pct, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK);
    ptl_handle_md_t get_md = bind_md(ni, fetched.data(), fetched.size(), PTL_EQ_NONE, gct, PTL_MD_EVENT_CT_REPLY);
    barrier();

    size_t legal_plain[3] = {0, 0, 0}, legal_triggered = 0;
    for (int c = 0; c < 3; ++c) {
        for (int trg = 0; trg < 2; ++trg) {
            for (int op = 0; op < kOps; ++op) {
                for (int dt = 0; dt < kTypes; ++dt) {
                    const Call call = kCalls[c];
                    const bool ok =
                        op < PTL_OP_LAST && legal(static_cast<ptl_op_t>(op), static_cast<ptl_datatype_t>(dt), call);
                    const size_t len = dt < PTL_DATATYPE_LAST ? dt_size(static_cast<ptl_datatype_t>(dt)) : 8;
                    const size_t slot = static_cast<size_t>(((c * 2 + trg) * kOps + op) * kTypes + dt);
                    const ptl_hdr_data_t hdr = (uint64_t(c) << 16) | (uint64_t(op) << 8) | uint64_t(dt);
                    const int rc = call_any(call, trg != 0, get_md, slot * 32, put_md, 0, len, ni.id_of(peer()), 9,
                                            slot * 32, hdr, operand.data(), op, dt, trig);
                    EXPECT_EQ(Rc{ok ? PTL_OK : PTL_ARG_INVALID}, Rc{rc})
                        << (trg ? "triggered " : "") << call_name(call) << " " << op_name(op) << " (" << op << ") "
                        << dt_name(dt) << " (" << dt << ")";
                    if (ok && rc == PTL_OK) {
                        if (trg)
                            ++legal_triggered;
                        else
                            ++legal_plain[c];
                    }
                }
            }
        }
    }
    // Table 3-4 as counted: MIN/MAX 11 types (8 integer, 3 floating), SUM/PROD/DIFF 14, six
    // logical/bitwise ops 8 (Atomic and FetchAtomic each: 22 + 42 + 48); SWAP/CSWAP/CSWAP_NE 14,
    // CSWAP_LE..GT 11, MSWAP 8 (Swap: 42 + 44 + 8).
    EXPECT_EQ(112u, legal_plain[0]);
    EXPECT_EQ(112u, legal_plain[1]);
    EXPECT_EQ(94u, legal_plain[2]);
    EXPECT_EQ(318u, legal_triggered);
    const size_t n_plain = legal_plain[0] + legal_plain[1] + legal_plain[2];

    // Initiator: SEND + ACK per PtlAtomic, SEND per fetch/swap; REPLY per fetch/swap.
    const Ct want_put{2 * legal_plain[0] + legal_plain[1] + legal_plain[2], 0};
    const Ct want_get{legal_plain[1] + legal_plain[2], 0};
    EXPECT_EQ(want_put, ct_wait(pct, want_put.success));
    EXPECT_EQ(want_get, ct_wait(gct, want_get.success));
    // Target: one event per legal plain call, kind/op/type as sent.
    EXPECT_EQ((Ct{n_plain, 0}), ct_wait(tct, n_plain));
    std::vector<int> seen(slots, 0);
    for (size_t e = 0; e < n_plain; ++e) {
        const ptl_event_t ev = wait_event(teq);
        const int c = static_cast<int>(ev.hdr_data >> 16), op = static_cast<int>((ev.hdr_data >> 8) & 0xFF),
                  dt = static_cast<int>(ev.hdr_data & 0xFF);
        ASSERT_TRUE(c < 3 && op < kOps && dt < kTypes) << describe(ev);
        const Call call = kCalls[c];
        EXPECT_TRUE(op < PTL_OP_LAST && legal(static_cast<ptl_op_t>(op), static_cast<ptl_datatype_t>(dt), call))
            << "an illegal call reached the target: " << describe(ev);
        EXPECT_EQ(Kind{call == Call::Atomic ? PTL_EVENT_ATOMIC : PTL_EVENT_FETCH_ATOMIC}, Kind{ev.type})
            << describe(ev);
        EXPECT_EQ(Fail{PTL_NI_OK}, Fail{ev.ni_fail_type}) << describe(ev);
        EXPECT_EQ(op, static_cast<int>(ev.atomic_operation)) << describe(ev);
        EXPECT_EQ(dt, static_cast<int>(ev.atomic_type)) << describe(ev);
        EXPECT_EQ(dt_size(static_cast<ptl_datatype_t>(dt)), ev.mlength) << describe(ev);
        const size_t slot = static_cast<size_t>((c * 2 * kOps + op) * kTypes + dt);
        EXPECT_EQ(slot * 32, ev.remote_offset) << describe(ev);
        EXPECT_EQ(1, ++seen[slot]) << "twice: " << describe(ev);
    }
    // The triggered ones never fired; cancelling them leaves the counter as it was.
    EXPECT_EQ((Ct{0, 0}), ct_get(trig));
    ASSERT_PTL(PtlCTCancelTriggered(trig));
    EXPECT_EQ((Ct{0, 0}), ct_get(trig));
    ASSERT_PTL(PtlMDRelease(put_md)) << "no triggered operation may still hold the MD after the cancel";
    ASSERT_PTL(PtlMDRelease(get_md));
    barrier(); // everything either rank sent has been accounted for: nothing else may show up
    expect_eq_empty(teq, "after every legal call was seen");
    EXPECT_EQ((Ct{n_plain, 0}), ct_get(tct));
    EXPECT_EQ(want_put, ct_get(pct));
    EXPECT_EQ(want_get, ct_get(gct));
}

// Sizes (§3.15.4-3.15.7): a length that is not a multiple of the datatype size, a length above
// max_atomic_size (PtlAtomic) or max_fetch_atomic_size (PtlFetchAtomic, PtlSwap), a range
// outside the MD, and a CSWAP-family or MSWAP call of more than one item are all
// PTL_ARG_INVALID, plain and triggered, and send nothing (a legal witness arrives alone).
TEST_F(AtomicRules, LengthRules) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    const size_t amax = ni.limits.max_atomic_size, fmax = ni.limits.max_fetch_atomic_size;
    ASSERT_GE(amax, 32u);
    ASSERT_GE(fmax, 32u);
    ASSERT_LE(std::max(amax, fmax), size_t{64} << 20);
    const size_t big = std::max(amax, fmax) + 256;
    Buf tbuf(big);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(tbuf.data(), big, PTL_ME_OP_PUT | PTL_ME_OP_GET, 0, kAny), PTL_PRIORITY_LIST, tag(1),
                  teq);
    }
    barrier();
    if (rank() == 1) {
        Buf src(big), dst(big), operand(32);
        ptl_handle_eq_t eq = make_eq(ni);
        ptl_handle_ct_t trig = make_ct(ni);
        ptl_handle_md_t put_md = bind_md(ni, src.data(), big, eq);
        ptl_handle_md_t get_md = bind_md(ni, dst.data(), big, eq);
        const ptl_process_t t = ni.id_of(0);
        size_t checked = 0;
        auto reject = [&](Call call, ptl_op_t op, ptl_datatype_t dt, size_t len, ptl_size_t put_off = 0,
                          ptl_size_t get_off = 0, const char *why = "") {
            for (int trg = 0; trg < 2; ++trg) {
                const int rc = call_any(call, trg != 0, get_md, get_off, put_md, put_off, len, t, 0, 0, 0,
                                        operand.data(), op, dt, trig);
                EXPECT_EQ(Rc{PTL_ARG_INVALID}, Rc{rc})
                    << (trg ? "triggered " : "") << call_name(call) << " " << op_name(op) << " " << dt_name(dt)
                    << " length " << len << " put offset " << put_off << " get offset " << get_off << ": " << why;
                ++checked;
            }
        };
        // Not a multiple of the datatype size: one byte more than an item, and half an item.
        for_each_dt([&]<ptl_datatype_t D>() {
            const size_t s = sizeof(typename Dt<D>::type);
            const ptl_op_t reduce = PTL_SUM, swap = PTL_SWAP;
            if (s == 1) return;
            for (size_t len : {s + 1, s / 2, 3 * s - 1}) {
                reject(Call::Atomic, reduce, D, len, 0, 0, "not a multiple of the item size");
                reject(Call::FetchAtomic, reduce, D, len, 0, 0, "not a multiple of the item size");
                reject(Call::Swap, swap, D, len, 0, 0, "not a multiple of the item size");
            }
        });
        // Above the limits (multiples of the item size, inside the MDs).
        reject(Call::Atomic, PTL_SUM, PTL_INT64_T, amax + 8, 0, 0, "above max_atomic_size");
        reject(Call::Atomic, PTL_BOR, PTL_UINT8_T, amax + 1, 0, 0, "above max_atomic_size");
        reject(Call::Atomic, PTL_SUM, PTL_LONG_DOUBLE_COMPLEX, amax + 32, 0, 0, "above max_atomic_size");
        reject(Call::FetchAtomic, PTL_SUM, PTL_INT64_T, fmax + 8, 0, 0, "above max_fetch_atomic_size");
        reject(Call::FetchAtomic, PTL_MAX, PTL_UINT8_T, fmax + 1, 0, 0, "above max_fetch_atomic_size");
        reject(Call::Swap, PTL_SWAP, PTL_INT64_T, fmax + 8, 0, 0, "above max_fetch_atomic_size");
        reject(Call::Swap, PTL_SWAP, PTL_DOUBLE_COMPLEX, fmax + 16, 0, 0, "above max_fetch_atomic_size");
        // Outside the MDs.
        reject(Call::Atomic, PTL_SUM, PTL_INT64_T, 16, big - 8, 0, "put range outside the MD");
        reject(Call::FetchAtomic, PTL_SUM, PTL_INT64_T, 16, 0, big - 8, "get range outside the MD");
        reject(Call::Swap, PTL_SWAP, PTL_INT32_T, 8, big + 64, 0, "put offset past the MD");
        // CSWAP family and MSWAP are limited to one item.
        for (ptl_op_t op : {PTL_CSWAP, PTL_CSWAP_NE, PTL_CSWAP_LE, PTL_CSWAP_LT, PTL_CSWAP_GE, PTL_CSWAP_GT, PTL_MSWAP})
            for_each_dt([&]<ptl_datatype_t D>() {
                const size_t s = sizeof(typename Dt<D>::type);
                if (legal(op, D, Call::Swap)) {
                    reject(Call::Swap, op, D, 2 * s, 0, 0, "more than one item");
                    reject(Call::Swap, op, D, 4 * s, 0, 0, "more than one item");
                }
            });
        EXPECT_GT(checked, 200u);
        EXPECT_EQ((Ct{0, 0}), ct_get(trig));
        // Nothing left: no event, no pending trigger holding an MD, and the witness arrives alone.
        expect_eq_empty(eq, "after rejected calls");
        ASSERT_PTL(PtlAtomic(put_md, 0, 8, PTL_ACK_REQ, t, kPt, 0, 0, tag(77), 77, PTL_SUM, PTL_INT64_T));
        expect_send_and_ack(eq, tag(77), 8, 8, 0);
        ASSERT_PTL(PtlMDRelease(put_md));
        ASSERT_PTL(PtlMDRelease(get_md));
    }
    barrier();
    if (rank() == 0) {
        const ptl_event_t ev = expect_event(teq, PTL_EVENT_ATOMIC);
        EXPECT_EQ(77u, ev.hdr_data) << "the witness must be the first and only message: " << describe(ev);
        expect_eq_empty(teq, "after the witness");
    }
}

// Counting events (§3.14, §3.15.4): atomics count SEND/ACK on the put MD and REPLY on the get MD
// (bytes with CT_BYTES), on MDs without an EQ; the target's CT counts each atomic's bytes.
TEST_F(AtomicRules, CountingEvents) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    Buf tbuf(256);
    ptl_handle_ct_t tct = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        tct = make_ct(ni);
        make_pt(ni, PTL_EQ_NONE, 0, kPt);
        append_me(ni, kPt,
                  me_desc(tbuf.data(), tbuf.size(),
                          PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES, 0, kAny, tct),
                  PTL_PRIORITY_LIST, tag(1), PTL_EQ_NONE);
    }
    barrier();
    if (rank() == 1) {
        Buf src(64), dst(64), operand(8);
        ptl_handle_ct_t pct = make_ct(ni), gct = make_ct(ni);
        ptl_handle_md_t put_md =
            bind_md(ni, src.data(), 64, PTL_EQ_NONE, pct, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK);
        ptl_handle_md_t get_md =
            bind_md(ni, dst.data(), 64, PTL_EQ_NONE, gct, PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_BYTES);
        const ptl_process_t t = ni.id_of(0);
        ASSERT_PTL(PtlAtomic(put_md, 0, 24, PTL_ACK_REQ, t, kPt, 0, 0, tag(1), 0, PTL_SUM, PTL_INT64_T));
        ASSERT_PTL(PtlAtomic(put_md, 0, 16, PTL_CT_ACK_REQ, t, kPt, 0, 32, tag(2), 0, PTL_MAX, PTL_INT32_T));
        ASSERT_PTL(PtlAtomic(put_md, 0, 8, PTL_NO_ACK_REQ, t, kPt, 0, 64, tag(3), 0, PTL_BXOR, PTL_UINT8_T));
        ASSERT_PTL(PtlFetchAtomic(get_md, 0, put_md, 0, 16, t, kPt, 0, 96, tag(4), 0, PTL_SUM, PTL_DOUBLE));
        ASSERT_PTL(
            PtlSwap(get_md, 16, put_md, 0, 8, t, kPt, 0, 128, tag(5), 0, operand.data(), PTL_CSWAP, PTL_UINT64_T));
        EXPECT_EQ((Ct{5 + 2, 0}), ct_wait(pct, 7)) << "5 SEND + 2 ACK";
        EXPECT_EQ((Ct{16 + 8, 0}), ct_wait(gct, 24)) << "REPLY bytes";
    }
    if (rank() == 0) {
        EXPECT_EQ((Ct{24 + 16 + 8 + 16 + 8, 0}), ct_wait(tct, 72)) << "target bytes";
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ((Ct{72, 0}), ct_get(tct));
    }
}

// Permissions (§3.12.1, §3.15.4, README decision 2): PtlAtomic needs OP_PUT, PtlFetchAtomic and
// PtlSwap need OP_PUT and OP_GET. A violation drops the message (target unchanged, no target
// event), adds 1 to OPERATION_VIOLATIONS (not DROP_COUNT) and the ACK/REPLY reports
// PTL_NI_OP_VIOLATION; a uid mismatch reports PTL_NI_PERM_VIOLATION.
TEST_F(AtomicRules, Permissions) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    Buf get_only(64, 0x11), put_only(64, 0x22), both(64, 0x33), wrong_uid(64, 0x44);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    Sr before;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(get_only.data(), 64, PTL_ME_OP_GET, 1), PTL_PRIORITY_LIST, tag(1), teq);
        append_me(ni, kPt, me_desc(put_only.data(), 64, PTL_ME_OP_PUT, 2), PTL_PRIORITY_LIST, tag(2), teq);
        append_me(ni, kPt, me_desc(both.data(), 64, PTL_ME_OP_PUT | PTL_ME_OP_GET, 3), PTL_PRIORITY_LIST, tag(3), teq);
        ptl_me_t d = me_desc(wrong_uid.data(), 64, PTL_ME_OP_PUT | PTL_ME_OP_GET, 4);
        d.uid = ni.uids[1] + 1;
        append_me(ni, kPt, d, PTL_PRIORITY_LIST, tag(4), teq);
        before = read_sr(ni);
    }
    barrier();
    if (rank() == 1) {
        Buf src(64, 0x01), dst(64, 0xEE), operand(8, 0x11);
        ptl_handle_eq_t peq = make_eq(ni), geq = make_eq(ni);
        ptl_handle_md_t put_md = bind_md(ni, src.data(), 64, peq);
        ptl_handle_md_t get_md = bind_md(ni, dst.data(), 64, geq);
        const ptl_process_t t = ni.id_of(0);
        struct Step {
            Call call;
            ptl_match_bits_t bits;
            ptl_ni_fail_t fail;
        };
        const Step steps[] = {
            {Call::Atomic, 1, PTL_NI_OP_VIOLATION},
            {Call::FetchAtomic, 1, PTL_NI_OP_VIOLATION},
            {Call::FetchAtomic, 2, PTL_NI_OP_VIOLATION},
            {Call::Swap, 1, PTL_NI_OP_VIOLATION},
            {Call::Swap, 2, PTL_NI_OP_VIOLATION},
            {Call::Atomic, 4, PTL_NI_PERM_VIOLATION},
            {Call::FetchAtomic, 4, PTL_NI_PERM_VIOLATION},
            {Call::Atomic, 2, PTL_NI_OK},
            {Call::FetchAtomic, 3, PTL_NI_OK},
            {Call::Swap, 3, PTL_NI_OK},
        };
        for (size_t i = 0; i < std::size(steps); ++i) {
            const Step &s = steps[i];
            SCOPED_TRACE(std::string(call_name(s.call)) + " to match bits " + std::to_string(s.bits));
            int rc;
            if (s.call == Call::Atomic)
                rc = PtlAtomic(put_md, 0, 8, PTL_ACK_REQ, t, kPt, s.bits, 8, tag(i + 1), i, PTL_BOR, PTL_UINT8_T);
            else if (s.call == Call::FetchAtomic)
                rc = PtlFetchAtomic(get_md, 0, put_md, 0, 8, t, kPt, s.bits, 8, tag(i + 1), i, PTL_BOR, PTL_UINT8_T);
            else
                rc = PtlSwap(get_md, 0, put_md, 0, 8, t, kPt, s.bits, 8, tag(i + 1), i, operand.data(), PTL_SWAP,
                             PTL_UINT8_T);
            ASSERT_PTL(rc);
            // SEND reports local success only (§3.13.3); the ACK or REPLY carries the verdict.
            check_init_event(expect_event(peq, PTL_EVENT_SEND), {.type = PTL_EVENT_SEND, .user_ptr = tag(i + 1)});
            const ptl_event_t ev = wait_event(s.call == Call::Atomic ? peq : geq);
            check_init_event(ev, {.type = s.call == Call::Atomic ? PTL_EVENT_ACK : PTL_EVENT_REPLY,
                                  .user_ptr = tag(i + 1),
                                  .mlength = 8,
                                  .remote_offset = 8,
                                  .fail = s.fail});
        }
        // On `both` (0x33): BOR 0x01 leaves 0x33, then SWAP returns 0x33 and stores 0x01.
        EXPECT_EQ(-1, check_fill(dst.data(), 8, 0x33)) << "the last swap returns the old bytes of `both`";
    }
    barrier();
    if (rank() == 0) {
        EXPECT_EQ(sr_plus(before, 0, 2, 5), read_sr(ni)) << "5 operation and 2 permission violations, no drops";
        // Only the three allowed calls reached memory and raised events.
        const ptl_event_t a = expect_event(teq, PTL_EVENT_ATOMIC);
        EXPECT_EQ(tag(2), a.user_ptr) << describe(a);
        const ptl_event_t f = expect_event(teq, PTL_EVENT_FETCH_ATOMIC);
        EXPECT_EQ(tag(3), f.user_ptr) << describe(f);
        EXPECT_EQ(PTL_BOR, f.atomic_operation) << describe(f);
        const ptl_event_t s = expect_event(teq, PTL_EVENT_FETCH_ATOMIC);
        EXPECT_EQ(tag(3), s.user_ptr) << describe(s);
        EXPECT_EQ(PTL_SWAP, s.atomic_operation) << describe(s);
        expect_eq_empty(teq, "after the allowed calls");
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(-1, check_fill(get_only.data(), 64, 0x11));
        EXPECT_EQ(-1, check_fill(put_only.data(), 8, 0x22));
        EXPECT_EQ(-1, check_fill(put_only.data() + 8, 8, 0x23)) << "0x22 | 0x01";
        EXPECT_EQ(-1, check_fill(put_only.data() + 16, 48, 0x22));
        EXPECT_EQ(-1, check_fill(both.data() + 8, 8, 0x01)) << "BOR 0x01, then SWAP with 0x01";
        EXPECT_EQ(-1, check_fill(wrong_uid.data(), 64, 0x44));
    }
}

// §3.15.4, §3.12.2, Appendix C.2: atomics that land in an overflow entry are not applied.
// PtlAtomic deposits the initiator's bytes there like a put; PtlFetchAtomic and PtlSwap act like a
// get: the reply carries the overflow buffer's bytes and nothing is written. The ATOMIC /
// FETCH_ATOMIC events (ptl_list OVERFLOW) and the *_OVERFLOW events raised when a matching
// priority entry is appended carry atomic_operation and atomic_type, so that the host can apply
// them; the appended entry's buffer is not touched.
TEST_F(AtomicRules, OverflowAtomicsNotApplied) {
    REQUIRE_RANKS(2);
    Ni ni = open_ni(kMatchingPhysical);
    constexpr uint32_t kSeed = 58;
    Buf obuf(256), pbuf(256, 0x5C);
    fill_pattern(obuf.data(), obuf.size(), kSeed);
    ptl_handle_eq_t teq = PTL_INVALID_HANDLE;
    if (rank() == 0) {
        teq = make_eq(ni);
        make_pt(ni, teq, 0, kPt);
        append_me(ni, kPt, me_desc(obuf.data(), obuf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, 0, kAny), PTL_OVERFLOW_LIST,
                  tag(0xF0), teq);
    }
    barrier();
    struct Msg {
        Call call;
        ptl_op_t op;
        ptl_datatype_t dt;
        ptl_size_t len, roff;
        ptl_match_bits_t bits;
    };
    const Msg msgs[] = {
        {Call::Atomic, PTL_SUM, PTL_INT32_T, 16, 0, 0x581},
        {Call::FetchAtomic, PTL_SUM, PTL_INT64_T, 16, 64, 0x582},
        {Call::Swap, PTL_CSWAP, PTL_INT64_T, 8, 128, 0x583},
        {Call::Swap, PTL_SWAP, PTL_DOUBLE, 16, 160, 0x584},
        {Call::Atomic, PTL_DIFF, PTL_DOUBLE_COMPLEX, 32, 192, 0x585},
    };
    Buf src(64);
    for (int i = 0; i < 64; ++i) src.as<uint8_t>()[i] = static_cast<uint8_t>(i + 1);
    if (rank() == 1) {
        Buf dst(64 * std::size(msgs), 0xEE), operand(8);
        // The CSWAP's operand equals the overflow buffer's value: applied, it would swap.
        std::memcpy(operand.data(), obuf.at(128), 8);
        ptl_handle_eq_t peq = make_eq(ni), geq = make_eq(ni);
        ptl_handle_md_t put_md = bind_md(ni, src.data(), 64, peq);
        ptl_handle_md_t get_md = bind_md(ni, dst.data(), dst.size(), geq);
        for (size_t i = 0; i < std::size(msgs); ++i) {
            const Msg &m = msgs[i];
            SCOPED_TRACE(std::string(call_name(m.call)) + " " + op_name(m.op));
            int rc;
            if (m.call == Call::Atomic)
                rc = PtlAtomic(put_md, 0, m.len, PTL_ACK_REQ, ni.id_of(0), kPt, m.bits, m.roff, tag(i + 1), 0xA0 + i,
                               m.op, m.dt);
            else if (m.call == Call::FetchAtomic)
                rc = PtlFetchAtomic(get_md, i * 64, put_md, 0, m.len, ni.id_of(0), kPt, m.bits, m.roff, tag(i + 1),
                                    0xA0 + i, m.op, m.dt);
            else
                rc = PtlSwap(get_md, i * 64, put_md, 0, m.len, ni.id_of(0), kPt, m.bits, m.roff, tag(i + 1), 0xA0 + i,
                             operand.data(), m.op, m.dt);
            ASSERT_PTL(rc);
            check_init_event(expect_event(peq, PTL_EVENT_SEND), {.type = PTL_EVENT_SEND, .user_ptr = tag(i + 1)});
            const bool fetch = m.call != Call::Atomic;
            check_init_event(wait_event(fetch ? geq : peq), {.type = fetch ? PTL_EVENT_REPLY : PTL_EVENT_ACK,
                                                             .user_ptr = tag(i + 1),
                                                             .mlength = m.len,
                                                             .remote_offset = m.roff,
                                                             .list = PTL_OVERFLOW_LIST});
            if (fetch) {
                EXPECT_EQ(-1, check_pattern(dst.at(i * 64), m.len, kSeed, m.roff))
                    << "the reply carries the overflow buffer's bytes";
            }
        }
    }
    barrier();
    if (rank() == 0) {
        // The target events as they happened, in the overflow entry.
        for (size_t i = 0; i < std::size(msgs); ++i) {
            const Msg &m = msgs[i];
            SCOPED_TRACE(std::string(call_name(m.call)) + " " + op_name(m.op));
            const ptl_event_t ev = wait_event(teq);
            check_target_event(ev,
                               {.type = m.call == Call::Atomic ? PTL_EVENT_ATOMIC : PTL_EVENT_FETCH_ATOMIC,
                                .initiator = 1,
                                .pt_index = kPt,
                                .match_bits = m.bits,
                                .rlength = m.len,
                                .mlength = m.len,
                                .remote_offset = m.roff,
                                .start = obuf.at(m.roff),
                                .user_ptr = tag(0xF0),
                                .hdr_data = 0xA0 + i},
                               ni);
            EXPECT_EQ(static_cast<int>(PTL_OVERFLOW_LIST), static_cast<int>(ev.ptl_list)) << describe(ev);
            EXPECT_EQ(m.op, ev.atomic_operation) << describe(ev);
            EXPECT_EQ(m.dt, ev.atomic_type) << describe(ev);
        }
        expect_eq_empty(teq, "before the priority append");
        // Nothing was applied: the PtlAtomic payloads were deposited as they were sent, the
        // fetching calls wrote nothing.
        ASSERT_PTL(PtlAtomicSync());
        EXPECT_EQ(0, std::memcmp(obuf.data(), src.data(), 16)) << "PtlAtomic SUM deposits the raw bytes";
        EXPECT_EQ(-1, check_pattern(obuf.at(16), 192 - 16, kSeed, 16)) << "fetch/swap wrote nothing";
        EXPECT_EQ(0, std::memcmp(obuf.at(192), src.data(), 32)) << "PtlAtomic DIFF deposits the raw bytes";
        EXPECT_EQ(-1, check_pattern(obuf.at(224), 32, kSeed, 224));
        // A persistent priority append matching all of them: one *_OVERFLOW event per header, in
        // arrival order, then LINK.
        ptl_handle_me_t h = PTL_INVALID_HANDLE;
        ptl_me_t d = me_desc(pbuf.data(), pbuf.size(), PTL_ME_OP_PUT | PTL_ME_OP_GET, 0, kAny);
        ASSERT_PTL(PtlMEAppend(ni.h, kPt, &d, PTL_PRIORITY_LIST, tag(0xB0), &h));
        for (size_t i = 0; i < std::size(msgs); ++i) {
            const Msg &m = msgs[i];
            SCOPED_TRACE(std::string(call_name(m.call)) + " " + op_name(m.op) + " overflow event");
            const ptl_event_t ev = wait_event(teq);
            check_target_event(
                ev,
                {.type = m.call == Call::Atomic ? PTL_EVENT_ATOMIC_OVERFLOW : PTL_EVENT_FETCH_ATOMIC_OVERFLOW,
                 .initiator = 1,
                 .pt_index = kPt,
                 .match_bits = m.bits,
                 .rlength = m.len,
                 .mlength = m.len,
                 .remote_offset = m.roff,
                 .start = obuf.at(m.roff),
                 .user_ptr = tag(0xB0),
                 .hdr_data = 0xA0 + i},
                ni);
            EXPECT_EQ(m.op, ev.atomic_operation) << describe(ev);
            EXPECT_EQ(m.dt, ev.atomic_type) << describe(ev);
        }
        check_entry_event(wait_event(teq), PTL_EVENT_LINK, kPt, tag(0xB0));
        expect_eq_empty(teq, "after the append");
        EXPECT_EQ(-1, check_fill(pbuf.data(), pbuf.size(), 0x5C)) << "the appended entry's buffer is untouched";
    }
}

// §3.15.6, §3.15.7: the get and put MDs of one fetch/swap must belong to the same NI.
TEST_F(AtomicRules, MdsOfDifferentInterfaces) {
    Ni a = open_ni(kMatchingPhysical);
    Ni b = open_ni(kNonMatchingPhysical);
    Buf src(16), dst(16), operand(8);
    ptl_handle_md_t put_a = bind_md(a, src.data(), 16, PTL_EQ_NONE);
    ptl_handle_md_t get_b = bind_md(b, dst.data(), 16, PTL_EQ_NONE);
    ptl_handle_ct_t trig = make_ct(a);
    const ptl_process_t t = a.id_of(0);
    EXPECT_RC(PTL_ARG_INVALID, PtlFetchAtomic(get_b, 0, put_a, 0, 8, t, kPt, 0, 0, nullptr, 0, PTL_SUM, PTL_INT64_T));
    EXPECT_RC(PTL_ARG_INVALID,
              PtlSwap(get_b, 0, put_a, 0, 8, t, kPt, 0, 0, nullptr, 0, operand.data(), PTL_CSWAP, PTL_INT64_T));
    EXPECT_RC(PTL_ARG_INVALID,
              PtlTriggeredFetchAtomic(get_b, 0, put_a, 0, 8, t, kPt, 0, 0, nullptr, 0, PTL_SUM, PTL_INT64_T, trig, 1));
    EXPECT_RC(PTL_ARG_INVALID, PtlTriggeredSwap(get_b, 0, put_a, 0, 8, t, kPt, 0, 0, nullptr, 0, operand.data(),
                                                PTL_SWAP, PTL_INT64_T, trig, 1));
    EXPECT_EQ((Ct{0, 0}), ct_get(trig));
    EXPECT_PTL(PtlMDRelease(put_a)) << "nothing is pending on the MD";
    EXPECT_PTL(PtlMDRelease(get_b));
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
