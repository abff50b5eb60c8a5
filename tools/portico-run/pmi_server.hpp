// SPDX-License-Identifier: BSD-3-Clause
// Server side of the simple PMI-1 wire protocol (MPICH's "simple" PMI, as served by hydra):
// one stream socket per rank, newline-terminated lines of space-separated key=value tokens.
//
// The server knows nothing about processes: the launcher attaches one non-blocking socket per
// rank, polls the fds with poll_events(), and calls handle() with what poll() returned. Aborts and
// protocol warnings are reported through PmiObserver.
//
// Connections that do not yet belong to a rank (TCP connections of ranks on other machines) are
// attached with attach_unidentified(). Their first line must be the simple-PMI handshake
// "cmd=initack pmiid=T" where T is the token of a rank R (expect_tokens(): each rank's PMI_ID, a
// secret number the launcher gives it; hydra's PMI_ID is the rank itself, which anybody can
// claim) that has no connection yet and that the observer agrees to (pmi_may_identify: started,
// still running). The reply is hydra's "cmd=initack rc=0", "cmd=set size=N", "cmd=set rank=R",
// "cmd=set debug=0"; from then on the connection is rank R's. Anything else is refused
// (pmi_refused), answered with one "cmd=error rc=-1 msg=..." line and closed; nothing of the job
// is served before. After kMaxWrongTokens handshakes with a number that is no rank's token the
// observer is told (pmi_guessing): somebody is guessing.
//
// Key/value semantics: a put is staged and becomes visible to every rank when the next barrier
// completes (all ranks sent barrier_in), before any barrier_out is sent - the same visibility
// rule as hydra, so programs that work here work there. A key put twice keeps the last value
// (puts are committed in rank order, so concurrent puts of one key: the highest rank wins).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace portico::run {

struct PmiLimits {
    // The values hydra advertises. They are C buffer sizes (NUL included): keys may have up to
    // keylen_max-1 characters, values up to vallen_max-1.
    int kvsname_max = 256;
    int keylen_max = 64;
    int vallen_max = 1024;
    // What a client that reads the extra attribute portico_vallen_max of cmd=maxes may put: MPICH's
    // clients read replies into 1024-byte lines and get the standard value above; Portico's job
    // service puts a job's gathered start-up data in one value instead of dozens.
    int long_vallen_max = 192 * 1024;
    std::size_t max_line = 256 * 1024;        // longer request lines are rejected
    std::size_t max_pending_output = 1 << 20; // stop reading a rank that does not read replies
    unsigned max_warnings_per_rank = 20;
};

class PmiObserver {
public:
    virtual ~PmiObserver() = default;
    // cmd=abort from `rank`; the server sends no reply (the launcher kills the job).
    virtual void pmi_abort(int rank, int exit_code, const std::string &message) = 0;
    // A protocol problem worth telling the user (malformed line, unknown command, ...).
    virtual void pmi_warning(int rank, const std::string &what) = 0;
    // May an unidentified connection become rank `rank`'s? If not, `why` says why.
    virtual bool pmi_may_identify(int rank, std::string &why) = 0;
    // An unidentified connection was refused and closed.
    virtual void pmi_refused(const std::string &peer, const std::string &why) = 0;
    // The kMaxWrongTokens-th handshake with a wrong token was refused (once per server).
    virtual void pmi_guessing(int wrong_tokens) = 0;
};

class PmiServer {
public:
    PmiServer(int size, std::string kvsname, PmiObserver &observer, PmiLimits limits = {});
    ~PmiServer();
    PmiServer(const PmiServer &) = delete;
    PmiServer &operator=(const PmiServer &) = delete;

