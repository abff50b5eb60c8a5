#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_warning.sh MIN_MACHINE_GIB PATTERN COMMAND...: runs COMMAND (a job), which must succeed and
# say PATTERN (an extended regular expression) on its output exactly once: a configuration that
# cannot fit is named once per machine, by one process, and the job still runs. Skipped (77) on a
# machine with more than MIN_MACHINE_GIB GiB of memory, where the configuration fits after all.
set -u
limit=$1 pattern=$2
shift 2
kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
if [ "$kib" -gt $((limit * 1024 * 1024)) ]; then
    echo "SKIP: this machine has $((kib / 1024 / 1024)) GiB; the configuration fits in it"
    exit 77
fi
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "expect_warning.sh: the job failed ($rc)"; exit 1; }
n=$(printf '%s\n' "$out" | grep -cE "$pattern")
[ "$n" -eq 1 ] || { echo "expect_warning.sh: '$pattern' said $n times, not once"; exit 1; }
echo "expect_warning.sh: said once, and the job ran"
