// SPDX-License-Identifier: BSD-3-Clause
#include "transport/tcp/frame_decoder.hpp"

#include <algorithm>
#include <cstring>

namespace portico::transport::tcp {

namespace {
constexpr size_t kHeaderBytes = kMaxWireHeaderBytes; // the longest a frame's header can be
}

FrameDecoder::FrameDecoder(size_t max_frame_payload)
    : max_frame_payload_(max_frame_payload),
      // Room for a whole frame twice over: the rest of a partial frame always fits after moving it
      // to the front, and one recv() usually brings several small frames.
      capacity_(2 * (kHeaderBytes + max_frame_payload)), buf_(new std::byte[capacity_]) {}

std::byte *FrameDecoder::space() {
    if (begin_ == end_) {
        begin_ = end_ = 0;
    } else if (begin_ > 0 && capacity_ - end_ < kHeaderBytes + max_frame_payload_) {
        // Not enough room after the partial frame for the rest of it: move it to the front.
        std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    return buf_.get() + end_;
}

FrameDecoder::Result FrameDecoder::next(FrameHeader *h, const std::byte **payload, const char **why) {
    const size_t avail = end_ - begin_;
    if (avail < sizeof(TransportHeader)) return Result::NeedMore;
    std::memcpy(&h->t, buf_.get() + begin_, sizeof h->t);
    if (h->t.version != kFrameVersion) {
        *why = "unknown protocol version";
        return Result::Malformed;
    }
    if (h->t.frame_payload > max_frame_payload_) {
        *why = "frame longer than the connection allows";
        return Result::Malformed;
    }
    if (!frame_is_sane(*h, max_frame_payload_)) {
        *why = "inconsistent header";
        return Result::Malformed;
    }
    const size_t header_bytes = wire_header_bytes(*h);
    if (avail < header_bytes + h->t.frame_payload) return Result::NeedMore;
    read_wire_header(buf_.get() + begin_, avail, h); // all of it is here and checked: cannot fail
    *payload = buf_.get() + begin_ + header_bytes;
    current_ = header_bytes + h->t.frame_payload;
    return Result::Frame;
}

void FrameDecoder::consume() {
    begin_ += current_;
    current_ = 0;
}

} // namespace portico::transport::tcp
