// SPDX-License-Identifier: BSD-3-Clause
// Portico's SIGSEGV/SIGBUS handler (guarded copies, src/common/guarded_copy.cpp) must not change
// what the application sees of these signals. Run on 2 ranks under portico-run; one mode per job,
// since the disposition Portico chains to is the one in place when the first NI opens:
//   handler  the application's handlers (SIGBUS plain, SIGSEGV SA_SIGINFO) are installed before
//            PtlInit: raise(SIGBUS), kill(getpid(), SIGSEGV), pthread_kill(self, SIGSEGV), a
//            write to a PROT_NONE page and a read beyond the end of a file mapping reach them
//   default  SIG_DFL: raise(SIGBUS) and kill(getpid(), SIGSEGV) kill a forked child with that
//            signal the first time, and so does a write to a PROT_NONE page
//   ignore   SIG_IGN: raise(SIGBUS) and kill(getpid(), SIGSEGV) are ignored; a write to a
//            PROT_NONE page still kills a forked child with SIGSEGV (as the kernel does)
// Every mode also checks that PtlInit installs nothing (only the first NI does) and that guarded
// copies still work: a put from an unmapped source and a put to an unmapped address of the
// peer complete with PTL_NI_SEGV, before and after the signals. Prints "fault_signals: OK".
#include <portals4.h>
#include <portico_runtime.h>

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

unsigned g_rank = 0;

[[noreturn]] void fail(const std::string &why) {
    std::fprintf(stderr, "fault_signals rank %u: FAIL: %s\n", g_rank, why.c_str());
    std::exit(1);
}
void check(bool ok, const std::string &why) {
    if (!ok) fail(why);
}

// ---- the application's handlers (mode "handler") ----
std::atomic<int> bus_count{0}, segv_count{0};
std::atomic<int> last_segv_code{0};
void *volatile last_segv_addr = nullptr;
void *volatile prot_none_page = nullptr;
sigjmp_buf *volatile bus_escape = nullptr;

void on_bus(int sig) {
    if (sig != SIGBUS) std::abort();
    bus_count.fetch_add(1);
    if (sigjmp_buf *e = bus_escape) {
        bus_escape = nullptr;
        siglongjmp(*e, 1); // a real fault: the instruction must not run again
    }
}

void on_segv(int sig, siginfo_t *info, void *) {
    if (sig != SIGSEGV) std::abort();
    last_segv_code.store(info->si_code);
    last_segv_addr = info->si_addr;
    // A real fault on our page: make it writable and let the instruction run again.
    char *page = static_cast<char *>(prot_none_page), *addr = static_cast<char *>(info->si_addr);
    if (info->si_code > 0 && page && addr >= page && addr < page + 4096) mprotect(page, 4096, PROT_READ | PROT_WRITE);
    segv_count.fetch_add(1);
}

bool same_disposition(const struct sigaction &a, const struct sigaction &b) {
    if ((a.sa_flags & SA_SIGINFO) != (b.sa_flags & SA_SIGINFO)) return false;
    return (a.sa_flags & SA_SIGINFO) ? a.sa_sigaction == b.sa_sigaction : a.sa_handler == b.sa_handler;
}

struct sigaction query(int sig) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    check(sigaction(sig, nullptr, &sa) == 0, "sigaction query");
    return sa;
}

// ---- Portals: guarded copies ----
constexpr ptl_pt_index_t kPt = 7;
constexpr uint64_t kHole = 0x1000; // below mmap_min_addr: never mapped in any process
struct Net {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t ieq, teq;
    ptl_handle_md_t md;
    ptl_process_t peer;
};

// Waits for the completion of the put tagged tag: SEND and ACK, or a SEND that failed locally
// (no ACK follows). Returns true if any of them reported PTL_NI_SEGV.
bool put_reports_segv(const Net &n, void *tag) {
    bool segv = false, send = false, ack = false;
    while (!(send && ack)) {
        ptl_event_t ev;
        check(PtlEQWait(n.ieq, &ev) == PTL_OK, "PtlEQWait");
        check(ev.user_ptr == tag, "an event of another operation");
        check(ev.type == PTL_EVENT_SEND || ev.type == PTL_EVENT_ACK, "unexpected event type");
        segv = segv || ev.ni_fail_type == PTL_NI_SEGV;
        if (ev.type == PTL_EVENT_SEND) {
            send = true;
            if (ev.ni_fail_type != PTL_NI_OK) break; // a local failure: no ACK follows
        } else {
            ack = true;
        }
    }
    return segv;
}

