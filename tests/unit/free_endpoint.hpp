// SPDX-License-Identifier: BSD-3-Clause
// Opening a transport endpoint in a unit test: on the first free pid from a per-process starting
// point, since tests of other processes may hold pids (and TCP ports) at the same time.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <system_error>

namespace portico::test {

// make(pid) opens the endpoint or throws std::system_error (EADDRINUSE: that pid is taken).
template <class Make> auto open_free(const Make &make) -> decltype(make(uint32_t{})) {
    static uint32_t next = 2000 + static_cast<uint32_t>(getpid()) % 20000;
    for (int tries = 0; tries < 1000; ++tries) {
        try {
            return make(next++);
        } catch (const std::system_error &e) {
            if (e.code().value() != EADDRINUSE) throw;
        }
    }
    return nullptr;
}

} // namespace portico::test
