#include "transport/shm/hello.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace portico::transport::shm {

namespace {

// A hello and room for the segment's descriptor (SCM_RIGHTS), as sendmsg and recvmsg take it.
struct HelloMessage {
    Hello hello{};
    iovec iov{};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))]{};
    msghdr msg{};
    HelloMessage() {
        iov = {&hello, sizeof hello};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctrl;
        msg.msg_controllen = sizeof ctrl;
    }
    HelloMessage(const HelloMessage &) = delete; // msg points into itself
    HelloMessage &operator=(const HelloMessage &) = delete;
};

} // namespace

bool send_hello(int s, const Hello &hello, int segment_fd) {
    HelloMessage m;
    m.hello = hello;
    cmsghdr *c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &segment_fd, sizeof(int));
    return ::sendmsg(s, &m.msg, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof m.hello);
}

ssize_t receive_hello(int s, Hello *hello, int *segment_fd) {
    HelloMessage m;
    *segment_fd = -1;
    const ssize_t n = ::recvmsg(s, &m.msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) return n;
    // Whatever descriptors came are ours now: a hello carries exactly one, and any other count
    // (room for two fits the control buffer) is closed rather than leaked.
    int got = 0;
    for (cmsghdr *c = CMSG_FIRSTHDR(&m.msg); c; c = CMSG_NXTHDR(&m.msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (++got == 1)
                *segment_fd = fd;
            else
                ::close(fd);
        }
    }
    if (got > 1) {
        ::close(*segment_fd);
        *segment_fd = -1;
    }
    *hello = m.hello;
    return n;
}

} // namespace portico::transport::shm
