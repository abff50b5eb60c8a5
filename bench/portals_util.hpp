// Portals helpers shared by the tests: error checking with readable names, RAII for the library
// and an NI, and the exchange of endpoint ids over PMI.
#pragma once

#include <string>
#include <vector>

#include <portals4.h>

namespace portico::bench {

class Job;

const char *rc_name(int rc);
const char *event_name(ptl_event_kind_t k);
const char *fail_name(ptl_ni_fail_t f);

// Throws bench::Error("<what>: PTL_xxx (n)") unless rc == PTL_OK.
void check(int rc, const char *what);

// Throws unless the event completed successfully (ni_fail_type PTL_NI_OK).
void check_event(const ptl_event_t &ev, const char *where);

// PtlInit/PtlFini.
class Library {
public:
    Library();
    ~Library();
    Library(const Library &) = delete;
    Library &operator=(const Library &) = delete;
};

// A physical NI (PTL_NI_PHYSICAL plus `matching`: PTL_NI_MATCHING or PTL_NI_NO_MATCHING).
class PhysicalNi {
public:
    explicit PhysicalNi(unsigned matching = PTL_NI_MATCHING);
    ~PhysicalNi();
    PhysicalNi(const PhysicalNi &) = delete;
    PhysicalNi &operator=(const PhysicalNi &) = delete;

    ptl_handle_ni_t handle() const { return ni_; }
    ptl_process_t id() const { return id_; }
    const ptl_ni_limits_t &limits() const { return limits_; }

private:
    ptl_handle_ni_t ni_ = PTL_INVALID_HANDLE;
    ptl_process_t id_{};
    ptl_ni_limits_t limits_{};
};

// Where a rank can be reached: its physical id and the portal table index it listens on.
struct Peer {
    ptl_process_t id{};
    ptl_pt_index_t pt = 0;
};

// Collective: every rank publishes its id and pt index; returns all of them in rank order.
std::vector<Peer> exchange_peers(Job &job, ptl_process_t self, ptl_pt_index_t pt);

std::string id_string(ptl_process_t id); // "nid:pid" in hex

// Appends to pt's priority list an ME over [start, start + length) that any process may use
// (match bits 0); throws on failure.
ptl_handle_me_t append_me(ptl_handle_ni_t ni, ptl_pt_index_t pt, void *start, ptl_size_t length, unsigned options,
                          ptl_handle_ct_t ct = PTL_CT_NONE);
// Binds an MD over [start, start + length); throws on failure.
ptl_handle_md_t bind_md(ptl_handle_ni_t ni, void *start, ptl_size_t length, unsigned options,
                        ptl_handle_eq_t eq = PTL_EQ_NONE, ptl_handle_ct_t ct = PTL_CT_NONE);

} // namespace portico::bench
