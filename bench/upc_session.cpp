// SPDX-License-Identifier: BSD-3-Clause
#include "upc_session.hpp"

#include <exception>

#include "bench.hpp"
#include "job.hpp"

namespace portico::bench {

UpcSession::UpcSession(Job &job) {
    // No arguments: the runtime takes nothing from the command line, and portico-bench's own
    // options must not be offered to it.
    portico_upc_init(nullptr, nullptr);
    if (THREADS != job.size() || MYTHREAD != job.rank())
        throw Error("the UPC runtime numbers this process thread " + std::to_string(MYTHREAD) + " of " +
                    std::to_string(THREADS) + ", the job rank " + std::to_string(job.rank()) + " of " +
                    std::to_string(job.size()));
}

UpcSession::~UpcSession() {
    if (std::uncaught_exceptions() == 0) portico_upc_finalize();
}

std::string UpcSession::path_to(int thread) {
    // Thread 0's offset 0 is the null pointer; offset 64 is still the runtime's control block,
    // inside every segment.
    return __cvtaddr(upc_pts_make(static_cast<unsigned>(thread), 0, 64)) ? "node_local" : "portals";
}

upc_shared_ptr_t UpcSession::block_of(upc_shared_ptr_t base, int thread, size_t nbytes) {
    return upc_pts_add(base, thread, nbytes, 1, static_cast<unsigned>(THREADS));
}

upc_shared_ptr_t UpcSession::aligned(upc_shared_ptr_t p, uint64_t align) {
    const uint64_t v = (upc_pts_vaddr(p) + align - 1) / align * align;
    return upc_pts_make(upc_pts_thread(p), 0, v);
}

void *UpcSession::local(upc_shared_ptr_t p) {
    if (static_cast<int>(upc_pts_thread(p)) != MYTHREAD)
        throw Error("UpcSession::local: thread " + std::to_string(upc_pts_thread(p)) + "'s data is not this thread's");
    return __cvtaddr(p);
}

} // namespace portico::bench
