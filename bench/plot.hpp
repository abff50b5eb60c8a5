// SPDX-License-Identifier: BSD-3-Clause
// --plot FILE.svg: the results drawn as a hand-written SVG, one panel per test (and transport):
// value (median, with min..max bars) and baseline curves against the message size on a log2 axis
// (tests without a size, like triggered_barrier, use the number of processes), log10 value axis.
// Latency panels say "lower is better", bandwidth and rate panels "higher is better".
//
// `portico-bench --plot FILE.svg --from a.json [--from b.json ...]` draws earlier --json output
// (one JSON object per line, as printed; other lines are ignored) without running anything, so that
// several tests end up in one figure.
#pragma once

#include <string>
#include <vector>

#include "report.hpp"

namespace portico::bench {

// Throws bench::Error if the file cannot be written.
void write_svg(const std::string &file, const std::vector<Result> &results);

// Reads the result lines of a --json output file. Throws on a line that starts with '{' but is not
// a result object.
std::vector<Result> read_json_results(const std::string &file);

} // namespace portico::bench
