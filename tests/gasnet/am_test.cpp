// SPDX-License-Identifier: BSD-3-Clause
// Active messages: every category (Short, Medium, Long, LongAsync) and argument count (0..16) for
// requests and replies — all 119 entry points — with payloads up to the maxima; every argument
// value and payload byte is checked. Then all 9 request/reply category pairs, the handler rules
// (one reply, replies from request handlers only, no requests or polls in handlers,
// gasnet_AMGetMsgSource), handlers that do not reply, loopback, and an all-to-all flood.
// Each node talks to its right neighbour (and to itself); node counts 1..N all work.
#include <gasnet.h>
#include <gasnet_tools.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

using Arg = gasnet_handlerarg_t;
template <size_t> using ArgT = Arg;

enum Cat { S = 0, M = 1, L = 2, LA = 3 };

// Handler indices: one per (kind, argument count), plus the rule/flood handlers.
enum : int {
    H_SREQ = 128,
    H_MREQ = 145,
    H_LREQ = 162,
    H_SREP = 179,
    H_MREP = 196,
    H_LREP = 213,
    H_RULES = 230,
    H_RULES_REP,
    H_NOREPLY,
    H_FLOOD,
    H_FLOOD_REP
};

constexpr size_t kSeg = 48u << 20;       // segment per node
constexpr size_t kReplyArea = 24u << 20; // replies land above this offset, requests below

Arg arg_val(int i, int m) {
    static const Arg special[8] = {INT32_MIN, INT32_MAX, -1, 0, 1, 0x12345678, -0x2468ace, 77};
    if (i < 8) return special[(i + m) % 8];
    return Arg(uint32_t(i) * 0x9E3779B9u + uint32_t(m));
}
unsigned char byte_val(size_t j, int m, size_t n) { return (unsigned char)(j * 131 + size_t(m) * 7 + n * 13 + 1); }
void fill(void *buf, size_t n, int m) {
    auto *p = static_cast<unsigned char *>(buf);
    for (size_t j = 0; j < n; ++j) p[j] = byte_val(j, m, n);
}
void check_bytes(const void *buf, size_t n, int m, const char *what) {
    const auto *p = static_cast<const unsigned char *>(buf);
    for (size_t j = 0; j < n; ++j)
        if (p[j] != byte_val(j, m, n)) {
            fprintf(stderr, "node %u: %s payload of %zu bytes (M=%d): byte %zu is %u, expected %u\n", gasnet_mynode(),
                    what, n, m, j, p[j], byte_val(j, m, n));
            gasnet_exit(1);
        }
}
void check_args(const Arg *a, int m) {
    for (int i = 0; i < m; ++i) CHECK_EQ(a[i], arg_val(i, m));
}
// Where a Long payload of n bytes for argument count m lands: unaligned, deterministic.
size_t long_offset(int m, size_t n, bool reply) { return (reply ? kReplyArea : 0) + 1 + size_t(m) * 4099 + (n & 7); }

// ---- calling the 119 entry points by (category, M) -------------------------------------------------
#define TA0
#define TA1 TA0, a[0]
#define TA2 TA1, a[1]
#define TA3 TA2, a[2]
#define TA4 TA3, a[3]
#define TA5 TA4, a[4]
#define TA6 TA5, a[5]
#define TA7 TA6, a[6]
#define TA8 TA7, a[7]
#define TA9 TA8, a[8]
#define TA10 TA9, a[9]
#define TA11 TA10, a[10]
#define TA12 TA11, a[11]
#define TA13 TA12, a[12]
#define TA14 TA13, a[13]
#define TA15 TA14, a[14]
#define TA16 TA15, a[15]
#define SW17(fn, ...)                                                                                                  \
    switch (m) {                                                                                                       \
    case 0: return fn##0(__VA_ARGS__ TA0);                                                                             \
    case 1: return fn##1(__VA_ARGS__ TA1);                                                                             \
    case 2: return fn##2(__VA_ARGS__ TA2);                                                                             \
    case 3: return fn##3(__VA_ARGS__ TA3);                                                                             \
    case 4: return fn##4(__VA_ARGS__ TA4);                                                                             \
    case 5: return fn##5(__VA_ARGS__ TA5);                                                                             \
    case 6: return fn##6(__VA_ARGS__ TA6);                                                                             \
    case 7: return fn##7(__VA_ARGS__ TA7);                                                                             \
    case 8: return fn##8(__VA_ARGS__ TA8);                                                                             \
    case 9: return fn##9(__VA_ARGS__ TA9);                                                                             \
    case 10: return fn##10(__VA_ARGS__ TA10);                                                                          \
    case 11: return fn##11(__VA_ARGS__ TA11);                                                                          \
    case 12: return fn##12(__VA_ARGS__ TA12);                                                                          \
    case 13: return fn##13(__VA_ARGS__ TA13);                                                                          \
    case 14: return fn##14(__VA_ARGS__ TA14);                                                                          \
    case 15: return fn##15(__VA_ARGS__ TA15);                                                                          \
    case 16: return fn##16(__VA_ARGS__ TA16);                                                                          \
    }