    // Takes ownership of `fd` (the launcher's end of rank's socket; made non-blocking here).
    void attach(int rank, int fd);
    // The PMI_ID each rank's unidentified connection must present (tokens[r] for rank r; distinct).
    // Without it, connections are identified by their rank number, as hydra does.
    void expect_tokens(std::vector<long> tokens);
    // Wrong tokens after which the observer hears of guessing.
    static constexpr int kMaxWrongTokens = 16;
    // Takes ownership of a connection whose rank is not known yet (`peer` names it in messages);
    // see the top of this file.
    void attach_unidentified(int fd, std::string peer);
    std::vector<int> unidentified_fds() const; // poll them for POLLIN
    std::size_t unidentified_count() const { return unidentified_.size(); }
    void handle_unidentified(int fd, short revents);
    void close_unidentified(); // closes them all, silently
    // Makes room for one more: the oldest connection that has not identified itself is read once
    // more (a rank's handshake may be waiting there) and, if that does not identify it, refused.
    // Silent connections that an outsider holds open thus cannot keep a rank out.
    void drop_oldest_unidentified();
    // Closes rank's connection (the job is being torn down).
    void disconnect(int rank) { close_conn(rank); }
    // A pair visible to every rank from the start (e.g. PMI_process_mapping).
    void preset(const std::string &key, const std::string &value) { kvs_[key] = value; }

    int fd(int rank) const { return conns_[rank].fd; } // -1 once the connection is closed
    short poll_events(int rank) const;
    void handle(int rank, short revents);
    // Processes whatever the rank already sent (used when its process has exited, so that an
    // abort or barrier_in written just before exiting is not lost). Never blocks.
    void drain(int rank);

    bool closed(int rank) const { return conns_[rank].fd < 0; }
    bool in_barrier(int rank) const { return conns_[rank].in_barrier; }
    int barrier_count() const { return barrier_count_; }
    std::size_t barriers_completed() const { return barriers_completed_; }
    const std::string &kvsname() const { return kvsname_; }

private:
    struct Conn {
        int fd = -1;
        std::string in;
        std::string out;
        std::size_t out_off = 0;
        bool write_broken = false; // peer gone: replies are dropped, input is still read
        bool discarding = false;   // inside an over-long line: drop input up to the next newline
        bool in_mcmd = false;      // inside a multi-line "mcmd=spawn ... endcmd" request
        bool in_barrier = false;
        bool finalized = false;
        unsigned warnings = 0;
        std::vector<std::pair<std::string, std::string>> staged; // puts not yet visible
    };
    using Tokens = std::vector<std::pair<std::string_view, std::string_view>>; // bootstrap::PmiTokens

    void read_available(int rank);
    void process_input(int rank);
    void process_line(int rank, std::string_view line);
    void reject_long_line(int rank);
    void flush(int rank);
    void close_conn(int rank);
    void reply(int rank, const std::string &line); // `line` without the newline
    void warn(int rank, const std::string &what);

    void on_init(int rank, const Tokens &t);
    void on_put(int rank, const Tokens &t);
    void on_get(int rank, const Tokens &t);
    void on_barrier_in(int rank);
    void on_abort(int rank, std::string_view line, const Tokens &t);

    int size_;
    std::string kvsname_;
    PmiObserver &observer_;
    PmiLimits limits_;
    struct Unidentified {
        std::string peer;
        std::string in;
        std::uint64_t order = 0; // of arrival: the oldest is dropped first
    };
    void refuse(int fd, const std::string &reply_msg, const std::string &why);
    void identify(int fd, int rank, std::string rest);
    void on_initack(int rank, const Tokens &t);

    // The pmiid that identifies rank (its token, or the rank itself without tokens).
    long pmiid_of(int rank) const { return tokens_.empty() ? rank : tokens_[static_cast<std::size_t>(rank)]; }

    std::vector<Conn> conns_;
    std::vector<long> tokens_;                    // per rank (expect_tokens), or empty
    std::unordered_map<long, int> rank_of_token_; // the other way round
    int wrong_tokens_ = 0;
    std::uint64_t arrivals_ = 0;                         // unidentified connections attached so far
    std::vector<bool> ever_attached_;                    // per rank: had a connection at some point
    std::unordered_map<int, Unidentified> unidentified_; // by fd
    std::unordered_map<std::string, std::string> kvs_;   // committed (visible) pairs
    int barrier_count_ = 0;
    std::size_t barriers_completed_ = 0;
};

} // namespace portico::run
