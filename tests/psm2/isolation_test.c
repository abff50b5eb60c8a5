/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isolation_test.c — PSM2 jobs of one user on one machine do not see each other's messages
 * (docs/PSM2.md, *Connections*): the job key is checked on every message's path, not only by
 * psm2_ep_connect.
 * Processes started without a launcher (this program forks them, as PSM2 clients start theirs),
 * whose job key is all they share, so that it is the job secret their shared-memory links prove:
 *   - job A (key A): A1 sends A0 20 messages, which A0 takes with any-source, any-tag receives;
 *   - job B (key B) does the same at the same time (B1 to B0);
 *   - an injector (key C) puts 300 PSM2-shaped messages (psm2's layout: the tags in the match
 *     bits, the sender's context and the length in the header data) straight into A0's receive
 *     portal with Portals calls, before A1 sends anything; it reports how many arrived;
 *   - B1 tries to connect to A0, A1 to B0: neither may succeed.
 * A0 and B0 must take exactly their own job's 20 messages, in order (source, tag, data checked),
 * and find nothing else; the injector must see every put fail; A0's PTL_SR_REFUSED_CONNECTIONS
 * counts the links it refused (the injector's and B1's).
 * Usage: psm2_isolation_test (no launcher; ctest runs it on shared memory).
 */
#include "psm2_test.h"

#include <portico_ext.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { A0, A1, B0, B1, INJECTOR, N_ROLES };
static const char *const kRoleName[N_ROLES] = {"A0", "A1", "B0", "B1", "injector"};
enum { kMessages = 20, kInjected = 300, kLen = 64 };

static int g_fd; /* this process's end of its socketpair with the coordinator */

static void tell(const void *p, size_t n) { CHECK(write(g_fd, p, n) == (ssize_t)n); }
static void hear(void *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = read(g_fd, (char *)p + got, n - got);
        CHECKF(r > 0, "the coordinator went away");
        got += (size_t)r;
    }
}

static psm2_epid_t g_epids[N_ROLES];

/* Takes kMessages messages with any-source, any-tag receives: each must be sender's message i. */
static void receive_own(psm2_mq_t mq, int sender, uint32_t job_tag) {
    uint8_t buf[kLen];
    for (uint32_t i = 0; i < kMessages; ++i) {
        psm2_mq_tag_t tag = t_tag(0, 0, 0), sel = t_tag(0, 0, 0); /* any tag */
        psm2_mq_req_t req = NULL;
        psm2_mq_status2_t st;
        memset(&st, 0, sizeof st);
        memset(buf, 0, sizeof buf);
        CHECK_OK(psm2_mq_irecv2(mq, PSM2_MQ_ANY_ADDR, &tag, &sel, 0, buf, sizeof buf, NULL, &req));
        CHECK_OK(psm2_mq_wait2(&req, &st));
        psm2_epid_t from = 0;
        CHECK(st.msg_peer != NULL);
        CHECK_OK(psm2_epaddr_to_epid(st.msg_peer, &from));
        CHECKF(from == g_epids[sender], "message %u came from epid %" PRIx64 ", not from %s (%" PRIx64 ")", i, from,
               kRoleName[sender], g_epids[sender]);
        CHECKF(st.msg_tag.tag0 == i && st.msg_tag.tag1 == job_tag && st.msg_length == kLen,
               "message %u: tag %x.%x, %u bytes", i, st.msg_tag.tag0, st.msg_tag.tag1, st.msg_length);
        CHECK_DATA(buf, kLen, job_tag + i);
    }
}

static void send_own(psm2_ep_t ep, psm2_mq_t mq, int receiver, uint32_t job_tag) {
    /* Bounded: a receiver that failed its checks has gone, and this must fail, not wait. */
    psm2_error_t err = PSM2_INTERNAL_ERR;
    psm2_epaddr_t to = NULL;
    CHECK_OK(psm2_ep_connect(ep, 1, &g_epids[receiver], NULL, &err, &to, 60000000000LL));
    CHECK_ERR(err, PSM2_OK);
    uint8_t buf[kLen];
    for (uint32_t i = 0; i < kMessages; ++i) {
        t_fill(buf, kLen, job_tag + i);
        psm2_mq_tag_t tag = t_tag(i, job_tag, 0);
        CHECK_OK(psm2_mq_send2(mq, to, 0, &tag, buf, kLen));
    }
}

/* Connecting to another job's endpoint must not succeed (its links refuse ours). */
static void cannot_connect(psm2_ep_t ep, int other) {
    psm2_error_t err = PSM2_OK;
    psm2_epaddr_t addr = NULL;
    const psm2_error_t rc = psm2_ep_connect(ep, 1, &g_epids[other], NULL, &err, &addr, 2000000000LL);
    CHECKF(rc != PSM2_OK && err != PSM2_OK, "connected to %s of another job", kRoleName[other]);
}

static void nothing_else(psm2_ep_t ep, psm2_mq_t mq) {
    t_quiesce(ep);
    psm2_mq_tag_t tag = t_tag(0, 0, 0), sel = t_tag(0, 0, 0);
    psm2_mq_status2_t st;
    CHECK_ERR(psm2_mq_iprobe2(mq, PSM2_MQ_ANY_ADDR, &tag, &sel, &st), PSM2_MQ_NO_COMPLETIONS);
}

/* The links this process refused so far (PTL_SR_REFUSED_CONNECTIONS of PSM2's NI). */
static ptl_sr_value_t refused_links(void) {
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni) == PTL_OK);
    ptl_sr_value_t v = 0;
    CHECK(PtlNIStatus(ni, PTL_SR_REFUSED_CONNECTIONS, &v) == PTL_OK);
    CHECK(PtlNIFini(ni) == PTL_OK);
    return v;
}

