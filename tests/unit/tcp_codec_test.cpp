// SPDX-License-Identifier: BSD-3-Clause
// What the TCP transport parses from the network: SHA-256/HMAC (against the standards' test
// vectors), the authentication handshake, and the frame decoder (any split of the stream, and
// every kind of malformed frame).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/sha256.hpp"
#include "transport/tcp/frame_decoder.hpp"
#include "transport/tcp/handshake.hpp"

namespace {

using namespace portico;
using namespace portico::transport;
using namespace portico::transport::tcp;

std::string hex(const Digest &d) {
    std::string s;
    char b[3];
    for (uint8_t x : d) {
        std::snprintf(b, sizeof b, "%02x", x);
        s += b;
    }
    return s;
}

TEST(Sha256, Fips180Vectors) {
    EXPECT_EQ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", hex(sha256("", 0)));
    EXPECT_EQ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", hex(sha256("abc", 3)));
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    EXPECT_EQ("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
              hex(sha256(two_blocks, std::strlen(two_blocks))));
    std::string million(1000000, 'a');
    Sha256 pieces; // the same bytes fed in odd-sized pieces
    for (size_t off = 0; off < million.size(); off += 777)
        pieces.update(million.data() + off, std::min<size_t>(777, million.size() - off));
    EXPECT_EQ("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", hex(pieces.finish()));
}

TEST(Sha256, HmacRfc4231Vectors) {
    std::string key1(20, '\x0b');
    EXPECT_EQ("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
              hex(hmac_sha256(key1.data(), key1.size(), "Hi There", 8)));
    const char *msg2 = "what do ya want for nothing?";
    EXPECT_EQ("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
              hex(hmac_sha256("Jefe", 4, msg2, std::strlen(msg2))));
    std::string key6(131, '\xaa'); // longer than a block: hashed first
    const char *msg6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    EXPECT_EQ("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
              hex(hmac_sha256(key6.data(), key6.size(), msg6, std::strlen(msg6))));
}

TEST(Sha256, DigestEqual) {
    Digest a = sha256("x", 1), b = a;
    EXPECT_TRUE(digest_equal(a, b));
    b[31] ^= 1;
    EXPECT_FALSE(digest_equal(a, b));
}

struct Exchange {
    PeerId c{0x0a000001, 7}, a{0x0a000002, 9};
    HandshakeMessage hello, challenge, proof;
    Exchange(const std::string &secret_c, const std::string &secret_a) {
        uint8_t nc[16], na[16];
        random_nonce(nc);
        random_nonce(na);
        hello = make_hello(c, a, nc);
        challenge = make_challenge(secret_a, a, hello, na);
        proof = make_proof(secret_c, c, hello, challenge);
    }
};

TEST(Handshake, SameSecretAuthenticatesBothWays) {
    Exchange x("s3cret", "s3cret");
    const char *why = nullptr;
    EXPECT_TRUE(handshake_valid(x.hello, HandshakeStep::Hello, &why));
    EXPECT_TRUE(handshake_valid(x.challenge, HandshakeStep::Challenge, &why));
    EXPECT_TRUE(handshake_valid(x.proof, HandshakeStep::Proof, &why));
    EXPECT_TRUE(challenge_authentic("s3cret", x.hello, x.challenge));
    EXPECT_TRUE(proof_authentic("s3cret", x.hello, x.challenge, x.proof));
    EXPECT_EQ(x.c.nid, x.challenge.to_nid);
    EXPECT_EQ(x.a.pid, x.challenge.from_pid);
}

TEST(Handshake, WrongSecretFailsOnBothSides) {
    Exchange x("mine", "theirs");
    EXPECT_FALSE(challenge_authentic("mine", x.hello, x.challenge)) << "the connector must not trust the acceptor";
    EXPECT_FALSE(proof_authentic("theirs", x.hello, x.challenge, x.proof))
        << "the acceptor must not trust the connector";
}

TEST(Handshake, ReplayedProofFailsAgainstAFreshChallenge) {
    Exchange first("k", "k");
    uint8_t na2[16];
    random_nonce(na2);
    HandshakeMessage challenge2 = make_challenge("k", first.a, first.hello, na2);
    EXPECT_FALSE(proof_authentic("k", first.hello, challenge2, first.proof));
}

TEST(Handshake, ReflectedChallengeIsNotAProof) {
    Exchange x("k", "k");
    HandshakeMessage reflected = x.challenge;
    reflected.step = HandshakeStep::Proof;
    EXPECT_FALSE(proof_authentic("k", x.hello, x.challenge, reflected));
}

TEST(Handshake, GarbageIsRejectedWithAReason) {
    HandshakeMessage m;
    std::memset(&m, 'G', sizeof m);
    const char *why = nullptr;
    EXPECT_FALSE(handshake_valid(m, HandshakeStep::Hello, &why));
    ASSERT_NE(nullptr, why);
    Exchange x("k", "k");
    EXPECT_FALSE(handshake_valid(x.proof, HandshakeStep::Hello, &why)) << "out of order";
    x.hello.version = 99;
    EXPECT_FALSE(handshake_valid(x.hello, HandshakeStep::Hello, &why));
}

// A stream of frames as the TCP transport writes them.
// first: a message's first frame (else a continuation frame).
std::vector<std::byte> frame(bool first, size_t payload, uint8_t fill, uint64_t total = UINT64_MAX) {
    FrameHeader h;
    std::memset(&h, 0, sizeof h);
    h.t.version = kFrameVersion;
    h.t.protocol = Protocol::Portals;
    h.t.flags = first ? kFrameFirst : 0;
    h.t.frame_payload = static_cast<uint32_t>(payload);
    h.t.payload_total = first ? (total == UINT64_MAX ? payload : total) : 0;
    std::vector<std::byte> out(wire_header_bytes(h) + payload, std::byte{fill});
    write_wire_header(out.data(), h);
    return out;
}

struct Decoded {
    std::vector<std::pair<bool, std::vector<std::byte>>> frames; // (first, payload)
    bool malformed = false;
    std::string why;
};

// Feeds `stream` in pieces whose sizes come from `cut` and collects every frame.
Decoded decode(const std::vector<std::byte> &stream, size_t max_payload, std::mt19937 &cut) {
    FrameDecoder d(max_payload);
    Decoded out;
    size_t pos = 0;
    while (pos < stream.size() && !out.malformed) {
        std::byte *dst = d.space();
        const size_t room = d.space_size();
        EXPECT_GT(room, 0u);
        const size_t n = std::min({room, stream.size() - pos, size_t(1) + cut() % 70000});
        std::memcpy(dst, stream.data() + pos, n);
        d.produced(n);
        pos += n;
        FrameHeader h;
        const std::byte *p = nullptr;
        const char *why = nullptr;
        for (;;) {
            auto r = d.next(&h, &p, &why);
            if (r == FrameDecoder::Result::NeedMore) break;
            if (r == FrameDecoder::Result::Malformed) {
                out.malformed = true;
                out.why = why;
                break;
            }
            out.frames.emplace_back(h.t.flags & kFrameFirst, std::vector<std::byte>(p, p + h.t.frame_payload));
            d.consume();
        }
    }
    return out;
}

TEST(FrameDecoder, AnySplitOfTheStreamGivesTheSameFrames) {
    const size_t max_payload = 64 * 1024 - sizeof(FrameHeader);
    std::vector<std::byte> stream;
    std::vector<size_t> sizes{0, 1, 8, 95, 96, 4096, max_payload, 12345, max_payload - 1, 0, 7};
    for (size_t i = 0; i < sizes.size(); ++i) {
        auto f = frame(i % 2 == 1, sizes[i], static_cast<uint8_t>(i + 1));
        stream.insert(stream.end(), f.begin(), f.end());
    }
    for (unsigned seed = 1; seed <= 50; ++seed) {
        std::mt19937 cut(seed);
        Decoded d = decode(stream, max_payload, cut);
        ASSERT_FALSE(d.malformed) << d.why;
        ASSERT_EQ(sizes.size(), d.frames.size()) << "seed " << seed;
        for (size_t i = 0; i < sizes.size(); ++i) {
            ASSERT_EQ(i % 2 == 1, d.frames[i].first);
            ASSERT_EQ(sizes[i], d.frames[i].second.size());
            for (std::byte b : d.frames[i].second) ASSERT_EQ(std::byte(i + 1), b);
        }
    }
}

TEST(FrameDecoder, OversizedFrameIsMalformedBeforeItsPayloadArrives) {
    std::mt19937 cut(3);
    auto f = frame(false, 5000, 1);
    auto stream = std::vector<std::byte>(f.begin(), f.begin() + sizeof(TransportHeader)); // header only
    Decoded d = decode(stream, 4096, cut);
    EXPECT_TRUE(d.malformed);
    EXPECT_TRUE(d.frames.empty());
}

TEST(FrameDecoder, BadVersionFlagsOrTotalIsMalformed) {
    std::mt19937 cut(4);
    auto bad_version = frame(true, 10, 1);
    bad_version[0] = std::byte{77};
    EXPECT_TRUE(decode(bad_version, 4096, cut).malformed);
    auto bad_flags = frame(true, 10, 1);
    bad_flags[offsetof(TransportHeader, flags)] |= std::byte{0x80}; // no such flag
    EXPECT_TRUE(decode(bad_flags, 4096, cut).malformed);
    auto bad_total = frame(true, 10, 1, 5); // more in this frame than in the message
    EXPECT_TRUE(decode(bad_total, 4096, cut).malformed);
}

TEST(FrameDecoder, TruncatedFrameIsNeverHandedOut) {
    std::mt19937 cut(5);
    auto f = frame(true, 1000, 9);
    f.resize(f.size() - 1);
    Decoded d = decode(f, 4096, cut);
    EXPECT_FALSE(d.malformed);
    EXPECT_TRUE(d.frames.empty());
}

} // namespace
