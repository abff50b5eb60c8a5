/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * demo_test.c — the PSM2 guide's psm2-demo program, as two processes of
 * one job (psm2.demo.*): rank 0 is the server, rank 1 the client; their only exchange is the
 * server's epid in a file, as in the demo. docs/PSM2.md's conformance cases 15 and 13.
 *   server: init, defaults, ep_open (all-zero job key), writes its epid ("0x%lx") to the file,
 *           mq_init, irecv(tag 0xABCD, selector ~0, 80 bytes), wait, checks "Hello world",
 *           removes the file
 *   client: waits for the file, ep_connect with 8-entry arrays of which only entry 0 is unmasked
 *           (the others left uninitialized garbage) and timeout 0, mq_init, send(0xABCD)
 *   both:   mq_finalize, ep_close(GRACEFUL, 0), finalize
 * Argument 1, the order:
 *   server-first  the client starts once the file exists, and its message is sent before the
 *                 server's mq_init; the server closes first
 *   client-first  the client waits for the file before the server has opened its endpoint; the
 *                 client closes first
 * Argument 2: the file's directory. The job's launcher barrier only orders these steps; the
 * client finds the server's epid through the file alone.
 */
#include "psm2_test.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

static const char kHello[] = "Hello world (psm2-demo)";

static void server(const char *path, int server_first) {
    if (!server_first) t_barrier(); /* the client waits for the file already */
    int major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    CHECK_OK(psm2_error_register_handler(NULL, PSM2_ERRHANDLER_NO_HANDLER));
    CHECK_OK(psm2_init(&major, &minor));
    CHECK(major == PSM2_VERNO_MAJOR);
    CHECK_OK(psm2_error_register_handler(NULL, PSM2_ERRHANDLER_PSM_HANDLER));
    struct psm2_ep_open_opts opts;
    CHECK_OK(psm2_ep_open_opts_get_defaults(&opts));
    opts.timeout = 15000000000LL;
    opts.affinity = PSM2_EP_OPEN_AFFINITY_SKIP;
    psm2_uuid_t key;
    memset(key, 0, sizeof key);
    psm2_ep_t ep = NULL;
    psm2_epid_t epid = 0;
    CHECK_OK(psm2_ep_open(key, &opts, &ep, &epid));

    /* Written whole, then renamed: the client never reads half an epid. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CHECKF(f != NULL, "cannot write %s", tmp);
    fprintf(f, "0x%" PRIx64 "\n", (uint64_t)epid);
    CHECK(fclose(f) == 0);
    CHECK(rename(tmp, path) == 0);

    if (server_first) {
        t_barrier(); /* the client starts */
        t_barrier(); /* the client has sent: its message came before this mq_init */
    }
    psm2_mq_t mq = NULL;
    CHECK_OK(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_NONE, NULL, 0, &mq));
    char buf[80];
    memset(buf, 0, sizeof buf);
    psm2_mq_req_t req = NULL;
    CHECK_OK(psm2_mq_irecv(mq, 0xABCD, (uint64_t)-1, 0, buf, sizeof buf, NULL, &req));
    psm2_mq_status_t st;
    CHECK_OK(psm2_mq_wait(&req, &st));
    CHECKF(strcmp(buf, kHello) == 0, "the server received \"%.80s\"", buf);
    CHECK(st.msg_tag == 0xABCD && st.msg_length == sizeof kHello && st.nbytes == sizeof kHello);
    CHECK(st.error_code == PSM2_OK);
    CHECK(unlink(path) == 0);
    CHECK_OK(psm2_mq_finalize(mq));
    if (!server_first) t_barrier(); /* the client closes first */
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    if (server_first) t_barrier();
    CHECK_OK(psm2_finalize());
}

static psm2_epid_t wait_for_file(const char *path) {
    const struct timespec pause = {0, 1000000};
    for (;;) {
        FILE *f = fopen(path, "r");
        if (f) {
            uint64_t v = 0;
            const int n = fscanf(f, "%" SCNx64, &v);
            fclose(f);
            CHECKF(n == 1 && v != 0, "%s does not hold an epid", path);
            return v;
        }
        CHECKF(errno == ENOENT, "cannot read %s", path);
        nanosleep(&pause, NULL); /* polling a file: the demo's way of waiting for the server */
    }
}

static void client(const char *path, int server_first) {
    int major = PSM2_VERNO_MAJOR, minor = PSM2_VERNO_MINOR;
    CHECK_OK(psm2_init(&major, &minor));
    psm2_uuid_t key;
    memset(key, 0, sizeof key);
    psm2_ep_t ep = NULL;
    psm2_epid_t mine = 0;
    CHECK_OK(psm2_ep_open(key, NULL, &ep, &mine));
    t_barrier(); /* server-first: the file exists; client-first: the server starts now */
    const psm2_epid_t server_epid = wait_for_file(path);

    /* Eight entries, only the first unmasked; the rest never initialized (garbage). */
    psm2_epid_t epids[8];
    psm2_error_t errs[8];
    psm2_epaddr_t addrs[8];
    int mask[8];
    memset(epids, 0xC5, sizeof epids);
    memset(errs, 0xC5, sizeof errs);
    memset(addrs, 0xC5, sizeof addrs);
    memset(mask, 0, sizeof mask);
    epids[0] = server_epid;
    mask[0] = 1;
    CHECK_OK(psm2_ep_connect(ep, 8, epids, mask, errs, addrs, 0));
    CHECK_ERR(errs[0], PSM2_OK);
    CHECK(addrs[0] != NULL);
    for (int i = 1; i < 8; ++i) {
        uint8_t c5[sizeof(psm2_epaddr_t)];
        memset(c5, 0xC5, sizeof c5);
        CHECKF(memcmp(&addrs[i], c5, sizeof c5) == 0, "masked entry %d written", i);
    }
    psm2_mq_t mq = NULL;
    CHECK_OK(psm2_mq_init(ep, PSM2_MQ_ORDERMASK_NONE, NULL, 0, &mq));
    CHECK_OK(psm2_mq_send(mq, addrs[0], 0, 0xABCD, kHello, sizeof kHello));
    if (server_first) t_barrier(); /* sent */
    CHECK_OK(psm2_mq_finalize(mq));
    if (server_first) t_barrier(); /* the server closes first */
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    if (!server_first) t_barrier();
    CHECK_OK(psm2_finalize());
}

int main(int argc, char **argv) {
    t_begin("psm2_demo_test");
    CHECKF(t_size == 2 && argc == 3, "usage: portico-run -n 2 %s server-first|client-first <directory>", argv[0]);
    const int server_first = strcmp(argv[1], "server-first") == 0;
    CHECKF(server_first || strcmp(argv[1], "client-first") == 0, "unknown order %s", argv[1]);
    /* One file per job: the shm and TCP variants may run at the same time. */
    int job = 0;
    if (t_rank == 0) job = (int)getpid();
    CHECK_RT(portico_runtime_broadcast(&job, sizeof job, 0));
    char path[4096];
    snprintf(path, sizeof path, "%s/psm2-demo-server-epid.%d", argv[2], job);
    if (t_rank == 0)
        server(path, server_first);
    else
        client(path, server_first);
    t_end();
    return 0;
}
