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
// portico_runtime_exiting), or nothing — killed by a signal, crashed. The watcher of a rank that
// ended cleanly (code 0, or after leaving without a code) moves on to that rank's successor; any
// other end calls on_death, which ends the job (Job::abort). The rank that aborts records that
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
    // Ends the job because of a dead rank, with a message naming it and how it ended (empty when
    // the dead rank ended the job itself and said why); does not return.
    using DeathHandler = std::function<void(int code, const std::string &message)>;

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
