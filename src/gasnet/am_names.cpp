// SPDX-License-Identifier: BSD-3-Clause
// The 119 active-message entry points of the spec, from the one table in gasnet.h
// (GASNETP_AM_FAMILIES x GASNETP_AM_ARGUMENT_COUNTS): each packs its handler arguments and passes
// them, with its family's leading arguments, to the family's function below, which calls
// am_request or am_reply (am.cpp).
#include "internal.hpp"

using gasnetp::am_reply;
using gasnetp::am_request;
using gasnetp::kLong;
using gasnetp::kMedium;
using gasnetp::kShort;

namespace {

using Args = const gasnet_handlerarg_t *;

int request_short(gasnet_node_t dest, gasnet_handler_t handler, unsigned count, Args args) {
    return am_request(kShort, dest, handler, nullptr, 0, nullptr, count, args, false);
}
int request_medium(gasnet_node_t dest, gasnet_handler_t handler, void *source_addr, size_t nbytes, unsigned count,
                   Args args) {
    return am_request(kMedium, dest, handler, source_addr, nbytes, nullptr, count, args, false);
}
int request_long(gasnet_node_t dest, gasnet_handler_t handler, void *source_addr, size_t nbytes, void *dest_addr,
                 unsigned count, Args args) {
    return am_request(kLong, dest, handler, source_addr, nbytes, dest_addr, count, args, false);
}
int request_long_async(gasnet_node_t dest, gasnet_handler_t handler, void *source_addr, size_t nbytes, void *dest_addr,
                       unsigned count, Args args) {
    return am_request(kLong, dest, handler, source_addr, nbytes, dest_addr, count, args, true);
}
int reply_short(gasnet_token_t token, gasnet_handler_t handler, unsigned count, Args args) {
    return am_reply(kShort, token, handler, nullptr, 0, nullptr, count, args);
}
int reply_medium(gasnet_token_t token, gasnet_handler_t handler, void *source_addr, size_t nbytes, unsigned count,
                 Args args) {
    return am_reply(kMedium, token, handler, source_addr, nbytes, nullptr, count, args);
}
int reply_long(gasnet_token_t token, gasnet_handler_t handler, void *source_addr, size_t nbytes, void *dest_addr,
               unsigned count, Args args) {
    return am_reply(kLong, token, handler, source_addr, nbytes, dest_addr, count, args);
}

} // namespace

// The family's function for each name of the table.
#define GASNETP_AM_IMPL_RequestShort request_short
#define GASNETP_AM_IMPL_RequestMedium request_medium
#define GASNETP_AM_IMPL_RequestLong request_long
#define GASNETP_AM_IMPL_RequestLongAsync request_long_async
#define GASNETP_AM_IMPL_ReplyShort reply_short
#define GASNETP_AM_IMPL_ReplyMedium reply_medium
#define GASNETP_AM_IMPL_ReplyLong reply_long

// The leading arguments come as a parenthesised list: GASNETP_AM_CALL(f, (dest, handler), M, args)
// is f(dest, handler, M, args).
#define GASNETP_AM_UNPAREN(...) __VA_ARGS__
#define GASNETP_AM_CALL(f, leading, M, args) f(GASNETP_AM_UNPAREN leading, M, args)

// The arguments follow a spare first slot: the list of their names starts with a comma, and a
// zero-length array is not C++.
#define GASNETP_AM_DEFINE_ONE(M, family, params, leading)                                                              \
    GASNETP_EXPORT int gasnet_AM##family##M params {                                                                   \
        const gasnet_handlerarg_t slots[(M) + 1] = {0 GASNETP_AM_HANDLER_ARGS##M()};                                   \
        return GASNETP_AM_CALL(GASNETP_AM_IMPL_##family, leading, M, slots + 1);                                       \
    }
#define GASNETP_AM_DEFINE(M) GASNETP_AM_FAMILIES(GASNETP_AM_DEFINE_ONE, M)

GASNETP_AM_ARGUMENT_COUNTS(GASNETP_AM_DEFINE)
