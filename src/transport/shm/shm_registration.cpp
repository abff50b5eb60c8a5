// SPDX-License-Identifier: BSD-3-Clause
// The shared-memory transport's entry in the registry (transport/registry.hpp): it serves the
// peers on this machine, and reads its own settings (shm_settings.hpp) when it opens.
#include <algorithm>
#include <sys/resource.h>
#include <system_error>
#include <unistd.h>

#include "common/log.hpp"
#include "transport/registry.hpp"
#include "transport/shm/rendezvous.hpp"
#include "transport/shm/shm_settings.hpp"
#include "transport/shm/sizing.hpp"
#include "transport/shm/shm_transport.hpp"

namespace portico::transport {

namespace {
bool same_machine(PeerId self, PeerId peer) { return self.nid == peer.nid; }

uint64_t machine_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

// The ring of this endpoint's links (shm/sizing.hpp): PORTICO_SHM_RING_BYTES, else sized by the
// job's processes on this machine. The first of them says when the rings of all of them may not
// fit, or when a process cannot have a descriptor for a link with every other one.
uint64_t ring_bytes_for(const OpenRequest &req) {
    const uint64_t local = req.local_processes, machine = machine_bytes();
    const bool asked = settings::kShmRingBytes.is_set();
    const uint64_t ring =
        asked
            ? settings::kShmRingBytes.get()
            : shm::sizing::ring_bytes(shm::sizing::link_budget(settings::kShmLinkMemory.get(), machine, local), local);
    if (local <= 1) return ring;
    const bool speaks = req.local_rank <= 0;
    const uint64_t all = local * shm::sizing::process_link_bytes(ring, local);
    if (speaks && machine && all > machine / 2)
        log_error("shm: the links of this job's %llu processes on this machine may hold %llu MiB of rings (%llu "
                  "KiB each way per link), more than half of its %llu MiB: %s",
                  static_cast<unsigned long long>(local), static_cast<unsigned long long>(all >> 20),
                  static_cast<unsigned long long>(ring >> 10), static_cast<unsigned long long>(machine >> 20),
                  asked ? "lower PORTICO_SHM_RING_BYTES, or unset it to have the rings sized by the number of "
                          "processes"
                        : "run fewer processes per machine");
    // One descriptor per link (its socket): raise the soft limit when the hard one allows.
    rlimit fds{};
    const rlim_t need = static_cast<rlim_t>(local + 64);
    if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur != RLIM_INFINITY && fds.rlim_cur < need) {
        rlimit raised = fds;
        raised.rlim_cur = fds.rlim_max == RLIM_INFINITY ? need : std::min(need, fds.rlim_max);
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) fds = raised;
        if (fds.rlim_cur < need && speaks)
            log_error("shm: each of this job's %llu processes on this machine may need %llu descriptors for its "
                      "links, but may open only %llu: raise the limit (ulimit -n)",
                      static_cast<unsigned long long>(local), static_cast<unsigned long long>(need),
                      static_cast<unsigned long long>(fds.rlim_cur));
    }
    return ring;
}

std::unique_ptr<Transport> open_shm(const OpenRequest &req) {
    shm::ShmConfig cfg;
    cfg.ring_bytes = ring_bytes_for(req);
    cfg.max_links = settings::kShmMaxLinks.get();
    cfg.single_copy = settings::kShmSingleCopy.get();
    // Rings sized by the number of processes bring the single-copy size down with them; rings or a
    // size set by hand are the user's (tests of the small-frame paths set them).
    const bool by_hand = settings::kShmSingleCopyBytes.is_set() || settings::kShmRingBytes.is_set();
    cfg.single_copy_bytes = by_hand
                                ? settings::kShmSingleCopyBytes.get()
                                : shm::sizing::single_copy_from(settings::kShmSingleCopyBytes.get(), cfg.ring_bytes);
    cfg.directory = settings::kShmDir.get();
    if (req.shared_secret) cfg.secret = req.shared_secret();
    return std::make_unique<shm::ShmTransport>(req.nid, req.pid, cfg);
}

std::string holders(uint32_t nid, uint32_t first_pid, uint32_t count) {
    if (count != 1) return {}; // this user's own endpoints: the pids say enough
    try {
        const std::string who = shm::holder_of(shm::endpoint_directory(settings::kShmDir.get()), {nid, first_pid});
        return who.empty() ? who : who + ", this user's";
    } catch (const std::system_error &) {
        return {};
    }
}
} // namespace

extern const TransportInfo shm_transport_info{
    "shm",        100,      "shared memory with the processes of this machine (rings in memfd segments, single copy)",
    same_machine, open_shm, holders};

} // namespace portico::transport
