// SPDX-License-Identifier: BSD-3-Clause
// The hello that opens a shared-memory link: the connector's id, the id it means to reach, its
// ring size and, when its process has a job secret, a proof of it; the link's segment comes
// attached (SCM_RIGHTS). A connector sends it right after connect(); the acceptor reads it without
// waiting (ShmTransport::accept_one).
//
// The proof is HMAC-SHA-256, keyed with the job secret, over the hello and both processes' pids as
// the kernel reports them to each side (SO_PEERCRED on the connected socket) and their uid. Only
// the acceptor ever sees it, and it is worth nothing elsewhere: presented by any other process, or
// to any other process, the pids do not match (a replayed or relayed hello fails). The acceptor
// needs no round trip to check it, so the connector may push frames at once, as before; an
// acceptor that cannot check it (another secret, or none) refuses the link and never reads them.
#pragma once

#include <cstdint>
#include <string>
#include <sys/socket.h>
#include <sys/types.h>

#include "transport/transport.hpp"

namespace portico::transport::shm {

inline constexpr uint32_t kHelloMagic = 0x50544c34; // "PTL4"; also the segment header's magic
inline constexpr uint32_t kHelloVersion = 4;
inline constexpr uint32_t kSegmentVersion = 3;
inline constexpr uint32_t kHelloProven = 1; // flags: the connector has a job secret; mac proves it

struct Hello {
    uint32_t magic;
    uint32_t version;
    uint32_t nid, pid;       // the connector
    uint64_t ring_bytes;     // of each of the segment's two rings
    uint32_t to_nid, to_pid; // the endpoint it means to reach
    uint32_t flags;
    uint32_t reserved; // zero
    uint8_t nonce[16];
    uint8_t mac[32]; // with kHelloProven: see above; else zero
};
static_assert(sizeof(Hello) == 88, "the hello's layout is part of the protocol");

// Who is on each end of the socket, as the kernel says (SO_PEERCRED) and the process knows itself.
struct LinkEnds {
    pid_t connector;
    pid_t acceptor;
    uid_t uid;
};

// A connector's hello, proven with secret when it is not empty.
Hello make_hello(PeerId from, PeerId to, uint64_t ring_bytes, const std::string &secret, const LinkEnds &ends);
// Whether hello's proof is good for secret and these ends (false when it carries none).
bool hello_proven(const Hello &hello, const std::string &secret, const LinkEnds &ends);

// Sends hello with the segment's descriptor attached; false unless all of it left.
bool send_hello(int s, const Hello &hello, int segment_fd);

// Receives one hello without waiting: recvmsg's result (-1 with errno EAGAIN: nothing yet), the
// hello in *hello and the attached descriptor in *segment_fd (-1 if none came; close-on-exec).
ssize_t receive_hello(int s, Hello *hello, int *segment_fd);

// Why an acceptor refused a link, told to the connector in one byte before it closes (the
// socket's doorbell bytes are zero).
enum class Refusal : char { NoProof = 'P', OtherSecret = 'S', NoSecretHere = 'N', NotAddressedHere = 'A' };
const char *refusal_text(char code); // for the connector's message; "" for a byte that is none

} // namespace portico::transport::shm
