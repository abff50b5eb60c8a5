// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: everything a TCP peer can make Portico parse. The input is the byte stream of
// a connection: the first 72 bytes go through the handshake checks as an acceptor would see them,
// the rest through the frame decoder, cut into reads of sizes taken from the input itself. The
// decoder must never read or write out of bounds, never hand out a frame larger than allowed,
// and always make progress. A first frame's protocol header goes through the Portals header's
// decoder, whose result must survive encoding and decoding again unchanged.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/tcp/frame_decoder.hpp"
#include "transport/tcp/handshake.hpp"
#include "wire/protocol.hpp"

using namespace portico::transport::tcp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    // Small limits reach the interesting edges (frames straddling the buffer end) quickly.
    const size_t max_payload = 4096u << (data[0] & 3);
    const uint8_t cut_seed = data[1];
    data += 2;
    size -= 2;

    if (size >= sizeof(HandshakeMessage)) {
        HandshakeMessage m;
        std::memcpy(&m, data, sizeof m);
        const char *why = nullptr;
        for (auto step : {HandshakeStep::Hello, HandshakeStep::Challenge, HandshakeStep::Proof, HandshakeStep::Refusal})
            if (!handshake_valid(m, step, &why) && !why) std::abort();
        if (!refusal_text(refusal_reason(m))) std::abort(); // any reason byte reads as some text
        HandshakeMessage hello = m, challenge = m;
        (void)proof_authentic("secret", hello, challenge, m);
        (void)challenge_authentic("secret", hello, m);
    }

    FrameDecoder d(max_payload);
    size_t pos = 0;
    unsigned state = cut_seed | 1u;
    while (pos < size) {
        std::byte *dst = d.space();
        const size_t room = d.space_size();
        if (room == 0) std::abort(); // every complete frame is consumed below, so there is room
        state = state * 1103515245u + 12345u;
        const size_t want = 1 + size_t(state >> 8) % (2 * max_payload);
        const size_t n = std::min({room, size - pos, want});
        std::memcpy(dst, data + pos, n);
        d.produced(n);
        pos += n;
        for (;;) {
            portico::transport::FrameHeader h;
            const std::byte *payload = nullptr;
            const char *why = nullptr;
            const auto r = d.next(&h, &payload, &why);
            if (r == FrameDecoder::Result::NeedMore) break;
            if (r == FrameDecoder::Result::Malformed) {
                if (!why) std::abort();
                return 0; // the transport closes the connection here
            }
            if (h.t.frame_payload > max_payload) std::abort();
            if (h.t.protocol_bytes > portico::transport::kProtocolHeaderBytes) std::abort();
            portico::wire::Header w, again;
            if ((h.t.flags & portico::transport::kFrameFirst) &&
                portico::wire::decode(h.protocol, h.t.protocol_bytes, &w)) {
                std::byte out[portico::wire::kMaxEncodedBytes];
                const size_t encoded = portico::wire::encode(w, out);
                if (encoded > h.t.protocol_bytes || !portico::wire::decode(out, encoded, &again)) std::abort();
                if (std::memcmp(&w, &again, sizeof w) != 0) std::abort();
            }
            // Touch the whole payload: ASan reports any byte outside the buffer.
            volatile uint8_t sum = 0;
            for (uint32_t i = 0; i < h.t.frame_payload; ++i) sum = sum + static_cast<uint8_t>(payload[i]);
            d.consume();
        }
    }
    return 0;
}
