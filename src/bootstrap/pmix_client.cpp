// SPDX-License-Identifier: BSD-3-Clause
// PMIx client (built when pkg-config finds libpmix, PORTICO_HAVE_PMIX): the bootstrap of processes
// started by a PMIx server (Open MPI's mpirun, srun --mpi=pmix, prterun).
//
// Mapping of the PMI-1 style interface onto PMIx:
//   - from_environment(): PMIx_Init (once per process: every client shares one session, as the
//     PMI-1 clients share one connection); rank = our pmix_proc_t's rank, size = PMIx_Get of
//     PMIX_JOB_SIZE for the namespace (wildcard rank), kvsname() = the namespace.
//   - put(key, value): PMIx_Put(PMIX_GLOBAL, "pmi1." + key, string value). The "pmi1." prefix
//     keeps PMI-1 keys apart from the PMIx reserved ("pmix.*") and job-level keys.
//   - barrier(): PMIx_Commit, then PMIx_Fence over every process of the namespace with
//     PMIX_COLLECT_DATA=true, so that afterwards every rank holds every rank's committed data.
//   - get(key): PMI-1's key space is flat (a get does not name the rank that put the key) while
//     PMIx stores data per process and PMIx_Get names the process. PMIX_RANK_UNDEF ("any
//     process") does not find other processes' keys under Open MPI 4.1's server (PMIx 4.2 with
//     its shared-memory data store: NOT-FOUND, plus error lines on stderr), so get() asks
//     PMIx_Get rank by rank, with PMIX_OPTIONAL=true: only the data already collected by a fence
//     (and this process's own puts) is searched, and a miss returns at once (without
//     PMIX_OPTIONAL the server would hold the request until the process posts the key, or time
//     out, whereas a PMI-1 get of an absent key fails at once). A miss costs ~20 us, so the ranks
//     are tried in a useful order: first the numbers that are dot-separated components of the
//     key, last one first ("portico.phys.<rank>", "t.<seq>.<rank>.<chunk>": the putting rank is
//     found in one to three lookups), then every other rank from 0 up. An absent key thus
//     costs one lookup per rank. Keys are expected to be put by one rank each (as every Portico
//     user does); a key put by several ranks returns one of their values.
//   - abort(): PMIx_Abort (the server ends the whole namespace), then _exit. (Open MPI 4.1.4's
//     mpirun itself crashes or hangs now and then while handling a PMIx_Abort, with or without
//     the caller waiting to be killed: seen with a plain C PMIx program too.)
//   - finalize(): ends this client's use of the session; the last client that has not finalized
//     calls PMIx_Finalize (once per process), as the PMI-1 clients share their finalize.
//   - universe_size(), appnum(): PMIX_UNIV_SIZE, PMIX_APPNUM; node_ranks(): PMIX_LOCAL_PEERS;
//     request() (a PMI-1 line) throws: there is no PMI-1 server.
//   - fd(): -1 (the PMIx library owns the connection to its server); finalizing() is true once a
//     finalize() has begun. Instead of the engine's watch on fd(), the client registers a PMIx
//     event handler for PMIX_ERR_LOST_CONNECTION that ends the process (exit status 1) when the
//     connection to the PMIx server is lost before finalize(): a killed mpirun would otherwise
//     leave ranks behind that are not inside a PMIx call (PORTICO_LAUNCHER_WATCH=0 disables it,
//     as it disables the engine's watch under PMI-1).
//   - libpmix is loaded (dlopen) by the first PMIx client, not linked: every process of a job
//     started by another launcher, and every start-up, would otherwise pay for mapping and
//     relocating it and its dependencies (hwloc, libevent, munge, udev) — a third of an empty
//     rank's start-up at 1024 ranks per machine.
// Keys keep PMI-1's limit (detail::check_key, 63 characters), so that a program tested under one
// launcher works under the others; values may be long (max_value_length() 256 KiB - 1): the job
// service puts a job's gathered start-up data as one value, fetched with one PMIx_Get per rank.
#include "common/log.hpp"
#include "bootstrap/pmi_client.hpp"
#include "bootstrap/pmi_internal.hpp"
#include "bootstrap/bootstrap_settings.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#include <pmix.h>

