// The opening of every TCP connection: both ends prove that they hold the job's secret before a
// single frame is accepted, without the secret ever crossing the network.
//
//   connector -> acceptor  Hello     (its id, the id it wants to reach, nonce Nc)
//   acceptor  -> connector Challenge (its id, nonce Na, MAC("A", Nc, Na, ids))
//   connector -> acceptor  Proof     (MAC("C", Nc, Na, ids))
//
// MAC is HMAC-SHA-256 keyed with the secret. Fresh nonces on both sides make a recorded exchange
// useless to replay; checking the ids stops a message meant for another endpoint (a pid reused
// after its process died) from being taken for ours. The connector may send frames right after
// its Proof; the acceptor reads none before the Proof checks out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/sha256.hpp"
#include "transport/transport.hpp"

namespace portico::transport::tcp {

enum class HandshakeStep : uint16_t { Hello = 1, Challenge = 2, Proof = 3 };

struct HandshakeMessage {
    uint32_t magic;
    uint16_t version;
    HandshakeStep step;
    uint32_t from_nid, from_pid; // the sender
    uint32_t to_nid, to_pid;     // the endpoint the sender means to talk to
    uint8_t nonce[16];           // Hello: Nc, Challenge: Na, Proof: zero
    uint8_t mac[32];             // Challenge and Proof
};
static_assert(sizeof(HandshakeMessage) == 72, "handshake layout is part of the protocol");

inline constexpr uint32_t kHandshakeMagic = 0x50434f50; // "POCP" in little-endian memory
inline constexpr uint16_t kHandshakeVersion = 1;

// Checks magic, version and step; *why explains a failure.
bool handshake_valid(const HandshakeMessage &m, HandshakeStep expected, const char **why);

HandshakeMessage make_hello(PeerId self, PeerId to, const uint8_t nonce_c[16]);
HandshakeMessage make_challenge(const std::string &secret, PeerId self, const HandshakeMessage &hello,
                                const uint8_t nonce_a[16]);
HandshakeMessage make_proof(const std::string &secret, PeerId self, const HandshakeMessage &hello,
                            const HandshakeMessage &challenge);

// The connector checks the acceptor's MAC; the acceptor checks the connector's.
bool challenge_authentic(const std::string &secret, const HandshakeMessage &hello, const HandshakeMessage &challenge);
bool proof_authentic(const std::string &secret, const HandshakeMessage &hello, const HandshakeMessage &challenge,
                     const HandshakeMessage &proof);

// 16 random bytes from the kernel.
void random_nonce(uint8_t out[16]);

} // namespace portico::transport::tcp
