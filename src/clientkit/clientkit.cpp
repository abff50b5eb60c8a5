// SPDX-License-Identifier: BSD-3-Clause
#include "clientkit.hpp"

#include <portico_runtime.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace portico::clientkit {

std::string failure(int rc, const char *call) {
    return std::string(call) + " failed: " + rc_name(rc) + " (" + std::to_string(rc) + ")";
}

void fail(int rc, const char *call) { throw Error(rc, failure(rc, call)); }

void check_event(const ptl_event_t &ev, const char *where) {
    if (ev.ni_fail_type == PTL_NI_OK) return;
    throw Error(PTL_FAIL, std::string(where) + ": " + event_name(ev.type) + " reports " + fail_name(ev.ni_fail_type));
}

// any_process() relies on these.
static_assert(PTL_RANK_ANY == PTL_NID_ANY && offsetof(ptl_process_t, rank) == offsetof(ptl_process_t, phys.nid));

bool same_process(const ptl_process_t &a, const ptl_process_t &b, bool logical) {
    if (logical) return a.rank == b.rank;
    return a.phys.nid == b.phys.nid && a.phys.pid == b.phys.pid;
}

ptl_md_t md_desc(void *start, ptl_size_t length, unsigned options, ptl_handle_eq_t eq, ptl_handle_ct_t ct) {
    return ptl_md_t{.start = start, .length = length, .options = options, .eq_handle = eq, .ct_handle = ct};
}

ptl_md_t whole_memory_md(unsigned options, ptl_handle_eq_t eq, ptl_handle_ct_t ct) {
    return md_desc(nullptr, PTL_SIZE_MAX, options, eq, ct);
}

ptl_me_t me_desc(void *start, ptl_size_t length, unsigned options, ptl_match_bits_t match_bits,
                 ptl_match_bits_t ignore_bits, ptl_handle_ct_t ct) {
    return ptl_me_t{.start = start,
                    .length = length,
                    .ct_handle = ct,
                    .uid = PTL_UID_ANY,
                    .options = options,
                    .match_id = any_process(),
                    .match_bits = match_bits,
                    .ignore_bits = ignore_bits,
                    .min_free = 0};
}

ptl_le_t le_desc(void *start, ptl_size_t length, unsigned options, ptl_handle_ct_t ct) {
    return ptl_le_t{.start = start, .length = length, .ct_handle = ct, .uid = PTL_UID_ANY, .options = options};
}

Library::Library() { check(PtlInit(), "PtlInit"); }
Library::~Library() { PtlFini(); }

Pt &Pt::operator=(Pt &&o) noexcept {
    if (this != &o) {
        reset();
        ni_ = std::exchange(o.ni_, PTL_INVALID_HANDLE);
        index_ = o.index_;
    }
    return *this;
}

void Pt::reset() noexcept {
    if (ni_ != PTL_INVALID_HANDLE) PtlPTFree(std::exchange(ni_, PTL_INVALID_HANDLE), index_);
}

Ni::Ni(unsigned options, const ptl_ni_limits_t *desired, ptl_pid_t pid) : options_(options) {
    check(PtlNIInit(PTL_IFACE_DEFAULT, options, pid, desired, &limits_, &h_), "PtlNIInit");
    const int rc = PtlGetPhysId(h_, &phys_);
    if (rc != PTL_OK) {
        reset(); // a constructor that throws runs no destructor
        fail(rc, "PtlGetPhysId");
    }
}

Ni::Ni(Ni &&o) noexcept
    : h_(std::exchange(o.h_, PTL_INVALID_HANDLE)), options_(o.options_), limits_(o.limits_), phys_(o.phys_) {}

Ni &Ni::operator=(Ni &&o) noexcept {
    if (this != &o) {
        reset();
        h_ = std::exchange(o.h_, PTL_INVALID_HANDLE);
        options_ = o.options_;
        limits_ = o.limits_;
        phys_ = o.phys_;
    }
    return *this;
}

