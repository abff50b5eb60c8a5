// SPDX-License-Identifier: BSD-3-Clause
#include "bootstrap/job.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bootstrap/bootstrap_settings.hpp"
#include "bootstrap/job_secret.hpp"
#include "common/log.hpp"
#include "common/netif.hpp"
#include "common/random.hpp"

namespace portico::bootstrap {

namespace {

// base64url: letters, digits, '-' and '_', which every launcher's key-value space carries.
constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// Values travel as "b" + base64url without padding (launchers forbid spaces, '=', newlines and
// backslashes, and MPICH's parser cannot carry an empty value): 4 characters per 3 bytes, so that
// the job's gathered start-up data takes as few of the launcher's values as it can (Slurm's
// PMI-1 allows ~1000 characters each, and every one is a request). One too long for the launcher
// is split over numbered keys and announced as "#<count>".
std::string encode(const std::string &bytes) {
    std::string out = "b";
    out.reserve(1 + (bytes.size() * 4 + 2) / 3);
    const auto *in = reinterpret_cast<const unsigned char *>(bytes.data());
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const uint32_t v = uint32_t(in[i]) << 16 | uint32_t(in[i + 1]) << 8 | in[i + 2];
        for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kDigits[(v >> shift) & 63]);
    }
    if (const size_t rest = bytes.size() - i; rest > 0) {
        const uint32_t v = uint32_t(in[i]) << 16 | (rest == 2 ? uint32_t(in[i + 1]) << 8 : 0);
        for (size_t k = 0; k <= rest; ++k) out.push_back(kDigits[(v >> (18 - 6 * k)) & 63]);
    }
    return out;
}

std::string decode(const std::string &key, const std::string &value) {
    // A table, not branches: every rank decodes the job's gathered start-up data (tens of KB).
    static const auto table = [] {
        std::array<uint8_t, 256> t{};
        t.fill(0xff);
        for (int c = 0; c < 64; ++c) t[static_cast<unsigned char>(kDigits[c])] = static_cast<uint8_t>(c);
        return t;
    }();
    const size_t chars = value.empty() ? 0 : value.size() - 1;
    if (value.empty() || value[0] != 'b' || chars % 4 == 1) throw PmiError("job service: malformed value under " + key);
    std::string out;
    out.reserve(chars * 3 / 4);
    const auto *in = reinterpret_cast<const unsigned char *>(value.data()) + 1;
    for (size_t i = 0; i < chars; i += 4) {
        const size_t n = std::min<size_t>(4, chars - i);
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) {
            const unsigned d = k < n ? table[in[i + k]] : 0;
            if (d > 63) throw PmiError("job service: malformed value under " + key);
            v = v << 6 | d;
        }
        for (size_t k = 0; k + 1 < n; ++k) out.push_back(static_cast<char>((v >> (16 - 8 * k)) & 0xff));
    }
    return out;
}

// The gathered values' framing: each value's length as a LEB128 varint (one byte below 128),
// then the value.
void append_length(std::string &out, size_t len) {
    do {
        const auto low = static_cast<unsigned char>(len & 0x7f);
        len >>= 7;
        out.push_back(static_cast<char>(len ? low | 0x80 : low));
    } while (len);
}

