// SPDX-License-Identifier: BSD-3-Clause
#include "engine/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <system_error>
#include <unistd.h>

#include "bootstrap/job.hpp"
#include "common/fence.hpp"
#include "common/futex.hpp"
#include "common/log.hpp"
#include "common/small_set.hpp"
#include "engine/engine_settings.hpp"
#include "transport/endpoint.hpp"

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
        v.progress_park_max_ns = std::max(v.progress_park_ns, us_to_ns(settings::kProgressParkMaxUs.get()));
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

int Tunables::set_transport(const char *names) {
    std::string error;
    switch (transport::choose_transports(names ? names : "", &error)) {
    case transport::Choice::taken: return PTL_OK;
    case transport::Choice::environment_wins: return PTL_IGNORED;
    case transport::Choice::invalid: break;
    }
    log_error("portico_set_transport: %s", error.c_str());
    return PTL_ARG_INVALID;
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
    l.max_msg_size = settings::kMaxMsgSize.get();
    // An atomic travels in one frame; ni_init lowers these to what the transport's frames hold.
    l.max_atomic_size = settings::kMaxAtomicSize.get();
    l.max_fetch_atomic_size = settings::kMaxFetchAtomicSize.get();
    // Messages are applied whole and in order per link, so every message keeps write-after-write
    // order; stated as the largest message there can be, which leaves clients the same headroom.
    l.max_waw_ordered_size = settings::kMsgSizeCeiling;
    l.max_war_ordered_size = settings::kMsgSizeCeiling;
    l.max_volatile_size = settings::kMaxVolatileSize.get();
    l.features = PTL_TARGET_BIND_INACCESSIBLE | PTL_TOTAL_DATA_ORDERING;
    return l;
}

Engine &Engine::make_instance() {
    // Never destroyed: an application may call Portals from atexit handlers or other threads.
    // The first callers of several threads meet here: the static's guard makes exactly one.
    static Engine *e = new Engine;
    instance_.store(e, std::memory_order_release);
    return *e;
}

int Engine::init() {
    std::lock_guard g(mutex_);
    if (finalized_ && init_count_ == 0) return PTL_FAIL; // "cannot be called after the library has been finalized"
    if (init_count_++ == 0) {
        aborted_ = false;
        fast_path_ = settings::kFastPath.get();
    }
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
    // The last PtlFini leaves the job, unless the program took that on (bootstrap/job.hpp).
    bootstrap::Job *job = bootstrap::Job::joined();
    if (job && !job->program_leaves()) {
        try {
            job->finalize();
        } catch (const std::exception &e) {
            log_error("leaving the job: %s", e.what());
        }
    }
    // Freed while a thread was inside a wait: spare now if nobody is left inside (never deleted,
    // see spare_eqs_).
    std::vector<std::unique_ptr<EQ>> eqs;
    eqs.swap(dead_eqs_);
    for (auto &q : eqs) retire_eq(q.release());
    std::vector<std::unique_ptr<CT>> cts;
    cts.swap(dead_cts_);
    for (auto &c : cts) retire_ct(c.release());
    std::vector<std::unique_ptr<MD>> mds;
    mds.swap(dead_mds_);
    for (auto &m : mds) retire_md(m.release());
}

void Engine::abort() {
    aborted_.store(true, std::memory_order_release);
    notify_waiters();
}

namespace {
// The EQs and CTs whose sleepers a frame run owes a look (see notify_waiters); a run that
// completes on more objects than this pays a fence for each of the others.
__attribute__((tls_model("initial-exec"))) thread_local SmallSet<const Waitable *, 4> t_deferred_wakes;
// This thread holds the engine lock for a run of frames (begin_frames). A thread, not a receiver,
// property: the transports of one endpoint may be polled by two threads at once.
__attribute__((tls_model("initial-exec"))) thread_local bool t_in_frame_run = false;
} // namespace

void Engine::notify_waiters(const Waitable *obj) {
    // A completion in a frame run: its sleepers are looked at after the fence that ends the run
    // (the transport's own, for shared memory), one fence per run instead of one per completion,
    // and the wake-up system call, if any, is made outside the engine lock. EQs and CTs are never
    // deleted while the engine lives (spare lists), so the pointer stays good until then.
    if (obj && t_in_frame_run && t_deferred_wakes.add(obj)) return;
    // Pairs with the sleeper's increments of the counts before its last look (Dekker): either we
    // see it, or it sees what we published before this fence.
    full_fence();
    wake_sleepers_of(obj);
}

