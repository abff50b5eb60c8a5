// SPDX-License-Identifier: BSD-3-Clause
#include "completion_helpers.hpp"

#include <map>

namespace cpltest {

ptl_ni_limits_t generous_limits() {
    ptl_ni_limits_t d;
    std::memset(&d, 0, sizeof d);
    const int imax = std::numeric_limits<int>::max();
    d.max_entries = d.max_unexpected_headers = d.max_mds = d.max_cts = d.max_eqs = imax;
    d.max_pt_index = d.max_iovecs = d.max_list_size = d.max_triggered_ops = imax;
    d.max_msg_size = d.max_atomic_size = d.max_fetch_atomic_size = PTL_SIZE_MAX;
    d.max_waw_ordered_size = d.max_war_ordered_size = d.max_volatile_size = PTL_SIZE_MAX;
    return d;
}

Buf::Buf(size_t n, uint8_t fill) : n_(n) {
    void *p = std::aligned_alloc(64, round_up(n == 0 ? 1 : n, 64));
    if (!p) throw std::bad_alloc();
    std::memset(p, fill, round_up(n == 0 ? 1 : n, 64));
    p_.reset(static_cast<std::byte *>(p));
}

size_t dt_size(ptl_datatype_t d) {
    size_t s = 0;
    for_each_dt([&]<ptl_datatype_t D>() {
        if (D == d) s = sizeof(typename Dt<D>::type);
    });
    return s;
}

Cls dt_cls(ptl_datatype_t d) {
    Cls c = Cls::Int;
    for_each_dt([&]<ptl_datatype_t D>() {
        if (D == d) c = Dt<D>::cls;
    });
    return c;
}

const char *dt_name(int d) { return portico::clientkit::datatype_name(d); }

const char *op_name(int op) { return portico::clientkit::op_name(op); }

const char *call_name(Call c) {
    switch (c) {
    case Call::Atomic: return "PtlAtomic";
    case Call::FetchAtomic: return "PtlFetchAtomic";
    case Call::Swap: return "PtlSwap";
    }
    return "?";
}

bool takes_operand(ptl_op_t op) {
    return op == PTL_CSWAP || op == PTL_CSWAP_NE || op == PTL_CSWAP_LE || op == PTL_CSWAP_LT || op == PTL_CSWAP_GE ||
           op == PTL_CSWAP_GT || op == PTL_MSWAP;
}

bool legal(ptl_op_t op, ptl_datatype_t d, Call call) {
    if (static_cast<int>(d) < 0 || d >= PTL_DATATYPE_LAST) return false;
    const Cls c = dt_cls(d);
    const bool reduce = call == Call::Atomic || call == Call::FetchAtomic;
    switch (op) {
    case PTL_MIN:
    case PTL_MAX: return reduce && c != Cls::Complex;
    case PTL_SUM:
    case PTL_PROD:
    case PTL_DIFF: return reduce;
    case PTL_LOR:
    case PTL_LAND:
    case PTL_LXOR:
    case PTL_BOR:
    case PTL_BAND:
    case PTL_BXOR: return reduce && c == Cls::Int;
    case PTL_SWAP:
    case PTL_CSWAP:
    case PTL_CSWAP_NE: return call == Call::Swap;
    case PTL_CSWAP_LE:
    case PTL_CSWAP_LT:
    case PTL_CSWAP_GE:
    case PTL_CSWAP_GT: return call == Call::Swap && c != Cls::Complex;
    case PTL_MSWAP: return call == Call::Swap && c == Cls::Int;
    default: return false;
    }
}

int issue_case(const AtomicCase &k, const Ni &ni, int target, ptl_pt_index_t pt, ptl_match_bits_t bits,
               ptl_handle_md_t put_md, ptl_size_t put_off, ptl_handle_md_t get_md, ptl_size_t get_off, ptl_size_t roff,
               void *user, ptl_hdr_data_t hdr, const void *operand, ptl_ack_req_t ack) {
    switch (k.call) {
    case Call::Atomic:
        return PtlAtomic(put_md, put_off, k.bytes(), ack, ni.id_of(target), pt, bits, roff, user, hdr, k.op, k.dt);
    case Call::FetchAtomic:
        return PtlFetchAtomic(get_md, get_off, put_md, put_off, k.bytes(), ni.id_of(target), pt, bits, roff, user, hdr,
                              k.op, k.dt);
    case Call::Swap:
        return PtlSwap(get_md, get_off, put_md, put_off, k.bytes(), ni.id_of(target), pt, bits, roff, user, hdr,
                       operand, k.op, k.dt);
    }
    return PTL_ARG_INVALID;
}

void run_cases(const Ni &ni, const std::vector<AtomicCase> &cases, ptl_pt_index_t pt) {
    constexpr ptl_match_bits_t kBits = 0xA70;
    const int me = my_rank();
    if (me > 1) { // not involved, but in every barrier
        barrier();
        barrier();
        return;
    }
    const int peer = 1 - me;

    // One layout for every buffer: case i at off[i], 32-byte aligned.
    std::vector<size_t> off;
    size_t total = 0;
    for (const AtomicCase &k : cases) {
        off.push_back(total);
        total += round_up(k.bytes(), 32);
    }
    Buf tbuf(total, 0xEE), sbuf(total, 0xEE), fbuf(total, 0xEE), obuf(cases.size() * 32, 0);
    for (size_t i = 0; i < cases.size(); ++i) {
        std::memcpy(tbuf.at(off[i]), cases[i].tinit.data(), cases[i].bytes());
        std::memcpy(sbuf.at(off[i]), cases[i].init.data(), cases[i].bytes());
        if (!cases[i].operand.empty()) std::memcpy(obuf.at(i * 32), cases[i].operand.data(), cases[i].operand.size());
    }

    // Target side.
    const ptl_size_t nev = cases.size() * 2 + 16;
    ptl_handle_eq_t teq = make_eq(ni, nev);
    make_pt(ni, teq, 0, pt);
    void *const me_user = tag(0x7A);
    append_entry(ni, pt, me_desc(tbuf.data(), total, PTL_ME_OP_PUT | PTL_ME_OP_GET, kBits), PTL_PRIORITY_LIST, me_user,
                 teq);
    // Initiator side: SEND and ACK on the put MD's EQ, REPLY on the get MD's.
    ptl_handle_eq_t peq = make_eq(ni, nev), geq = make_eq(ni, nev);
    ptl_handle_md_t put_md = bind_md(ni, sbuf.data(), total, peq);
    ptl_handle_md_t get_md = bind_md(ni, fbuf.data(), total, geq);
    barrier(); // both MEs are linked

    size_t n_fetch = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const AtomicCase &k = cases[i];
        n_fetch += k.call != Call::Atomic;
        const int rc = issue_case(k, ni, peer, pt, kBits, put_md, off[i], get_md, off[i], off[i], tag(i + 1),
                                  0xC0DE0000 + i, k.operand.empty() ? nullptr : obuf.at(i * 32));
        ASSERT_EQ(Rc{PTL_OK}, Rc{rc}) << k.name;
    }

