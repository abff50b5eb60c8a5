// SPDX-License-Identifier: BSD-3-Clause
// gasnet_exit and fatal errors end the whole job (spec §2.1.5, §3). Run by
// tests/support/run_exit_test.sh, which checks portico-run's exit code and that no rank is left;
// every rank records its pid in $EXIT_TEST_DIR. Modes:
//   code       the last node calls gasnet_exit(7) while the others wait in a barrier     -> 7
//   compute    node 0 calls gasnet_exit(0) while the others compute without GASNet calls -> 0
//   handler    an AM handler on node 1 calls gasnet_exit(9)                             -> 9
//   sigquit    like compute, the others' SIGQUIT handlers leave a marker and exit       -> 0
//   return     node 0 returns from main without gasnet_exit, the others compute         -> 0
//   preattach  node 1 calls gasnet_exit(4) between init and attach                      -> 4
// Non-collective exits decide the job's code, whatever the survivors' SIGQUIT handlers pass to
// gasnet_exit (node 0 has one that exits with 4, the others have none). Right before it exits, the
// exiting node stops the launcher (SIGSTOP) until every node has exited, as a busy machine may:
// the launcher then finds all the exits at once and cannot tell by their order which came first.
//   return8    the last node returns 8 from main while the others wait in a barrier     -> 8
//   spin5      the last node calls gasnet_exit(5) while the others spin in AMPoll       -> 5
//   threads6   (PAR binary) the others' threads issue puts to the last node without end;
//              it calls gasnet_exit(6) once every thread's puts land: no fatal error    -> 6
// Deaths GASNet's own exit protocol cannot see (no exit message): the launcher, or where it lets
// the job live on (srun --mpi=pmi2) the ranks' peer watch, must end the job.
//   crash3     the last node calls _exit(3) while the others wait in a barrier          -> 3
//   killed     the last node is killed (SIGKILL) while the others wait in a barrier     -> 137
//   double-notify, wait-without-notify, bad-put, bad-handler: fatal errors (SIGABRT)      -> 134
#include <gasnet.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifdef GASNET_PAR
#include <pthread.h>
#endif

#include "test_util.h"

namespace {
std::string dir;
volatile unsigned long sink = 0;

[[noreturn]] void compute_forever() {
    for (unsigned long i = 0;; ++i) sink = sink + i * 2654435761u; // no GASNet call ever
}

volatile int never = 0;
[[noreturn]] void serve_forever() {
    GASNET_BLOCKUNTIL(never); // runs handlers, never returns
    abort();
}

void write_pid_marker() {
    const std::string path = dir + "/pid." + std::to_string(getpid());
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd >= 0) {
        const std::string pid = std::to_string(getpid());
        if (write(fd, pid.data(), pid.size()) < 0) _exit(3);
        close(fd);
    }
}

void on_sigquit(int) {
    // open/write/close are async-signal-safe; gasnet_exit is what the spec asks the handler to call.
    const std::string path = dir + "/quit." + std::to_string(gasnet_mynode());
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd >= 0) close(fd);
    gasnet_exit(0);
}

// A survivor that picks its own code when told that another node exited: the job's code must
// still be the exiting node's.
void on_sigquit_exit4(int) { gasnet_exit(4); }

void exit_handler(gasnet_token_t, gasnet_handlerarg_t code) { gasnet_exit(code); }

