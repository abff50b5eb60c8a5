/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank of the start-up benchmark (bench/startup/startup.sh): what every Portals job does
 * before its first message — a logical NI (the job's rank map, a collective), its id, a barrier —
 * and then it ends. */
#include <portals4.h>
#include <portico_runtime.h>

#include <stdio.h>

int main(void) {
    ptl_handle_ni_t ni;
    ptl_process_t id;
    if (PtlInit() != PTL_OK) return 1;
    if (PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK ||
        PtlGetId(ni, &id) != PTL_OK || portico_runtime_barrier() != PTL_OK) {
        fprintf(stderr, "startup_rank: start-up failed\n");
        return 1;
    }
    PtlNIFini(ni);
    PtlFini();
    return 0;
}
