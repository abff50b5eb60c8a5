#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Start-up at scale: for each N, the wall time of `portico-run -n N startup_rank` (a logical NI,
# its id, a barrier, the end) and, in the same run as the baseline, of `portico-run -n N /bin/true`
# (spawning alone). Prints one JSON object per N; ratio = start-up / spawning.
#   bench/startup/startup.sh PORTICO_RUN STARTUP_RANK [N...]      (default N: 16 64 256)
#   bench/startup/startup.sh srun:pmi2|srun:pmix STARTUP_RANK [N...]
# With srun (on a Slurm allocation, or inside tests/launcher/slurm.sh's private cluster), the
# job runs under srun -O --mpi=pmi2 or pmix, and the baseline is srun -O --mpi=none /bin/true.
set -eu
run=$1 rank=$2
shift 2
[ $# -gt 0 ] || set -- 16 64 256
now() { date +%s.%N; }
case $run in
srun:*) mpi=${run#srun:} kind="srun /bin/true" launcher="srun --mpi=$mpi" ;;
*) kind="portico-run /bin/true" launcher=portico-run ;;
esac
spawn() { # n, program
    case $run in
    srun:*) srun -O --mpi="$([ "$2" = /bin/true ] && echo none || echo "$mpi")" -n "$1" "$2" ;;
    *) "$run" -n "$1" "$2" ;;
    esac
}
for n in "$@"; do
    t0=$(now); spawn "$n" /bin/true; t1=$(now)
    spawn "$n" "$rank"; t2=$(now)
    awk -v n="$n" -v a="$t0" -v b="$t1" -v c="$t2" -v kind="$kind" -v l="$launcher" 'BEGIN {
        s = b - a; p = c - b;
        printf "{\"test\":\"startup\",\"launcher\":\"%s\",\"procs\":%d,\"value\":%.3f,\"unit\":\"s\",\"baseline\":%.3f,\"baseline_kind\":\"%s\",\"ratio\":%.2f}\n", l, n, p, s, kind, p / s }'
done
