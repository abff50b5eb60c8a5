// SPDX-License-Identifier: BSD-3-Clause
// The opening of every TCP connection: both ends prove that they hold the job's secret before a
// single frame is accepted, without the secret ever crossing the network.
//
//   connector -> acceptor  Hello     (its id, the id it wants to reach, nonce Nc)
//   acceptor  -> connector Challenge (its id, nonce Na, MAC("A", Nc, Na, ids))
//   connector -> acceptor  Proof     (MAC("C", Nc, Na, ids))
//
// Either side may instead send a Refusal (why it is about to close) in place of its next message.
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

enum class HandshakeStep : uint16_t { Hello = 1, Challenge = 2, Proof = 3, Refusal = 4 };

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
inline constexpr uint16_t kHandshakeVersion = 2;

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

// Why one side closes a connection before it is up, told to the other in a Refusal message (its
// first nonce byte) just before the close, so that each side's log names the real cause.
enum class RefusalReason : uint8_t {
    Busy = 1,             // too many connections were waiting to authenticate: this one went (a flood?)
    Late = 2,             // its hello or proof did not come in time
    OtherSecret = 3,      // the MACs say that the two secrets differ
    NoSecret = 4,         // the acceptor has no job secret
    NotAddressedHere = 5, // the hello names another endpoint
    LinkTableFull = 6,
};
HandshakeMessage make_refusal(PeerId self, PeerId to, RefusalReason why);
RefusalReason refusal_reason(const HandshakeMessage &refusal);
// As the refused side reads it: "the peer had too many connections waiting to authenticate ...".
const char *refusal_text(RefusalReason why);
// Whether a connector should connect again (a busy or slow acceptor) rather than give up.
bool refusal_is_transient(RefusalReason why);

// 16 random bytes from the kernel.
void random_nonce(uint8_t out[16]);

} // namespace portico::transport::tcp