void check_guarded_copies(const Net &n, const char *when) {
    static char ok[64];
    std::memset(ok, 'x', sizeof ok);
    const int before_bus = bus_count.load(), before_segv = segv_count.load();
    // The source is unmapped here: our engine's copy faults.
    check(PtlPut(n.md, kHole, 64, PTL_ACK_REQ, n.peer, kPt, 0, 0, reinterpret_cast<void *>(1), 0) == PTL_OK,
          "PtlPut (unmapped source)");
    check(put_reports_segv(n, reinterpret_cast<void *>(1)),
          std::string("a put from an unmapped source did not report PTL_NI_SEGV ") + when);
    // The destination is unmapped at the peer: its engine's copy faults.
    check(PtlPut(n.md, reinterpret_cast<uint64_t>(ok), 64, PTL_ACK_REQ, n.peer, kPt, 0, kHole,
                 reinterpret_cast<void *>(2), 0) == PTL_OK,
          "PtlPut (unmapped destination)");
    check(put_reports_segv(n, reinterpret_cast<void *>(2)),
          std::string("a put to an unmapped destination did not report PTL_NI_SEGV ") + when);
    check(bus_count.load() == before_bus && segv_count.load() == before_segv,
          std::string("a guarded copy's fault reached the application's handler ") + when);
}

Net open_net() {
    Net n;
    check(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, nullptr, nullptr, &n.ni) ==
              PTL_OK,
          "PtlNIInit");
    ptl_process_t me;
    check(PtlGetId(n.ni, &me) == PTL_OK, "PtlGetId");
    g_rank = me.rank;
    n.peer.rank = 1 - me.rank;
    check(PtlEQAlloc(n.ni, 64, &n.ieq) == PTL_OK && PtlEQAlloc(n.ni, 64, &n.teq) == PTL_OK, "PtlEQAlloc");
    ptl_pt_index_t pt;
    check(PtlPTAlloc(n.ni, 0, n.teq, kPt, &pt) == PTL_OK, "PtlPTAlloc");
    ptl_me_t me_desc;
    std::memset(&me_desc, 0, sizeof me_desc);
    me_desc.start = nullptr;
    me_desc.length = PTL_SIZE_MAX; // the whole address space
    me_desc.ct_handle = PTL_CT_NONE;
    me_desc.uid = PTL_UID_ANY;
    me_desc.match_id.rank = PTL_RANK_ANY;
    me_desc.options =
        PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_COMM_DISABLE;
    ptl_handle_me_t meh;
    check(PtlMEAppend(n.ni, kPt, &me_desc, PTL_PRIORITY_LIST, nullptr, &meh) == PTL_OK, "PtlMEAppend");
    ptl_md_t md;
    std::memset(&md, 0, sizeof md);
    md.start = nullptr;
    md.length = PTL_SIZE_MAX;
    md.eq_handle = n.ieq;
    md.ct_handle = PTL_CT_NONE;
    check(PtlMDBind(n.ni, &md, &n.md) == PTL_OK, "PtlMDBind");
    check(portico_runtime_barrier() == PTL_OK, "barrier");
    return n;
}

