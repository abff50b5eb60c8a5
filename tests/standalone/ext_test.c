/* SPDX-License-Identifier: BSD-3-Clause */
/* portico_ext.h as a C client uses it: portico_set_wait_spin_us before and after PtlInit, and
 * that PORTICO_WAIT_SPIN_US in the environment wins (run with "ignored" and the variable set);
 * portico_set_transport's choice of TCP reaches the NI and not the environment, and
 * PORTICO_TRANSPORT wins over it (run with "transport", or "transport-ignored" and the variable
 * naming shm first).
 *   ext_test [ignored | transport | transport-ignored] */
#include <portals4.h>
#include <portico_ext.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "ext_test: %s:%d: %s\n", __FILE__, __LINE__, #cond);                                       \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

/* With TCP chosen, a peer on this machine (ourselves) is reached over the network; with shared
 * memory first, through memory. */
static int transport_choice(int env_wins) {
    CHECK(portico_set_transport(NULL) == PTL_ARG_INVALID);
    CHECK(portico_set_transport("") == PTL_ARG_INVALID);
    CHECK(portico_set_transport("no-such-transport") == PTL_ARG_INVALID);
    CHECK(portico_set_transport("tcp,tcp") == PTL_ARG_INVALID);
    CHECK(portico_set_transport("tcp") == (env_wins ? PTL_IGNORED : PTL_OK));
    /* The choice stays in the engine. */
    const char *env = getenv("PORTICO_TRANSPORT");
    CHECK(env_wins ? env != NULL && strcmp(env, "shm,tcp") == 0 : env == NULL || *env == 0);
    CHECK(PtlInit() == PTL_OK);
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni) == PTL_OK);
    ptl_process_t me;
    CHECK(PtlGetPhysId(ni, &me) == PTL_OK);
    int shares = -1;
    CHECK(portico_peer_shares_memory(ni, me, &shares) == PTL_OK);
    CHECK(shares == (env_wins ? 1 : 0));
    CHECK(PtlNIFini(ni) == PTL_OK);
    PtlFini();
    puts("ext_test: ok");
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strncmp(argv[1], "transport", 9) == 0) return transport_choice(strcmp(argv[1], "transport") != 0);
    const int expect = argc > 1 && strcmp(argv[1], "ignored") == 0 ? PTL_IGNORED : PTL_OK;
    CHECK(portico_set_wait_spin_us(0) == expect);
    CHECK(PtlInit() == PTL_OK);
    ptl_handle_ni_t ni;
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni) == PTL_OK);
    ptl_handle_eq_t eq;
    CHECK(PtlEQAlloc(ni, 8, &eq) == PTL_OK);
    ptl_event_t ev;
    unsigned which;
    /* A wait with no spin at all (or the environment's) still times out as it should. */
    CHECK(PtlEQPoll(&eq, 1, 20, &ev, &which) == PTL_EQ_EMPTY);
    CHECK(portico_set_wait_spin_us(1000) == expect);
    CHECK(PtlEQPoll(&eq, 1, 5, &ev, &which) == PTL_EQ_EMPTY);
    CHECK(PtlEQFree(eq) == PTL_OK);
    CHECK(PtlNIFini(ni) == PTL_OK);
    PtlFini();
    puts("ext_test: ok");
    return 0;
}
