// SPDX-License-Identifier: BSD-3-Clause
#include "transport/tcp/handshake.hpp"

#include <cstring>
#include <stdexcept>
#include <sys/random.h>

namespace portico::transport::tcp {

namespace {

// MAC over the role, both nonces and both ids, in a fixed layout.
Digest mac_of(const std::string &secret, char role, const HandshakeMessage &hello, const uint8_t nonce_a[16]) {
    uint8_t msg[1 + 16 + 16 + 16];
    size_t n = 0;
    msg[n++] = static_cast<uint8_t>(role);
    std::memcpy(msg + n, hello.nonce, 16);
    n += 16;
    std::memcpy(msg + n, nonce_a, 16);
    n += 16;
    const uint32_t ids[4] = {hello.from_nid, hello.from_pid, hello.to_nid, hello.to_pid};
    std::memcpy(msg + n, ids, sizeof ids);
    n += sizeof ids;
    return hmac_sha256(secret.data(), secret.size(), msg, n);
}

HandshakeMessage blank(HandshakeStep step, PeerId from, PeerId to) {
    HandshakeMessage m;
    std::memset(&m, 0, sizeof m);
    m.magic = kHandshakeMagic;
    m.version = kHandshakeVersion;
    m.step = step;
    m.from_nid = from.nid;
    m.from_pid = from.pid;
    m.to_nid = to.nid;
    m.to_pid = to.pid;
    return m;
}

bool equal_mac(const uint8_t mac[32], const Digest &d) {
    Digest got;
    std::memcpy(got.data(), mac, 32);
    return digest_equal(got, d);
}

} // namespace

bool handshake_valid(const HandshakeMessage &m, HandshakeStep expected, const char **why) {
    if (m.magic != kHandshakeMagic) {
        *why = "not a Portico connection (bad magic)";
        return false;
    }
    if (m.version != kHandshakeVersion) {
        *why = "unsupported handshake version";
        return false;
    }
    if (m.step != expected) {
        *why = "handshake message out of order";
        return false;
    }
    return true;
}

HandshakeMessage make_hello(PeerId self, PeerId to, const uint8_t nonce_c[16]) {
    HandshakeMessage m = blank(HandshakeStep::Hello, self, to);
    std::memcpy(m.nonce, nonce_c, 16);
    return m;
}

HandshakeMessage make_challenge(const std::string &secret, PeerId self, const HandshakeMessage &hello,
                                const uint8_t nonce_a[16]) {
    HandshakeMessage m = blank(HandshakeStep::Challenge, self, {hello.from_nid, hello.from_pid});
    std::memcpy(m.nonce, nonce_a, 16);
    const Digest d = mac_of(secret, 'A', hello, nonce_a);
    std::memcpy(m.mac, d.data(), 32);
    return m;
}

HandshakeMessage make_proof(const std::string &secret, PeerId self, const HandshakeMessage &hello,
                            const HandshakeMessage &challenge) {
    HandshakeMessage m = blank(HandshakeStep::Proof, self, {challenge.from_nid, challenge.from_pid});
    const Digest d = mac_of(secret, 'C', hello, challenge.nonce);
    std::memcpy(m.mac, d.data(), 32);
    return m;
}

bool challenge_authentic(const std::string &secret, const HandshakeMessage &hello, const HandshakeMessage &challenge) {
    return equal_mac(challenge.mac, mac_of(secret, 'A', hello, challenge.nonce));
}

bool proof_authentic(const std::string &secret, const HandshakeMessage &hello, const HandshakeMessage &challenge,
                     const HandshakeMessage &proof) {
    return equal_mac(proof.mac, mac_of(secret, 'C', hello, challenge.nonce));
}

HandshakeMessage make_refusal(PeerId self, PeerId to, RefusalReason why) {
    HandshakeMessage m = blank(HandshakeStep::Refusal, self, to);
    m.nonce[0] = static_cast<uint8_t>(why);
    return m;
}

RefusalReason refusal_reason(const HandshakeMessage &refusal) { return static_cast<RefusalReason>(refusal.nonce[0]); }

const char *refusal_text(RefusalReason why) {
    switch (why) {
    case RefusalReason::Busy:
        return "the peer had too many connections waiting to authenticate (a flood of connections?) and dropped this "
               "one";
    case RefusalReason::Late: return "the peer waited for this side's handshake longer than it allows";
    case RefusalReason::OtherSecret: return "the two sides' job secrets differ";
    case RefusalReason::NoSecret: return "the peer has no job secret";
    case RefusalReason::NotAddressedHere: return "the peer is not the endpoint this connection was meant for";
    case RefusalReason::LinkTableFull: return "the peer's link table is full";
    }
    return "the peer refused it (for a reason this version does not know)";
}

bool refusal_is_transient(RefusalReason why) { return why == RefusalReason::Busy || why == RefusalReason::Late; }

void random_nonce(uint8_t out[16]) {
    size_t got = 0;
    while (got < 16) {
        const ssize_t n = getrandom(out + got, 16 - got, 0);
        if (n < 0) throw std::runtime_error("getrandom failed");
        got += static_cast<size_t>(n);
    }
}

} // namespace portico::transport::tcp