int request(int cat, gasnet_node_t dest, void *src, size_t n, void *dst, int m, const Arg *a) {
    switch (cat) {
    case S: SW17(gasnet_AMRequestShort, dest, gasnet_handler_t(H_SREQ + m)) break;
    case M: SW17(gasnet_AMRequestMedium, dest, gasnet_handler_t(H_MREQ + m), src, n) break;
    case L: SW17(gasnet_AMRequestLong, dest, gasnet_handler_t(H_LREQ + m), src, n, dst) break;
    case LA: SW17(gasnet_AMRequestLongAsync, dest, gasnet_handler_t(H_LREQ + m), src, n, dst) break;
    }
    return -1;
}
int reply(int cat, gasnet_token_t t, void *src, size_t n, void *dst, int m, const Arg *a) {
    switch (cat) {
    case S: SW17(gasnet_AMReplyShort, t, gasnet_handler_t(H_SREP + m)) break;
    case M: SW17(gasnet_AMReplyMedium, t, gasnet_handler_t(H_MREP + m), src, n) break;
    case L: SW17(gasnet_AMReplyLong, t, gasnet_handler_t(H_LREP + m), src, n, dst) break;
    }
    return -1;
}

// ---- the steps, identical on every node -------------------------------------------------------------
struct Step {
    int req_cat, req_m;
    size_t req_n;
    int rep_cat, rep_m;
    size_t rep_n;
};
std::vector<Step> steps;

void build_steps() {
    const size_t med[] = {0, 1, 7, 512, gasnet_AMMaxMedium()};
    const size_t lng[] = {0, 1, 7, 4096, 4097, 100000};
    for (int cat : {S, M, L, LA})
        for (int m = 0; m <= 16; ++m) {
            if (cat == S) {
                steps.push_back({S, m, 0, S, m, 0});
            } else if (cat == M) {
                for (size_t n : med) steps.push_back({M, m, n, M, m, n});
            } else {
                for (size_t n : lng) steps.push_back({cat, m, n, cat == LA ? S : L, m, cat == LA ? 0 : n});
            }
        }
    // The maxima of Long requests and replies.
    steps.push_back({L, 0, gasnet_AMMaxLongRequest(), S, 0, 0});
    steps.push_back({LA, 16, gasnet_AMMaxLongRequest(), S, 16, 0});
    steps.push_back({S, 16, 0, L, 16, gasnet_AMMaxLongReply()});
    // All 9 request/reply category pairs.
    for (int rq : {S, M, L})
        for (int rp : {S, M, L})
            for (int m : {0, 1, 16}) {
                const size_t rn = rp == S ? 0 : rp == M ? gasnet_AMMaxMedium() : (m == 1 ? 3000 : 70000);
                steps.push_back({rq, m, size_t(rq == S ? 0 : 1000), rp, m, rn});
            }
}

gasnet_seginfo_t *segs;
std::atomic<int> recv_k{0};   // requests handled (index into steps, per sender: one sender at a time)
std::atomic<int> replies{0};  // replies handled
int send_k = 0;               // the step this node is sending
gasnet_node_t expect_src = 0; // who sends us requests
gasnet_node_t reply_from = 0; // who sends us replies
std::vector<unsigned char> reply_src;

char *seg(gasnet_node_t n) { return static_cast<char *>(segs[n].addr); }