// Every node's pid, through the last 8 bytes of every segment (collective: every node calls
// publish_pid, then a barrier, then the exiting node calls node_pids).
void publish_pid() {
    std::vector<gasnet_seginfo_t> all(gasnet_nodes());
    GASNET_SAFE(gasnet_getSegmentInfo(all.data(), int(gasnet_nodes())));
    const gasnet_seginfo_t &mine = all[gasnet_mynode()];
    const int64_t pid = getpid();
    std::memcpy(static_cast<char *>(mine.addr) + mine.size - sizeof pid, &pid, sizeof pid);
}
std::vector<pid_t> node_pids() {
    std::vector<gasnet_seginfo_t> all(gasnet_nodes());
    GASNET_SAFE(gasnet_getSegmentInfo(all.data(), int(gasnet_nodes())));
    std::vector<pid_t> pids;
    for (gasnet_node_t p = 0; p < gasnet_nodes(); ++p) {
        int64_t pid = 0;
        gasnet_get(&pid, p, static_cast<char *>(all[p].addr) + all[p].size - sizeof pid, sizeof pid);
        pids.push_back(pid_t(pid));
    }
    return pids;
}

bool stopped(pid_t pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    char buf[512];
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return false;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); // the state follows the command name
    return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

// Stops the launcher until every node has exited (a helper process continues it), so that it
// sees every exit at once. Returns once the launcher is stopped.
void hold_launcher_until_all_exit(const std::vector<pid_t> &pids) {
    const pid_t launcher = getppid();
    const pid_t helper = fork();
    if (helper == 0) {
        // Only system calls here: the parent may have threads.
        for (pid_t p : pids) {
            const int fd = int(syscall(SYS_pidfd_open, p, 0));
            if (fd < 0) continue; // gone already
            pollfd pf{fd, POLLIN, 0};
            // Bounded, so that a node that never exits cannot leave the launcher stopped for good
            // (its --timeout then ends the job).
            while (poll(&pf, 1, 30000) < 0 && errno == EINTR) {
            }
            close(fd);
        }
        kill(launcher, SIGCONT);
        _exit(0);
    }
    CHECK(helper > 0);
    CHECK(kill(launcher, SIGSTOP) == 0);
    while (!stopped(launcher)) sched_yield();
}

#ifdef GASNET_PAR
constexpr unsigned kPutThreads = 4;
constexpr size_t kBulk = 64 * 1024;
constexpr size_t kSlots = 4096; // the last node's segment: one 8-byte slot per node and thread, then
                                // a bulk area per node and thread
gasnet_seginfo_t target_seg;

// Puts to the last node without end: blocking puts (acknowledged), bulk nbi puts (SEND and ACK
// events), until the last node's exit ends this process.
void *put_forever(void *arg) {
    const unsigned t = static_cast<unsigned>(reinterpret_cast<uintptr_t>(arg));
    const gasnet_node_t last = gasnet_nodes() - 1, me = gasnet_mynode();
    char *base = static_cast<char *>(target_seg.addr);
    char *slot = base + (size_t(me) * kPutThreads + t) * sizeof(uint64_t);
    char *bulk = base + kSlots + (size_t(me) * kPutThreads + t) * kBulk;
    std::vector<char> src(kBulk, char(t + 1));
    for (uint64_t i = 1;; ++i) {
        gasnet_put(last, slot, &i, sizeof i);
        gasnet_put_nbi_bulk(last, bulk, src.data(), kBulk);
        gasnet_put_nbi(last, bulk, src.data(), 256);
        gasnet_wait_syncnbi_puts();
    }
    return nullptr;
}
#endif
} // namespace

