// SPDX-License-Identifier: BSD-3-Clause
// Which transport the job uses (the JSON field `transport`), and the addresses of this machine.
#pragma once

#include <cstdint>
#include <string>

namespace portico::bench {

class Job;

// "shm" or "tcp", from PORTICO_TRANSPORT: "shm" and "tcp" as given; "auto" (the default) is "shm"
// when every rank has the same nid (the machine's IPv4 address, as the engine computes it) and
// "tcp" otherwise. Collective over the job. Throws on an unknown value.
std::string detect_transport(Job &job);

// Where the raw TCP baseline listens: the IPv4 address of the interface named by PORTICO_IFACE,
// else the first non-loopback IPv4 address, else 127.0.0.1 (dotted quad). In a network namespace
// this is the namespace's address.
std::string listen_address();

} // namespace portico::bench
