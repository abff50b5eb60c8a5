// SPDX-License-Identifier: BSD-3-Clause
// Shared helpers of the Portals 4.3 conformance tests.
//
// Every rank of the job runs the same binary and therefore the same TESTs in the same order; a
// test coordinates its phases with Job::get().barrier() and branches on the rank. Each TEST builds
// and tears down its own Portals state: SetUp calls PtlInit, TearDown waits for every rank
// (barrier), closes the NIs the test opened with open_ni() and calls PtlFini. The first SetUp of a
// process also takes one PtlInit reference that is never released, because §3.5.1 forbids PtlInit
// after the library has been finalized: the per-test PtlFini never finalizes, and each test's
// objects go away with its NIs (§3.6.3).
//
// The test main (portico::test::run_all_tests) ends the whole job at the first failed assertion
// on any rank, so helpers may use EXPECT_* and return values: nothing runs after a failure.
#pragma once

#include <portals4.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <source_location>
#include <ostream>
#include <string>
#include <vector>

#include <sys/types.h>

#include "clientkit.hpp"
#include "mpjob.hpp"

namespace ptltest {

using portico::test::Job;

// ---- printable names (for assertion messages) -------------------------------------------------
using portico::clientkit::describe;
using portico::clientkit::event_name;
using portico::clientkit::fail_name;
using portico::clientkit::rc_name;

// Wrappers whose only purpose is to make GoogleTest print names instead of numbers.
struct Rc {
    int v;
    bool operator==(const Rc &) const = default;
};
struct Kind {
    int v;
    bool operator==(const Kind &) const = default;
};
struct Fail {
    int v;
    bool operator==(const Fail &) const = default;
};
struct Ct {
    ptl_size_t success, failure;
    bool operator==(const Ct &) const = default;
};
inline Ct ct_of(const ptl_ct_event_t &e) { return Ct{e.success, e.failure}; }
std::ostream &operator<<(std::ostream &os, Rc rc);
std::ostream &operator<<(std::ostream &os, Kind k);
std::ostream &operator<<(std::ostream &os, Fail f);
std::ostream &operator<<(std::ostream &os, Ct c);

#define ASSERT_RC(expected, call) ASSERT_EQ(::ptltest::Rc{expected}, ::ptltest::Rc{(call)}) << #call
#define EXPECT_RC(expected, call) EXPECT_EQ(::ptltest::Rc{expected}, ::ptltest::Rc{(call)}) << #call
#define ASSERT_PTL(call) ASSERT_RC(PTL_OK, call)
#define EXPECT_PTL(call) EXPECT_RC(PTL_OK, call)

// ---- the job ---------------------------------------------------------------------------------
inline Job &job() { return Job::get(); }
inline int my_rank() { return job().rank(); }
inline int job_size() { return job().size(); }
inline void barrier() { job().barrier(); }

// ---- network interfaces ------------------------------------------------------------------------
constexpr unsigned kMatchingPhysical = PTL_NI_MATCHING | PTL_NI_PHYSICAL;
constexpr unsigned kNonMatchingPhysical = PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL;
constexpr unsigned kMatchingLogical = PTL_NI_MATCHING | PTL_NI_LOGICAL;
constexpr unsigned kNonMatchingLogical = PTL_NI_NO_MATCHING | PTL_NI_LOGICAL;
std::string ni_kind_name(unsigned options);

// An open NI plus what every rank knows about its peers on it (exchanged through the job).
struct Ni {
    ptl_handle_ni_t h = PTL_INVALID_HANDLE;
    unsigned options = 0;
    ptl_ni_limits_t limits{};
    std::vector<ptl_process_t> phys; // PtlGetPhysId of every rank, by rank
    std::vector<ptl_uid_t> uids;     // PtlGetUid of every rank, by rank

