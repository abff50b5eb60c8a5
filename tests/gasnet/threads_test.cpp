// SPDX-License-Identifier: BSD-3-Clause
// GASNET_PAR with several threads: handler-safe locks (static and dynamic init, trylock, nested
// locks, handlers taking them), a counter incremented exactly by threads and handlers, a thread
// in GASNET_BLOCKUNTIL woken when another thread runs the handler it waits for, no-interrupt
// sections, threads mixing AMs, nb, nbi and value operations, thread-info macros, wait modes.
#include <gasnet.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

constexpr int kThreads = 8;
constexpr int kIters = 2000;
constexpr size_t kSeg = 8u << 20;
constexpr int H_INC = 140, H_INC_REP = 141, H_WAKE = 142, H_NIS = 143, H_NIS_REP = 144;

gasnet_hsl_t counter_lock = GASNET_HSL_INITIALIZER; // static initialization
long counter = 0;
std::atomic<long> inc_replies{0};
std::atomic<int> wake_flag{0};
std::atomic<int> nis_replies{0};
thread_local bool in_nis = false;
gasnet_seginfo_t *segs;

void inc_req(gasnet_token_t t, gasnet_handlerarg_t by) {
    gasnet_hsl_lock(&counter_lock); // handlers may take HSLs ...
    counter += by;
    gasnet_hsl_unlock(&counter_lock); // ... and release them before replying
    GASNET_SAFE(gasnet_AMReplyShort0(t, H_INC_REP));
}
void inc_rep(gasnet_token_t) { inc_replies.fetch_add(1); }
void wake_req(gasnet_token_t) { wake_flag.store(1); }
void nis_req(gasnet_token_t t) {
    CHECK(!in_nis); // never runs on a thread inside a no-interrupt section
    GASNET_SAFE(gasnet_AMReplyShort0(t, H_NIS_REP));
}
void nis_rep(gasnet_token_t) {
    CHECK(!in_nis);
    nis_replies.fetch_add(1);
}

