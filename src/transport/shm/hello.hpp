// The hello that opens a shared-memory link: the connector's id and ring size, with the link's
// segment attached (SCM_RIGHTS). A connector sends it right after connect(); the acceptor reads it
// without waiting (ShmTransport::accept_one).
#pragma once

#include <cstdint>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "transport/transport.hpp"

namespace portico::transport::shm {

inline constexpr uint32_t kHelloMagic = 0x50544c34; // "PTL4"; also the segment header's magic
inline constexpr uint32_t kSegmentVersion = 2;

struct Hello {
    uint32_t magic;
    uint32_t version;
    uint32_t nid;
    uint32_t pid;
    uint64_t ring_bytes;
};

// Sends hello with the segment's descriptor attached; false unless all of it left.
bool send_hello(int s, const Hello &hello, int segment_fd);

// Receives one hello without waiting: recvmsg's result (-1 with errno EAGAIN: nothing yet), the
// hello in *hello and the attached descriptor in *segment_fd (-1 if none came; close-on-exec).
ssize_t receive_hello(int s, Hello *hello, int *segment_fd);

} // namespace portico::transport::shm