void on_request(gasnet_token_t t, int cat, void *buf, size_t n, const Arg *a, int m) {
    gasnet_node_t src = 99999;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(src, expect_src);
    const Step &s = steps[size_t(recv_k.load())];
    CHECK_EQ(s.req_cat == LA ? L : s.req_cat, cat);
    CHECK_EQ(s.req_m, m);
    CHECK_EQ(s.req_n, n);
    check_args(a, m);
    if (cat == M) {
        CHECK((uintptr_t)buf % 16 == 0); // suitably aligned for any type
        check_bytes(buf, n, m, "Medium request");
    } else if (cat == L) {
        if (n) CHECK(buf == seg(gasnet_mynode()) + long_offset(m, n, false)); // buf == dest_addr
        check_bytes(buf, n, m, "Long request");
    }
    recv_k.fetch_add(1);
    // Reply as the step says, from a buffer overwritten as soon as the reply returns.
    Arg ra[16];
    for (int i = 0; i < s.rep_m; ++i) ra[i] = arg_val(i, s.rep_m);
    if (reply_src.size() < s.rep_n) reply_src.resize(s.rep_n);
    fill(reply_src.data(), s.rep_n, s.rep_m);
    void *dst = s.rep_cat == L ? seg(src) + long_offset(s.rep_m, s.rep_n, true) : nullptr;
    GASNET_SAFE(reply(s.rep_cat, t, reply_src.data(), s.rep_n, dst, s.rep_m, ra));
    if (s.rep_n) memset(reply_src.data(), 0xEE, s.rep_n);
}

void on_reply(gasnet_token_t t, int cat, void *buf, size_t n, const Arg *a, int m) {
    gasnet_node_t src = 99999;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(src, reply_from);
    const Step &s = steps[size_t(send_k)];
    CHECK_EQ(s.rep_cat, cat);
    CHECK_EQ(s.rep_m, m);
    CHECK_EQ(s.rep_n, n);
    check_args(a, m);
    if (cat == M) {
        CHECK((uintptr_t)buf % 16 == 0);
        check_bytes(buf, n, m, "Medium reply");
    } else if (cat == L) {
        if (n) CHECK(buf == seg(gasnet_mynode()) + long_offset(m, n, true));
        check_bytes(buf, n, m, "Long reply");
    }
    replies.fetch_add(1);
}

template <class Seq> struct H;
template <size_t... I> struct H<std::index_sequence<I...>> {
    static constexpr int kM = int(sizeof...(I));
    static void sreq(gasnet_token_t t, ArgT<I>... args) {
        const Arg a[] = {args..., 0};
        on_request(t, S, nullptr, 0, a, kM);
    }
    static void mreq(gasnet_token_t t, void *buf, size_t n, ArgT<I>... args) {
        const Arg a[] = {args..., 0};
        on_request(t, M, buf, n, a, kM);
    }
    static void lreq(gasnet_token_t t, void *buf, size_t n, ArgT<I>... args) {
        const Arg a[] = {args..., 0};
        on_request(t, L, buf, n, a, kM);
    }
    static void srep(gasnet_token_t t, ArgT<I>... args) {
        const Arg a[] = {args..., 0};
        on_reply(t, S, nullptr, 0, a, kM);
    }
    static void mrep(gasnet_token_t t, void *buf, size_t n, ArgT<I>... args) {
        const Arg a[] = {args..., 0};
        on_reply(t, M, buf, n, a, kM);
    }
    static void lrep(gasnet_token_t t, void *buf, size_t n, ArgT<I>... args) {
        const Arg a[] = {args..., 0};
        on_reply(t, L, buf, n, a, kM);
    }
};

template <size_t... Ms> void add_handlers(std::vector<gasnet_handlerentry_t> &tab, std::index_sequence<Ms...>) {
    (tab.push_back({gasnet_handler_t(H_SREQ + Ms), (void (*)()) & H<std::make_index_sequence<Ms>>::sreq}), ...);
    (tab.push_back({gasnet_handler_t(H_MREQ + Ms), (void (*)()) & H<std::make_index_sequence<Ms>>::mreq}), ...);
    (tab.push_back({gasnet_handler_t(H_LREQ + Ms), (void (*)()) & H<std::make_index_sequence<Ms>>::lreq}), ...);
    (tab.push_back({gasnet_handler_t(H_SREP + Ms), (void (*)()) & H<std::make_index_sequence<Ms>>::srep}), ...);
    (tab.push_back({gasnet_handler_t(H_MREP + Ms), (void (*)()) & H<std::make_index_sequence<Ms>>::mrep}), ...);
    (tab.push_back({gasnet_handler_t(H_LREP + Ms), (void (*)()) & H<std::make_index_sequence<Ms>>::lrep}), ...);
}