namespace portico::bootstrap {
namespace {

// The libpmix functions this client calls, from the library loaded at run time. The names below
// are redirected to them, also inside pmix.h's macros (PMIX_INFO_LOAD, PMIX_VALUE_RELEASE, ...).
struct PmixApi {
    decltype(&::PMIx_Init) init;
    decltype(&::PMIx_Finalize) finalize;
    decltype(&::PMIx_Abort) abort;
    decltype(&::PMIx_Put) put;
    decltype(&::PMIx_Commit) commit;
    decltype(&::PMIx_Fence) fence;
    decltype(&::PMIx_Get) get;
    decltype(&::PMIx_Error_string) error_string;
    decltype(&::PMIx_Register_event_handler) register_event_handler;
    decltype(&::PMIx_Info_load) info_load;
    decltype(&::PMIx_Value_destruct) value_destruct;
};

// libpmix's soname since PMIx 2 (Debian's libpmix2 ships PMIx 4 under it).
constexpr const char kPmixLibrary[] = "libpmix.so.2";

const PmixApi &pmix_api() {
    static const PmixApi *api = [] {
        // RTLD_GLOBAL: libpmix's own plugins (MCA components) look its symbols up globally.
        void *lib = ::dlopen(kPmixLibrary, RTLD_NOW | RTLD_GLOBAL);
        if (lib == nullptr) return static_cast<PmixApi *>(nullptr);
        auto *a = new PmixApi;
        bool ok = true;
        auto load = [&](auto &fn, const char *name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
            ok = ok && fn != nullptr;
        };
        load(a->init, "PMIx_Init");
        load(a->finalize, "PMIx_Finalize");
        load(a->abort, "PMIx_Abort");
        load(a->put, "PMIx_Put");
        load(a->commit, "PMIx_Commit");
        load(a->fence, "PMIx_Fence");
        load(a->get, "PMIx_Get");
        load(a->error_string, "PMIx_Error_string");
        load(a->register_event_handler, "PMIx_Register_event_handler");
        load(a->info_load, "PMIx_Info_load");
        load(a->value_destruct, "PMIx_Value_destruct");
        if (!ok) {
            delete a;
            return static_cast<PmixApi *>(nullptr);
        }
        return a;
    }();
    if (api == nullptr) {
        const char *why = ::dlerror();
        throw PmiError(std::string("PMIx: cannot load ") + kPmixLibrary + " (" + (why ? why : "a symbol is missing") +
                       "); install libpmix2 or start the job with a PMI-1 launcher");
    }
    return *api;
}

} // namespace
} // namespace portico::bootstrap

#define PMIx_Init pmix_api().init
#define PMIx_Finalize pmix_api().finalize
#define PMIx_Abort pmix_api().abort
#define PMIx_Put pmix_api().put
#define PMIx_Commit pmix_api().commit
#define PMIx_Fence pmix_api().fence
#define PMIx_Get pmix_api().get
#define PMIx_Error_string pmix_api().error_string
#define PMIx_Register_event_handler pmix_api().register_event_handler
#define PMIx_Info_load pmix_api().info_load
#define PMIx_Value_destruct pmix_api().value_destruct