    // Initiator events: SEND (+ ACK for PtlAtomic) on peq, REPLY on geq, each exactly once.
    std::vector<int> sends(cases.size()), acks(cases.size()), replies(cases.size());
    auto index_of = [&](const ptl_event_t &ev) -> size_t {
        const auto u = reinterpret_cast<uintptr_t>(ev.user_ptr);
        EXPECT_TRUE(u >= 1 && u <= cases.size()) << describe(ev);
        return u >= 1 && u <= cases.size() ? u - 1 : 0;
    };
    for (size_t e = 0; e < cases.size() * 2 - n_fetch; ++e) {
        const ptl_event_t ev = wait_event(peq);
        const size_t i = index_of(ev);
        const AtomicCase &k = cases[i];
        SCOPED_TRACE(k.name);
        if (ev.type == PTL_EVENT_SEND) {
            ++sends[i];
            check_init_event(ev, {.type = PTL_EVENT_SEND, .user_ptr = tag(i + 1), .mlength = k.bytes()});
        } else {
            ++acks[i];
            EXPECT_EQ(Call::Atomic, k.call) << "an ACK for a fetching call: " << describe(ev);
            check_init_event(ev, {.type = PTL_EVENT_ACK,
                                  .user_ptr = tag(i + 1),
                                  .mlength = k.bytes(),
                                  .remote_offset = off[i],
                                  .list = PTL_PRIORITY_LIST});
        }
    }
    for (size_t e = 0; e < n_fetch; ++e) {
        const ptl_event_t ev = wait_event(geq);
        const size_t i = index_of(ev);
        SCOPED_TRACE(cases[i].name);
        ++replies[i];
        check_init_event(ev, {.type = PTL_EVENT_REPLY,
                              .user_ptr = tag(i + 1),
                              .mlength = cases[i].bytes(),
                              .remote_offset = off[i],
                              .list = PTL_PRIORITY_LIST});
    }
    for (size_t i = 0; i < cases.size(); ++i) {
        const bool fetch = cases[i].call != Call::Atomic;
        EXPECT_EQ(1, sends[i]) << cases[i].name;
        EXPECT_EQ(fetch ? 0 : 1, acks[i]) << cases[i].name;
        EXPECT_EQ(fetch ? 1 : 0, replies[i]) << cases[i].name;
        if (fetch) {
            const AtomicCase &k = cases[i];
            const size_t d = k.first_difference(fbuf.at(off[i]), k.want_fetch.data(), k.n);
            EXPECT_EQ(k.n, d) << k.name << ": fetched item " << d << " is "
                              << (d < k.n ? k.show_items(fbuf.at(off[i] + d * k.item), 1) : "")
                              << ", want the old target value "
                              << (d < k.n ? k.show_items(k.want_fetch.data() + d * k.item, 1) : "") << "; fetched "
                              << k.show_items(fbuf.at(off[i]), k.n);
        }
    }
    expect_eq_empty(peq, "on the put MD");
    expect_eq_empty(geq, "on the get MD");

