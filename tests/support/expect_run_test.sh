#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_run_test.sh EXPECT_RUN: expect_run.sh's verdicts, on stand-in commands that end with a
# chosen status. The launcher.pmix tests depend on them, and the failures they must catch (an
# mpirun that crashes, hangs or aborts) cannot be caused on demand.
expect_run=$1
[ -x "$expect_run" ] || { echo "usage: expect_run_test.sh path/to/expect_run.sh" >&2; exit 1; }
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
failures=0

# check VERDICT NAME ARGS...: expect_run.sh ARGS... must pass (VERDICT=pass) or fail (fail).
check() {
    verdict=$1
    name=$2
    shift 2
    "$expect_run" "$@" >"$work/log" 2>&1
    rc=$?
    case $verdict:$rc in
    pass:0 | fail:1) echo "ok: $name" ;;
    *)
        echo "WRONG: $name: expect_run.sh exited with $rc, the $verdict verdict wanted"
        sed 's/^/    /' "$work/log"
        failures=$((failures + 1))
        ;;
    esac
}

# A command that ends with each status of its list in turn, one per run ("139 7": 139, then 7).
statuses() {
    printf '%s\n' "$@" >"$work/statuses"
    : >"$work/runs"
}
cat >"$work/next" <<'EOF'
#!/bin/sh
dir=$(dirname "$0")
echo run >>"$dir/runs"
code=$(sed -n "$(wc -l <"$dir/runs")p" "$dir/statuses")
echo "stand-in ending with ${code:-0}"
exit "${code:-0}"
EOF
chmod +x "$work/next"
runs() { wc -l <"$work/runs" | tr -d ' '; }


# Exit statuses.
check pass "the expected status" --exit 7 -- sh -c 'exit 7'
check pass "the default status is 0" -- true
check fail "another status" --exit 7 -- sh -c 'exit 3'
check fail "a status that is a prefix of the expected one" --exit 17 -- sh -c 'exit 1'
check pass "one of several statuses" --exit 3,98 -- sh -c 'exit 98'
check fail "none of several statuses" --exit 3,98 -- sh -c 'exit 134'
check fail "a command that does not exist" -- "$work/no-such-command"

# Output: every pattern, and the status too (what PASS_REGULAR_EXPRESSION would not check).
check pass "the status and the output" --output 'max_pt_index' -- sh -c 'echo "max_pt_index: 63"'
check fail "the output but a failing status" --output 'max_pt_index' -- sh -c 'echo "max_pt_index: 63"; exit 1'
check fail "the status but not the output" --output 'max_pt_index' -- sh -c 'echo "nothing"'
check fail "one of two patterns missing" --output '^a$' --output '^b$' -- sh -c 'echo a'
check pass "stderr is output too" --output 'on stderr' -- sh -c 'echo on stderr >&2'

# Open MPI's flake (launcher.pmix.abort): a crash or hang is run again, but never passes alone.
statuses 139 7
check pass "a crash of mpirun, then the expected status" --exit 7 --retry-on 124,137,139 --attempts 4 -- "$work/next"
[ "$(runs)" = 2 ] || { echo "WRONG: ran $(runs) times, not 2"; failures=$((failures + 1)); }
statuses 124 137 7
check pass "a hang, a kill, then the expected status" --exit 7 --retry-on 124,137,139 --attempts 4 -- "$work/next"
statuses 139 124 137 7
check pass "the expected status in the last run allowed" --exit 7 --retry-on 124,137,139 --attempts 4 -- "$work/next"
for code in 124 137 139; do
    statuses $code $code $code $code $code
    check fail "status $code in every run" --exit 7 --retry-on 124,137,139 --attempts 4 -- "$work/next"
    [ "$(runs)" = 4 ] || { echo "WRONG: ran $(runs) times, not 4"; failures=$((failures + 1)); }
done
statuses 134 7
check fail "an abort is no flake: no second run" --exit 7 --retry-on 124,137,139 --attempts 4 -- "$work/next"
[ "$(runs)" = 1 ] || { echo "WRONG: ran $(runs) times, not 1"; failures=$((failures + 1)); }
statuses 139 3
check fail "a crash, then a wrong status" --exit 7 --retry-on 124,137,139 --attempts 4 -- "$work/next"
check fail "a timeout without retries" --exit 7 -- sh -c 'exit 124'

# launcher.pmix.exit_rank: the exiting rank's status or the survivors', nothing else.
check pass "exit_rank: the rank's status" --exit 3,97,98 -- sh -c 'exit 3'
check pass "exit_rank: a survivor's status" --exit 3,97,98 -- sh -c 'exit 97'
for code in 0 9 99 124 134 137 139; do
    check fail "exit_rank: status $code" --exit 3,97,98 -- sh -c "exit $code"
done

if [ "$failures" -ne 0 ]; then
    echo "$failures wrong verdicts"
    exit 1
fi
echo "every verdict right"
