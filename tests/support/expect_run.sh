#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_run.sh [--exit CODES] [--output ERE]... [--count N ERE]... [--retry-on CODES --attempts N]
#               -- COMMAND [ARG...]
#
# Runs COMMAND and passes (exits 0) only when it ends with one of CODES (comma-separated, default
# 0) and its output, stdout and stderr together, matches every ERE of --output (grep -E, line by
# line) and has exactly N lines matching each ERE of --count (one per rank, say, for a program
# whose output is what it shows: the examples). ctest
# alone cannot ask for both: PASS_REGULAR_EXPRESSION makes it ignore the exit status, so a program
# that prints the right line and then crashes would pass.
#
# --retry-on CODES --attempts N: a run ending with one of these codes is run again, up to N runs
# in all, for a third-party launcher that is known to crash or hang now and then (Open MPI 4.1's
# mpirun handling a PMIx_Abort, about one run in ten). The test fails when every run ends so: the
# flake cannot explain N in a row, a broken subject can. Nothing is ever reported as skipped.
#
# Prints the command's output as it comes, then one line saying why it passed or failed. Exits 0
# (pass) or 1 (fail), never a code of the command's, which ctest could take for a skip.
codes=0
retry_on=
attempts=1
patterns=$(mktemp) || exit 1
counted=$(mktemp) || exit 1
output=$(mktemp) || exit 1
status=$(mktemp) || exit 1
trap 'rm -f "$patterns" "$counted" "$output" "$status"' EXIT
usage() {
    echo "usage: expect_run.sh [--exit CODES] [--output ERE]... [--count N ERE]... [--retry-on CODES --attempts N]" \
         "-- COMMAND..." >&2
    exit 1
}
while [ $# -gt 0 ]; do
    case $1 in
    --exit) [ $# -ge 2 ] || usage; codes=$2; shift 2 ;;
    --output) [ $# -ge 2 ] || usage; printf '%s\n' "$2" >>"$patterns"; shift 2 ;;
    --count)
        [ $# -ge 3 ] || usage
        case $2 in '' | *[!0-9]*) usage ;; esac
        printf '%s %s\n' "$2" "$3" >>"$counted"
        shift 3
        ;;
    --retry-on) [ $# -ge 2 ] || usage; retry_on=$2; shift 2 ;;
    --attempts) [ $# -ge 2 ] || usage; attempts=$2; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
    esac
done
[ $# -gt 0 ] || usage
case $attempts in '' | *[!0-9]* | 0) usage ;; esac

in_list() { # in_list CODE LIST: whether CODE is one of LIST's comma-separated codes
    case ",$2," in *",$1,"*) return 0 ;; esac
    return 1
}

run=1
while :; do
    # The status goes through a file: the pipe to tee would otherwise hide it.
    { "$@"; echo $? >"$status"; } 2>&1 | tee "$output"
    rc=$(cat "$status")
    if [ -n "$retry_on" ] && in_list "$rc" "$retry_on" && ! in_list "$rc" "$codes"; then
        if [ "$run" -lt "$attempts" ]; then
            echo "expect_run: exit status $rc (run $run of at most $attempts), a known launcher flake's; running again"
            run=$((run + 1))
            continue
        fi
        if [ "$attempts" -gt 1 ]; then
            echo "expect_run: FAIL: exit status $rc in all $attempts runs (expected $codes); the launcher's known flake does not strike every run"
            exit 1
        fi
    fi
    break
done
if ! in_list "$rc" "$codes"; then
    echo "expect_run: FAIL: exit status $rc, expected $codes"
    exit 1
fi
while IFS= read -r ere; do
    if ! grep -Eq -- "$ere" "$output"; then
        echo "expect_run: FAIL: exit status $rc as expected, but no line of the output matches /$ere/"
        exit 1
    fi
done <"$patterns"
while read -r want ere; do
    got=$(grep -cE -- "$ere" "$output")
    if [ "$got" != "$want" ]; then
        echo "expect_run: FAIL: exit status $rc as expected, but $got lines of the output match /$ere/, expected $want"
        exit 1
    fi
done <"$counted"
echo "expect_run: pass: exit status $rc$( [ -s "$patterns" ] || [ -s "$counted" ] && echo ", and the output has every expected line")"
exit 0
