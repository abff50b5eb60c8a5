#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# repeat_job.sh RUNS EXPECTED_STATUS FORBIDDEN_REGEX COMMAND [ARGS...]
# Runs a job (a launcher command) RUNS times, each bounded by 60 s, and fails at the first run whose
# exit status is not EXPECTED_STATUS ("failure": any status but 0 and timeout's 124) or whose output
# matches FORBIDDEN_REGEX (grep -E; "" for none), printing that run's output. For exits that
# launchers take for failures only now and then (hydra kills a job when one rank's end without
# finalize beats the others' to it), so one run proves nothing. The ranks get a scratch directory
# of their own in EXIT_TEST_DIR (the exit tests write their pids there).
set -u
runs=$1 expect=$2 forbidden=$3
shift 3
out=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$out" "$scratch"' EXIT
export EXIT_TEST_DIR=$scratch
ulimit -c 0
start=$(date +%s)
for i in $(seq 1 "$runs"); do
    timeout -k 5 60 "$@" > "$out" 2>&1
    rc=$?
    if [ "$expect" = failure ]; then
        ok=$([ "$rc" != 0 ] && [ "$rc" != 124 ] && echo yes)
    else
        ok=$([ "$rc" = "$expect" ] && echo yes)
    fi
    if [ -z "$ok" ] || { [ -n "$forbidden" ] && grep -Eq -- "$forbidden" "$out"; }; then
        cat "$out"
        echo "FAIL: run $i of $runs exited with $rc (expected $expect)${forbidden:+, forbidden: /$forbidden/}: $*"
        exit 1
    fi
done
echo "OK: $runs runs ended with $expect in $(( $(date +%s) - start )) s: $*"
