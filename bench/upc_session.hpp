// SPDX-License-Identifier: BSD-3-Clause
// The UPC runtime (libportico-upc) inside a portico-bench process, for the upc_* tests.
//
// The runtime is one more Portals client of the process: its own PtlInit and its own NI (logical,
// non-matching, portal indexes 10-15), next to the physical matching NIs of the benchmark's
// baselines; every NI kind is a separate table on the process's one endpoint, and PtlInit and
// PtlFini are counted, so the two do not meet. Three rules follow from the runtime's life:
// - it starts once per process (portico_upc_init returns at once the second time, even after
//   portico_upc_finalize), so a test starts it before anything else and one process runs one
//   UPC test;
// - it must start before the benchmark's own Portals objects and end after them: the last
//   PtlFini of a process finalizes the engine for good (PtlInit fails afterwards), so the
//   benchmark's objects must not be the last ones while the runtime still has to start or end;
// - it reads UPC_NODE_LOCAL_MEM when it starts: the tests report the path that setting gave
//   (path_to) instead of taking it as a parameter.
#pragma once

#include <upc.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace portico::bench {

class Job;

class UpcSession {
public:
    // Collective over the job: starts the runtime (portico_upc_init) and checks that its threads
    // are the job's ranks.
    explicit UpcSession(Job &job);
    // Collective: portico_upc_finalize (its final barrier), unless an exception is unwinding,
    // since then main() is about to end the whole job and the peers may never reach that barrier.
    ~UpcSession();
    UpcSession(const UpcSession &) = delete;
    UpcSession &operator=(const UpcSession &) = delete;

    // How this thread reaches `thread`'s shared data: "node_local" (loads and stores through its
    // mapping of that thread's segment) or "portals" (gets and puts through the engine).
    static std::string path_to(int thread);

    // Thread t's block of an array from upc_all_alloc(THREADS, nbytes) (one block per thread).
    static upc_shared_ptr_t block_of(upc_shared_ptr_t base, int thread, size_t nbytes);
    // p moved up to the next multiple of `align` bytes in its thread's segment. The heap puts
    // user data 16 bytes into a block; a word the test times must have its cache line to itself.
    static upc_shared_ptr_t aligned(upc_shared_ptr_t p, uint64_t align);
    // This process's address of its own thread's shared data at p (always mapped).
    static void *local(upc_shared_ptr_t p);
};

} // namespace portico::bench
