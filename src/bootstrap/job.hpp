// SPDX-License-Identifier: BSD-3-Clause
// The job service: what a process knows about the job it belongs to and the out-of-band
// collectives it can run before (and besides) the network, whoever launched it.
//
// One per process (a launcher accepts one connection per rank), shared by every client: the
// engine (job secret, the logical NI's rank map), GASNet (its start-up exchanges), the UPC and
// PSM2 runtimes, the tests and the bench. The launcher protocol is the PmiClient's business
// (PMI-1 over PMI_FD or PMI_PORT, PMIx); with no launcher at all the process is a job of one, and
// every collective completes at once. The C face is portico_runtime.h (src/capi/runtime_capi.cpp).
//
// Collectives (barrier, allgather, broadcast, and local_ranks() and secret() the first time) must
// be called by every rank, in the same order; they are serialised within the process. They run
// over the launcher's key-value space, so they are for start-up sizes (bytes per rank, not
// megabytes) — data at scale goes over Portals.
//
// Errors from the launcher throw PmiError.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/peer_watch.hpp"
#include "bootstrap/pmi_client.hpp"

namespace portico::bootstrap {

class Job {
public:
    // The process's job, joined on the first call (the launcher handshake, and the launcher
    // watch below). nullptr when joining failed; *error then says why, on this and every later
    // call (a launcher that refused us once will not take us later).
    static Job *process(std::string *error = nullptr);
    // The process's job if a client has joined it already, else nullptr (never joins).
    static Job *joined();

    Job(const Job &) = delete;
    Job &operator=(const Job &) = delete;

    // False when no launcher started the process: a job of one.
    bool launched() const { return pmi_ != nullptr; }
    // "PMI-1", "PMIx" or "none".
    const char *protocol() const { return pmi_ ? pmi_->protocol() : "none"; }
    int rank() const { return rank_; }
    int size() const { return size_; }
    // A name for the job, the same in every rank: PORTICO_JOB_ID, else the launcher's kvsname or
    // namespace, else "pid<N>" (a job of one).
    const std::string &id() const { return id_; }

    void barrier();
    // Every rank contributes len bytes; all receives size()*len bytes in rank order.
    void allgather(const void *mine, size_t len, void *all);
    // Contributions of any length (empty included); returned in rank order.
    std::vector<std::string> allgather(const std::string &mine);
    // root's len bytes end up in data on every rank.
    void broadcast(void *data, size_t len, int root);

    // The ranks on this machine (same nid, common/netif.hpp), in rank order; includes rank().
    // Collective the first time it is called.
    const std::vector<int> &local_ranks();

    // The secret TCP peers of this job authenticate each other with: PORTICO_JOB_SECRET, else
    // what the launcher published (portico-run does), else drawn by rank 0 and broadcast — then
    // collective the first time. A process without a launcher draws its own: it can talk to
    // itself over TCP, and to processes started apart only if they all set PORTICO_JOB_SECRET.
    std::string secret();
    // secret(), when this process shares one with others without a collective: PORTICO_JOB_SECRET,
    // portico-run's, a client's proposal, or one the job has already agreed on. Empty when it has
    // none to share (started without a launcher, PORTICO_JOB_SECRET or a proposal: secret() draws
    // one of its own). Under a launcher whose ranks have not agreed on one yet (shared memory
    // alone, no collective): a value derived from the launcher's name for the job (id()), the same
    // in every rank and in no other job, kept for the process's life once given out. Shared memory
    // proves it.
    std::string shared_secret();
    // A secret that a client library proposes for its processes (portico_set_job_secret: PSM2's
    // job key, which every process of a PSM2 job shares). It ranks below PORTICO_JOB_SECRET and a
    // launcher's, above drawing one. False (and ignored) when one of those decides, or the
    // secret is already in use.
    bool propose_secret(const std::string &s);

