// The shared-memory transport's entry in the registry (transport/registry.hpp): it serves the
// peers on this machine, and reads its own settings (shm_settings.hpp) when it opens.
#include <system_error>

#include "transport/registry.hpp"
#include "transport/shm/rendezvous.hpp"
#include "transport/shm/shm_settings.hpp"
#include "transport/shm/shm_transport.hpp"

namespace portico::transport {

namespace {
bool same_machine(PeerId self, PeerId peer) { return self.nid == peer.nid; }

std::unique_ptr<Transport> open_shm(const OpenRequest &req) {
    shm::ShmConfig cfg;
    cfg.ring_bytes = settings::kShmRingBytes.get();
    cfg.max_links = settings::kShmMaxLinks.get();
    cfg.single_copy = settings::kShmSingleCopy.get();
    cfg.single_copy_bytes = settings::kShmSingleCopyBytes.get();
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
