#!/bin/bash
# run_exit_test.sh RUN PROG NPROCS EXPECTED_CODE MODE [MESSAGE]
# Runs PROG MODE on NPROCS processes under portico-run (RUN); checks the job's exit code, that
# MESSAGE (an extended regular expression) was printed if given, that every process started
# (recorded its pid) and that none is left afterwards.
set -u
run=$1 prog=$2 np=$3 expect=$4 mode=$5 message=${6:-}
ulimit -c 0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
UPC_TEST_DIR=$dir "$run" -n "$np" --timeout 60 "$prog" "$mode" 2>&1 | tee "$dir/out"
rc=${PIPESTATUS[0]}
echo "exit_test $mode: job exit code $rc"
if [ "$rc" != "$expect" ]; then
    echo "FAIL: exit code $rc, expected $expect"
    exit 1
fi
if [ -n "$message" ] && ! grep -Eq "$message" "$dir/out"; then
    echo "FAIL: no message matching '$message'"
    exit 1
fi
count=0
for f in "$dir"/pid.*; do
    [ -e "$f" ] || continue
    count=$((count + 1))
    pid=$(cat "$f")
    # the launcher has reaped its children: a pid still alive is ours only if it runs PROG
    if kill -0 "$pid" 2>/dev/null && grep -q "$(basename "$prog")" "/proc/$pid/cmdline" 2>/dev/null; then
        echo "FAIL: process $pid is still alive"
        exit 1
    fi
done
if [ "$count" -ne "$np" ]; then
    echo "FAIL: $count of $np processes recorded their pid"
    exit 1
fi
echo OK
