// SPDX-License-Identifier: BSD-3-Clause
#include "transport/shm/hello.hpp"

#include <sys/random.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "common/sha256.hpp"

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

// The MAC over the hello (its mac field zero) and the ends.
Digest mac_of(const Hello &hello, const std::string &secret, const LinkEnds &ends) {
    struct {
        Hello hello;
        int64_t connector, acceptor, uid;
    } signed_part{};
    signed_part.hello = hello;
    std::memset(signed_part.hello.mac, 0, sizeof signed_part.hello.mac);
    signed_part.connector = ends.connector;
    signed_part.acceptor = ends.acceptor;
    signed_part.uid = ends.uid;
    return hmac_sha256(secret.data(), secret.size(), &signed_part, sizeof signed_part);
}

} // namespace

Hello make_hello(PeerId from, PeerId to, uint64_t ring_bytes, const std::string &secret, const LinkEnds &ends) {
    Hello h{};
    h.magic = kHelloMagic;
    h.version = kHelloVersion;
    h.nid = from.nid;
    h.pid = from.pid;
    h.ring_bytes = ring_bytes;
    h.to_nid = to.nid;
    h.to_pid = to.pid;
    if (secret.empty()) return h;
    h.flags = kHelloProven;
    size_t got = 0;
    while (got < sizeof h.nonce) { // nothing secret: it only makes every proof unlike the last
        const ssize_t n = getrandom(h.nonce + got, sizeof h.nonce - got, 0);
        if (n > 0) got += static_cast<size_t>(n);
    }
    const Digest d = mac_of(h, secret, ends);
    std::memcpy(h.mac, d.data(), sizeof h.mac);
    return h;
}

bool hello_proven(const Hello &hello, const std::string &secret, const LinkEnds &ends) {
    if (!(hello.flags & kHelloProven) || secret.empty()) return false;
    Digest got;
    std::memcpy(got.data(), hello.mac, sizeof hello.mac);
    return digest_equal(got, mac_of(hello, secret, ends));
}

const char *refusal_text(char code) {
    switch (static_cast<Refusal>(code)) {
    case Refusal::NoProof: return "this process has no job secret, and the peer's job has one";
    case Refusal::OtherSecret: return "the peer belongs to another job (its job secret differs)";
    case Refusal::NoSecretHere: return "the peer has no job secret, and this process's job has one";
    case Refusal::NotAddressedHere: return "the peer is not the endpoint this link was meant for";
    }
    return "";
}

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
