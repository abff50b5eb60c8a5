#!/bin/bash
# repeat_job.sh RUNS EXPECTED_STATUS FORBIDDEN_REGEX COMMAND [ARGS...]
# Runs a job (a launcher command) RUNS times, each bounded by 60 s, and fails at the first run whose
# exit status is not EXPECTED_STATUS or whose output matches FORBIDDEN_REGEX (grep -E; "" for none),
# printing that run's output. For exits that launchers take for failures only now and then (hydra
# kills a job when one rank's end without finalize beats the others' to it), so one run proves
# nothing.
set -u
runs=$1 expect=$2 forbidden=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
for i in $(seq 1 "$runs"); do
    timeout -k 5 60 "$@" > "$out" 2>&1
    rc=$?
    if [ "$rc" != "$expect" ] || { [ -n "$forbidden" ] && grep -Eq -- "$forbidden" "$out"; }; then
        cat "$out"
        echo "FAIL: run $i of $runs exited with $rc (expected $expect)${forbidden:+, forbidden: /$forbidden/}: $*"
        exit 1
    fi
done
echo "OK: $runs runs exited with $expect in $(( $(date +%s) - start )) s: $*"