int main(int argc, char **argv) {
    const char *d = getenv("EXIT_TEST_DIR");
    dir = d ? d : "/tmp";
    // Before gasnet_init (collective): once any node can exit, every rank has recorded its pid.
    write_pid_marker();
    GASNET_SAFE(gasnet_init(&argc, &argv));
    const std::string mode = argc > 1 ? argv[1] : "code";
    const gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes();
    if (mode == "preattach" && me == 1 % n) gasnet_exit(4);
    gasnet_handlerentry_t tab[] = {{200, (void (*)())exit_handler}};
    GASNET_SAFE(gasnet_attach(tab, 1, 1 << 20, 0));
    if (mode == "sigquit" && me != 0) signal(SIGQUIT, on_sigquit);
    const bool held = mode == "return8" || mode == "spin5" || mode == "threads6";
    if (held && me == 0 && n > 1) signal(SIGQUIT, on_sigquit_exit4);
    if (held) publish_pid();
    test_barrier();

    if (mode == "code") {
        if (me == n - 1) gasnet_exit(7);
        gasnet_barrier_notify(0, 0);
        gasnet_barrier_wait(0, 0); // never completes: node n-1 is gone
    } else if (mode == "crash3" || mode == "killed") {
        if (me == n - 1) {
            if (mode == "killed") raise(SIGKILL);
            _exit(3);
        }
        gasnet_barrier_notify(0, 0);
        gasnet_barrier_wait(0, 0); // never completes: node n-1 is gone
    } else if (mode == "compute" || mode == "sigquit") {
        if (me == 0) gasnet_exit(0);
        compute_forever();
    } else if (mode == "handler") {
        if (me == 0) GASNET_SAFE(gasnet_AMRequestShort1(1 % n, 200, 9));
        serve_forever();
    } else if (mode == "return") {
        if (me == 0) return 0; // the atexit hook ends the job
        compute_forever();
    } else if (mode == "return8") {
        if (me == n - 1) {
            hold_launcher_until_all_exit(node_pids());
            return 8; // the atexit hook ends the job
        }
        gasnet_barrier_notify(0, 0);
        gasnet_barrier_wait(0, 0); // never completes: node n-1 is gone
    } else if (mode == "spin5") {
        if (me == n - 1) {
            hold_launcher_until_all_exit(node_pids());
            gasnet_exit(5);
        }
        for (;;) gasnet_AMPoll();
    } else if (mode == "threads6") {
#ifdef GASNET_PAR
        std::vector<gasnet_seginfo_t> segs(n);
        GASNET_SAFE(gasnet_getSegmentInfo(segs.data(), int(n)));
        target_seg = segs[n - 1];
        CHECK(kSlots + size_t(n) * kPutThreads * kBulk <= target_seg.size);
        if (me == n - 1) {
            // Exit only once every other node's every thread has put something: puts are then in
            // flight towards this node from all of them while it goes.
            volatile uint64_t *slots = static_cast<volatile uint64_t *>(target_seg.addr);
            for (gasnet_node_t p = 0; p + 1 < n; ++p)
                for (unsigned t = 0; t < kPutThreads; ++t) GASNET_BLOCKUNTIL(slots[p * kPutThreads + t] != 0);
            hold_launcher_until_all_exit(node_pids());
            gasnet_exit(6);
        }
        pthread_t th[kPutThreads];
        for (unsigned t = 0; t < kPutThreads; ++t)
            CHECK(pthread_create(&th[t], nullptr, put_forever, reinterpret_cast<void *>(uintptr_t(t))) == 0);
        for (unsigned t = 0; t < kPutThreads; ++t) pthread_join(th[t], nullptr); // never returns
#else
        fprintf(stderr, "exit_test: mode threads6 needs the GASNET_PAR build\n");
        return 2;
#endif
    } else if (mode == "double-notify") {
        if (me == 0) {
            gasnet_barrier_notify(1, 0);
            gasnet_barrier_notify(1, 0);
        }
        compute_forever();
    } else if (mode == "wait-without-notify") {
        if (me == 0) gasnet_barrier_wait(1, 0);
        compute_forever();
    } else if (mode == "bad-put") {
        if (me == 0) {
            gasnet_seginfo_t si[1];
            GASNET_SAFE(gasnet_getSegmentInfo(si, 1));
            int v = 1;
            gasnet_put(0, static_cast<char *>(si[0].addr) + si[0].size - 2, &v, sizeof v); // past the segment
        }
        compute_forever();
    } else if (mode == "bad-handler") {
        if (me == 0) GASNET_SAFE(gasnet_AMRequestShort0(n - 1, 250)); // index 250 is not registered
        serve_forever();
    }
    fprintf(stderr, "exit_test: mode '%s' did not end the job\n", mode.c_str());
    return 2;
}