    bool logical() const { return (options & PTL_NI_LOGICAL) != 0; }
    bool matching() const { return (options & PTL_NI_MATCHING) != 0; }
    // The id to address rank r with (target_id) and to expect in the initiator field of events.
    ptl_process_t id_of(int r) const;
};

// Opens an NI of the given kind on the default interface, with the `desired` limits if given
// (collective: every rank must call it, in the same order) and exchanges ids and uids. The
// fixture's TearDown closes it unless close_ni() did already.
Ni open_ni(unsigned options, const ptl_ni_limits_t *desired = nullptr);
void close_ni(Ni &ni);
using portico::clientkit::same_process;
std::string process_str(const ptl_process_t &p, bool logical);

// ---- objects ----------------------------------------------------------------------------------
ptl_handle_eq_t make_eq(const Ni &ni, ptl_size_t count = 1024);
ptl_handle_ct_t make_ct(const Ni &ni);
ptl_pt_index_t make_pt(const Ni &ni, ptl_handle_eq_t eq, unsigned options = 0, ptl_pt_index_t req = PTL_PT_ANY);
ptl_handle_md_t bind_md(const Ni &ni, void *start, ptl_size_t length, ptl_handle_eq_t eq,
                        ptl_handle_ct_t ct = PTL_CT_NONE, unsigned options = 0);

using portico::clientkit::le_desc;
using portico::clientkit::me_desc;

// Appends and, unless the entry disables it, consumes and checks its LINK event on `eq`.
ptl_handle_me_t append_me(const Ni &ni, ptl_pt_index_t pt, const ptl_me_t &me, ptl_list_t list, void *user_ptr,
                          ptl_handle_eq_t eq);
ptl_handle_le_t append_le(const Ni &ni, ptl_pt_index_t pt, const ptl_le_t &le, ptl_list_t list, void *user_ptr,
                          ptl_handle_eq_t eq);
// Appends an ME on a matching NI or an LE on a non-matching one (match fields ignored for an LE).
ptl_handle_any_t append_entry(const Ni &ni, ptl_pt_index_t pt, const ptl_me_t &me, ptl_list_t list, void *user_ptr,
                              ptl_handle_eq_t eq);
int unlink_entry(const Ni &ni, ptl_handle_any_t h);

// ---- events ----------------------------------------------------------------------------------
// The blocking helpers below take the caller's location: if the launcher kills a hung job, each
// rank reports where it was blocked (see portico_test_wait_note in tests/support/mpjob.cpp).
// Blocks in PtlEQWait; the return code must be PTL_OK (not PTL_EQ_DROPPED).
ptl_event_t wait_event(ptl_handle_eq_t eq, std::source_location at = std::source_location::current());
// wait_event() and check the kind.
ptl_event_t expect_event(ptl_handle_eq_t eq, ptl_event_kind_t kind,
                         std::source_location at = std::source_location::current());
std::vector<ptl_event_t> wait_events(ptl_handle_eq_t eq, size_t n,
                                     std::source_location at = std::source_location::current());
// PtlEQGet must report PTL_EQ_EMPTY.
void expect_eq_empty(ptl_handle_eq_t eq, const char *what = "");

// Expected fields of a target-side communication or overflow event (Table 3-3). The initiator is
// given as a rank; uid is expected to be that rank's PtlGetUid.
struct TargetEv {
    ptl_event_kind_t type;
    int initiator;
    ptl_pt_index_t pt_index;
    ptl_match_bits_t match_bits = 0;
    ptl_size_t rlength = 0;
    ptl_size_t mlength = 0;
    ptl_size_t remote_offset = 0;
    const void *start = nullptr;
    const void *user_ptr = nullptr;
    std::optional<ptl_hdr_data_t> hdr_data = std::nullopt;
    ptl_ni_fail_t fail = PTL_NI_OK;
};
void check_target_event(const ptl_event_t &ev, const TargetEv &want, const Ni &ni);

// Expected fields of an initiator event (SEND, ACK, REPLY).
struct InitEv {
    ptl_event_kind_t type;
    const void *user_ptr = nullptr;
    std::optional<ptl_size_t> mlength = std::nullopt;
    std::optional<ptl_size_t> remote_offset = std::nullopt;
    std::optional<ptl_list_t> list = std::nullopt;
    ptl_ni_fail_t fail = PTL_NI_OK;
};
void check_init_event(const ptl_event_t &ev, const InitEv &want);

// Checks a LINK / AUTO_UNLINK / AUTO_FREE event.
void check_entry_event(const ptl_event_t &ev, ptl_event_kind_t type, ptl_pt_index_t pt, const void *user_ptr);

// Waits for the SEND and the ACK of one put (any order) on `eq` and checks both.
void expect_send_and_ack(ptl_handle_eq_t eq, const void *user_ptr, ptl_size_t length, ptl_size_t mlength,
                         ptl_size_t remote_offset, ptl_list_t list = PTL_PRIORITY_LIST,
                         std::source_location at = std::source_location::current());
// Waits for the SEND (which must succeed: it reports local errors only, §3.13.3) and the ACK of
// one put, any order; the ACK must report `fail`.
void expect_send_and_failed_ack(ptl_handle_eq_t eq, const void *user_ptr, ptl_size_t length, ptl_ni_fail_t fail,
                                std::source_location at = std::source_location::current());

// Initiator side of simple puts: an MD over a patterned source buffer, with its own EQ.
struct Sender {
    const Ni &ni;
    int target;
    std::vector<uint8_t> src;
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;