namespace portico::bootstrap {
namespace {

constexpr int kKeylenMax = 63;
constexpr int kVallenMax = 256 * 1024 - 1;
// Prefix of every key this client puts or gets (see the header comment).
constexpr const char kKeyPrefix[] = "pmi1.";

std::string pmix_error(pmix_status_t rc) {
    const char *s = PMIx_Error_string(rc);
    return std::string(s != nullptr ? s : "unknown PMIx error") + " (" + std::to_string(rc) + ")";
}

void load_key(pmix_key_t out, const std::string &key) {
    std::memset(out, 0, PMIX_MAX_KEYLEN + 1);
    std::strncpy(out, key.c_str(), PMIX_MAX_KEYLEN);
}

// The process's PMIx session, shared by every client (PMIx_Init once, PMIx_Finalize once).
struct Session {
    pmix_proc_t me{};
    int size = 0;
    std::string nspace;
    std::timed_mutex mutex; // put/get/barrier/finalize
    bool finalized = false; // PMIx_Finalize is done (mutex)
    int users = 0;          // clients that have not finalized (mutex)
    std::atomic<bool> finalizing{false};
};

// Set when finalize() begins (read by the lost-connection handler, which may outlive a Session).
std::atomic<bool> g_finalizing{false};

void on_lost_connection(size_t, pmix_status_t, const pmix_proc_t *, pmix_info_t *, size_t, pmix_info_t *, size_t,
                        pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata) {
    if (!g_finalizing.load()) {
        log_error("the connection to the PMIx server closed (the launcher died or ended the job); exiting");
        std::fflush(stderr);
        ::_exit(1);
    }
    if (cbfunc != nullptr) cbfunc(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, cbdata);
}

struct Registry {
    std::mutex mutex;
    std::weak_ptr<Session> session;
};
Registry &registry() {
    static Registry *r = new Registry;
    return *r;
}

long value_as_long(const pmix_value_t *v, bool &ok) {
    ok = true;
    switch (v->type) {
    case PMIX_UINT32: return static_cast<long>(v->data.uint32);
    case PMIX_INT32: return v->data.int32;
    case PMIX_UINT16: return v->data.uint16;
    case PMIX_INT: return v->data.integer;
    case PMIX_UINT: return static_cast<long>(v->data.uint);
    case PMIX_UINT64: return v->data.uint64 > LONG_MAX ? -1 : static_cast<long>(v->data.uint64);
    case PMIX_INT64: return static_cast<long>(v->data.int64);
    case PMIX_SIZE: return v->data.size > LONG_MAX ? -1 : static_cast<long>(v->data.size);
    default: ok = false; return -1;
    }
}

std::shared_ptr<Session> open_session() {
    auto s = std::make_shared<Session>();
    pmix_status_t rc = PMIx_Init(&s->me, nullptr, 0);
    if (rc != PMIX_SUCCESS)
        throw PmiError("PMIx: PMIx_Init failed: " + pmix_error(rc) +
                       " (is the PMIx server that started this process still running?)");
    s->nspace = std::string(s->me.nspace, strnlen(s->me.nspace, PMIX_MAX_NSLEN));
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, s->me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *val = nullptr;
    rc = PMIx_Get(&wild, PMIX_JOB_SIZE, nullptr, 0, &val);
    if (rc != PMIX_SUCCESS || val == nullptr) {
        PMIx_Finalize(nullptr, 0);
        throw PmiError("PMIx: cannot get the job size (PMIX_JOB_SIZE) of namespace '" + s->nspace +
                       "': " + pmix_error(rc));
    }
    bool ok = false;
    long size = value_as_long(val, ok);
    PMIX_VALUE_RELEASE(val);
    if (!ok || size < 1 || size > INT_MAX || s->me.rank >= static_cast<pmix_rank_t>(size)) {
        PMIx_Finalize(nullptr, 0);
        throw PmiError("PMIx: unusable job size " + std::to_string(size) + " for rank " + std::to_string(s->me.rank) +
                       " of namespace '" + s->nspace + "'");
    }
    s->size = static_cast<int>(size);
    if (settings::kLauncherWatch.get()) {
        pmix_status_t code = PMIX_ERR_LOST_CONNECTION;
        // Blocking registration (no callback); a failure only loses the watch.
        rc = PMIx_Register_event_handler(&code, 1, nullptr, 0, on_lost_connection, nullptr, nullptr);
        if (rc < 0)
            log_error("PMIx: cannot watch the connection to the PMIx server (PMIx_Register_event_handler: %s)",
                      pmix_error(rc).c_str());
    }
    return s;
}

bool is_miss(pmix_status_t rc) {
    return rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_PROC_ENTRY_NOT_FOUND || rc == PMIX_ERR_NOT_AVAILABLE;
}

// The dot-separated components of key that are decimal numbers, last first (see get()).
std::vector<long> rank_hints(const std::string &key) {
    std::vector<long> out;
    std::size_t end = key.size();
    while (end > 0) {
        std::size_t dot = key.rfind('.', end - 1);
        std::size_t begin = dot == std::string::npos ? 0 : dot + 1;
        std::size_t len = end - begin;
        if (len > 0 && len <= 9 && key.find_first_not_of("0123456789", begin) >= end)
            out.push_back(std::stol(key.substr(begin, len)));
        if (dot == std::string::npos) break;
        end = dot;
    }
    return out;
}

class PmixClient final : public PmiClient {
public:
    // Counts as a user of the session (mutex held by the caller).
    explicit PmixClient(std::shared_ptr<Session> s) : s_(std::move(s)) { ++s_->users; }
    ~PmixClient() override {
        std::lock_guard lk(s_->mutex);
        if (!left_) --s_->users;
    }

    const char *protocol() const override { return "PMIx"; }
    int rank() const override { return static_cast<int>(s_->me.rank); }
    int size() const override { return s_->size; }
    const std::string &kvsname() const override { return s_->nspace; }
    int max_value_length() const override { return kVallenMax; }
    int max_key_length() const override { return kKeylenMax; }
    int fd() const override { return -1; }
    bool finalizing() const override { return s_->finalizing.load(); }

