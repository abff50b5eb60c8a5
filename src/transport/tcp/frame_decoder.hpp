// SPDX-License-Identifier: BSD-3-Clause
// Cuts the byte stream of a TCP connection into frames (transport.hpp: FrameHeader).
//
// The decoder owns the receive buffer: the caller recv()s straight into space() and announces the
// bytes with produced(). A frame is handed out in place (no copy) once all of it has arrived, so
// the buffer holds one frame at most plus what follows it; a long message arrives as a series of
// frames and is never gathered whole. Everything here trusts nothing in the stream: a frame that
// fails the checks makes the connection unusable (the caller counts it and closes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "transport/transport.hpp"

namespace portico::transport::tcp {

class FrameDecoder {
public:
    // max_frame_payload bounds the payload a frame may announce; more is malformed.
    explicit FrameDecoder(size_t max_frame_payload);

    // Where the next bytes of the stream go, and how many fit (never 0 unless a frame is waiting
    // to be consumed).
    std::byte *space();
    size_t space_size() const { return capacity_ - end_; }
    void produced(size_t n) { end_ += n; }

    enum class Result { Frame, NeedMore, Malformed };
    // The next complete frame: *h and *payload (h->frame_payload bytes, valid until consume()).
    // Malformed sets *why to a static description.
    Result next(FrameHeader *h, const std::byte **payload, const char **why);
    // Done with the frame next() returned.
    void consume();

    size_t buffered() const { return end_ - begin_; }
    size_t capacity() const { return capacity_; }

private:
    size_t max_frame_payload_;
    size_t capacity_;
    std::unique_ptr<std::byte[]> buf_;
    size_t begin_ = 0;   // first byte not yet consumed
    size_t end_ = 0;     // one past the last byte received
    size_t current_ = 0; // size of the frame handed out by next(), 0 if none
};

} // namespace portico::transport::tcp
