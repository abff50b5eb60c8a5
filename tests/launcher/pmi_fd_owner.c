/* SPDX-License-Identifier: BSD-3-Clause */
/* A program that speaks PMI-1 on PMI_FD itself (as GASNet's own PMI client, or an MPI library's,
 * does) and also uses Portals, whose job service speaks on the same descriptor: Portico's PtlFini
 * (the engine's last, which leaves the job) must leave the program's descriptor open and usable,
 * never close it (a closed number would be reused by the next open(), and the program's own
 * requests would go into that file). Run by portico-run, which keeps serving a connection after a
 * finalize on it. Exits 0 when every check holds. */
#include <fcntl.h>
#include <portals4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_fd = -1;

static void fail(const char *what) {
    fprintf(stderr, "pmi_fd_owner: %s\n", what);
    exit(1);
}

/* One request and its reply line (into reply), which must start with want. */
static void exchange(const char *request, const char *want, char *reply, size_t cap) {
    if (write(g_fd, request, strlen(request)) != (ssize_t)strlen(request)) fail("cannot write a request on PMI_FD");
    size_t n = 0;
    for (;;) {
        char c;
        if (read(g_fd, &c, 1) != 1) fail("PMI_FD closed while reading a reply");
        if (c == '\n') break;
        if (n + 1 < cap) reply[n++] = c;
    }
    reply[n] = '\0';
    if (strncmp(reply, want, strlen(want)) != 0) {
        fprintf(stderr, "pmi_fd_owner: sent %s", request);
        fprintf(stderr, "pmi_fd_owner: expected '%s...', got '%s'\n", want, reply);
        exit(1);
    }
}

int main(void) {
    const char *fd_s = getenv("PMI_FD");
    if (!fd_s) fail("no PMI_FD (run it under portico-run)");
    g_fd = atoi(fd_s);
    char reply[1024];
    exchange("cmd=init pmi_version=1 pmi_subversion=1\n", "cmd=response_to_init", reply, sizeof reply);
    exchange("cmd=get_my_kvsname\n", "cmd=my_kvsname kvsname=", reply, sizeof reply);

    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    if (PtlInit() != PTL_OK ||
        PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK)
        fail("Portals set-up failed");
    if (PtlNIFini(ni) != PTL_OK) fail("PtlNIFini failed");
    PtlFini(); /* the engine's last: the job service leaves the job */

    if (fcntl(g_fd, F_GETFD) == -1) fail("PtlFini closed PMI_FD, which the program still uses");
    const int other = open("/dev/null", O_RDONLY);
    if (other == g_fd) fail("PMI_FD's number was reused");
    close(other);
    exchange("cmd=get_my_kvsname\n", "cmd=my_kvsname kvsname=", reply, sizeof reply);
    exchange("cmd=barrier_in\n", "cmd=barrier_out", reply, sizeof reply);
    exchange("cmd=finalize\n", "cmd=finalize_ack", reply, sizeof reply);
    printf("pmi_fd_owner: PMI_FD %d still ours after PtlFini\n", g_fd);
    return 0;
}