void Ni::reset() noexcept {
    if (h_ != PTL_INVALID_HANDLE) PtlNIFini(std::exchange(h_, PTL_INVALID_HANDLE));
}

Eq alloc_eq(ptl_handle_ni_t ni, ptl_size_t count) {
    ptl_handle_eq_t h;
    check(PtlEQAlloc(ni, count, &h), "PtlEQAlloc");
    return Eq(h);
}

Ct alloc_ct(ptl_handle_ni_t ni) {
    ptl_handle_ct_t h;
    check(PtlCTAlloc(ni, &h), "PtlCTAlloc");
    return Ct(h);
}

Pt alloc_pt(ptl_handle_ni_t ni, ptl_handle_eq_t eq, ptl_pt_index_t want, unsigned options) {
    ptl_pt_index_t index;
    const int rc = PtlPTAlloc(ni, options, eq, want, &index);
    if (rc != PTL_OK)
        fail(rc, want == PTL_PT_ANY ? "PtlPTAlloc(PTL_PT_ANY)" : ("PtlPTAlloc(" + std::to_string(want) + ")").c_str());
    return Pt(ni, index);
}

Md bind_md(ptl_handle_ni_t ni, const ptl_md_t &md) {
    ptl_handle_md_t h;
    check(PtlMDBind(ni, &md, &h), "PtlMDBind");
    return Md(h);
}

Me append_me(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_me_t &me, ptl_list_t list, void *user_ptr) {
    ptl_handle_me_t h;
    check(PtlMEAppend(ni, pt, &me, list, user_ptr, &h), "PtlMEAppend");
    return Me(h);
}

Le append_le(ptl_handle_ni_t ni, ptl_pt_index_t pt, const ptl_le_t &le, ptl_list_t list, void *user_ptr) {
    ptl_handle_le_t h;
    check(PtlLEAppend(ni, pt, &le, list, user_ptr, &h), "PtlLEAppend");
    return Le(h);
}

ptl_event_t wait_event(ptl_handle_eq_t eq, const char *what) {
    ptl_event_t ev;
    const int rc = PtlEQWait(eq, &ev);
    if (rc != PTL_OK) fail(rc, (std::string("PtlEQWait (") + what + ")").c_str());
    return ev;
}

ptl_event_t expect_event(ptl_handle_eq_t eq, ptl_event_kind_t kind, const char *what) {
    const ptl_event_t ev = wait_event(eq, what);
    if (ev.type != kind)
        throw Error(PTL_FAIL, std::string(what) + ": expected " + event_name(kind) + ", got " + describe(ev));
    check_event(ev, what);
    return ev;
}

ptl_ct_event_t wait_ct(ptl_handle_ct_t ct, ptl_size_t test, const char *what) {
    ptl_ct_event_t c;
    const int rc = PtlCTWait(ct, test, &c);
    if (rc != PTL_OK) fail(rc, (std::string("PtlCTWait (") + what + ")").c_str());
    if (c.failure)
        throw Error(PTL_FAIL, std::string(what) + ": the counter reports " + std::to_string(c.failure) +
                                  " failed and " + std::to_string(c.success) + " successful operations (waiting for " +
                                  std::to_string(test) + ")");
    return c;
}

std::vector<std::string> allgather(const std::string &mine) {
    int size = 0;
    int rc = portico_runtime_size(&size);
    if (rc != PTL_OK && rc != PTL_IGNORED) fail(rc, "portico_runtime_size");
    std::vector<size_t> lens(static_cast<size_t>(size));
    void *all = nullptr;
    rc = portico_runtime_allgatherv(mine.data(), mine.size(), lens.data(), &all);
    if (rc != PTL_OK && rc != PTL_IGNORED) fail(rc, "portico_runtime_allgatherv");
    const std::unique_ptr<char, decltype(&std::free)> owned(static_cast<char *>(all), &std::free);
    std::vector<std::string> parts;
    parts.reserve(lens.size());
    size_t at = 0;
    for (size_t len : lens) {
        parts.emplace_back(owned.get() + at, len);
        at += len;
    }
    return parts;
}

} // namespace portico::clientkit
