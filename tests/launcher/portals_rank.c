/* SPDX-License-Identifier: BSD-3-Clause */
/* A Portals rank for launcher tests: opens a logical NI (collective over the job), then either
 * exits with a code or blocks in PtlEQWait on an event that never comes.
 *   portals_rank EXITING_RANK CODE   rank EXITING_RANK exits with CODE (returns it from main), the
 *                                    others block; CODE "kill": it is killed by SIGKILL instead */
#include <portals4.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: portals_rank EXITING_RANK CODE\n");
        return 2;
    }
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_rank_t rank;
    ptl_process_t id;
    if (PtlInit() != PTL_OK ||
        PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK ||
        PtlGetId(ni, &id) != PTL_OK || PtlEQAlloc(ni, 8, &eq) != PTL_OK) {
        fprintf(stderr, "portals_rank: setup failed\n");
        return 2;
    }
    rank = id.rank;
    printf("rank %u ready\n", (unsigned)rank);
    fflush(stdout);
    if ((long)rank == atol(argv[1])) {
        if (strcmp(argv[2], "kill") == 0) raise(SIGKILL);
        return atoi(argv[2]);
    }
    ptl_event_t ev;
    PtlEQWait(eq, &ev); /* nothing ever arrives: only the launcher watch ends this process */
    return 0;
}