bool read_length(const std::string &in, size_t &at, size_t &len) {
    len = 0;
    for (unsigned shift = 0; at < in.size() && shift < 64; shift += 7) {
        const auto b = static_cast<unsigned char>(in[at++]);
        len |= size_t(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

std::string token_of(const std::string &s) {
    std::string out;
    for (char c : s)
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') out.push_back(c);
    if (out.size() > 40) out.resize(40);
    return out;
}

} // namespace

namespace {
std::atomic<Job *> g_joined{nullptr};
} // namespace

Job *Job::joined() { return g_joined.load(std::memory_order_acquire); }

Job *Job::process(std::string *error) {
    // Never destroyed: clients may use the job from atexit handlers and other threads.
    static std::string failure;
    static Job *job = []() -> Job * {
        try {
            Job *j = new Job(PmiClient::from_environment());
            g_joined.store(j, std::memory_order_release);
            return j;
        } catch (const std::exception &e) {
            failure = e.what();
            log_error("cannot join the job: %s", e.what());
            return nullptr;
        }
    }();
    if (!job && error) *error = failure;
    return job;
}

Job::Job(std::unique_ptr<PmiClient> pmi) : pmi_(std::move(pmi)) {
    if (pmi_) {
        rank_ = pmi_->rank();
        size_ = pmi_->size();
        set_log_rank(rank_);
    }
    const char *given = settings::kJobId.raw();
    id_ = token_of(given ? std::string(given) : pmi_ ? pmi_->kvsname() : std::string());
    if (id_.empty()) id_ = "pid" + std::to_string(getpid());
    if (pmi_ && settings::kLauncherWatch.get()) start_launcher_watch();
}

void Job::start_launcher_watch() {
    // We watch a duplicate so that the PMI client may close its own descriptor at any time
    // without the watcher looking at a recycled number. A client without a launcher connection
    // (PMIx: fd() is -1) has nothing to watch: PMIx launchers kill their ranks themselves.
    if (pmi_->fd() < 0) return;
    const int fd = ::dup(pmi_->fd());
    watch_stop_ = eventfd(0, EFD_CLOEXEC);
    if (fd < 0 || watch_stop_ < 0) {
        if (fd >= 0) ::close(fd);
        if (watch_stop_ >= 0) ::close(watch_stop_);
        watch_stop_ = -1;
        return;
    }
    PmiClient *pmi = pmi_.get();
    const int stop = watch_stop_;
    watch_ = std::thread([fd, stop, pmi] {
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

void Job::stop_launcher_watch() {
    if (!watch_.joinable()) return;
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(watch_stop_, &one, sizeof one);
    watch_.join();
    ::close(watch_stop_);
    watch_stop_ = -1;
}

std::string Job::next_prefix() { return "pj." + std::to_string(seq_++) + "."; }

std::vector<std::pair<std::string, std::string>> Job::encoded_puts(const std::string &key,
                                                                   const std::string &value) const {
    const std::string v = encode(value);
    const size_t max_len = static_cast<size_t>(pmi_->max_value_length());
    if (v.size() <= max_len) return {{key, v}};
    const size_t count = (v.size() + max_len - 1) / max_len;
    std::vector<std::pair<std::string, std::string>> puts;
    for (size_t i = 0; i < count; ++i) puts.emplace_back(key + "." + std::to_string(i), v.substr(i * max_len, max_len));
    puts.emplace_back(key, "#" + std::to_string(count));
    return puts;
}

std::vector<std::string> Job::get_values(const std::vector<std::string> &keys) {
    auto must_have = [](const std::optional<std::string> &v, const std::string &k) {
        if (!v) throw PmiError("job service: nothing published under " + k + " (a rank skipped a collective?)");
        return *v;
    };
    const std::vector<std::optional<std::string>> first = pmi_->get_many(keys);
    std::vector<std::string> values(keys.size());
    // Values split over numbered keys ("#<count>") are fetched in a second round, all together.
    std::vector<std::string> piece_keys;
    std::vector<std::pair<size_t, size_t>> pieces_of; // (value index, piece count)
    for (size_t i = 0; i < keys.size(); ++i) {
        values[i] = must_have(first[i], keys[i]);
        if (!values[i].empty() && values[i][0] == '#') {
            const unsigned long count = std::strtoul(values[i].c_str() + 1, nullptr, 10);
            for (unsigned long p = 0; p < count; ++p) piece_keys.push_back(keys[i] + "." + std::to_string(p));
            pieces_of.emplace_back(i, count);
        }
    }
    const std::vector<std::optional<std::string>> pieces = pmi_->get_many(piece_keys);
    size_t at = 0;
    for (const auto &[i, count] : pieces_of) {
        values[i].clear();
        for (size_t p = 0; p < count; ++p, ++at) values[i] += must_have(pieces[at], piece_keys[at]);
    }
    for (size_t i = 0; i < keys.size(); ++i) values[i] = decode(keys[i], values[i]);
    return values;
}

std::string Job::get_value(const std::string &key) { return get_values({key}).front(); }

void Job::barrier() {
    std::lock_guard g(collective_mutex_);
    if (pmi_) pmi_->barrier();
}

std::vector<std::string> Job::allgather(const std::string &mine) {
    std::lock_guard g(collective_mutex_);
    return gather(mine);
}

std::vector<std::string> Job::gather(const std::string &mine) {
    if (!pmi_) return {mine};
    if (members_) return gather_values(mine);
    // Each contribution starts with the rank's membership record, its length in the first byte.
    uint32_t nid = local_nid();
    int32_t os_pid = getpid();
    std::string record(reinterpret_cast<const char *>(&nid), sizeof nid);
    record.append(reinterpret_cast<const char *>(&os_pid), sizeof os_pid);
    if (rank_ == 0) {
        uint64_t nonce = 0;
        random_bytes(&nonce, sizeof nonce);
        record.append(reinterpret_cast<const char *>(&nonce), sizeof nonce);
    }
    std::vector<std::string> all = gather_values(static_cast<char>(record.size()) + record + mine);
    learn_members(all);
    return all;
}

void Job::learn_members(std::vector<std::string> &all) {
    std::vector<Member> members(all.size());
    for (size_t r = 0; r < all.size(); ++r) {
        std::string &v = all[r];
        const size_t len = v.empty() ? 0 : static_cast<unsigned char>(v[0]);
        const size_t want = r == 0 ? 16 : 8;
        if (len != want || v.size() < 1 + len)
            throw PmiError("job service: rank " + std::to_string(r) + " sent a malformed membership record");
        std::memcpy(&members[r].nid, v.data() + 1, 4);
        std::memcpy(&members[r].os_pid, v.data() + 5, 4);
        if (r == 0) std::memcpy(&board_nonce_, v.data() + 9, 8);
        v.erase(0, 1 + len);
    }
    members_ = std::move(members);
    std::vector<int> local;
    for (int r = 0; r < size_; ++r)
        if ((*members_)[static_cast<size_t>(r)].nid == (*members_)[static_cast<size_t>(rank_)].nid) local.push_back(r);
    local_ranks_ = std::move(local);
    start_peer_watch();
}

std::vector<std::string> Job::gather_values(const std::string &mine) {
    const std::string prefix = next_prefix();
    pmi_->put_then_barrier(encoded_puts(prefix + std::to_string(rank_), mine));
    std::vector<std::string> all;
    all.reserve(static_cast<size_t>(size_));
    // Every get is a request to a server (PMI-1: the one launcher; PMIx under Slurm: the node's
    // slurmstepd, ~100 us each), so N ranks reading N values each would be N² requests: 108 s at
    // 1024 ranks under srun --mpi=pmix. Rank 0 reads them, publishes them as one value (split over
    // keys where the launcher limits values) and the others read that: N + N·(size/value limit)
    // requests. (The key names rank 0 first among its numbers: a PMIx get tries those ranks first.)
    const std::string gathered_key = prefix + "0.all";
    if (rank_ == 0) {
        std::vector<std::string> keys;
        for (int r = 1; r < size_; ++r) keys.push_back(prefix + std::to_string(r));
        std::vector<std::string> others = get_values(keys);
        all.push_back(mine);
        std::move(others.begin(), others.end(), std::back_inserter(all));
        std::string gathered;
        for (const std::string &v : all) {
            append_length(gathered, v.size());
            gathered.append(v);
        }
        pmi_->put_then_barrier(encoded_puts(gathered_key, gathered));
        return all;
    }
    pmi_->barrier();
    const std::string gathered = get_value(gathered_key);
    size_t at = 0;
    for (int r = 0; r < size_; ++r) {
        size_t len = 0;
        if (!read_length(gathered, at, len) || gathered.size() - at < len)
            throw PmiError("job service: rank 0's gathered values are cut short");
        all.push_back(gathered.substr(at, len));
        at += len;
    }
    if (at != gathered.size()) throw PmiError("job service: rank 0 gathered more values than the job has ranks");
    return all;
}

void Job::allgather(const void *mine, size_t len, void *all) {
    const std::vector<std::string> parts = allgather(len ? std::string(static_cast<const char *>(mine), len) : "");
    for (size_t r = 0; r < parts.size(); ++r) {
        if (parts[r].size() != len)
            throw PmiError("job service: rank " + std::to_string(r) + " contributed " +
                           std::to_string(parts[r].size()) + " bytes to an allgather of " + std::to_string(len));
        if (len) std::memcpy(static_cast<char *>(all) + r * len, parts[r].data(), len);
    }
}

void Job::broadcast(void *data, size_t len, int root) {
    std::lock_guard g(collective_mutex_);
    if (root < 0 || root >= size_) throw PmiError("job service: broadcast from rank " + std::to_string(root));
    if (!pmi_) return;
    const std::string key = next_prefix() + "root";
    if (rank_ == root)
        pmi_->put_then_barrier(encoded_puts(key, len ? std::string(static_cast<const char *>(data), len) : ""));
    else
        pmi_->barrier();
    if (rank_ == root) return;
    const std::string v = get_value(key);
    if (v.size() != len)
        throw PmiError("job service: the root broadcast " + std::to_string(v.size()) + " bytes, rank " +
                       std::to_string(rank_) + " expected " + std::to_string(len));
    if (len) std::memcpy(data, v.data(), len);
}

const std::vector<int> &Job::local_ranks() {
    std::lock_guard g(collective_mutex_);
    if (local_ranks_) return *local_ranks_;
    if (!pmi_) return *(local_ranks_ = std::vector<int>{0});
    gather(""); // learns the members
    return *local_ranks_;
}

void Job::start_peer_watch() {
    if (!members_ || !local_ranks_ || size_ < 2) return;
    const std::string mode = settings::kPeerWatch.get();
    if (mode == "off" || (mode == "auto" && pmi_->fd() < 0)) return; // PMIx launchers end jobs themselves
    watching_.store(true);
    static const bool hooked = [] {
        // exit() and returns from main record the code (a death without one is a crash or a
        // kill); a normal exit also says goodbye to peers on other machines.
        on_exit([](int status, void *) { on_process_exit(status); }, nullptr);
        return true;
    }();
    (void)hooked;
    if (local_ranks_->size() < 2) return;
    std::vector<LocalMember> locals;
    size_t self = 0;
    for (int r : *local_ranks_) {
        if (r == rank_) self = locals.size();
        locals.push_back({r, (*members_)[static_cast<size_t>(r)].os_pid});
    }
    std::string why;
    peer_watch_ = PeerWatch::start(
        locals, self, board_nonce_,
        [this](PeerWatch::Ending how, int code, const std::string &what) {
            if (how == PeerWatch::Ending::Aborted) abort(code, "a rank of this machine ended the job");
            if (how == PeerWatch::Ending::LeftWithCode) {
                // The rank told the job to end with code (gasnet_exit, upc_global_exit): this
                // process follows the announcement by itself unless it missed it; either way it
                // ends with that code and leaves the job, as the rank did. An abort instead would
                // make launchers such as hydra report a failure.
                std::this_thread::sleep_for(kLostPeerGrace);
                log_error("%s; this rank follows", what.c_str());
                exit_process(code);
            }
            const std::string message = what + "; ending the job";
            log_error("%s", message.c_str());
            abort(code, message);
        },
        &why);
    if (!peer_watch_)
        log_error("the ranks of this machine cannot watch each other (%s): a rank that dies may leave the job waiting",
                  why.c_str());
}

void Job::on_process_exit(int status) {
    exiting(status);
    Job *job = joined();
    if (!job) return;
    job->leaving_.store(true);
    if (status == 0 && job->farewell_) job->farewell_();
}

void Job::set_farewell(std::function<void()> farewell) {
    std::lock_guard g(collective_mutex_);
    farewell_ = std::move(farewell);
}

void Job::peer_lost(int rank) {
    if (!watching_.load() || leaving_.load() || rank == rank_ || rank < 0 || rank >= size_) return;
    // A rank of this machine is the ring's: it knows how the rank ended.
    if (peer_watch_ && local_ranks_ && std::binary_search(local_ranks_->begin(), local_ranks_->end(), rank)) return;
    if (lost_reported_.exchange(true)) return;
    // The rank's connections closed without a goodbye: it died, or it ends by a path that says
    // none (GASNet's exit follows another node's gasnet_exit with _exit). Give such an end the
    // time to take this process too before calling it a death.
    std::thread([this, rank] {
        std::this_thread::sleep_for(kLostPeerGrace);
        if (leaving_.load()) return;
        const std::string message = "rank " + std::to_string(rank) +
                                    " (on another machine) closed its connections without leaving the job; "
                                    "ending the job";
        log_error("%s", message.c_str());
        abort(1, message);
    }).detach();
}

void Job::exiting(int code) {
    if (PeerWatch *w = PeerWatch::current()) w->exiting(code);
}

void Job::exit_process(int code) {
    if (PeerWatch *w = PeerWatch::current()) w->leaving(code);
    if (Job *job = joined()) {
        job->leaving_.store(true); // the peers' goodbyes and deaths no longer matter
        if (code == 0 && job->farewell_) job->farewell_();
    }
    PmiClient::leave_at_exit(PmiClient::kExitBound);
    ::_exit(code);
}

std::string Job::secret() {
    std::lock_guard g(collective_mutex_);
    if (secret_) return *secret_;
    const std::string given = settings::kJobSecret.get();
    if (!given.empty()) return *(secret_ = given);
    // portico-run (which sets PORTICO_JOB_ID) publishes it before the job starts: remote ranks
    // get it this way. Only then is it looked for: under PMIx a missing key costs a lookup per
    // rank (100 s of server time at 1024 ranks under srun).
    if (pmi_ && settings::kJobId.is_set())
        if (auto v = pmi_->get("portico.secret")) return *(secret_ = *v);
    // A client's proposal: what all its processes share, with or without a launcher.
    if (proposed_secret_) return *(secret_ = *proposed_secret_);
    // A process without a launcher is a job of one: nobody else needs its secret, so it draws
    // one. Its TCP traffic to itself authenticates; other processes, which cannot know the secret,
    // are refused, as peers that share no secret always are.
    if (!pmi_) {
        secret_is_own_ = true;
        return *(secret_ = draw_job_secret());
    }
    // The agreement below uses another key than the launcher's: a rank that saw rank 0's put
    // early must not skip the barrier.
    if (rank_ == 0) pmi_->put("portico.secret.drawn", draw_job_secret());
    pmi_->barrier();
    auto v = pmi_->get("portico.secret.drawn");
    if (!v) throw PmiError("rank 0 published no job secret");
    return *(secret_ = *v);
}

std::string Job::shared_secret() {
    {
        std::lock_guard g(collective_mutex_);
        if (name_secret_) return *name_secret_;
        if (secret_) return secret_is_own_ ? std::string{} : *secret_;
        // Those of secret()'s sources that need no collective.
        const bool decided =
            !settings::kJobSecret.get().empty() || (pmi_ && settings::kJobId.is_set()) || proposed_secret_.has_value();
        if (!decided) {
            if (!pmi_) return {};
            // Ranks of another launcher that have not agreed on a secret (shared memory alone
            // needs no collective): the launcher's name for the job, which every rank knows and
            // no other job has. Not a secret from this user's processes (they may read our
            // environment), but it keeps every process outside the job from linking with it by
            // mistake. It stays: links already made proved it.
            return *(name_secret_ = "portico launcher job " + id_);
        }
    }
    return secret();
}

bool Job::propose_secret(const std::string &s) {
    std::lock_guard g(collective_mutex_);
    if (secret_ || name_secret_ || s.empty() || !settings::kJobSecret.get().empty()) return false;
    proposed_secret_ = s;
    return true;
}

void Job::finalize() {
    std::lock_guard g(collective_mutex_);
    if (finalized_) return;
    finalized_ = true;
    if (!pmi_) return;
    leaving_.store(true);
    if (peer_watch_) peer_watch_->left();
    stop_launcher_watch();
    pmi_->finalize();
}

void Job::abort(int code, const std::string &message) {
    if (PeerWatch *w = PeerWatch::current()) w->aborting(code); // our watcher follows, even if the launcher does not
    std::fflush(stdout);
    std::fflush(stderr);
    if (pmi_ && size_ > 1) pmi_->abort(code, message); // does not return
    if (!message.empty()) std::fprintf(stderr, "%s\n", message.c_str());
    std::_Exit(code);
}

} // namespace portico::bootstrap
