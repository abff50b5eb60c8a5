#!/bin/sh
# Start-up at scale: for each N, the wall time of `portico-run -n N startup_rank` (a logical NI,
# its id, a barrier, the end) and, in the same run as the baseline, of `portico-run -n N /bin/true`
# (spawning alone). Prints one JSON object per N; ratio = start-up / spawning.
#   bench/startup/startup.sh PORTICO_RUN STARTUP_RANK [N...]      (default N: 16 64 256)
set -eu
run=$1 rank=$2
shift 2
[ $# -gt 0 ] || set -- 16 64 256
now() { date +%s.%N; }
for n in "$@"; do
    t0=$(now); "$run" -n "$n" /bin/true; t1=$(now)
    "$run" -n "$n" "$rank"; t2=$(now)
    awk -v n="$n" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
        s = b - a; p = c - b;
        printf "{\"test\":\"startup\",\"procs\":%d,\"value\":%.3f,\"unit\":\"s\",\"baseline\":%.3f,\"baseline_kind\":\"portico-run /bin/true\",\"ratio\":%.2f}\n", n, p, s, p / s }'
done
