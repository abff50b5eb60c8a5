// SPDX-License-Identifier: BSD-3-Clause
// The job's identity, drawn once per job: by portico-run before it starts the ranks, or by rank 0
// when another launcher started them (bootstrap::Job::secret()). One definition of both, so that
// every secret a job can have looks the same.
#pragma once

#include <string>

#include "common/random.hpp"

namespace portico::bootstrap {

// 128 random bits, as 32 hex digits: the key of the TCP handshake's HMAC (transport/tcp/handshake.hpp).
inline std::string draw_job_secret() { return random_hex(16); }

// 64 random bits, as 16 hex digits: names the job (PORTICO_JOB_ID, the PMI kvsname).
inline std::string draw_job_id() { return random_hex(8); }

} // namespace portico::bootstrap
