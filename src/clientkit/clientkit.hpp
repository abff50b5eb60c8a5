// SPDX-License-Identifier: BSD-3-Clause
// clientkit: the Portals set-up every Portico client needs, written once on the public API.
//
// Users: libgasnet-portico (src/gasnet), the UPC runtime and PSM2 to come, portico-bench and the
// conformance and completion test helpers. It is a client of libportals like any other: it
// includes the installed headers (portals4.h, portico_runtime.h, portico_ext.h) and the standard
// library only, never the engine, the transports or src/common, so whatever it does a Portals
// program could do. It is internal (a static library, not installed): the examples in examples/
// stay self-contained C against portals4.h, because they teach the API itself to people who build
// against an installed Portico.
//
// Error policy, one for every client: names, descriptors and process ids cannot fail; whatever
// here calls into Portals (the set-up functions that hand out owned handles, the waits) throws
// clientkit::Error, through check(), naming the call and the code. A client that must not throw
// (GASNet's fatal errors, a test's EXPECTs, a C ABI) makes the Portals call itself with
// clientkit's descriptors and reports failure(rc, call), the same text, its own way; or catches
// Error at its boundary.
//
// Owned handles (Ni, Eq, Ct, Pt, Md, Me, Le) release their object in their destructor and ignore
// the code: an object still in use there goes with its NI, which PtlNIFini frees whole. Declare
// them in set-up order (NI, EQs and CTs, portal table entries, list entries, MDs): C++ destroys
// members in reverse, which is the order Portals wants them released in.
#pragma once

#include <portals4.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace portico::clientkit {

// ---- names --------------------------------------------------------------------------------------
// The PTL_ name of a constant ("PTL_NO_SPACE", "PTL_EVENT_ACK", "PTL_NI_SEGV", "PTL_CSWAP",
// "PTL_INT64_T"), or a parenthesised "unknown ..." for a value outside its enum.
const char *rc_name(int rc);
const char *event_name(int kind);
const char *fail_name(int fail);
const char *op_name(int op);
const char *datatype_name(int datatype);
// Every field of an event, for failure messages.
std::string describe(const ptl_event_t &ev);

// ---- errors -------------------------------------------------------------------------------------
class Error : public std::runtime_error {
public:
    Error(int rc, const std::string &message) : std::runtime_error(message), rc_(rc) {}
    // The Portals code that failed, or PTL_FAIL for a failure an event or a counter reported.
    int rc() const { return rc_; }

private:
    int rc_;
};

// "<call> failed: PTL_NO_SPACE (10)": the text check() throws, for clients that report otherwise.
std::string failure(int rc, const char *call);
[[noreturn]] void fail(int rc, const char *call);
// Throws Error(rc, failure(rc, call)) unless rc is PTL_OK. Inline: the benchmarks check every put.
inline void check(int rc, const char *call) {
    if (rc != PTL_OK) [[unlikely]]
        fail(rc, call);
}
// Throws Error unless the event reports success: "<where>: PTL_EVENT_ACK reports PTL_NI_DROPPED".
void check_event(const ptl_event_t &ev, const char *where);

// ---- processes ----------------------------------------------------------------------------------
// Inline: GASNet names its target this way in every put.
inline ptl_process_t rank_id(ptl_rank_t rank) {
    ptl_process_t p{}; // the pid's bytes beyond the rank stay zero
    p.rank = rank;
    return p;
}
inline ptl_process_t phys_id(ptl_nid_t nid, ptl_pid_t pid) {
    ptl_process_t p{};
    p.phys.nid = nid;
    p.phys.pid = pid;
    return p;
}
// Matches any initiator, on logical and physical NIs alike: the rank shares its bytes with the
// nid, and PTL_RANK_ANY is PTL_NID_ANY (clientkit.cpp checks both).
inline ptl_process_t any_process() { return phys_id(PTL_NID_ANY, PTL_PID_ANY); }
bool same_process(const ptl_process_t &a, const ptl_process_t &b, bool logical);

// ---- descriptors --------------------------------------------------------------------------------
// Parameters in the order of the structs' fields.
ptl_md_t md_desc(void *start, ptl_size_t length, unsigned options = 0, ptl_handle_eq_t eq = PTL_EQ_NONE,
                 ptl_handle_ct_t ct = PTL_CT_NONE);
// An MD over the whole address space (start NULL, length PTL_SIZE_MAX): local offsets are
// addresses, so one MD serves every buffer.
ptl_md_t whole_memory_md(unsigned options = 0, ptl_handle_eq_t eq = PTL_EQ_NONE, ptl_handle_ct_t ct = PTL_CT_NONE);
// An ME that any initiator with any uid may use; min_free 0.
ptl_me_t me_desc(void *start, ptl_size_t length, unsigned options, ptl_match_bits_t match_bits = 0,
                 ptl_match_bits_t ignore_bits = 0, ptl_handle_ct_t ct = PTL_CT_NONE);
// An LE that any uid may use.
ptl_le_t le_desc(void *start, ptl_size_t length, unsigned options, ptl_handle_ct_t ct = PTL_CT_NONE);

// ---- owned handles ------------------------------------------------------------------------------
// PtlInit on construction (throws), PtlFini on destruction.
class Library {
public:
    Library();
    ~Library();
    Library(const Library &) = delete;
    Library &operator=(const Library &) = delete;
};

