// SPDX-License-Identifier: BSD-3-Clause
// Random bytes from the kernel, for what must not be guessed (job secrets, handshake nonces) or
// must not repeat between jobs (job ids).
#pragma once

#include <cstddef>
#include <string>

namespace portico {

// Fills out with n bytes from getrandom (/dev/urandom on kernels without it). Throws
// std::runtime_error when neither gives enough bytes.
void random_bytes(void *out, size_t n);

// n random bytes as 2n lowercase hex digits.
std::string random_hex(size_t n);

} // namespace portico
