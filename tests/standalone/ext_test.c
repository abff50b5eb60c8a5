/* portico_ext.h as a C client uses it: portico_set_wait_spin_us before and after PtlInit, and
 * that PORTICO_WAIT_SPIN_US in the environment wins (run with "ignored" and the variable set).
 *   ext_test [ignored] */
#include <portals4.h>
#include <portico_ext.h>

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "ext_test: %s:%d: %s\n", __FILE__, __LINE__, #cond);                                       \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv) {
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
