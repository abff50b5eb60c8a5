/* A job in which one rank dies mid-job (SIGKILL to itself, as a crash would): the survivors must
 * see their operations on it end in failure events, never hang. Run with N >= 2 ranks.
 *   rank N-1: the victim. It exposes nothing, so the survivors' gets to it are never answered.
 *   others:   post a get to the victim, tell the launcher they are ready (PMI barrier), then wait
 *             for the REPLY, which must come with PTL_NI_UNDELIVERABLE once the victim is dead.
 * Each survivor writes its report to a file and a line to a FIFO, which the victim's wrapper
 * (dead_peer_rank.sh) waits for before it tells the launcher about the death by exiting. */
#include <portals4.h>
#include <portico_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void check(int rc, const char *what) {
    if (rc != PTL_OK) {
        printf("FAIL %s: rc=%d\n", what, rc);
        fflush(stdout);
        exit(1);
    }
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
    if (me.rank == victim) {
        check(portico_runtime_barrier(), "barrier");
        raise(SIGKILL);
    }
    static char buf[4096];
    ptl_md_t md = {buf, sizeof buf, 0, eq, PTL_CT_NONE};
    ptl_handle_md_t mdh;
    check(PtlMDBind(ni, &md, &mdh), "PtlMDBind");
    ptl_process_t target;
    target.rank = victim;
    check(PtlGet(mdh, 0, sizeof buf, target, 0, 0, 0, (void *)1), "PtlGet");
    check(portico_runtime_barrier(), "barrier");
    ptl_event_t ev;
    check(PtlEQWait(eq, &ev), "PtlEQWait");
    if (ev.type != PTL_EVENT_REPLY || ev.ni_fail_type != PTL_NI_UNDELIVERABLE || ev.user_ptr != (void *)1) {
        printf("FAIL rank %u: event %d fail %d\n", (unsigned)me.rank, (int)ev.type, (int)ev.ni_fail_type);
        fflush(stdout);
        return 1;
    }
    /* A file, not stdout: once the launcher reacts to the death it kills the remote shells, and
     * with them the pipes that carry the ranks' output (as with ssh). */
    const char *dir = getenv("DEAD_PEER_REPORT_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%u", dir ? dir : ".", (unsigned)me.rank);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "rank %u: the get to dead rank %u ended with PTL_NI_UNDELIVERABLE\n", (unsigned)me.rank, (unsigned)victim);
    fclose(f);
    /* Tell the victim's wrapper (dead_peer_rank.sh) that this survivor has reported. */
    snprintf(path, sizeof path, "%s/fifo", dir ? dir : ".");
    f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "%u\n", (unsigned)me.rank);
    fclose(f);
    for (;;) pause(); /* the launcher ends the job */
}