int with_threadinfo(int x) {
    GASNET_BEGIN_FUNCTION();
    {
        GASNET_POST_THREADINFO(GASNET_GET_THREADINFO());
        x += 1;
    }
    return x;
}

} // namespace

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    gasnet_handlerentry_t tab[] = {{H_INC, (void (*)())inc_req},
                                   {H_INC_REP, (void (*)())inc_rep},
                                   {H_WAKE, (void (*)())wake_req},
                                   {H_NIS, (void (*)())nis_req},
                                   {H_NIS_REP, (void (*)())nis_rep}};
    GASNET_SAFE(gasnet_attach(tab, 5, kSeg, 0));
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes(), right = (me + 1) % n;
    segs = new gasnet_seginfo_t[n];
    GASNET_SAFE(gasnet_getSegmentInfo(segs, int(n)));

    TEST_SECTION("HSL basics");
    {
        gasnet_hsl_t a, b;
        gasnet_hsl_init(&a); // dynamic initialization
        gasnet_hsl_init(&b);
        CHECK_EQ(gasnet_hsl_trylock(&a), GASNET_OK); // free: acquired
        std::atomic<int> rc{-1};
        std::thread other([&] { rc = gasnet_hsl_trylock(&a); });
        other.join();
        CHECK_EQ(rc.load(), GASNET_ERR_NOT_READY); // held by another thread
        gasnet_hsl_unlock(&a);
        gasnet_hsl_lock(&a); // lock A, B; unlock B, A
        gasnet_hsl_lock(&b);
        gasnet_hsl_unlock(&b);
        gasnet_hsl_unlock(&a);
        gasnet_hsl_destroy(&a);
        gasnet_hsl_destroy(&b);
    }
    test_barrier();

    TEST_SECTION("threads and handlers increment one counter under an HSL");
    {
        std::vector<std::thread> ts;
        for (int t = 0; t < kThreads; ++t)
            ts.emplace_back([&, t] {
                for (int i = 0; i < kIters; ++i) {
                    GASNET_SAFE(gasnet_AMRequestShort1(right, H_INC, 1)); // the peer's handler adds 1
                    gasnet_hsl_lock(&counter_lock);
                    counter += 2; // and we add 2 here
                    gasnet_hsl_unlock(&counter_lock);
                    if (i % 64 == t) GASNET_SAFE(gasnet_AMPoll());
                }
            });
        for (auto &t : ts) t.join();
        GASNET_BLOCKUNTIL(inc_replies.load() == long(kThreads) * kIters);
        test_barrier(); // every request to us has been replied to, so handled
        gasnet_hsl_lock(&counter_lock);
        CHECK_EQ(counter, 3L * kThreads * kIters);
        gasnet_hsl_unlock(&counter_lock);
    }
    test_barrier();

    TEST_SECTION("a thread in GASNET_BLOCKUNTIL wakes when another thread polls");
    {
        std::atomic<int> blocked{0};
        std::thread waiter;
        if (me == 0)
            waiter = std::thread([&] {
                blocked = 1;
                GASNET_BLOCKUNTIL(wake_flag.load() == 1);
            });
        if (me == 0)
            while (!blocked.load()) std::this_thread::yield();
        test_barrier();
        if (me == n - 1) GASNET_SAFE(gasnet_AMRequestShort0(0, H_WAKE));
        if (me == 0) {
            while (wake_flag.load() == 0) GASNET_SAFE(gasnet_AMPoll()); // this thread may run the handler
            waiter.join();
        }
    }
    test_barrier();

    TEST_SECTION("no-interrupt sections");
    {
        std::atomic<bool> stop{false};
        std::thread sender([&] {
            for (int i = 0; i < 3000; ++i) {
                GASNET_SAFE(gasnet_AMRequestShort0(right, H_NIS));
                if (i % 100 == 0) std::this_thread::yield();
            }
            stop = true;
        });
        while (!stop.load()) {
            gasnet_hold_interrupts();
            in_nis = true;
            void *p = malloc(1000);
            GASNET_SAFE(gasnet_AMPoll()); // may complete operations, never runs a handler here
            free(p);
            in_nis = false;
            gasnet_resume_interrupts();
        }
        sender.join();
        GASNET_BLOCKUNTIL(nis_replies.load() == 3000);
    }
    test_barrier();

    TEST_SECTION("8 threads mixing AMs, nb, nbi and value operations");
    {
        std::vector<std::thread> ts;
        char *base = static_cast<char *>(segs[right].addr);
        for (int t = 0; t < kThreads; ++t)
            ts.emplace_back([&, t] {
                char *mine = base + size_t(t) * 65536; // each thread owns a slice of the right's segment
                std::vector<char> buf(4096), back(4096);
                for (int i = 0; i < 200; ++i) {
                    for (size_t j = 0; j < buf.size(); ++j) buf[j] = char(j * 3 + size_t(i) + size_t(t));
                    gasnet_handle_t h = gasnet_put_nb_bulk(right, mine, buf.data(), buf.size());
                    gasnet_put_nbi(right, mine + 8192, buf.data(), 1024);
                    gasnet_put_nbi_val(right, mine + 16384, gasnet_register_value_t(i * 1000 + t), 8);
                    GASNET_SAFE(gasnet_AMRequestShort1(right, H_INC, 0));
                    gasnet_wait_syncnb(h);
                    gasnet_wait_syncnbi_puts();
                    gasnet_handle_t g = gasnet_get_nb(back.data(), right, mine, back.size());
                    gasnet_get_nbi(back.data() + 2048, right, mine + 8192, 1024);
                    gasnet_wait_syncnb(g);
                    gasnet_wait_syncnbi_gets();
                    CHECK(memcmp(back.data(), buf.data(), 2048) == 0);
                    CHECK(memcmp(back.data() + 2048, buf.data(), 1024) == 0);
                    CHECK_EQ(gasnet_get_val(right, mine + 16384, 8), i * 1000 + t);
                }
            });
        for (auto &t : ts) t.join();
        GASNET_BLOCKUNTIL(inc_replies.load() == long(kThreads) * kIters + kThreads * 200);
    }
    test_barrier();

    TEST_SECTION("thread-info macros and wait modes");
    CHECK_EQ(with_threadinfo(1), 2);
    CHECK(GASNET_GET_THREADINFO() != nullptr);
    GASNET_SAFE(gasnet_set_waitmode(GASNET_WAIT_SPIN));
    test_barrier();
    GASNET_SAFE(gasnet_set_waitmode(GASNET_WAIT_BLOCK));
    test_barrier();
    GASNET_SAFE(gasnet_set_waitmode(GASNET_WAIT_SPINBLOCK));
    CHECK_EQ(gasnet_set_waitmode(12345), GASNET_ERR_BAD_ARG);
    test_barrier();
    if (me == 0) printf("threads_test: OK (%u nodes, %d threads)\n", n, kThreads);
    gasnet_exit(0);
}