// ---- handler rules ------------------------------------------------------------------------------------
std::atomic<int> rules_done{0};
void rules_req(gasnet_token_t t, Arg x) {
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(gasnet_AMRequestShort0(src, H_NOREPLY), GASNET_ERR_BAD_ARG); // no requests from handlers
    CHECK_EQ(gasnet_AMPoll(), GASNET_ERR_BAD_ARG);                        // no polling in handlers
    GASNET_SAFE(gasnet_AMReplyShort2(t, H_RULES_REP, x + 1, Arg(src)));
    CHECK_EQ(gasnet_AMReplyShort2(t, H_RULES_REP, x + 1, Arg(src)), GASNET_ERR_BAD_ARG); // at most one reply
}
void rules_rep(gasnet_token_t t, Arg x, Arg src_seen_by_target) {
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(src, (gasnet_mynode() + 1) % gasnet_nodes());
    CHECK_EQ(src_seen_by_target, gasnet_mynode());
    CHECK_EQ(x, 42);
    CHECK_EQ(gasnet_AMReplyShort0(t, H_RULES_REP), GASNET_ERR_BAD_ARG); // no replies from reply handlers
    CHECK_EQ(gasnet_AMRequestShort0(src, H_NOREPLY), GASNET_ERR_BAD_ARG);
    rules_done.fetch_add(1);
}

std::atomic<int> noreply_count{0};
void noreply_req(gasnet_token_t, void *buf, size_t n) {
    check_bytes(buf, n, 3, "no-reply Medium");
    noreply_count.fetch_add(1);
}

// ---- flood: every node sends F requests to every node, each replied to ---------------------------------
std::vector<std::atomic<long>> *flood_count, *flood_sum;
std::atomic<long> flood_replies{0};
void flood_req(gasnet_token_t t, Arg seq, Arg from) {
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    CHECK_EQ(src, from);
    (*flood_count)[src].fetch_add(1);
    (*flood_sum)[src].fetch_add(seq);
    GASNET_SAFE(gasnet_AMReplyShort1(t, H_FLOOD_REP, seq));
}
void flood_rep(gasnet_token_t, Arg) { flood_replies.fetch_add(1); }

