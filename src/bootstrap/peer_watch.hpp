// SPDX-License-Identifier: BSD-3-Clause
// The peer watch: the ranks of a job on one machine notice when one of them ends without leaving
// the job, and end the job, whatever the launcher does about it.
//
// Some launchers let a job live on when a rank dies: Slurm's pmi2 plugin (without srun -K) does
// nothing when one rank exits with 3 or is killed, and the others would wait in PtlEQWait for
// ever. The ranks of a machine form a ring (in rank order); each watches the next one that is
// still running, through a pidfd, so the cost is one descriptor and one thread per rank whatever
// the job's size. How a rank ended is on the machine's departure board (a small shared-memory
// page, one slot per local rank): "left" (it finalized the job), "exited with code N" (exit() or
// a return from main, recorded by an on_exit handler; _exit paths record it through
// portico_runtime_exiting), "left with code N" (a job-wide exit the rank announced to the job
// itself, such as gasnet_exit(4): portico_runtime_exit), or nothing — killed by a signal,
// crashed. The watcher of a rank that ended cleanly (code 0, or after leaving without a code)
// moves on to that rank's successor; any other end calls on_death: a death or a lone exit ends
// the job (Job::abort), a job-wide exit is followed with the same code, without an abort, which
// launchers such as hydra report as a failure. The rank that aborts records that
// first, so its watcher follows at once, quietly: the ring ends every rank of the machine even if
// the launcher ignores the abort.
//
// The board is created by the local ranks together right after the collective that told them who
// their neighbours are, under a name no other process can guess (a nonce from that collective),
// owned by the job's user with mode 0600, and unlinked as soon as every local rank has mapped it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace portico::bootstrap {

struct LocalMember {
    int rank = 0;   // the job's rank
    int os_pid = 0; // as the rank saw itself when it joined
};

class PeerWatch {
public:
    enum class Ending {
        Died,         // killed, crashed, or exited with a code without leaving the job
        Aborted,      // ended the job itself (Job::abort) and said why
        LeftWithCode, // left the job with a nonzero code it announced to the job itself
    };
    // Ends this process because a rank ended as `how` says, with code and a message naming the
    // rank and how it ended (empty for Aborted); does not return.
    using DeathHandler = std::function<void(Ending how, int code, const std::string &message)>;

    // members: the job's ranks on this machine in rank order, this process among them at index
    // self. Returns nullptr (and says why in *error) when the watch cannot run here (no pidfd
    // support, a board that is not ours); the job then runs without it.
    static std::unique_ptr<PeerWatch> start(const std::vector<LocalMember> &members, size_t self, uint64_t nonce,
                                            DeathHandler on_death, std::string *error);
    ~PeerWatch();
    PeerWatch(const PeerWatch &) = delete;
    PeerWatch &operator=(const PeerWatch &) = delete;

    // This rank has left the job cleanly (Job::finalize); stops watching.
    void left();
    // This rank is about to end with code; async-signal-safe (on_exit handlers, _exit paths).
    void exiting(int code);
    // This rank leaves the job and ends with code, a job-wide end it has announced to the job
    // (portico_runtime_exit): its watcher follows with the same code. Async-signal-safe.
    void leaving(int code);
    // This rank ends the job with code, having said why (Job::abort): its watcher ends too,
    // quietly. Async-signal-safe.
    void aborting(int code);
    // The process's watch, for exit paths that have no Job at hand; nullptr if none runs.
    static PeerWatch *current();

    struct Board;

private:
    PeerWatch() = default;
    void run();
    void stop();
    bool same_process(size_t i);
    void record_end(uint32_t state, int code);

    std::vector<LocalMember> members_;
    size_t self_ = 0;
    int owner_pid_ = 0;
    std::string name_; // of the board, under /dev/shm
    Board *board_ = nullptr;
    size_t board_bytes_ = 0;
    int stop_fd_ = -1;
    DeathHandler on_death_;
    std::thread thread_;
};

} // namespace portico::bootstrap
