// SPDX-License-Identifier: BSD-3-Clause
// Bootstrap clients (class PmiClient below): the simple PMI-1 wire protocol, and PMIx when built
// with it (see PmiClient).
//
// Client side of the simple PMI-1 wire protocol (the text protocol served by mpiexec/hydra and by
// portico-run). Portico's logical NIs use it to build the job's rank map; the test harness uses it
// for out-of-band barriers.
//
// Connection, as in MPICH's simple PMI client:
//   - PMI_FD=N (with PMI_RANK, PMI_SIZE): the launcher's socket is already open as fd N;
//   - else PMI_PORT=host:port and PMI_ID=ID: connect over TCP and identify with
//     "cmd=initack pmiid=ID" (hydra's ID is the rank, portico-run's the rank's secret token, which
//     the remote command reads from its stdin); the launcher answers "cmd=initack" (rc=0 if present) and then
//     "cmd=set size=N", "cmd=set rank=R", "cmd=set debug=D", which give the rank and size
//     (PMI_RANK/PMI_SIZE, when also set, must agree). portico-run starts remote ranks this way,
//     hydra does with -pmi-port.
// Every PmiClient of a process shares one connection (a second from_environment() while the first
// client lives reuses it: a TCP launcher accepts one connection per rank). Its users are the job
// service (bootstrap/job.hpp) and the application's PMI calls (libpmi, src/pmi): one request and
// its reply at a time, whichever client sends it.
//
// Wire-format limits (they hold under every PMI-1 launcher, so the client enforces them and throws
// PmiError instead of sending something a launcher would mangle):
//   - keys: 1..keylen_max-1 characters (63 under portico-run and hydra, whose keylen_max=64 is a C
//     buffer size including the NUL), no space, newline, CR, NUL or backslash;
//   - values: 1..max_value_length() characters (vallen_max-1: 1023 under portico-run and hydra;
//     hydra silently truncates longer ones), no space, newline, CR, NUL or backslash. Empty values
//     are rejected (MPICH >= 4's parser cannot carry them). Binary data must be encoded (e.g. hex)
//     by the caller.
// A key put twice keeps the last value (portico-run; older hydra rejects duplicates).
//
// Lifetime: finalize() is idempotent and ends this client's use of the connection; the launcher's
// finalize goes on the wire when the last client that has not finalized does (a client destroyed
// without finalize() stops counting), so that one user's finalize never cuts another user off.
// After the launcher's ack a PMI_PORT connection is closed; PMI_FD is left open (the process's
// descriptor: another PMI client of the program may still use it), only no longer used. A normal
// exit sends the launcher's finalize if no client did (leave_at_exit). The destructor does NOT
// finalize (it never talks to the launcher); the last client sharing a PMI_PORT connection closes
// the socket. abort() tells the launcher to kill the whole job and then _exit()s the process.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace portico::bootstrap {

class PmiError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The bootstrap client: what the engine and the test harness need from a launcher, whichever
// protocol it speaks. from_environment() picks the implementation from the environment:
//   - the simple PMI-1 client (this file's header comment) when PMI_FD or PMI_PORT is set;
//   - else, when Portico was built with PMIx support (PORTICO_HAVE_PMIX, pkg-config pmix) and the
//     process was started by a PMIx server (PMIX_NAMESPACE or PMIX_RANK set, or a PMIX_SERVER_URI*
//     variable), the PMIx client (pmix_client.cpp): Open MPI's mpirun, srun --mpi=pmix, prterun.
// The PMIx client keeps the PMI-1 client's contract (same key and value limits, so that a
// program behaves the same under both), with these differences: fd() is always -1 (a PMIx client
// has no launcher connection of its own to watch), and a rank may see its own puts before the
// next barrier (other ranks' puts become visible at the barrier, as with PMI-1).
class PmiClient {
public:
    // Connects to the launcher the environment names and performs the init handshake. Returns
    // nullptr when the process was not started by a launcher (neither PMI_FD nor PMI_PORT, nor a
    // PMIx server). Throws PmiError when the variables are wrong, the launcher cannot be reached
    // or refuses us, or does not speak the protocol, and when a PMIx launcher started us but
    // Portico was built without PMIx support.
    static std::unique_ptr<PmiClient> from_environment();
    // True when this build contains the PMIx client.
    static bool pmix_supported();
    // Ends the process's use of its launcher as an exit must: launchers such as MPICH's hydra and
    // Open MPI's mpirun take a rank that ends without the launcher's finalize for a failed one and
    // end the job. Sends the launcher's finalize (PMI-1 cmd=finalize, PMIx_Finalize) whatever
    // users have not finalized, unless it was sent already, and waits for the answer until bound
    // has passed: a launcher that does not answer in time, or a request that another thread of
    // the process has under way (its reply and ours could not be told apart), is not waited for.
    // True when the launcher acknowledged (or no finalize was due). For exit paths only: nothing
    // may use the launcher afterwards. Called at every exit with status 0 (an on_exit handler
    // registered with the first client), and by portico_runtime_exit.
    static bool leave_at_exit(std::chrono::milliseconds bound);
    // The bound of an exit's leave_at_exit.
    static constexpr std::chrono::seconds kExitBound{5};