void run_steps(gasnet_node_t peer) {
    std::vector<unsigned char> src;
    for (send_k = 0; send_k < int(steps.size()); ++send_k) {
        const Step &s = steps[size_t(send_k)];
        Arg a[16];
        for (int i = 0; i < s.req_m; ++i) a[i] = arg_val(i, s.req_m);
        if (src.size() < s.req_n) src.resize(s.req_n);
        fill(src.data(), s.req_n, s.req_m);
        void *dst = s.req_cat == L || s.req_cat == LA ? seg(peer) + long_offset(s.req_m, s.req_n, false) : nullptr;
        const int before = replies.load();
        GASNET_SAFE(request(s.req_cat, peer, src.data(), s.req_n, dst, s.req_m, a));
        // The source may be reused as soon as the call returns (LongAsync: once the reply runs).
        if (s.req_cat != LA && s.req_n) memset(src.data(), 0xEE, s.req_n);
        GASNET_BLOCKUNTIL(replies.load() == before + 1);
    }
}

} // namespace

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    std::vector<gasnet_handlerentry_t> tab;
    add_handlers(tab, std::make_index_sequence<17>{});
    tab.push_back({H_RULES, (void (*)())rules_req});
    tab.push_back({H_RULES_REP, (void (*)())rules_rep});
    tab.push_back({H_NOREPLY, (void (*)())noreply_req});
    tab.push_back({H_FLOOD, (void (*)())flood_req});
    tab.push_back({H_FLOOD_REP, (void (*)())flood_rep});
    GASNET_SAFE(gasnet_attach(tab.data(), int(tab.size()), kSeg, 0));
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes();
    segs = new gasnet_seginfo_t[n];
    GASNET_SAFE(gasnet_getSegmentInfo(segs, int(n)));
    CHECK(segs[me].size >= kSeg);
    CHECK_EQ(gasnet_AMMaxArgs(), 16);
    CHECK(gasnet_AMMaxMedium() >= 512);
    CHECK(gasnet_AMMaxLongRequest() >= 512 && gasnet_AMMaxLongReply() >= 512);
    CHECK(2 * gasnet_AMMaxLongRequest() <= kSeg);
    build_steps();
    const gasnet_node_t right = (me + 1) % n;

    TEST_SECTION("every category and argument count, to the right neighbour");
    expect_src = (me + n - 1) % n;
    reply_from = right;
    run_steps(right);
    GASNET_BLOCKUNTIL(recv_k.load() == int(steps.size())); // our left neighbour is done with us
    test_barrier();

    TEST_SECTION("the same to ourselves (loopback)");
    recv_k = 0;
    replies = 0;
    expect_src = me;
    reply_from = me;
    {
        std::vector<unsigned char> src;
        for (send_k = 0; send_k < int(steps.size()); ++send_k) {
            const Step &s = steps[size_t(send_k)];
            if (s.req_n > (1u << 20) || s.rep_n > (1u << 20)) continue; // the maxima ran above
            Arg a[16];
            for (int i = 0; i < s.req_m; ++i) a[i] = arg_val(i, s.req_m);
            if (src.size() < s.req_n) src.resize(s.req_n);
            fill(src.data(), s.req_n, s.req_m);
            void *dst = s.req_cat == L || s.req_cat == LA ? seg(me) + long_offset(s.req_m, s.req_n, false) : nullptr;
            recv_k = send_k; // the request handler serves the step in recv_k
            const int before = replies.load();
            GASNET_SAFE(request(s.req_cat, me, src.data(), s.req_n, dst, s.req_m, a));
            if (s.req_cat != LA && s.req_n) memset(src.data(), 0xEE, s.req_n);
            GASNET_BLOCKUNTIL(replies.load() == before + 1);
        }
    }
    test_barrier();

    TEST_SECTION("handler rules");
    GASNET_SAFE(gasnet_AMRequestShort1(right, H_RULES, 41));
    GASNET_BLOCKUNTIL(rules_done.load() == 1);
    gasnet_node_t dummy;
    CHECK_EQ(gasnet_AMGetMsgSource(nullptr, &dummy), GASNET_ERR_BAD_ARG);
    CHECK_EQ(gasnet_AMRequestShort0(n, H_NOREPLY), GASNET_ERR_BAD_ARG); // no such node
    CHECK_EQ(gasnet_AMRequestMedium0(right, H_NOREPLY, segs[me].addr, gasnet_AMMaxMedium() + 1), GASNET_ERR_BAD_ARG);
    CHECK_EQ(gasnet_AMRequestLong0(right, H_LREQ, segs[me].addr, 16, seg(right) + segs[right].size - 8),
             GASNET_ERR_BAD_ARG); // destination outside the target segment
    test_barrier();

    TEST_SECTION("requests that are not replied to");
    {
        std::vector<unsigned char> buf(1024);
        fill(buf.data(), buf.size(), 3);
        for (int i = 0; i < 2000; ++i) GASNET_SAFE(gasnet_AMRequestMedium0(right, H_NOREPLY, buf.data(), buf.size()));
        GASNET_BLOCKUNTIL(noreply_count.load() == 2000);
        // Later traffic is unaffected.
        GASNET_SAFE(gasnet_AMRequestShort1(right, H_RULES, 41));
        GASNET_BLOCKUNTIL(rules_done.load() == 2);
    }
    test_barrier();

    TEST_SECTION("fan-in: everybody floods node 0 while it computes (flow control)");
    {
        std::vector<unsigned char> buf(1024);
        fill(buf.data(), buf.size(), 3);
        const int per_node = 3000;
        const int before = noreply_count.load();
        test_barrier();
        if (me == 0) {
            // Compute without any GASNet call: senders must stall on credits, nothing may be lost.
            const gasnett_tick_t end = gasnett_ticks_now() + 50000000;
            while (gasnett_ticks_now() < end) {
            }
        }
        for (int i = 0; i < per_node; ++i) GASNET_SAFE(gasnet_AMRequestMedium0(0, H_NOREPLY, buf.data(), buf.size()));
        if (me == 0) GASNET_BLOCKUNTIL(noreply_count.load() == before + per_node * int(n));
    }
    test_barrier();

    TEST_SECTION("all-to-all flood");
    {
        flood_count = new std::vector<std::atomic<long>>(n);
        flood_sum = new std::vector<std::atomic<long>>(n);
        const long per_pair = std::max<long>(2000, 100000 / long(n) / long(n));
        test_barrier();
        for (long i = 0; i < per_pair; ++i)
            for (gasnet_node_t k = 0; k < n; ++k)
                GASNET_SAFE(gasnet_AMRequestShort2(gasnet_node_t((me + k) % n), H_FLOOD, Arg(i), Arg(me)));
        GASNET_BLOCKUNTIL(flood_replies.load() == per_pair * long(n));
        for (gasnet_node_t k = 0; k < n; ++k) {
            GASNET_BLOCKUNTIL((*flood_count)[k].load() == per_pair);
            CHECK_EQ((*flood_sum)[k].load(), per_pair * (per_pair - 1) / 2); // each exactly once
        }
    }
    test_barrier();
    if (me == 0) printf("am_test: OK (%u nodes, %zu steps)\n", n, steps.size());
    gasnet_exit(0);
}