    void put(const std::string &key, const std::string &value) override {
        detail::check_key(key, kKeylenMax);
        detail::check_value(value, kVallenMax);
        std::lock_guard lk(s_->mutex);
        check_usable("put");
        pmix_key_t k;
        load_key(k, kKeyPrefix + key);
        pmix_value_t v;
        PMIX_VALUE_CONSTRUCT(&v);
        v.type = PMIX_STRING;
        v.data.string = const_cast<char *>(value.c_str()); // PMIx_Put copies it
        pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k, &v);
        if (rc != PMIX_SUCCESS) throw PmiError("PMIx: PMIx_Put of key '" + key + "' failed: " + pmix_error(rc));
    }

    std::optional<std::string> get(const std::string &key) override {
        detail::check_key(key, kKeylenMax);
        std::lock_guard lk(s_->mutex);
        check_usable("get");
        pmix_key_t k;
        load_key(k, kKeyPrefix + key);
        pmix_info_t info;
        bool optional = true;
        PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &optional, PMIX_BOOL);
        pmix_value_t *val = nullptr;
        pmix_status_t rc = PMIX_ERR_NOT_FOUND;
        std::vector<bool> tried(static_cast<std::size_t>(s_->size), false);
        auto try_rank = [&](long r) {
            if (r < 0 || r >= s_->size || tried[static_cast<std::size_t>(r)]) return false;
            tried[static_cast<std::size_t>(r)] = true;
            pmix_proc_t proc;
            PMIX_LOAD_PROCID(&proc, s_->me.nspace, static_cast<pmix_rank_t>(r));
            rc = PMIx_Get(&proc, k, &info, 1, &val);
            return !is_miss(rc);
        };
        bool done = false;
        for (long r : rank_hints(key))
            if ((done = try_rank(r))) break;
        for (long r = 0; !done && r < s_->size; ++r) done = try_rank(r);
        PMIX_INFO_DESTRUCT(&info);
        if (!done) return std::nullopt;
        if (rc != PMIX_SUCCESS || val == nullptr)
            throw PmiError("PMIx: PMIx_Get of key '" + key + "' failed: " + pmix_error(rc));
        std::optional<std::string> out;
        if (val->type == PMIX_STRING && val->data.string != nullptr) out = std::string(val->data.string);
        const pmix_data_type_t type = val->type;
        PMIX_VALUE_RELEASE(val);
        if (!out)
            throw PmiError("PMIx: key '" + key + "' holds a value of PMIx type " + std::to_string(type) +
                           ", not a string");
        return out;
    }

    void barrier() override {
        std::lock_guard lk(s_->mutex);
        check_usable("barrier");
        pmix_status_t rc = PMIx_Commit();
        if (rc != PMIX_SUCCESS) throw PmiError("PMIx: PMIx_Commit failed: " + pmix_error(rc));
        pmix_proc_t all;
        PMIX_LOAD_PROCID(&all, s_->me.nspace, PMIX_RANK_WILDCARD);
        pmix_info_t info;
        bool collect = true;
        PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
        rc = PMIx_Fence(&all, 1, &info, 1);
        PMIX_INFO_DESTRUCT(&info);
        if (rc != PMIX_SUCCESS)
            throw PmiError("PMIx: PMIx_Fence over namespace '" + s_->nspace + "' failed: " + pmix_error(rc));
    }

    int universe_size() override {
        // Open MPI says how many slots it has, which an oversubscribed job exceeds.
        const std::optional<long> n = job_number(PMIX_UNIV_SIZE, PMIX_RANK_WILDCARD);
        return n && *n >= size() && *n <= INT_MAX ? static_cast<int>(*n) : size();
    }

    int appnum() override {
        const std::optional<long> n = job_number(PMIX_APPNUM, s_->me.rank);
        return n && *n >= 0 && *n <= INT_MAX ? static_cast<int>(*n) : 0;
    }

    std::optional<std::vector<int>> node_ranks() override {
        std::lock_guard lk(s_->mutex);
        check_usable("node_ranks");
        pmix_proc_t wild;
        PMIX_LOAD_PROCID(&wild, s_->me.nspace, PMIX_RANK_WILDCARD);
        pmix_value_t *val = nullptr;
        if (PMIx_Get(&wild, PMIX_LOCAL_PEERS, nullptr, 0, &val) != PMIX_SUCCESS || val == nullptr) return std::nullopt;
        std::optional<std::vector<int>> ranks;
        if (val->type == PMIX_STRING && val->data.string != nullptr) {
            ranks.emplace();
            const std::string list = val->data.string;
            for (std::size_t at = 0; at < list.size();) {
                std::size_t end = list.find(',', at);
                if (end == std::string::npos) end = list.size();
                char *stop = nullptr;
                const long r = std::strtol(list.c_str() + at, &stop, 10);
                if (stop == list.c_str() + at || r < 0 || r >= size()) {
                    ranks.reset();
                    break;
                }
                ranks->push_back(static_cast<int>(r));
                at = end + 1;
            }
        }
        PMIX_VALUE_RELEASE(val);
        if (ranks) std::sort(ranks->begin(), ranks->end());
        return ranks;
    }