void Engine::notify_deferred_waiters() {
    auto &d = t_deferred_wakes;
    for (unsigned i = 0; i < d.count; ++i) wake_sleepers_of(d.items[i]);
    d.count = 0;
}

void Engine::wake_sleepers_of(const Waitable *obj) {
    // After a full fence that follows the news.
    if (obj ? obj->sleepers.load(std::memory_order_seq_cst) == 0 &&
                  wildcard_sleepers_.load(std::memory_order_seq_cst) == 0
            : sleepers_.load(std::memory_order_seq_cst) == 0 && passive_sleepers_.load(std::memory_order_seq_cst) == 0)
        return;
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

void Endpoint::poll_soon() {
    // Called with the engine lock held, so it takes no lock (the progress thread holds sleep_mutex
    // while it arms the transports, whose pollers take the engine lock). Pairs with the progress
    // thread's store of resting before it looks at holds_frames() (Dekker): either it sees the
    // held frames and polls instead of resting, or we see it rest and wake it. Its park_seen was
    // read before that store, so a bump here always ends the park, even one not yet begun; an
    // interrupt leaves the transport's wait fd readable until the wait reads it.
    //
    // A parked thread is left alone: it parks because the application is calling Portals, whose
    // next wait polls (and writes what is held), and it wakes by itself within
    // PORTICO_PROGRESS_PARK_US if the application stops. Waking it here made it write every held
    // frame as soon as it was held: one futex wake and one write per message of a burst, the
    // opposite of holding them (TCP put_bw at 8 B was 5 us per put). A park that has grown longer
    // than that (kParkedLong) is ended, once: held frames keep their bound, and the thread parks
    // again from the short end.
    const uint8_t r = resting.load(std::memory_order_seq_cst);
    if (r == kAwake || r == kParked) return;
    if (r != kArmed) {
        park_word.fetch_add(1, std::memory_order_seq_cst);
        futex_wake(park_word);
    }
    if (r != kParked && r != kParkedLong) transport->interrupt();
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
    ep->note_app_call();
    ep->poll();
}

void Engine::progress_loop(Endpoint &ep) {
    const Tunables &t = Tunables::get();
    uint64_t idle_since = 0;
    // Each park that passes with the application still polling doubles the next one, up to
    // PORTICO_PROGRESS_PARK_MAX_US: on two cores, a wake-up every 250 us preempted a spinning
    // application thread often enough to cost a shared-memory ping-pong a fifth of its speed
    // (docs/PERFORMANCE.md, "Issue 31: the progress thread's park and fewer locked instructions").
    // Arming or an early end starts again from PORTICO_PROGRESS_PARK_US.
    uint64_t park_ns = t.progress_park_ns;
    // A park that ran its course goes straight to the next decision, without a poll: while the
    // application polls, a poll here only takes its frames (and their cache lines) away from it.
    bool decide_now = false;
    uint64_t calls_seen = ep.app_calls.load(std::memory_order_relaxed);
    while (!ep.stop.load(std::memory_order_acquire)) {
        if (!decide_now && ep.poll_in_background() > 0) {
            idle_since = 0;
            continue;
        }
        const uint64_t now = monotonic_ns();
        if (idle_since == 0) idle_since = now;
        if (!decide_now && now - idle_since < t.progress_spin_ns) {
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
            park_seen = ep.park_word.load(std::memory_order_seq_cst);
            ep.resting.store(Endpoint::kDeciding, std::memory_order_seq_cst);
            if (ep.transport->holds_frames()) {
                // Frames wait for a poll (coalescing, see poll_soon): poll instead of resting.
                ep.resting.store(Endpoint::kAwake, std::memory_order_relaxed);
                idle_since = 0;
                decide_now = false;
                continue;
            }
            park = !ep.arm_request && sleepers_.load(std::memory_order_relaxed) == 0 && app_active;
            ep.arm_request = false;
            if (park) {
                ep.progress = Endpoint::Progress::Parked;
                ep.resting.store(park_ns > t.progress_park_ns ? Endpoint::kParkedLong : Endpoint::kParked,
                                 std::memory_order_seq_cst);
            } else {
                park_ns = t.progress_park_ns;
                ep.progress = Endpoint::Progress::Armed;
                ep.transport->arm_sleep();
                ep.armed = true;
                ep.resting.store(Endpoint::kArmed, std::memory_order_seq_cst);
            }
        }
        if (park) {
            futex_wait(ep.park_word, park_seen, static_cast<int64_t>(park_ns));
            const bool ended_early = ep.park_word.load(std::memory_order_relaxed) != park_seen;
            park_ns = ended_early ? t.progress_park_ns : std::min(2 * park_ns, t.progress_park_max_ns);
        } else if (!ep.transport->has_pending() && !ep.stop.load())
            ep.transport->wait(*ep.receiver, -1);
        {
            std::lock_guard g(ep.sleep_mutex);
            ep.progress = Endpoint::Progress::Running;
            ep.resting.store(Endpoint::kAwake, std::memory_order_relaxed);
            if (ep.armed) {
                ep.transport->disarm_sleep();
                ep.armed = false;
            }
        }
        // After a park, decide again at once: a parked thread that woke to check must not spin
        // (or poll) while the application runs. An early end (a waiter about to sleep wants it
        // armed) polls first.
        decide_now = park && park_ns > t.progress_park_ns;
        idle_since = park ? 1 : 0;
    }
}

void EndpointReceiver::begin_frames() {
    engine_.mutex_.lock();
    t_in_frame_run = true;
}
void EndpointReceiver::end_frames() {
    t_in_frame_run = false;
    engine_.mutex_.unlock();
}
void EndpointReceiver::frames_published() { engine_.notify_deferred_waiters(); }
void EndpointReceiver::on_frame(transport::Link &link, const transport::FrameHeader &h, const std::byte *payload) {
    if (t_in_frame_run)
        engine_.handle_frame_locked(ep_, link, h, payload);
    else
        engine_.handle_frame(ep_, link, h, payload);
}
void EndpointReceiver::on_link_failed(transport::Link &link, bool last) { engine_.handle_link_failed(ep_, link, last); }
void EndpointReceiver::on_send_complete(uint64_t token, bool ok, bool source_fault) {
    engine_.handle_send_complete(token, ok, source_fault);
}

std::string Engine::job_secret() {
    // Under a launcher other than portico-run this is a collective (the first PtlNIInit that
    // opens TCP is then collective, as the first logical one always is).
    std::string error;
    bootstrap::Job *job = bootstrap::Job::process(&error);
    if (!job) return {};
    try {
        return job->secret();
    } catch (const std::exception &e) {
        log_error("agreeing on a job secret: %s; TCP peers will be refused", e.what());
        return {};
    }
}

std::string Engine::shared_job_secret() {
    std::string error;
    bootstrap::Job *job = bootstrap::Job::process(&error);
    if (!job) return {};
    try {
        return job->shared_secret();
    } catch (const std::exception &e) {
        log_error("reading the job secret: %s; shared-memory links will be refused", e.what());
        return {};
    }
}

void Engine::report_lost_peer(transport::PeerId peer) {
    // Caller holds the engine lock.
    bootstrap::Job *job = bootstrap::Job::joined();
    if (!job) return;
    for (size_t r = 0; r < job_map_.size(); ++r)
        if (job_map_[r].phys.nid == peer.nid && job_map_[r].phys.pid == peer.pid) {
            job->peer_lost(static_cast<int>(r));
            return;
        }
}

void Engine::farewell() {
    // From an exit handler: another thread may hold the lock for good (it is being torn down
    // with the process), so never wait for it.
    std::unique_lock g(mutex_, std::try_to_lock);
    if (!g.owns_lock()) return;
    for (auto &ep : endpoints_) ep->transport->farewell();
}

int Engine::fetch_job_map(std::vector<ptl_process_t> *map, ptl_rank_t *rank, ptl_process_t self) {
    // Caller holds the engine lock. The first logical NI of a job is a collective over the job:
    // every rank publishes its physical id and reads everybody else's.
    if (job_map_.empty()) {
        bootstrap::Job *job = bootstrap::Job::process();
        if (!job) return PTL_FAIL;
        if (!job->launched()) return PTL_IGNORED;
        try {
            job_map_.resize(static_cast<size_t>(job->size()));
            job->allgather(&self, sizeof self, job_map_.data());
            job_rank_ = static_cast<ptl_rank_t>(job->rank());
            job->set_farewell([this] { farewell(); });
        } catch (const std::exception &e) {
            log_error("building the job's rank map: %s", e.what());
            job_map_.clear();
            return PTL_FAIL;
        }
    }
    *map = job_map_;
    *rank = job_rank_;
    return PTL_OK;
}

} // namespace portico::engine
