/* SPDX-License-Identifier: BSD-3-Clause */
/* am_loop ROUNDS: a GASNet job of one node sends itself an AM Short request whose handler replies
 * with an AM Short, and waits for the reply's handler (GASNET_BLOCKUNTIL), ROUNDS times: the
 * software of both hops of one `am_short_rt` round trip, both sides, with no cache line crossing
 * cores (Portico's GASNet sends AMs to its own node through Portals like any other). Run alone
 * (no launcher), under callgrind by hop_instructions.sh. Prints the rounds done. */
#include <gasnet.h>

#include <stdio.h>
#include <stdlib.h>

#define H_PING 200
#define H_PONG 201

static volatile long pongs = 0;

static void ping(gasnet_token_t token) { gasnet_AMReplyShort0(token, H_PONG); }
static void pong(gasnet_token_t token) {
    (void)token;
    pongs = pongs + 1;
}

int main(int argc, char **argv) {
    const long rounds = argc > 1 ? atol(argv[1]) : 10000;
    gasnet_handlerentry_t handlers[] = {{H_PING, (void (*)(void))ping}, {H_PONG, (void (*)(void))pong}};
    long i;
    if (gasnet_init(&argc, &argv) != GASNET_OK || gasnet_attach(handlers, 2, 0, 0) != GASNET_OK) {
        fprintf(stderr, "am_loop: gasnet_init/gasnet_attach failed\n");
        return 1;
    }
    for (i = 0; i < rounds; ++i) {
        if (gasnet_AMRequestShort0(gasnet_mynode(), H_PING) != GASNET_OK) {
            fprintf(stderr, "am_loop: gasnet_AMRequestShort0 failed in round %ld\n", i);
            return 1;
        }
        GASNET_BLOCKUNTIL(pongs == i + 1);
    }
    printf("am_loop: %ld rounds\n", rounds);
    gasnet_exit(0);
    return 0;
}
