/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gasnet_hello: the two halves of GASNet in a few lines each, on any number of nodes.
 *
 *   cc hello.c $(pkg-config --cflags --libs gasnet-seq)
 *   portico-run -n 4 ./a.out
 *
 * 1. Active Messages: every node sends a request to its right neighbour. The neighbour's request
 *    handler asks GASNet who sent it and answers with a reply; the sender's reply handler records
 *    the answer. Handlers run inside GASNet calls (here GASNET_BLOCKUNTIL), never on their own.
 * 2. One-sided access: every node puts a greeting into its right neighbour's segment (memory
 *    that gasnet_attach registered for remote access) and reads it back with a get; nobody on the
 *    neighbour's side takes part. A barrier then guarantees every put has landed, so each node
 *    finds its left neighbour's greeting in its own segment.
 * Each node prints two lines and checks what it saw: a wrong value exits with status 1.
 */
#include <gasnet.h>

#include <stdio.h>
#include <string.h>

/* Client handler indices are the client's choice within 128..255. */
#define H_HELLO_REQUEST 128
#define H_HELLO_REPLY 129
#define GREETING_LEN 64

/* Written by the reply handler, read by the loop waiting for it: volatile, since the handler runs
 * within GASNET_BLOCKUNTIL's polling and the compiler cannot see that call change them. */
static volatile int reply_arrived = 0;
static volatile gasnet_handlerarg_t replier = -1, sender_seen_by_replier = -1;

static void hello_request(gasnet_token_t token) {
    gasnet_node_t source = 0;
    gasnet_AMGetMsgSource(token, &source);
    /* A request handler may send one reply, to the requester only, through the token. */
    gasnet_AMReplyShort2(token, H_HELLO_REPLY, (gasnet_handlerarg_t)gasnet_mynode(), (gasnet_handlerarg_t)source);
}

static void hello_reply(gasnet_token_t token, gasnet_handlerarg_t from, gasnet_handlerarg_t you) {
    (void)token;
    replier = from;
    sender_seen_by_replier = you;
    reply_arrived = 1;
}

static void barrier(void) {
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
}

static void fail(const char *what) {
    fprintf(stderr, "gasnet_hello: node %u: %s\n", gasnet_mynode(), what);
    gasnet_exit(1);
}

int main(int argc, char **argv) {
    if (gasnet_init(&argc, &argv) != GASNET_OK) {
        fprintf(stderr, "gasnet_hello: start it with a launcher: portico-run -n N (gasnet_init failed)\n");
        return 1;
    }
    gasnet_handlerentry_t handlers[] = {{H_HELLO_REQUEST, (void (*)())hello_request},
                                        {H_HELLO_REPLY, (void (*)())hello_reply}};
    if (gasnet_attach(handlers, 2, GASNET_PAGESIZE, 0) != GASNET_OK) fail("gasnet_attach failed");
    const gasnet_node_t me = gasnet_mynode(), nodes = gasnet_nodes();
    const gasnet_node_t right = (gasnet_node_t)((me + 1) % nodes), left = (gasnet_node_t)((me + nodes - 1) % nodes);
    enum { MAX_NODES = 256 };
    if (nodes > MAX_NODES) fail("at most 256 nodes");
    gasnet_seginfo_t segments[MAX_NODES];
    gasnet_getSegmentInfo(segments, (int)nodes);

    /* 1. Active Messages. */
    gasnet_AMRequestShort0(right, H_HELLO_REQUEST);
    GASNET_BLOCKUNTIL(reply_arrived);
    if (replier != (gasnet_handlerarg_t)right || sender_seen_by_replier != (gasnet_handlerarg_t)me)
        fail("the reply does not match the request");
    printf("[node %u of %u] AM request to node %u: its handler saw it come from node %d and replied\n", me, nodes,
           right, (int)sender_seen_by_replier);

    /* 2. Put and get: the greeting goes to the start of the right neighbour's segment. */
    char greeting[GREETING_LEN], read_back[GREETING_LEN];
    snprintf(greeting, sizeof greeting, "hello from node %u", me);
    gasnet_put(right, segments[right].addr, greeting, sizeof greeting);
    gasnet_get(read_back, right, segments[right].addr, sizeof read_back);
    if (strcmp(read_back, greeting) != 0) fail("the get did not read back the put");
    barrier(); /* every node's put has completed: each segment holds its left neighbour's greeting */
    const char *mine = (const char *)segments[me].addr;
    char expected[GREETING_LEN];
    snprintf(expected, sizeof expected, "hello from node %u", left);
    if (strcmp(mine, expected) != 0) fail("the segment does not hold the left neighbour's greeting");
    printf("[node %u of %u] put \"%s\" into node %u's segment and got it back, my segment holds \"%s\"\n", me, nodes,
           greeting, right, mine);

    barrier(); /* nobody leaves while a neighbour may still read its segment */
    gasnet_exit(0);
    return 0;
}
