/* SPDX-License-Identifier: BSD-3-Clause */
/* A Portals job in which the last rank exits with 8 first and rank 0 is killed by SIGKILL right
 * after, while the launcher cannot look: the last rank stops it (SIGSTOP) before it exits, and
 * rank 1 continues it once both are gone (the last rank stops it only once every rank has told
 * it, by a put, that it left the launcher's barrier), so the launcher finds both exits at once, as it may on
 * a busy machine. The first rank to exit non-zero decides the job's status: 8, not 137. The
 * others (rank 1 and up) block until the launcher ends the job.
 *   portals_exit_order DIR     (DIR: an empty directory for the ranks' pid files; 3+ ranks) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <portals4.h>
#include <portico_runtime.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static const char *dir;

static void fail(const char *what) {
    fprintf(stderr, "portals_exit_order: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void write_pid(unsigned rank) {
    char tmp[4096], path[4096], text[32];
    snprintf(tmp, sizeof tmp, "%s/.pid.%u", dir, rank);
    snprintf(path, sizeof path, "%s/pid.%u", dir, rank);
    int fd = open(tmp, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    int len = snprintf(text, sizeof text, "%ld", (long)getpid());
    if (fd < 0 || write(fd, text, (size_t)len) != len || close(fd) != 0 || rename(tmp, path) != 0)
        fail("cannot write the pid file");
}

static pid_t read_pid(unsigned rank) {
    char path[4096], text[32] = {0};
    snprintf(path, sizeof path, "%s/pid.%u", dir, rank);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || read(fd, text, sizeof text - 1) <= 0) fail("cannot read a pid file");
    close(fd);
    return (pid_t)atol(text);
}

/* Returns once the process has exited (it may not have been reaped yet). */
static void wait_exit(pid_t pid) {
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {
        if (errno == ESRCH) return; /* gone already */
        fail("pidfd_open");
    }
    struct pollfd p = {fd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0)
        if (errno != EINTR) fail("poll");
    close(fd);
}

static int is_stopped(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the state follows the command name */
    return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: portals_exit_order DIR\n");
        return 2;
    }
    dir = argv[1];
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_process_t id;
    if (PtlInit() != PTL_OK ||
        PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK ||
        PtlGetId(ni, &id) != PTL_OK || PtlEQAlloc(ni, 8, &eq) != PTL_OK) {
        fprintf(stderr, "portals_exit_order: setup failed\n");
        return 2;
    }
    const unsigned rank = id.rank, size = (unsigned)atoi(getenv("PMI_SIZE") ? getenv("PMI_SIZE") : "0");
    if (size < 3) {
        fprintf(stderr, "portals_exit_order: needs 3 or more ranks\n");
        return 2;
    }
    /* The last rank counts "left the launcher's barrier" messages: it may stop the launcher only
     * once nobody waits for it any more. */
    ptl_pt_index_t pt;
    ptl_handle_ct_t ct;
    ptl_handle_md_t md;
    static char slot[8], token[8];
    if (PtlPTAlloc(ni, 0, eq, 0, &pt) != PTL_OK || PtlCTAlloc(ni, &ct) != PTL_OK) fail("PtlPTAlloc/PtlCTAlloc");
    if (rank == size - 1) {
        ptl_me_t me;
        ptl_handle_me_t meh;
        memset(&me, 0, sizeof me);
        me.start = slot;
        me.length = sizeof slot;
        me.ct_handle = ct;
        me.uid = PTL_UID_ANY;
        me.match_id.rank = PTL_RANK_ANY;
        me.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                     PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_CT_COMM;
        if (PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, NULL, &meh) != PTL_OK) fail("PtlMEAppend");
    }
    ptl_md_t mdd;
    memset(&mdd, 0, sizeof mdd);
    mdd.start = token;
    mdd.length = sizeof token;
    mdd.eq_handle = PTL_EQ_NONE;
    mdd.ct_handle = PTL_CT_NONE;
    if (PtlMDBind(ni, &mdd, &md) != PTL_OK) fail("PtlMDBind");
    write_pid(rank);
    if (portico_runtime_barrier() != PTL_OK) fail("barrier");
    const pid_t launcher = getppid(), last = read_pid(size - 1), first = read_pid(0);
    if (rank != size - 1) {
        ptl_process_t to;
        to.rank = size - 1;
        if (PtlPut(md, 0, 0, PTL_NO_ACK_REQ, to, pt, 0, 0, NULL, 0) != PTL_OK) fail("PtlPut");
    }
    if (rank == size - 1) {
        ptl_ct_event_t ce;
        if (PtlCTWait(ct, size - 1, &ce) != PTL_OK || ce.failure != 0) fail("PtlCTWait");
        if (kill(launcher, SIGSTOP) != 0) fail("kill(SIGSTOP)");
        while (!is_stopped(launcher)) sched_yield();
        return 8;
    }
    if (rank == 0) {
        wait_exit(last);
        raise(SIGKILL);
    }
    if (rank == 1) {
        wait_exit(last);
        wait_exit(first);
        kill(launcher, SIGCONT);
    }
    ptl_event_t ev;
    PtlEQWait(eq, &ev); /* nothing ever arrives: the launcher ends this process */
    return 0;
}