    // Leaves the job (the launcher's finalize, unless another user of the connection, libpmi, still
    // needs it); idempotent. Collectives fail afterwards. Launchers expect it of every rank (hydra
    // may end a job whose ranks exit without it before their output is out). An exit with status 0
    // does it too if nothing has (PmiClient::leave_at_exit, bounded: exit must not wait for a
    // launcher).
    void finalize();
    // Who leaves: the engine's last PtlFini, unless a program joined the job before the engine
    // (it called portico_runtime_* before PtlInit, as test harnesses do, and may still run
    // collectives after PtlFini): then the program leaves with portico_runtime_finalize.
    void claim_for_program() { program_leaves_ = true; }
    bool program_leaves() const { return program_leaves_; }
    // Ends the whole job: the launcher kills every rank, and this process exits with code.
    [[noreturn]] void abort(int code, const std::string &message);
    // This process is about to end with code by a path that skips exit handlers (_exit); the
    // peer watch then tells a clean end (0) from a failure. Async-signal-safe.
    static void exiting(int code);
    // Ends the process with code after leaving the launcher (portico_runtime_exit): a deliberate
    // end the job's other ranks know of. Says what exit(0) says (the peer watch's board, goodbyes
    // to other machines when code is 0), then PmiClient::leave_at_exit, then _exit.
    [[noreturn]] static void exit_process(int code);

    // Where the ranks watch each other (PORTICO_PEER_WATCH): rank's connections all closed
    // without a goodbye (the engine tells). A rank on another machine ends the job unless this
    // process ends within kLostPeerGrace; a rank of this machine is left to the peer watch.
    void peer_lost(int rank);
    static constexpr std::chrono::seconds kLostPeerGrace{2};
    // What a normal exit (exit(0), a return of 0 from main) runs to say goodbye to peers on
    // other machines (the engine's Transport::farewell on its endpoints). Best effort.
    void set_farewell(std::function<void()> farewell);

private:
    explicit Job(std::unique_ptr<PmiClient> pmi);
    // The launcher's connection closing means the job is over: exit rather than hang.
    void start_launcher_watch();
    void stop_launcher_watch();
    std::string next_prefix();
    // Any-length contributions in rank order (collective_mutex_ held). The first one also
    // gathers the job's membership (machine and process of every rank) and starts the watch.
    std::vector<std::string> gather(const std::string &mine);
    std::vector<std::string> gather_values(const std::string &mine);
    void learn_members(std::vector<std::string> &all);
    void start_peer_watch();
    static void on_process_exit(int status);
    // The puts that publish value under key: one, or the pieces and a "#<count>" under key when
    // the launcher limits values to less.
    std::vector<std::pair<std::string, std::string>> encoded_puts(const std::string &key,
                                                                  const std::string &value) const;
    std::vector<std::string> get_values(const std::vector<std::string> &keys);
    std::string get_value(const std::string &key);

    std::unique_ptr<PmiClient> pmi_;
    int rank_ = 0;
    int size_ = 1;
    std::string id_;
    std::mutex collective_mutex_; // one collective at a time, and the lazily filled fields below
    unsigned long seq_ = 0;       // collectives so far: their keys never repeat
    struct Member {
        uint32_t nid = 0;
        int32_t os_pid = 0;
    };
    std::optional<std::vector<Member>> members_;
    uint64_t board_nonce_ = 0; // rank 0's: names the machines' departure boards
    std::optional<std::vector<int>> local_ranks_;
    std::unique_ptr<PeerWatch> peer_watch_;
    std::atomic<bool> watching_{false};      // the ranks watch each other
    std::atomic<bool> leaving_{false};       // finalized, or exiting normally: deaths no longer matter
    std::atomic<bool> lost_reported_{false}; // a lost peer is being acted on
    std::function<void()> farewell_;
    std::optional<std::string> secret_;
    std::optional<std::string> proposed_secret_;
    std::optional<std::string> name_secret_; // shared_secret() from id(), once given out
    bool secret_is_own_ = false;             // secret_ was drawn by this process alone (no launcher)
    bool finalized_ = false;
    std::atomic<bool> program_leaves_{false};
    std::thread watch_;
    int watch_stop_ = -1; // eventfd
};

} // namespace portico::bootstrap
