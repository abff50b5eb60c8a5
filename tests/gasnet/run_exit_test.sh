#!/bin/bash
# run_exit_test.sh RUN PROG NPROCS EXPECTED_CODE MODE
# Runs PROG MODE on NPROCS ranks under portico-run (RUN) and checks that the job's exit code is
# EXPECTED_CODE, that every rank started (recorded its pid) and that none is left afterwards; a
# job that is not expected to end by a fatal error (134) must not print one.
set -u
run=$1 prog=$2 np=$3 expect=$4 mode=$5
ulimit -c 0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
GASNET_TEST_DIR=$dir "$run" -n "$np" --timeout 60 "$prog" "$mode" 2>&1 | tee "$dir/out"
rc=${PIPESTATUS[0]}
echo "exit_test $mode: job exit code $rc after $(( $(date +%s) - start )) s"
if [ "$rc" != "$expect" ]; then
    echo "FAIL: exit code $rc, expected $expect"
    exit 1
fi
if [ "$expect" != 134 ] && grep -q "FATAL ERROR" "$dir/out"; then
    echo "FAIL: a node reported a fatal error"
    exit 1
fi
count=0
for f in "$dir"/pid.*; do
    [ -e "$f" ] || continue
    count=$((count + 1))
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
        echo "FAIL: rank process $pid is still alive"
        exit 1
    fi
done
if [ "$count" -ne "$np" ]; then
    echo "FAIL: $count of $np ranks recorded their pid"
    exit 1
fi
if [ "$mode" = sigquit ]; then
    for r in $(seq 1 $((np - 1))); do
        [ -e "$dir/quit.$r" ] || { echo "FAIL: rank $r's SIGQUIT handler did not run"; exit 1; }
    done
fi
echo OK