    std::string request(const std::string &, const std::string &) override {
        throw PmiError("PMIx: the launcher speaks PMIx, not PMI-1: it takes no PMI-1 requests");
    }

    void finalize() override {
        std::lock_guard lk(s_->mutex);
        if (left_) return;
        left_ = true;
        if (--s_->users > 0 || s_->finalized) return; // another user still needs the session
        s_->finalizing.store(true);
        g_finalizing.store(true);
        s_->finalized = true;
        pmix_status_t rc = PMIx_Finalize(nullptr, 0);
        if (rc != PMIX_SUCCESS) throw PmiError("PMIx: PMIx_Finalize failed: " + pmix_error(rc));
    }

    [[noreturn]] void abort(int exit_code, const std::string &message) override {
        // No lock: another thread may be blocked in barrier() holding it.
        std::fflush(stdout);
        std::fflush(stderr);
        pmix_status_t rc = PMIX_ERR_INIT;
        if (!s_->finalizing.load()) {
            const int status = detail::exit_status_for(exit_code);
            rc = PMIx_Abort(status, message.c_str(), nullptr, 0); // all of our namespace
        }
        if (rc != PMIX_SUCCESS) log_error("aborting the job (exit code %d): %s", exit_code, message.c_str());
        std::fflush(stderr);
        ::_exit(detail::exit_status_for(exit_code));
    }

private:
    void check_usable(const char *what) const { // mutex held
        if (left_ || s_->finalized) throw PmiError(std::string("PMIx: ") + what + " after finalize()");
    }

    // A number the server keeps for the job (rank: PMIX_RANK_WILDCARD) or this process; nullopt
    // when it has none.
    std::optional<long> job_number(const char *key, pmix_rank_t rank) {
        std::lock_guard lk(s_->mutex);
        check_usable(key);
        pmix_proc_t proc;
        PMIX_LOAD_PROCID(&proc, s_->me.nspace, rank);
        pmix_value_t *val = nullptr;
        if (PMIx_Get(&proc, key, nullptr, 0, &val) != PMIX_SUCCESS || val == nullptr) return std::nullopt;
        bool ok = false;
        const long n = value_as_long(val, ok);
        PMIX_VALUE_RELEASE(val);
        return ok ? std::optional<long>(n) : std::nullopt;
    }

    std::shared_ptr<Session> s_;
    bool left_ = false; // this client has finalized (session mutex)
};

} // namespace

bool detail::pmix_leave_at_exit(std::chrono::steady_clock::time_point deadline) {
    std::shared_ptr<Session> s;
    {
        Registry &reg = registry();
        std::lock_guard lk(reg.mutex);
        s = reg.session.lock();
    }
    if (!s) return true;
    std::unique_lock lk(s->mutex, std::defer_lock);
    if (!lk.try_lock_until(deadline)) return false; // a thread is inside a fence: not ours to cut
    if (s->finalized) return true;
    s->finalized = true;
    s->finalizing.store(true);
    g_finalizing.store(true);
    // PMIx_Finalize talks to the server and has no timeout of its own: it runs on a thread of its
    // own, which the exit leaves behind if the server does not answer in time.
    struct Outcome {
        std::mutex mutex;
        std::condition_variable done;
        bool finished = false;
        pmix_status_t rc = PMIX_ERROR;
    };
    auto outcome = std::make_shared<Outcome>();
    std::thread([outcome] {
        const pmix_status_t rc = PMIx_Finalize(nullptr, 0);
        std::lock_guard g(outcome->mutex);
        outcome->rc = rc;
        outcome->finished = true;
        outcome->done.notify_all();
    }).detach();
    std::unique_lock g(outcome->mutex);
    if (!outcome->done.wait_until(g, deadline, [&] { return outcome->finished; })) return false;
    return outcome->rc == PMIX_SUCCESS;
}

std::unique_ptr<PmiClient> detail::pmix_from_environment() {
    Registry &reg = registry();
    std::lock_guard<std::mutex> lk(reg.mutex);
    std::shared_ptr<Session> s = reg.session.lock();
    if (!s) {
        s = open_session();
        reg.session = s;
        detail::leave_at_normal_exit();
    }
    std::lock_guard slk(s->mutex);
    if (s->finalized) throw PmiError("PMIx: this process has finalized its PMIx session already");
    return std::make_unique<PmixClient>(std::move(s));
}

} // namespace portico::bootstrap
