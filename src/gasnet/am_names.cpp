// The 119 active-message entry points of the spec: 7 families x M = 0..16 arguments. Each packs
// its arguments and calls am_request / am_reply (am.cpp). GASNETP_P<M> is the parameter list of
// M arguments, GASNETP_A<M> the argument list; GASNETP_DEFINE_AM(M) writes the 7 functions.
#include "internal.hpp"

using gasnetp::am_reply;
using gasnetp::am_request;
using gasnetp::kLong;
using gasnetp::kMedium;
using gasnetp::kShort;

#define GASNETP_P0
#define GASNETP_A0
#define GASNETP_P1 GASNETP_P0, gasnet_handlerarg_t a0
#define GASNETP_A1 a0
#define GASNETP_P2 GASNETP_P1, gasnet_handlerarg_t a1
#define GASNETP_A2 GASNETP_A1, a1
#define GASNETP_P3 GASNETP_P2, gasnet_handlerarg_t a2
#define GASNETP_A3 GASNETP_A2, a2
#define GASNETP_P4 GASNETP_P3, gasnet_handlerarg_t a3
#define GASNETP_A4 GASNETP_A3, a3
#define GASNETP_P5 GASNETP_P4, gasnet_handlerarg_t a4
#define GASNETP_A5 GASNETP_A4, a4
#define GASNETP_P6 GASNETP_P5, gasnet_handlerarg_t a5
#define GASNETP_A6 GASNETP_A5, a5
#define GASNETP_P7 GASNETP_P6, gasnet_handlerarg_t a6
#define GASNETP_A7 GASNETP_A6, a6
#define GASNETP_P8 GASNETP_P7, gasnet_handlerarg_t a7
#define GASNETP_A8 GASNETP_A7, a7
#define GASNETP_P9 GASNETP_P8, gasnet_handlerarg_t a8
#define GASNETP_A9 GASNETP_A8, a8
#define GASNETP_P10 GASNETP_P9, gasnet_handlerarg_t a9
#define GASNETP_A10 GASNETP_A9, a9
#define GASNETP_P11 GASNETP_P10, gasnet_handlerarg_t a10
#define GASNETP_A11 GASNETP_A10, a10
#define GASNETP_P12 GASNETP_P11, gasnet_handlerarg_t a11
#define GASNETP_A12 GASNETP_A11, a11
#define GASNETP_P13 GASNETP_P12, gasnet_handlerarg_t a12
#define GASNETP_A13 GASNETP_A12, a12
#define GASNETP_P14 GASNETP_P13, gasnet_handlerarg_t a13
#define GASNETP_A14 GASNETP_A13, a13
#define GASNETP_P15 GASNETP_P14, gasnet_handlerarg_t a14
#define GASNETP_A15 GASNETP_A14, a14
#define GASNETP_P16 GASNETP_P15, gasnet_handlerarg_t a15
#define GASNETP_A16 GASNETP_A15, a15

#define GASNETP_DEFINE_AM(M)                                                                                           \
    GASNETP_EXPORT int gasnet_AMRequestShort##M(gasnet_node_t dest, gasnet_handler_t handler GASNETP_P##M) {           \
        const gasnet_handlerarg_t args[(M) + 1] = {GASNETP_A##M};                                                      \
        return am_request(kShort, dest, handler, nullptr, 0, nullptr, M, args, false);                                 \
    }                                                                                                                  \
    GASNETP_EXPORT int gasnet_AMRequestMedium##M(gasnet_node_t dest, gasnet_handler_t handler, void *source_addr,      \
                                                 size_t nbytes GASNETP_P##M) {                                         \
        const gasnet_handlerarg_t args[(M) + 1] = {GASNETP_A##M};                                                      \
        return am_request(kMedium, dest, handler, source_addr, nbytes, nullptr, M, args, false);                       \
    }                                                                                                                  \
    GASNETP_EXPORT int gasnet_AMRequestLong##M(gasnet_node_t dest, gasnet_handler_t handler, void *source_addr,        \
                                               size_t nbytes, void *dest_addr GASNETP_P##M) {                          \
        const gasnet_handlerarg_t args[(M) + 1] = {GASNETP_A##M};                                                      \
        return am_request(kLong, dest, handler, source_addr, nbytes, dest_addr, M, args, false);                       \
    }                                                                                                                  \
    GASNETP_EXPORT int gasnet_AMRequestLongAsync##M(gasnet_node_t dest, gasnet_handler_t handler, void *source_addr,   \
                                                    size_t nbytes, void *dest_addr GASNETP_P##M) {                     \
        const gasnet_handlerarg_t args[(M) + 1] = {GASNETP_A##M};                                                      \
        return am_request(kLong, dest, handler, source_addr, nbytes, dest_addr, M, args, true);                        \
    }                                                                                                                  \
    GASNETP_EXPORT int gasnet_AMReplyShort##M(gasnet_token_t token, gasnet_handler_t handler GASNETP_P##M) {           \
        const gasnet_handlerarg_t args[(M) + 1] = {GASNETP_A##M};                                                      \
        return am_reply(kShort, token, handler, nullptr, 0, nullptr, M, args);                                         \
    }                                                                                                                  \
    GASNETP_EXPORT int gasnet_AMReplyMedium##M(gasnet_token_t token, gasnet_handler_t handler, void *source_addr,      \
                                               size_t nbytes GASNETP_P##M) {                                           \
        const gasnet_handlerarg_t args[(M) + 1] = {GASNETP_A##M};                                                      \
        return am_reply(kMedium, token, handler, source_addr, nbytes, nullptr, M, args);                               \
    }                                                                                                                  \
    GASNETP_EXPORT int gasnet_AMReplyLong##M(gasnet_token_t token, gasnet_handler_t handler, void *source_addr,        \
                                             size_t nbytes, void *dest_addr GASNETP_P##M) {                            \
        const gasnet_handlerarg_t args[(M) + 1] = {GASNETP_A##M};                                                      \
        return am_reply(kLong, token, handler, source_addr, nbytes, dest_addr, M, args);                               \
    }

GASNETP_DEFINE_AM(0)
GASNETP_DEFINE_AM(1)
GASNETP_DEFINE_AM(2)
GASNETP_DEFINE_AM(3)
GASNETP_DEFINE_AM(4)
GASNETP_DEFINE_AM(5)
GASNETP_DEFINE_AM(6)
GASNETP_DEFINE_AM(7)
GASNETP_DEFINE_AM(8)
GASNETP_DEFINE_AM(9)
GASNETP_DEFINE_AM(10)
GASNETP_DEFINE_AM(11)
GASNETP_DEFINE_AM(12)
GASNETP_DEFINE_AM(13)
GASNETP_DEFINE_AM(14)
GASNETP_DEFINE_AM(15)
GASNETP_DEFINE_AM(16)
