#include "engine/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <poll.h>
#include <sys/eventfd.h>
#include <system_error>
#include <unistd.h>

#include "bootstrap/pmi_client.hpp"
#include "bootstrap/bootstrap_settings.hpp"
#include "common/fence.hpp"
#include "common/futex.hpp"
#include "common/log.hpp"
#include "engine/engine_settings.hpp"
#include "transport/shm/shm_settings.hpp"
#include "transport/tcp/handshake.hpp"

namespace portico::engine {

namespace {
// The microsecond settings have no upper bound; a huge one means "for ever" (centuries), not a
// wrapped product, and leaves room for the "now + spin" deadlines not to wrap either.
uint64_t us_to_ns(uint64_t us) {
    constexpr uint64_t kForever = UINT64_MAX / 4;
    return us > kForever / 1000 ? kForever : us * 1000;
}
} // namespace

const Tunables &Tunables::get() {
    static const Tunables t = [] {
        Tunables v;
        v.wait_pause_ns = us_to_ns(settings::kWaitPauseUs.get());
        v.progress_spin_ns = us_to_ns(settings::kProgressSpinUs.get());
        v.progress_park_ns = us_to_ns(settings::kProgressParkUs.get());
        v.shm_ring_bytes = settings::kShmRingBytes.get();
        v.rendezvous_bytes = settings::kShmSingleCopyBytes.get();
        return v;
    }();
    return t;
}

namespace {
// portico_set_wait_spin_us may change the spin at any time, so it is not part of the constant
// Tunables; the environment's value is read once and then always wins.
std::atomic<uint64_t> &wait_spin_store() {
    static std::atomic<uint64_t> ns{us_to_ns(settings::kWaitSpinUs.get())};
    return ns;
}
} // namespace

uint64_t Tunables::wait_spin_ns() { return wait_spin_store().load(std::memory_order_relaxed); }

int Tunables::set_wait_spin_us(uint64_t us) {
    if (settings::kWaitSpinUs.is_set()) return PTL_IGNORED;
    wait_spin_store().store(us_to_ns(us), std::memory_order_relaxed);
    return PTL_OK;
}

namespace {
int limit(const settings::Number &s) { return static_cast<int>(s.get()); } // the ranges end at INT_MAX
} // namespace

ptl_ni_limits_t default_limits() {
    ptl_ni_limits_t l{};
    l.max_entries = limit(settings::kMaxEntries);
    l.max_unexpected_headers = limit(settings::kMaxUnexpectedHeaders);
    l.max_mds = limit(settings::kMaxMds);
    l.max_cts = limit(settings::kMaxCts);
    l.max_eqs = limit(settings::kMaxEqs);
    l.max_pt_index = limit(settings::kMaxPtIndex);
    l.max_iovecs = limit(settings::kMaxIovecs);
    l.max_list_size = limit(settings::kMaxListSize);
    l.max_triggered_ops = limit(settings::kMaxTriggeredOps);
    l.max_msg_size = PTL_SIZE_MAX;
    // An atomic travels in one frame; ni_init lowers these to what the transport's frames hold.
    l.max_atomic_size = settings::kMaxAtomicSize.get();
    l.max_fetch_atomic_size = settings::kMaxFetchAtomicSize.get();
    // Messages are applied whole and in order per link, so any size keeps write-after-write order.
    l.max_waw_ordered_size = PTL_SIZE_MAX;
    l.max_war_ordered_size = PTL_SIZE_MAX;
    l.max_volatile_size = settings::kMaxVolatileSize.get();
    l.features = PTL_TARGET_BIND_INACCESSIBLE | PTL_TOTAL_DATA_ORDERING;
    return l;
}

Engine &Engine::instance() {
    // Never destroyed: an application may call Portals from atexit handlers or other threads.
    static Engine *e = new Engine;
    return *e;
}

int Engine::init() {
    std::lock_guard g(mutex_);
    if (finalized_ && init_count_ == 0) return PTL_FAIL; // "cannot be called after the library has been finalized"
    if (init_count_++ == 0) aborted_ = false;
    return PTL_OK;
}

void Engine::fini() {
    std::vector<NI *> to_close;
    {
        std::lock_guard g(mutex_);
        if (init_count_ == 0) return;
        if (--init_count_ > 0) return;
        nis_.for_each([&](NI *ni) { to_close.push_back(ni); });
    }
    for (NI *ni : to_close) {
        // Drop every reference so the NI closes now.
        std::unique_lock g(mutex_);
        ni->refs = 1;
        g.unlock();
        ni_fini(ni->handle);
    }
    std::lock_guard g(mutex_);
    finalized_ = true;
    stop_launcher_watch();
    if (pmi_) {
        try {
            pmi_->finalize();
        } catch (const std::exception &e) {
            log_error("PMI finalize: %s", e.what());
        }
        pmi_.reset();
    }
    dead_eqs_.clear();
    dead_cts_.clear();
}

void Engine::abort() {
    aborted_.store(true, std::memory_order_release);
    notify_waiters();
}

void Engine::notify_waiters(const void *obj) {
    // Pairs with the sleeper's increment of sleepers_ before its last look (Dekker): either we see
    // it, or it sees what we published before this fence.
    full_fence();
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard g(sleepers_mutex_);
    for (Sleeper *s : sleeping_) {
        bool mine = obj == nullptr || s->nobjs == 0;
        for (unsigned i = 0; i < s->nobjs && !mine; ++i) mine = s->objs[i] == obj;
        if (mine && s->word.exchange(1, std::memory_order_release) == 0) futex_wake(s->word, 1);
    }
}

void Endpoint::request_arm() {
    // Caller holds sleep_mutex.
    arm_request = true;
    if (progress == Progress::Parked) {
        park_word.fetch_add(1, std::memory_order_release);
        futex_wake(park_word);
    }
}

void Engine::start_progress(Endpoint &ep) {
    ep.stop = false;
    ep.progress_thread = std::thread([this, &ep] { progress_loop(ep); });
}

void Engine::stop_progress(Endpoint &ep) {
    {
        std::lock_guard g(ep.sleep_mutex);
        ep.stop = true;
        ep.request_arm();
    }
    ep.transport->interrupt();
    if (ep.progress_thread.joinable()) ep.progress_thread.join();
}

void Engine::poll_once(Endpoint *ep) {
    ep->app_calls.fetch_add(1, std::memory_order_relaxed);
    ep->poll();
}

void Engine::progress_loop(Endpoint &ep) {
    const Tunables &t = Tunables::get();
    uint64_t idle_since = 0;
    uint64_t calls_seen = ep.app_calls.load(std::memory_order_relaxed);
    while (!ep.stop.load(std::memory_order_acquire)) {
        if (ep.poll() > 0) {
            idle_since = 0;
            continue;
        }
        const uint64_t now = monotonic_ns();
        if (idle_since == 0) idle_since = now;
        if (now - idle_since < t.progress_spin_ns) {
            cpu_relax();
            continue;
        }
        // Nothing to do: park while the application polls by itself, otherwise listen to peers.
        uint32_t park_seen = 0;
        bool park;
        {
            std::lock_guard g(ep.sleep_mutex);
            const uint64_t calls = ep.app_calls.load(std::memory_order_relaxed);
            const bool app_active = ep.active_waiters > 0 || calls != calls_seen;
            calls_seen = calls;
            park = !ep.arm_request && sleepers_.load(std::memory_order_relaxed) == 0 && app_active;
            ep.arm_request = false;
            if (park) {
                ep.progress = Endpoint::Progress::Parked;
                park_seen = ep.park_word.load(std::memory_order_relaxed);
            } else {
                ep.progress = Endpoint::Progress::Armed;
                ep.transport->arm_sleep();
                ep.armed = true;
            }
        }
        if (park)
            futex_wait(ep.park_word, park_seen, static_cast<int64_t>(t.progress_park_ns));
        else if (!ep.transport->has_pending() && !ep.stop.load())
            ep.transport->wait(*ep.receiver, -1);
        {
            std::lock_guard g(ep.sleep_mutex);
            ep.progress = Endpoint::Progress::Running;
            if (ep.armed) {
                ep.transport->disarm_sleep();
                ep.armed = false;
            }
        }
        // After a park, decide again at once if there is nothing to do: a parked thread that woke
        // to check must not spin while the application runs.
        idle_since = park ? 1 : 0;
    }
}

void EndpointReceiver::on_frame(transport::Link &link, const wire::Header &h, const std::byte *payload) {
    engine_.handle_frame(ep_, link, h, payload);
}
void EndpointReceiver::on_link_failed(transport::Link &link, bool last) { engine_.handle_link_failed(ep_, link, last); }
void EndpointReceiver::on_send_complete(uint64_t token, bool ok, bool source_fault) {
    engine_.handle_send_complete(token, ok, source_fault);
}

int Engine::ensure_pmi() {
    // Caller holds the engine lock.
    if (!pmi_checked_) {
        pmi_checked_ = true;
        try {
            pmi_ = bootstrap::PmiClient::from_environment();
        } catch (const std::exception &e) {
            log_error("PMI: %s", e.what());
            pmi_failed_ = true;
        }
    }
    if (pmi_failed_) return PTL_FAIL;
    if (pmi_ && !launcher_watch_.joinable() && settings::kLauncherWatch.get()) start_launcher_watch();
    return pmi_ ? PTL_OK : PTL_IGNORED;
}

void Engine::start_launcher_watch() {
    // Caller holds the engine lock. We watch a duplicate so that the PMI client may close its
    // own descriptor at any time without the watcher looking at a recycled number. A client
    // without a launcher connection (PMIx: fd() is -1) has nothing to watch.
    if (pmi_->fd() < 0) return;
    const int fd = ::dup(pmi_->fd());
    launcher_watch_stop_ = eventfd(0, EFD_CLOEXEC);
    if (fd < 0 || launcher_watch_stop_ < 0) {
        if (fd >= 0) ::close(fd);
        if (launcher_watch_stop_ >= 0) ::close(launcher_watch_stop_);
        launcher_watch_stop_ = -1;
        return;
    }
    bootstrap::PmiClient *pmi = pmi_.get();
    const int stop = launcher_watch_stop_;
    launcher_watch_ = std::thread([fd, stop, pmi] {
        pollfd p[2] = {{fd, POLLRDHUP, 0}, {stop, POLLIN, 0}};
        for (;;) {
            if (::poll(p, 2, -1) < 0) continue;
            if (p[1].revents) break;
            if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                // After a PMI finalize the launcher may close: not an error.
                if (pmi->finalizing()) break;
                std::fprintf(
                    stderr,
                    "portico[%d]: the launcher's connection closed (the launcher died or ended the job); exiting\n",
                    static_cast<int>(getpid()));
                std::fflush(stderr);
                ::_exit(1);
            }
        }
        ::close(fd);
    });
}