    // Target events: one per case, in the order the peer issued them (one initiator).
    for (size_t e = 0; e < cases.size(); ++e) {
        const ptl_event_t ev = wait_event(teq);
        const size_t i = ev.hdr_data >= 0xC0DE0000 ? ev.hdr_data - 0xC0DE0000 : cases.size();
        ASSERT_LT(i, cases.size()) << describe(ev);
        EXPECT_EQ(e, i) << "target events out of issue order: " << describe(ev);
        const AtomicCase &k = cases[i];
        SCOPED_TRACE(k.name);
        check_target_event(ev,
                           {.type = k.call == Call::Atomic ? PTL_EVENT_ATOMIC : PTL_EVENT_FETCH_ATOMIC,
                            .initiator = peer,
                            .pt_index = pt,
                            .match_bits = kBits,
                            .rlength = k.bytes(),
                            .mlength = k.bytes(),
                            .remote_offset = off[i],
                            .start = tbuf.at(off[i]),
                            .user_ptr = me_user,
                            .hdr_data = 0xC0DE0000 + i},
                           ni);
        EXPECT_EQ(k.op, ev.atomic_operation) << op_name(ev.atomic_operation) << "; " << describe(ev);
        EXPECT_EQ(k.dt, ev.atomic_type) << dt_name(ev.atomic_type) << "; " << describe(ev);
    }
    expect_eq_empty(teq, "at the target");
    ASSERT_PTL(PtlAtomicSync());
    for (size_t i = 0; i < cases.size(); ++i) {
        const AtomicCase &k = cases[i];
        const size_t d = k.first_difference(tbuf.at(off[i]), k.want_target.data(), k.n);
        if (d == k.n) continue;
        ADD_FAILURE() << k.name << ": target item " << d << " is " << k.show_items(tbuf.at(off[i] + d * k.item), 1)
                      << ", want " << k.show_items(k.want_target.data() + d * k.item, 1) << " (it was "
                      << k.show_items(k.tinit.data() + d * k.item, 1) << ", initiator value "
                      << k.show_items(k.init.data() + d * k.item, 1)
                      << (k.operand.empty() ? "" : ", operand " + k.show_items(k.operand.data(), 1)) << "); target "
                      << k.show_items(tbuf.at(off[i]), k.n);
    }
    // The bytes between cases (padding to 32) were never touched.
    for (size_t i = 0; i < cases.size(); ++i) {
        const size_t end = off[i] + cases[i].bytes(), next = i + 1 < cases.size() ? off[i + 1] : total;
        EXPECT_EQ(-1, check_fill(tbuf.at(end), next - end, 0xEE)) << "after " << cases[i].name;
    }
    barrier(); // the peer's fetched values have been read: buffers may go
}

} // namespace cpltest