template <int (*Release)(ptl_handle_any_t)> class Owned {
public:
    Owned() = default;
    explicit Owned(ptl_handle_any_t h) noexcept : h_(h) {}
    Owned(Owned &&o) noexcept : h_(o.release()) {}
    Owned &operator=(Owned &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = o.release();
        }
        return *this;
    }
    Owned(const Owned &) = delete;
    Owned &operator=(const Owned &) = delete;
    ~Owned() { reset(); }

    ptl_handle_any_t get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != PTL_INVALID_HANDLE; }
    // Gives the handle up without releasing the object.
    ptl_handle_any_t release() noexcept { return std::exchange(h_, PTL_INVALID_HANDLE); }
    void reset() noexcept {
        if (h_ != PTL_INVALID_HANDLE) Release(release());
    }

private:
    ptl_handle_any_t h_ = PTL_INVALID_HANDLE;
};
using Eq = Owned<PtlEQFree>;
using Ct = Owned<PtlCTFree>;
using Md = Owned<PtlMDRelease>;
using Me = Owned<PtlMEUnlink>;
using Le = Owned<PtlLEUnlink>;

// A portal table entry (freed with PtlPTFree, which needs its NI too).
class Pt {
public:
    Pt() = default;
    Pt(ptl_handle_ni_t ni, ptl_pt_index_t index) noexcept : ni_(ni), index_(index) {}
    Pt(Pt &&o) noexcept : ni_(std::exchange(o.ni_, PTL_INVALID_HANDLE)), index_(o.index_) {}
    Pt &operator=(Pt &&o) noexcept;
    Pt(const Pt &) = delete;
    Pt &operator=(const Pt &) = delete;
    ~Pt() { reset(); }

    ptl_pt_index_t index() const noexcept { return index_; }
    explicit operator bool() const noexcept { return ni_ != PTL_INVALID_HANDLE; }
    void reset() noexcept;

private:
    ptl_handle_ni_t ni_ = PTL_INVALID_HANDLE;
    ptl_pt_index_t index_ = 0;
};

// A network interface on PTL_IFACE_DEFAULT. Opening a logical NI under a launcher is collective.
class Ni {
public:
    Ni() = default;
    // options: PTL_NI_MATCHING or PTL_NI_NO_MATCHING, with PTL_NI_PHYSICAL or PTL_NI_LOGICAL.
    // Throws Error if PtlNIInit or PtlGetPhysId fails.
    explicit Ni(unsigned options, const ptl_ni_limits_t *desired = nullptr, ptl_pid_t pid = PTL_PID_ANY);
    Ni(Ni &&o) noexcept;
    Ni &operator=(Ni &&o) noexcept;
    Ni(const Ni &) = delete;
    Ni &operator=(const Ni &) = delete;
    ~Ni() { reset(); }

    ptl_handle_ni_t get() const noexcept { return h_; }
    unsigned options() const noexcept { return options_; }
    bool logical() const noexcept { return (options_ & PTL_NI_LOGICAL) != 0; }
    bool matching() const noexcept { return (options_ & PTL_NI_MATCHING) != 0; }
    const ptl_ni_limits_t &limits() const noexcept { return limits_; }
    ptl_process_t phys_id() const noexcept { return phys_; }
    void reset() noexcept;

private:
    ptl_handle_ni_t h_ = PTL_INVALID_HANDLE;
    unsigned options_ = 0;
    ptl_ni_limits_t limits_{};
    ptl_process_t phys_{};
};

// ---- set-up (each throws Error naming the call) -------------------------------------------------
Eq alloc_eq(ptl_handle_ni_t ni, ptl_size_t count);
Ct alloc_ct(ptl_handle_ni_t ni);
// The entry `want` (PTL_PT_ANY: any free one) with its events on eq (PTL_EQ_NONE: none).
Pt alloc_pt(ptl_handle_ni_t ni, ptl_handle_eq_t eq, ptl_pt_index_t want = PTL_PT_ANY, unsigned options = 0);
Md bind_md(ptl_handle_ni_t ni, const ptl_md_t &md);
Me append_me(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_me_t &me, ptl_list_t list = PTL_PRIORITY_LIST,
             void *user_ptr = nullptr);
Le append_le(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_le_t &le, ptl_list_t list = PTL_PRIORITY_LIST,
             void *user_ptr = nullptr);

// ---- waiting (each throws Error naming `what`) --------------------------------------------------
// The next event (PtlEQWait); PTL_EQ_DROPPED is an error: an event was lost.
ptl_event_t wait_event(ptl_handle_eq_t eq, const char *what);
// The next event, which must be of `kind` and report success.
ptl_event_t expect_event(ptl_handle_eq_t eq, ptl_event_kind_t kind, const char *what);
// PtlCTWait until the success count reaches `test`; the counter must report no failure.
ptl_ct_event_t wait_ct(ptl_handle_ct_t ct, ptl_size_t test, const char *what);

// ---- the job (portico_runtime.h; each throws Error naming the call) -----------------------------
// Every rank's contribution, any bytes of any length, in rank order (portico_runtime_allgatherv).
// A process without a launcher is a job of one (PTL_IGNORED is no error).
std::vector<std::string> allgather(const std::string &mine);

} // namespace portico::clientkit
