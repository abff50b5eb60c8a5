// SPDX-License-Identifier: BSD-3-Clause
// Where the shared-memory endpoints of one user meet on this machine: one Unix socket per
// endpoint in a directory that only this user can enter (0700, owned by the user), next to a lock
// file whose flock reserves the pid for as long as the endpoint lives.
//
// Another user can neither take one of these names nor connect to one: the directory's
// permissions say so, not a check made after the fact. (Until 2026-11 endpoints bound abstract
// socket names, portico/<nid>/<pid>, which carry no permissions: any user could bind all of them
// and make every PTL_PID_ANY on the machine fail with PTL_PID_IN_USE.) A killed process leaves its
// two names behind, harmless: the kernel releases the lock, and the next endpoint to take that pid
// removes the stale socket.
#pragma once

#include <string>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "transport/transport.hpp"

namespace portico::transport::shm {

// The directory: `configured` (PORTICO_SHM_DIR) when not empty, else /dev/shm/portico-<euid>
// (/tmp/portico-<euid> where /dev/shm is missing), made 0700 when missing and made private when
// this user's own. Throws std::system_error when it cannot serve: EACCES, naming the owner, when
// it belongs to another user (who made it first: nothing of this user's may live there).
std::string endpoint_directory(const std::string &configured);

// The socket address of endpoint id in dir; 0 when the path does not fit a socket address.
socklen_t rendezvous_address(const std::string &dir, PeerId id, sockaddr_un *addr);

// A reserved endpoint: its pid's lock held and its socket bound and listening (non-blocking).
// Destroying it removes both names (only in the process that made it: a forked child does not).
class Reservation {
public:
    // Throws std::system_error: EADDRINUSE when a live endpoint holds id (the message names its
    // process), anything else when the directory cannot serve.
    Reservation(const std::string &dir, PeerId id);
    ~Reservation();
    Reservation(const Reservation &) = delete;
    Reservation &operator=(const Reservation &) = delete;
    int listen_fd() const { return listen_fd_; }

private:
    void release();
    std::string socket_path_, lock_path_;
    int lock_fd_ = -1, listen_fd_ = -1;
    pid_t owner_ = 0;
};

// Who holds endpoint id in dir, for messages: "process 1234 (name)"; empty when nobody does or it
// cannot be told.
std::string holder_of(const std::string &dir, PeerId id);

} // namespace portico::transport::shm
