// gasnet_exit and fatal errors end the whole job (spec §2.1.5, §3). Run by run_exit_test.sh,
// which checks portico-run's exit code and that no rank is left; every rank records its pid in
// $GASNET_TEST_DIR. Modes:
//   code       the last node calls gasnet_exit(7) while the others wait in a barrier     -> 7
//   compute    node 0 calls gasnet_exit(0) while the others compute without GASNet calls -> 0
//   handler    an AM handler on node 1 calls gasnet_exit(9)                             -> 9
//   sigquit    like compute, the others' SIGQUIT handlers leave a marker and exit       -> 0
//   return     node 0 returns from main without gasnet_exit, the others compute         -> 0
//   preattach  node 1 calls gasnet_exit(4) between init and attach                      -> 4
//   double-notify, wait-without-notify, bad-put, bad-handler: fatal errors (SIGABRT)      -> 134
#include <gasnet.h>

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

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

void exit_handler(gasnet_token_t, gasnet_handlerarg_t code) { gasnet_exit(code); }
} // namespace

int main(int argc, char **argv) {
    const char *d = getenv("GASNET_TEST_DIR");
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
    test_barrier();

    if (mode == "code") {
        if (me == n - 1) gasnet_exit(7);
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