    virtual ~PmiClient();
    PmiClient(const PmiClient &) = delete;
    PmiClient &operator=(const PmiClient &) = delete;

    // "PMI-1" or "PMIx".
    virtual const char *protocol() const = 0;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // PMI-1: the launcher's kvsname; PMIx: the job's namespace.
    virtual const std::string &kvsname() const = 0;
    virtual int max_value_length() const = 0;
    // The longest key accepted (keylen_max - 1: 63 under every launcher Portico knows).
    virtual int max_key_length() const = 0;

    // The connection to the launcher (a stream socket, Unix or TCP), for watching the launcher's
    // liveness: poll/epoll it for POLLRDHUP|POLLHUP (EPOLLRDHUP|EPOLLHUP) only. A hang-up means
    // the launcher is gone (it died, or ended the job: portico-run closes remote ranks'
    // connections when it terminates a job) and the process should exit. Never read, write or
    // close it, and do not wait for POLLIN (replies arrive on it). Valid until the launcher's
    // finalize or the destruction of the last client sharing it; -1 after the launcher's finalize.
    // Stop watching before either (or watch a dup() of your own, which keeps the socket open until
    // you close it).
    // Always -1 under PMIx: the PMIx library owns its connection to the server, and the PMIx
    // launchers kill their ranks themselves when they die or end the job.
    virtual int fd() const = 0;
    // True once any client of the process has begun finalize(): a hang-up is then expected (some
    // launchers close right after finalize_ack), not a sign that the launcher died.
    virtual bool finalizing() const = 0;

    // Key/value space of the job; values become visible to other ranks after barrier().
    virtual void put(const std::string &key, const std::string &value) = 0;
    virtual std::optional<std::string> get(const std::string &key) = 0;
    virtual void barrier() = 0;
    // Several puts, then a barrier; several gets. The same as the calls one by one, in fewer
    // round trips where the launcher reads requests sent in a row (portico-run).
    virtual void put_then_barrier(const std::vector<std::pair<std::string, std::string>> &puts);
    virtual std::vector<std::optional<std::string>> get_many(const std::vector<std::string> &keys);
    // What the launcher says beyond the job's rank and size, without a collective (the PMI-1 API
    // asks for them: libpmi's PMI_Get_universe_size, PMI_Get_appnum, PMI_Get_clique_ranks).
    // The number of processes the launcher could run (PMI-1 get_universe_size, PMIx
    // PMIX_UNIV_SIZE); size() when it does not say.
    virtual int universe_size() = 0;
    // This job's application number (PMI-1 get_appnum, PMIx PMIX_APPNUM); 0 when it does not say.
    virtual int appnum() = 0;
    // The ranks that share this rank's node as the launcher placed them (PMI-1: the preset key
    // PMI_process_mapping; PMIx: PMIX_LOCAL_PEERS), in rank order; nullopt when it does not say.
    virtual std::optional<std::vector<int>> node_ranks() = 0;
    // One PMI-1 request line (newline included) and its reply line, which must be expected_cmd's;
    // for the requests the interface above has no call for (name publishing). PMIx: throws.
    virtual std::string request(const std::string &line, const std::string &expected_cmd) = 0;
    // Ends this client's use of the launcher; the last user's finalize is the launcher's finalize
    // (see the top of this file). Idempotent; calls after it throw.
    virtual void finalize() = 0;
    [[noreturn]] virtual void abort(int exit_code, const std::string &message) = 0;

protected:
    PmiClient() = default;
};

} // namespace portico::bootstrap
