// SPDX-License-Identifier: BSD-3-Clause
#include "common/random.hpp"

#include <cerrno>
#include <fcntl.h>
#include <stdexcept>
#include <sys/random.h>
#include <unistd.h>
#include <vector>

namespace portico {

void random_bytes(void *out, size_t n) {
    auto *p = static_cast<unsigned char *>(out);
    size_t got = 0;
    while (got < n) {
        const ssize_t k = ::getrandom(p + got, n - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += static_cast<size_t>(k);
    }
    if (got < n) { // a kernel without getrandom (or a seccomp filter that forbids it)
        const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        while (fd >= 0 && got < n) {
            const ssize_t k = ::read(fd, p + got, n - got);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            got += static_cast<size_t>(k);
        }
        if (fd >= 0) ::close(fd);
    }
    if (got < n) throw std::runtime_error("cannot read random bytes (getrandom and /dev/urandom both failed)");
}

std::string random_hex(size_t n) {
    std::vector<unsigned char> bytes(n);
    random_bytes(bytes.data(), n);
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * n);
    for (unsigned char b : bytes) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 0xf]);
    }
    return out;
}

} // namespace portico