void Engine::stop_launcher_watch() {
    if (!launcher_watch_.joinable()) return;
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(launcher_watch_stop_, &one, sizeof one);
    launcher_watch_.join();
    ::close(launcher_watch_stop_);
    launcher_watch_stop_ = -1;
}

int Engine::runtime_query(int *rank, int *size) {
    std::lock_guard g(mutex_);
    int rc = ensure_pmi();
    if (rank) *rank = rc == PTL_OK ? pmi_->rank() : 0;
    if (size) *size = rc == PTL_OK ? pmi_->size() : 1;
    return rc;
}

int Engine::runtime_barrier() {
    bootstrap::PmiClient *pmi;
    {
        std::lock_guard g(mutex_);
        int rc = ensure_pmi();
        if (rc != PTL_OK) return rc;
        pmi = pmi_.get();
    }
    // Not under the engine lock: progress must go on while we wait for the other ranks.
    try {
        pmi->barrier();
    } catch (const std::exception &e) {
        log_error("PMI barrier: %s", e.what());
        return PTL_FAIL;
    }
    return PTL_OK;
}

std::string Engine::job_secret() {
    // Caller holds the engine lock. portico-run hands every rank the secret; under another
    // launcher the ranks agree on one through the PMI (the first PtlNIInit is then collective).
    const std::string given = settings::kJobSecret.get();
    if (!given.empty()) return given;
    if (ensure_pmi() != PTL_OK) return {};
    try {
        // portico-run publishes it before the job starts (remote ranks get it this way). The
        // collective below uses another key: a rank that saw rank 0's put early must not skip it.
        if (auto v = pmi_->get("portico.secret")) return *v;
        if (pmi_->rank() == 0) {
            uint8_t bytes[16];
            transport::tcp::random_nonce(bytes);
            char hex[33];
            for (int i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
            pmi_->put("portico.secret.drawn", hex);
        }
        pmi_->barrier();
        auto v = pmi_->get("portico.secret.drawn");
        if (!v) log_error("PMI: rank 0 published no job secret; TCP peers will be refused");
        return v ? *v : std::string();
    } catch (const std::exception &e) {
        log_error("PMI: agreeing on a job secret: %s", e.what());
        return {};
    }
}

int Engine::fetch_job_map(std::vector<ptl_process_t> *map, ptl_rank_t *rank, ptl_process_t self) {
    // Caller holds the engine lock. The first logical NI of a job is a collective over the job:
    // every rank publishes its physical id and reads everybody else's.
    if (job_map_.empty()) {
        int rc = ensure_pmi();
        if (rc != PTL_OK) return rc;
        try {
            char value[64];
            std::snprintf(value, sizeof value, "%x:%x", self.phys.nid, self.phys.pid);
            pmi_->put("portico.phys." + std::to_string(pmi_->rank()), value);
            pmi_->barrier();
            job_map_.resize(static_cast<size_t>(pmi_->size()));
            for (int r = 0; r < pmi_->size(); ++r) {
                auto v = pmi_->get("portico.phys." + std::to_string(r));
                unsigned nid = 0, pid = 0;
                if (!v || std::sscanf(v->c_str(), "%x:%x", &nid, &pid) != 2) {
                    log_error("PMI: rank %d published no physical id", r);
                    job_map_.clear();
                    return PTL_FAIL;
                }
                job_map_[static_cast<size_t>(r)].phys.nid = nid;
                job_map_[static_cast<size_t>(r)].phys.pid = pid;
            }
            job_rank_ = static_cast<ptl_rank_t>(pmi_->rank());
        } catch (const std::exception &e) {
            log_error("PMI: %s", e.what());
            job_map_.clear();
            return PTL_FAIL;
        }
    }
    *map = job_map_;
    *rank = job_rank_;
    return PTL_OK;
}

} // namespace portico::engine