void *map_page(int prot) {
    void *p = mmap(nullptr, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(p != MAP_FAILED, "mmap");
    return p;
}

// Runs what in a forked child (which has Portico's handler, chaining to the disposition of this
// mode) and returns its wait status. The child only makes system calls.
template <class F> int in_child(F what) {
    const pid_t pid = fork();
    check(pid >= 0, "fork");
    if (pid == 0) {
        const struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        what();
        _exit(0); // survived
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) check(errno == EINTR, "waitpid");
    return st;
}

void expect_killed_by(int st, int sig, const char *what) {
    if (WIFSIGNALED(st) && WTERMSIG(st) == sig) return;
    fail(std::string(what) + ": the child " +
         (WIFEXITED(st) ? "survived (exit " + std::to_string(WEXITSTATUS(st)) + ")"
                        : "was killed by signal " + std::to_string(WTERMSIG(st))) +
         ", expected signal " + std::to_string(sig));
}

void wait_for_count(const std::atomic<int> &c, int want) {
    // kill() to the process may be delivered to another thread (the engine's): wait for it.
    while (c.load() < want) sched_yield();
}

} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    struct sigaction app_bus, app_segv;
    std::memset(&app_bus, 0, sizeof app_bus);
    std::memset(&app_segv, 0, sizeof app_segv);
    sigemptyset(&app_bus.sa_mask);
    sigemptyset(&app_segv.sa_mask);
    if (mode == "handler") {
        app_bus.sa_handler = on_bus;
        app_segv.sa_sigaction = on_segv;
        app_segv.sa_flags = SA_SIGINFO;
    } else if (mode == "default") {
        app_bus.sa_handler = SIG_DFL;
        app_segv.sa_handler = SIG_DFL;
    } else if (mode == "ignore") {
        app_bus.sa_handler = SIG_IGN;
        app_segv.sa_handler = SIG_IGN;
    } else {
        std::fprintf(stderr, "usage: fault_signals handler|default|ignore\n");
        return 2;
    }
    check(sigaction(SIGBUS, &app_bus, nullptr) == 0 && sigaction(SIGSEGV, &app_segv, nullptr) == 0, "sigaction");

    // (e) PtlInit installs nothing.
    check(PtlInit() == PTL_OK, "PtlInit");
    check(same_disposition(query(SIGBUS), app_bus) && same_disposition(query(SIGSEGV), app_segv),
          "PtlInit changed the SIGSEGV/SIGBUS disposition (no NI is open)");
    Net n = open_net();
    // The first NI does install Portico's handler: the checks below go through it.
    check(!same_disposition(query(SIGBUS), app_bus) && !same_disposition(query(SIGSEGV), app_segv),
          "no SIGSEGV/SIGBUS handler after PtlNIInit (the checks would not test Portico's)");

    // (d) guarded copies work.
    check_guarded_copies(n, "before the signals");

    if (mode == "handler") {
        // (a) signals sent to the process reach the application's handlers, each once.
        check(raise(SIGBUS) == 0, "raise");
        check(bus_count.load() == 1, "raise(SIGBUS) did not reach the application's handler");
        check(kill(getpid(), SIGSEGV) == 0, "kill");
        wait_for_count(segv_count, 1);
        check(last_segv_code.load() == SI_USER, "kill(SIGSEGV): si_code is not SI_USER");
        check(pthread_kill(pthread_self(), SIGSEGV) == 0, "pthread_kill");
        check(segv_count.load() == 2 && last_segv_code.load() == SI_TKILL,
              "pthread_kill(SIGSEGV) did not reach the application's handler with SI_TKILL");
        // (c) a real fault outside guarded copies reaches the application's SA_SIGINFO handler
        // with its address; the handler fixes it and the instruction runs again.
        volatile char *page = static_cast<volatile char *>(map_page(PROT_NONE));
        prot_none_page = const_cast<char *>(page);
        page[100] = 42;
        check(segv_count.load() == 3 && last_segv_code.load() == SEGV_ACCERR && last_segv_addr == page + 100,
              "a write to a PROT_NONE page did not reach the application's handler");
        check(page[100] == 42, "the write did not complete after the handler returned");
        prot_none_page = nullptr;
        // A real SIGBUS (a read beyond the end of the file of a mapping) reaches the plain handler.
        FILE *f = tmpfile();
        check(f != nullptr, "tmpfile");
        volatile char *beyond = static_cast<volatile char *>(mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fileno(f), 0));
        check(beyond != MAP_FAILED, "mmap of an empty file");
        sigjmp_buf escape;
        if (sigsetjmp(escape, 1) == 0) {
            bus_escape = &escape;
            (void)beyond[0];
            fail("reading beyond the end of a mapped file did not fault");
        }
        check(bus_count.load() == 2, "a real SIGBUS did not reach the application's handler");
        std::fclose(f);
    } else if (mode == "default") {
        // (b) the default action, the first time.
        expect_killed_by(in_child([] { raise(SIGBUS); }), SIGBUS, "raise(SIGBUS)");
        expect_killed_by(in_child([] { kill(getpid(), SIGSEGV); }), SIGSEGV, "kill(getpid(), SIGSEGV)");
        // (c) a real fault outside guarded copies.
        volatile char *page = static_cast<volatile char *>(map_page(PROT_NONE));
        expect_killed_by(in_child([page] { page[0] = 1; }), SIGSEGV, "a write to a PROT_NONE page");
    } else {
        // Ignored signals stay ignored...
        check(raise(SIGBUS) == 0, "raise");
        check(kill(getpid(), SIGSEGV) == 0, "kill");
        // ...but a real fault cannot be ignored.
        volatile char *page = static_cast<volatile char *>(map_page(PROT_NONE));
        expect_killed_by(in_child([page] { page[0] = 1; }), SIGSEGV, "a write to a PROT_NONE page");
    }

    check_guarded_copies(n, "after the signals");
    check(portico_runtime_barrier() == PTL_OK, "barrier");
    PtlNIFini(n.ni);
    PtlFini();
    std::printf("fault_signals rank %u (%s): OK\n", g_rank, mode.c_str());
    return 0;
}
