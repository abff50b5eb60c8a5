#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run_exit_test.sh [--message REGEX] [--left FILE]... RUN PROG NPROCS EXPECTED_CODE MODE
# How a client's job ends (GASNet's gasnet.exit.*, UPC's upc.*exit*): runs PROG MODE on NPROCS
# processes under portico-run (RUN) and checks that
#   - the job's exit code is EXPECTED_CODE;
#   - a job not expected to end by a fatal error (134) printed none ("FATAL ERROR");
#   - the output has a line matching REGEX (an extended regular expression), with --message;
#   - every process started: each records its pid in $EXIT_TEST_DIR/pid.<rank>;
#   - none of them is left afterwards;
#   - each --left FILE exists in $EXIT_TEST_DIR (what the processes must have done on the way out,
#     e.g. GASNet's SIGQUIT handlers).
set -u
message="" left=()
while [ $# -gt 0 ]; do
    case $1 in
    --message) message=$2; shift 2 ;;
    --left) left+=("$2"); shift 2 ;;
    *) break ;;
    esac
done
[ $# -eq 5 ] || { echo "usage: $0 [--message REGEX] [--left FILE]... RUN PROG NPROCS EXPECTED_CODE MODE"; exit 2; }
run=$1 prog=$2 np=$3 expect=$4 mode=$5
ulimit -c 0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
EXIT_TEST_DIR=$dir "$run" -n "$np" --timeout 60 "$prog" "$mode" 2>&1 | tee "$dir/out"
rc=${PIPESTATUS[0]}
echo "exit_test $mode: job exit code $rc after $(( $(date +%s) - start )) s"
if [ "$rc" != "$expect" ]; then
    echo "FAIL: exit code $rc, expected $expect"
    exit 1
fi
if [ "$expect" != 134 ] && grep -q "FATAL ERROR" "$dir/out"; then
    echo "FAIL: a process reported a fatal error"
    exit 1
fi
if [ -n "$message" ] && ! grep -Eq -- "$message" "$dir/out"; then
    echo "FAIL: no message matching '$message'"
    exit 1
fi
count=0
for f in "$dir"/pid.*; do
    [ -e "$f" ] || continue
    count=$((count + 1))
    pid=$(cat "$f")
    # The launcher has reaped its children: a pid still alive is one of them only if it runs PROG.
    if kill -0 "$pid" 2>/dev/null && grep -q "$(basename "$prog")" "/proc/$pid/cmdline" 2>/dev/null; then
        echo "FAIL: process $pid is still alive"
        exit 1
    fi
done
if [ "$count" -ne "$np" ]; then
    echo "FAIL: $count of $np processes recorded their pid"
    exit 1
fi
for f in "${left[@]}"; do
    [ -e "$dir/$f" ] || { echo "FAIL: the job left no $f"; exit 1; }
done
echo OK
