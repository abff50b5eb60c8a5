/* SPDX-License-Identifier: BSD-3-Clause */
/* How a UPC job ends (docs/UPC.md's cases 17, 19, 39, 40, 55): upc_global_exit while the others sit
 * in a barrier, a crash, a normal return, and the errors that end a job: mismatched barrier ids,
 * notify twice, wait without notify, an access outside a segment. Run by run_exit_test.sh, which
 * checks the job's exit code, the message, and that no process is left. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "upc_test.h"

int upc_main(int argc, char **argv, char **envp) {
    (void)envp;
    CHECK(argc == 2);
    const char *mode = argv[1];
    const int last = THREADS - 1;
    upc_test_record_pid();
    UPC_BARRIER();
    if (strcmp(mode, "global-exit") == 0) {
        /* The last thread ends the job while the others wait in a barrier it never enters. */
        if (MYTHREAD == last) upc_global_exit(3);
        UPC_BARRIER();
        CHECK(0 && "a barrier completed without the thread that called upc_global_exit");
    } else if (strcmp(mode, "global-exit-computing") == 0) {
        /* The others compute and never call the runtime: the exit reaches them anyway. */
        if (MYTHREAD == last) upc_global_exit(4);
        volatile unsigned long spin = 0;
        for (;;) spin++;
    } else if (strcmp(mode, "crash") == 0) {
        if (MYTHREAD == last) raise(SIGKILL);
        UPC_BARRIER();
    } else if (strcmp(mode, "mismatch") == 0) {
        __upc_barrier(MYTHREAD == 0 ? 1 : 2);
    } else if (strcmp(mode, "double-notify") == 0) {
        __upc_notify(1);
        if (MYTHREAD == last) __upc_notify(1);
        __upc_wait(1);
        UPC_BARRIER();
    } else if (strcmp(mode, "wait-without-notify") == 0) {
        if (MYTHREAD == last) __upc_wait(1);
        UPC_BARRIER();
    } else if (strcmp(mode, "out-of-range") == 0) {
        if (MYTHREAD == last) __putsi2(upc_pts_make(0, 0, (uint64_t)1 << 33), 1);
        UPC_BARRIER();
    } else if (strcmp(mode, "return") == 0) {
        return 0;
    } else {
        CHECK(0 && "unknown mode");
    }
    return 0;
}