/* PSM2-shaped eager messages into A0's receive portal, made with Portals calls on this process's
 * own NI (opened by PSM2 with key C). Returns how many of them were acknowledged as delivered. */
static int inject(psm2_epid_t target) {
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni) == PTL_OK);
    ptl_handle_eq_t eq;
    CHECK(PtlEQAlloc(ni, 2 * kInjected + 8, &eq) == PTL_OK);
    static uint8_t payload[kLen];
    t_fill(payload, kLen, 0xbad);
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.start = payload;
    md.length = kLen;
    md.eq_handle = eq;
    md.ct_handle = PTL_CT_NONE;
    ptl_handle_md_t mdh;
    CHECK(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    ptl_process_t to;
    to.phys.nid = (ptl_nid_t)(target >> 32);
    to.phys.pid = (ptl_pid_t)((target >> 8) & 0xFFFFFF);
    const unsigned ctx = (unsigned)(target & 0xFF);
    const ptl_pt_index_t recv_pt = (ptl_pt_index_t)(16 + 3 * ctx);
    for (uint32_t i = 0; i < kInjected; ++i) {
        const uint64_t tag0 = i, tag1 = 0xA, tag2 = 0, sender_ctx = 0, carries_data = 2;
        CHECK(portico_put_wide(mdh, 0, kLen, PTL_ACK_REQ, to, recv_pt, tag0 | tag1 << 32, tag2 | sender_ctx << 32,
                               carries_data | sender_ctx << 8 | (uint64_t)(i + 1) << 16, NULL,
                               tag2 | (uint64_t)kLen << 32) == PTL_OK);
    }
    int acked = 0;
    for (int settled = 0; settled < kInjected;) {
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev) == PTL_OK);
        if (ev.type != PTL_EVENT_ACK) continue;
        ++settled;
        if (ev.ni_fail_type == PTL_NI_OK) ++acked;
    }
    CHECK(PtlMDRelease(mdh) == PTL_OK);
    CHECK(PtlEQFree(eq) == PTL_OK);
    CHECK(PtlNIFini(ni) == PTL_OK);
    return acked;
}

static int run(int role) {
    static const uint8_t keys[3][16] = {{0xA}, {0xB}, {0xC}};
    const int job = role == INJECTOR ? 2 : role <= A1 ? 0 : 1;
    t_init();
    psm2_epid_t mine;
    psm2_mq_t mq;
    psm2_ep_t ep = t_open(keys[job], &mine, &mq);
    tell(&mine, sizeof mine);
    hear(g_epids, sizeof g_epids);
    char cue = 0;
    switch (role) {
    case A0:
    case B0:
        receive_own(mq, role + 1, role == A0 ? 0xA : 0xB);
        hear(&cue, 1); /* everybody else is done */
        nothing_else(ep, mq);
        if (role == A0) {
            const ptl_sr_value_t refused = refused_links();
            CHECKF(refused >= 2, "A0 refused %ld links (the injector's and B1's at least)", (long)refused);
        }
        break;
    case A1:
        hear(&cue, 1); /* the injector is done: anything of its in A0's queue would come first */
        send_own(ep, mq, A0, 0xA);
        cannot_connect(ep, B0);
        break;
    case B1:
        send_own(ep, mq, B0, 0xB);
        cannot_connect(ep, A0);
        break;
    case INJECTOR: {
        const int acked = inject(g_epids[A0]);
        CHECKF(acked == 0, "%d of %d injected messages reached A0", acked, kInjected);
        cannot_connect(ep, A0);
        break;
    }
    }
    t_quiesce(ep);
    CHECK_OK(psm2_ep_close(ep, PSM2_EP_CLOSE_GRACEFUL, 0));
    CHECK_OK(psm2_finalize());
    return 0;
}

int main(void) {
    t_prog = "psm2_isolation_test";
    int fds[N_ROLES][2];
    pid_t pids[N_ROLES];
    for (int r = 0; r < N_ROLES; ++r) {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds[r]) == 0);
        pids[r] = fork();
        CHECK(pids[r] >= 0);
        if (pids[r] == 0) {
            char prog[64];
            snprintf(prog, sizeof prog, "psm2_isolation_test[%s]", kRoleName[r]);
            t_prog = prog;
            g_fd = fds[r][1];
            exit(run(r));
        }
        close(fds[r][1]);
    }
    /* Every epid to everybody. */
    for (int r = 0; r < N_ROLES; ++r) {
        g_fd = fds[r][0];
        hear(&g_epids[r], sizeof g_epids[r]);
    }
    for (int r = 0; r < N_ROLES; ++r) {
        g_fd = fds[r][0];
        tell(g_epids, sizeof g_epids);
    }
    int failed = 0;
    /* The injector first; then A1 may send; then A0 and B0 look for strays. */
    const int order[N_ROLES] = {INJECTOR, A1, B1, A0, B0};
    for (int k = 0; k < N_ROLES; ++k) {
        const int r = order[k];
        if (r == A1 || r == A0 || r == B0) {
            g_fd = fds[r][0];
            tell("x", 1);
        }
        int status = 0;
        CHECK(waitpid(pids[r], &status, 0) == pids[r]);
        pids[r] = 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "psm2_isolation_test: %s failed (status %d)\n", kRoleName[r], status);
            failed = 1;
            break;
        }
    }
    if (failed) { /* the others may wait for what will never come */
        for (int r = 0; r < N_ROLES; ++r)
            if (pids[r] > 0) {
                kill(pids[r], SIGKILL);
                waitpid(pids[r], NULL, 0);
            }
        return 1;
    }
    printf("psm2_isolation_test: each job took its own messages only; the injector's never arrived\n");
    return 0;
}
