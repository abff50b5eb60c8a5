/* SPDX-License-Identifier: BSD-3-Clause */
/* A job in which one rank hangs and then dies mid-job (SIGSTOP, then SIGKILL, as a stuck node that
 * crashes would): the survivors must see their operations on it end in failure events, never hang.
 * Run with N >= 2 ranks, each started by dead_peer_rank.sh, which stops and kills the victim.
 *   rank N-1: the victim. Once its NI is open it tells its wrapper, which stops it: a stopped
 *             process answers nothing (a live one would answer the gets with PTL_NI_DROPPED).
 *   others:   wait for the wrapper's word that the victim is stopped, post a get to the victim,
 *             tell the wrapper, then wait for the REPLY, which must come with
 *             PTL_NI_UNDELIVERABLE once the wrapper has killed the victim.
 * Each survivor writes its report to a file and a line to a FIFO, which the victim's wrapper
 * waits for before it tells the launcher about the death by exiting. */
#include <portals4.h>
#include <portico_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

static void check(int rc, const char *what) {
    if (rc != PTL_OK) {
        printf("FAIL %s: rc=%d\n", what, rc);
        fflush(stdout);
        exit(1);
    }
}

/* One line to the victim's wrapper (dead_peer_rank.sh) on the FIFO it reads. */
static void tell_wrapper(const char *dir, const char *what) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fifo", dir ? dir : ".");
    FILE *f = fopen(path, "w");
    if (!f) {
        printf("FAIL cannot open %s\n", path);
        fflush(stdout);
        exit(1);
    }
    fprintf(f, "%s\n", what);
    fclose(f);
}

/* Blocks until the wrapper has stopped the victim: one byte per survivor on the "go" FIFO. */
static void wait_for_go(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/go", dir ? dir : ".");
    int fd = open(path, O_RDONLY);
    char c;
    if (fd < 0 || read(fd, &c, 1) != 1) {
        printf("FAIL no word from the victim's wrapper on %s\n", path);
        fflush(stdout);
        exit(1);
    }
    close(fd);
}

int main(void) {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_process_t me;
    check(PtlInit(), "PtlInit");
    check(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni), "PtlNIInit");
    check(PtlGetId(ni, &me), "PtlGetId");
    int size = 0;
    check(portico_runtime_size(&size), "size");
    const ptl_rank_t victim = (ptl_rank_t)(size - 1);
    check(PtlEQAlloc(ni, 64, &eq), "PtlEQAlloc");
    const char *dir = getenv("DEAD_PEER_REPORT_DIR");
    if (me.rank == victim) {
        tell_wrapper(dir, "ready");
        for (;;) pause(); /* stopped, then killed, by the wrapper */
    }
    static char buf[4096];
    ptl_md_t md = {buf, sizeof buf, 0, eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    check(PtlMDBind(ni, &md, &mdh), "PtlMDBind");
    ptl_process_t target;
    target.rank = victim;
    wait_for_go(dir);
    check(PtlGet(mdh, 0, sizeof buf, target, 0, 0, 0, (void *)1), "PtlGet");
    tell_wrapper(dir, "posted");
    ptl_event_t ev;
    check(PtlEQWait(eq, &ev), "PtlEQWait");
    if (ev.type != PTL_EVENT_REPLY || ev.ni_fail_type != PTL_NI_UNDELIVERABLE || ev.user_ptr != (void *)1) {
        printf("FAIL rank %u: event %d fail %d\n", (unsigned)me.rank, (int)ev.type, (int)ev.ni_fail_type);
        fflush(stdout);
        return 1;
    }
    /* A file, not stdout: once the launcher reacts to the death it kills the remote shells, and
     * with them the pipes that carry the ranks' output (as with ssh). */
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%u", dir ? dir : ".", (unsigned)me.rank);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "rank %u: the get to dead rank %u ended with PTL_NI_UNDELIVERABLE\n", (unsigned)me.rank,
            (unsigned)victim);
    fclose(f);
    tell_wrapper(dir, "reported");
    for (;;) pause(); /* the launcher ends the job */
}