    Sender(const Ni &n, size_t size, uint32_t seed, int target_rank = 0);
    // PtlPut with ACK_REQ of src[local_offset, +len) and hdr_data = user_ptr = hdr; waits for the
    // SEND and the ACK and expects the ACK to report `mlength` at `used_offset` in `list`.
    void put(ptl_pt_index_t pt, ptl_size_t len, ptl_match_bits_t bits, ptl_size_t roff, ptl_hdr_data_t hdr,
             ptl_size_t mlength, ptl_size_t used_offset, ptl_list_t list = PTL_PRIORITY_LIST,
             ptl_size_t local_offset = 0, std::source_location at = std::source_location::current());
};

// ---- status registers ------------------------------------------------------------------------
struct Sr {
    ptl_sr_value_t drop = 0, perm = 0, op = 0;
    bool operator==(const Sr &) const = default;
};
std::ostream &operator<<(std::ostream &os, const Sr &s);
Sr read_sr(const Ni &ni);
inline Sr sr_plus(Sr s, ptl_sr_value_t drop, ptl_sr_value_t perm, ptl_sr_value_t op) {
    return Sr{s.drop + drop, s.perm + perm, s.op + op};
}

// ---- counting events --------------------------------------------------------------------------
Ct ct_get(ptl_handle_ct_t ct);
Ct ct_wait(ptl_handle_ct_t ct, ptl_size_t test, std::source_location at = std::source_location::current());
// Waits until both fields have reached `want` (PtlCTWait cannot wait for a failure count above 1,
// and full events and counter updates are unordered, §4.3): PtlCTWait when want.failure == 0,
// otherwise PtlCTGet in a yielding loop. Returns the value seen; callers compare it with `want`
// to catch overshoot.
Ct ct_reach(ptl_handle_ct_t ct, Ct want, std::source_location at = std::source_location::current());

// ---- data -----------------------------------------------------------------------------------
inline uint8_t pattern_byte(uint32_t seed, uint64_t i) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t{seed} * 0xC2B2AE3D27D4EB4Full);
    x ^= x >> 29;
    return static_cast<uint8_t>(x ^ (x >> 17));
}
void fill_pattern(void *buf, size_t n, uint32_t seed, uint64_t first_index = 0);
// Index of the first byte that differs from the pattern, or -1.
long check_pattern(const void *buf, size_t n, uint32_t seed, uint64_t first_index = 0);
// Index of the first byte that is not `value`, or -1.
long check_fill(const void *buf, size_t n, uint8_t value);

inline void *tag(uintptr_t v) { return reinterpret_cast<void *>(v); }

// ---- processes ---------------------------------------------------------------------------------
// Returns once every thread of `pid` is in the stopped state: SIGSTOP is asynchronous, and a
// thread running on another CPU may still process messages after kill() returned.
void wait_until_stopped(pid_t pid);
// True when every rank of the job runs on this host (collective).
bool same_host();

// ---- fixture -----------------------------------------------------------------------------------
class PtlTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    static int rank() { return my_rank(); }
    static int nranks() { return job_size(); }
    // The other rank in a two-rank test.
    static int peer() { return 1 - my_rank(); }
};

// Skips the current test on every rank (deterministically) when the job has fewer than n ranks.
#define REQUIRE_RANKS(n)                                                                                               \
    do {                                                                                                               \
        if (::ptltest::job_size() < (n))                                                                               \
            GTEST_SKIP() << "needs " << (n) << " ranks, job has " << ::ptltest::job_size();                            \
    } while (0)

} // namespace ptltest
