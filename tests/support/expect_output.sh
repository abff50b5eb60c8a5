#!/bin/bash
# expect_output.sh COUNT REGEX [COUNT REGEX]... -- CMD [ARG]...
# Runs CMD and passes when it exits with status 0 and, for each pair, exactly COUNT lines of its
# output (stdout and stderr) match the extended regular expression REGEX. ctest's
# PASS_REGULAR_EXPRESSION alone would ignore the exit status and how many ranks printed.
set -u
declare -a counts=() patterns=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    [ $# -ge 2 ] || { echo "usage: $0 COUNT REGEX [COUNT REGEX]... -- CMD [ARG]..."; exit 2; }
    counts+=("$1")
    patterns+=("$2")
    shift 2
done
[ $# -ge 2 ] && [ ${#counts[@]} -gt 0 ] || { echo "usage: $0 COUNT REGEX [COUNT REGEX]... -- CMD [ARG]..."; exit 2; }
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" > "$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" != 0 ]; then
    echo "FAIL: '$*' exited with status $rc"
    exit 1
fi
for i in "${!counts[@]}"; do
    n=$(grep -cE -- "${patterns[$i]}" "$out")
    if [ "$n" != "${counts[$i]}" ]; then
        echo "FAIL: $n lines match '${patterns[$i]}', expected ${counts[$i]}"
        exit 1
    fi
done
echo "PASS"
