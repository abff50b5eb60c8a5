// SPDX-License-Identifier: BSD-3-Clause
// Conformance: initialization and finalization (spec §3.5, §3.6.2).
//
// The only test of its binary: it must run before anything initialized Portals in the process, and
// it finalizes the library (after which §3.5.1 forbids PtlInit).
#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

// §3.5.1, §3.5.2, §3.6.2. Runs without the fixture: it manages PtlInit/PtlFini itself.
TEST(Init, NoInitBeforePtlInitAndNesting) {
    // Never initialized in this process: every call reports PTL_NO_INIT.
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_ni_limits_t limits{};
    EXPECT_RC(PTL_NO_INIT, PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, nullptr, &limits, &ni));
    EXPECT_RC(PTL_NO_INIT, PtlNIFini(ni));
    ptl_handle_eq_t eq;
    EXPECT_RC(PTL_NO_INIT, PtlEQAlloc(ni, 16, &eq));
    ptl_handle_ct_t ct;
    EXPECT_RC(PTL_NO_INIT, PtlCTAlloc(ni, &ct));
    ptl_uid_t uid;
    EXPECT_RC(PTL_NO_INIT, PtlGetUid(ni, &uid));
    ptl_process_t id;
    EXPECT_RC(PTL_NO_INIT, PtlGetId(ni, &id));
    EXPECT_RC(PTL_NO_INIT, PtlGetPhysId(ni, &id));
    ptl_sr_value_t v;
    EXPECT_RC(PTL_NO_INIT, PtlNIStatus(ni, PTL_SR_DROP_COUNT, &v));
    ptl_pt_index_t pt;
    EXPECT_RC(PTL_NO_INIT, PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &pt));

    // Reference counting: two PtlInit need two PtlFini.
    ASSERT_PTL(PtlInit());
    ASSERT_PTL(PtlInit());
    PtlFini();
    ASSERT_PTL(PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, nullptr, &limits, &ni))
        << "the library must stay initialized after 1 of 2 PtlFini";

    // Exactly one of MATCHING/NO_MATCHING and one of LOGICAL/PHYSICAL (§3.6.2).
    ptl_handle_ni_t bad = PTL_INVALID_HANDLE;
    EXPECT_RC(PTL_ARG_INVALID, PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL,
                                         PTL_PID_ANY, nullptr, &limits, &bad));
    EXPECT_RC(PTL_ARG_INVALID, PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL | PTL_NI_PHYSICAL,
                                         PTL_PID_ANY, nullptr, &limits, &bad));
    EXPECT_RC(PTL_ARG_INVALID, PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_PHYSICAL, PTL_PID_ANY, nullptr, &limits, &bad));
    EXPECT_RC(PTL_ARG_INVALID, PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING, PTL_PID_ANY, nullptr, &limits, &bad));
    // pid must be < PTL_PID_MAX or PTL_PID_ANY.
    EXPECT_RC(PTL_ARG_INVALID, PtlNIInit(PTL_IFACE_DEFAULT, kNonMatchingPhysical, PTL_PID_MAX, nullptr, &limits, &bad));

    EXPECT_PTL(PtlNIFini(ni));
    PtlFini();
    // Finalized again.
    EXPECT_RC(PTL_NO_INIT, PtlNIInit(PTL_IFACE_DEFAULT, kMatchingPhysical, PTL_PID_ANY, nullptr, &limits, &ni));
    barrier();
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
