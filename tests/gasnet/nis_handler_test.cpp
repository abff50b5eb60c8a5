// SPDX-License-Identifier: BSD-3-Clause
// gasnet_hold_interrupts()/gasnet_resume_interrupts() where GASNet already holds interrupts: in
// request and reply handlers (paired, a lone hold, a lone resume, resume-then-hold) and while the
// main line holds a handler-safe lock. Each must leave this thread able to run handlers again:
// every request is answered with the right values, the node keeps serving its neighbours, and the
// job ends normally. Each node talks to its right neighbour (and to itself).
#include <gasnet.h>

#include <atomic>
#include <cstring>

#include "test_util.h"

namespace {

// How each handler misuses the no-interrupt calls.
enum Mode : int { PAIRED = 0, HOLD_ONLY = 1, RESUME_ONLY = 2, RESUME_THEN_HOLD = 3, kModes = 4 };

enum : int { H_SREQ = 140, H_SREP, H_MREQ, H_MREP, H_LREQ, H_LREP, H_PING, H_PONG };

constexpr int kIters = 100;
constexpr size_t kPayload = 1000;
constexpr size_t kSeg = 1u << 20;
constexpr size_t kReplyOff = kSeg / 2; // Long replies land here, Long requests at offset 0

gasnet_seginfo_t *segs;
std::atomic<long> sum{0}; // of the values carried back by replies
std::atomic<int> replies{0};
std::atomic<int> pongs{0};

void misuse(int mode) {
    switch (mode) {
    case PAIRED:
        gasnet_hold_interrupts();
        gasnet_resume_interrupts();
        break;
    case HOLD_ONLY: gasnet_hold_interrupts(); break;
    case RESUME_ONLY: gasnet_resume_interrupts(); break;
    case RESUME_THEN_HOLD:
        gasnet_resume_interrupts();
        gasnet_hold_interrupts();
        break;
    default: CHECK(false);
    }
}

unsigned char pattern(size_t i, int v) { return (unsigned char)(i * 7 + size_t(v) * 13 + 1); }
void fill(void *p, size_t n, int v) {
    for (size_t i = 0; i < n; ++i) static_cast<unsigned char *>(p)[i] = pattern(i, v);
}
void check_fill(const void *p, size_t n, int v) {
    for (size_t i = 0; i < n; ++i) CHECK_EQ(static_cast<const unsigned char *>(p)[i], pattern(i, v));
}

void sreq(gasnet_token_t t, gasnet_handlerarg_t mode, gasnet_handlerarg_t v) {
    misuse(mode);
    GASNET_SAFE(gasnet_AMReplyShort2(t, H_SREP, mode, v + 1));
}
void srep(gasnet_token_t, gasnet_handlerarg_t mode, gasnet_handlerarg_t v) {
    misuse(mode);
    sum += v;
    ++replies;
}
void mreq(gasnet_token_t t, void *buf, size_t n, gasnet_handlerarg_t mode, gasnet_handlerarg_t v) {
    misuse(mode);
    CHECK_EQ(n, kPayload);
    check_fill(buf, n, v);
    unsigned char out[kPayload];
    fill(out, sizeof out, v + 1);
    GASNET_SAFE(gasnet_AMReplyMedium2(t, H_MREP, out, sizeof out, mode, v + 1));
}
void mrep(gasnet_token_t, void *buf, size_t n, gasnet_handlerarg_t mode, gasnet_handlerarg_t v) {
    misuse(mode);
    CHECK_EQ(n, kPayload);
    check_fill(buf, n, v);
    sum += v;
    ++replies;
}
void lreq(gasnet_token_t t, void *buf, size_t n, gasnet_handlerarg_t mode, gasnet_handlerarg_t v) {
    misuse(mode);
    CHECK_EQ(n, kPayload);
    check_fill(buf, n, v);
    gasnet_node_t src;
    GASNET_SAFE(gasnet_AMGetMsgSource(t, &src));
    unsigned char out[kPayload];
    fill(out, sizeof out, v + 1);
    void *dest = static_cast<char *>(segs[src].addr) + kReplyOff;
    GASNET_SAFE(gasnet_AMReplyLong2(t, H_LREP, out, sizeof out, dest, mode, v + 1));
}
void lrep(gasnet_token_t, void *buf, size_t n, gasnet_handlerarg_t mode, gasnet_handlerarg_t v) {
    misuse(mode);
    CHECK(buf == static_cast<char *>(segs[gasnet_mynode()].addr) + kReplyOff);
    CHECK_EQ(n, kPayload);
    check_fill(buf, n, v);
    sum += v;
    ++replies;
}
void ping(gasnet_token_t t, gasnet_handlerarg_t v) { GASNET_SAFE(gasnet_AMReplyShort1(t, H_PONG, v)); }
void pong(gasnet_token_t, gasnet_handlerarg_t) { ++pongs; }

// One request of each category per mode to `peer`, each waited for (a Long reply overwrites the
// same area, so one at a time). Values are distinct so a lost or duplicated reply shows in `sum`.
void round_trip(gasnet_node_t peer, int mode, int iter) {
    const gasnet_handlerarg_t v = iter * 16 + mode * 3;
    unsigned char buf[kPayload];
    const int r0 = replies.load();
    const long s0 = sum.load();
    GASNET_SAFE(gasnet_AMRequestShort2(peer, H_SREQ, mode, v));
    GASNET_BLOCKUNTIL(replies.load() == r0 + 1);
    fill(buf, sizeof buf, v + 1);
    GASNET_SAFE(gasnet_AMRequestMedium2(peer, H_MREQ, buf, sizeof buf, mode, v + 1));
    GASNET_BLOCKUNTIL(replies.load() == r0 + 2);
    fill(buf, sizeof buf, v + 2);
    // Requests from different senders land in disjoint slots of the target's segment.
    void *dest = static_cast<char *>(segs[peer].addr) + gasnet_mynode() * kPayload;
    GASNET_SAFE(gasnet_AMRequestLong2(peer, H_LREQ, buf, sizeof buf, dest, mode, v + 2));
    GASNET_BLOCKUNTIL(replies.load() == r0 + 3);
    CHECK_EQ(sum.load() - s0, 3 * (long)v + 6); // replies carry v+1, v+2, v+3
}

// Every node answers a ping from every other node: none is stuck unable to run handlers.
void everyone_still_serves() {
    const int p0 = pongs.load();
    for (gasnet_node_t n = 0; n < gasnet_nodes(); ++n) GASNET_SAFE(gasnet_AMRequestShort1(n, H_PING, (int)n));
    GASNET_BLOCKUNTIL(pongs.load() == p0 + (int)gasnet_nodes());
}

} // namespace

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    gasnet_handlerentry_t tab[] = {{H_SREQ, (void (*)())sreq}, {H_SREP, (void (*)())srep}, {H_MREQ, (void (*)())mreq},
                                   {H_MREP, (void (*)())mrep}, {H_LREQ, (void (*)())lreq}, {H_LREP, (void (*)())lrep},
                                   {H_PING, (void (*)())ping}, {H_PONG, (void (*)())pong}};
    GASNET_SAFE(gasnet_attach(tab, sizeof tab / sizeof tab[0], kSeg, 0));
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes(), right = (me + 1) % n;
    CHECK(n * kPayload <= kReplyOff);
    segs = new gasnet_seginfo_t[n];
    GASNET_SAFE(gasnet_getSegmentInfo(segs, int(n)));
    test_barrier();

    static const char *const names[kModes] = {"paired hold/resume in handlers", "lone hold in handlers",
                                              "lone resume in handlers", "resume then hold in handlers"};
    for (int mode = 0; mode < kModes; ++mode) {
        TEST_SECTION(names[mode]);
        for (int i = 0; i < kIters; ++i) {
            round_trip(right, mode, i);
            round_trip(me, mode, i); // loopback: the handlers run on this very thread
        }
        everyone_still_serves();
        test_barrier();
    }

    TEST_SECTION("hold/resume while holding a handler-safe lock");
    {
        gasnet_hsl_t lock = GASNET_HSL_INITIALIZER;
        gasnet_hsl_lock(&lock);
        gasnet_hold_interrupts(); // the HSL already holds them: no section is left open
        gasnet_hsl_unlock(&lock);
        round_trip(right, PAIRED, 0);
        everyone_still_serves();
        gasnet_hsl_lock(&lock);
        gasnet_resume_interrupts();
        gasnet_hsl_unlock(&lock);
        round_trip(right, PAIRED, 1);
        // A section opened outside the lock stays open across it until its own resume.
        gasnet_hold_interrupts();
        gasnet_hsl_lock(&lock);
        gasnet_hsl_unlock(&lock);
        gasnet_resume_interrupts();
        round_trip(right, PAIRED, 2);
        everyone_still_serves();
        test_barrier();
    }

    TEST_SECTION("done");
    delete[] segs;
    gasnet_exit(0);
    return 0;
}
