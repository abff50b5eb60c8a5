// SPDX-License-Identifier: BSD-3-Clause
// Portico's three PSM2 headers from C++ (the project's warnings, as errors): they must compile
// together in either order, leave every name at global scope with C linkage, and allow what C++
// clients of the PSM2 ABI write (libfabric's psm2 provider and Open MPI's mtl are C, but their
// headers are included from C++ code too). Building this file is the check; running it checks
// the layouts a C++ compiler sees.
#include <psm2_am.h>
#include <psm2_mq.h>
#include <psm2.h>

#include <cstddef>
#include <cstdio>

static_assert(PSM2_VERNO == ((PSM2_VERNO_MAJOR << 8) | PSM2_VERNO_MINOR), "version macros agree");
static_assert(sizeof(psm2_mq_tag_t) == 16 && sizeof(psm2_mq_status_t) == 32 && sizeof(psm2_mq_status2_t) == 64);
static_assert(offsetof(psm2_mq_status2_t, msg_tag) == 16 && alignof(psm2_mq_status2_t) == 16);
static_assert(sizeof(struct psm2_ep_open_opts) == 64 && sizeof(psm2_epinfo_t) == 104 && sizeof(psm2_epconn_t) == 24);
static_assert(sizeof(struct psm2_mq_req_user) == 112 && sizeof(psm2_mq_stats_t) == 232);
static_assert(sizeof(psm2_amarg_t) == 8 && sizeof(psm2_info_query_arg_t) == 8 &&
              sizeof(struct psm2_am_parameters) == 16);
static_assert(PSM2_MQ_INCOMPLETE == 60 && PSM2_MQ_NO_COMPLETIONS == 60 && PSM2_ERROR_LAST == 80);

// A handler of each callback type; the assignments below fail if a typedef differs.
static psm2_error_t on_error(psm2_ep_t, const psm2_error_t error, const char *, psm2_error_token_t) { return error; }
static int on_am(psm2_am_token_t, psm2_amarg_t *, int nargs, void *, uint32_t) { return nargs; }
static int on_am2(psm2_am_token_t, psm2_amarg_t *, int nargs, void *, uint32_t, void *) { return nargs; }
static void on_done(void *) {}
static int on_copy(struct psm2_mq_req_user *, void *, int index) { return index; }

int main() {
    psm2_ep_errhandler_t handlers[] = {on_error, PSM2_ERRHANDLER_PSM_HANDLER, PSM2_ERRHANDLER_NO_HANDLER,
                                       PSM2_ERRHANDLER_DEFAULT, PSM2_ERRHANDLER_NOP};
    const psm2_am_handler_fn_t am[] = {on_am};
    const psm2_am_handler_2_fn_t am2[] = {on_am2};
    psm2_am_completion_fn_t done = on_done;
    psmi_mq_status_copy_user_t copy = on_copy;

    psm2_mq_tag_t tag{};
    tag.tag0 = 1; // anonymous members, as clients use them
    tag.tag[2] = 3;
    psm2_amarg_t arg{};
    arg.u64 = 0x0004000300020001ULL;
    psm2_mq_req_t req = PSM2_MQ_REQINVALID;
    psm2_epaddr_t any = PSM2_MQ_ANY_ADDR;
    psm2_info_query_arg_t query_arg{};
    query_arg.unit = 0;
    struct psm2_optkey key = {PSM2_MQ_RNDV_HFI_SZ, nullptr};
    uint64_t caps = PSM2_MULTI_EP_CAP | PSM2_LIB_REFCOUNT_CAP;
    psm2_error_t incomplete = PSM2_MQ_INCOMPLETE;

    bool ok = handlers[1] == PSM2_ERRHANDLER_DEFAULT && handlers[2] == PSM2_ERRHANDLER_NOP && am[0] && am2[0] && done &&
              copy && tag.tag2 == 3 && query_arg.unit == 0 && arg.u16w3 == 1 && arg.u32w0 == 0x00040003u &&
              req == nullptr && any == nullptr && key.key == 0x301 && caps == 3 && incomplete == 60 &&
              PSM2_EP_OPEN_PKEY_DEFAULT == ~0ULL;
    if (!ok) std::puts("psm2 headers: unexpected values from C++");
    return ok ? 0 : 1;
}
