#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# probe_includes.sh <c++ compiler> <source tree> <headers found, comma-separated>
#                   <headers refused, comma-separated> <include directory>...
# Preprocesses an #include "<header>" of each with the given include directories (as -I, in order):
# every header of the first list must be found (with what it includes in turn), every one of the
# second must be missing ("No such file"), and exist in the source tree (under src/, or from its
# root), so that a misspelt name does not pass. Exits 1 naming each header that was not as expected.
set -u
cxx=$1 root=$2 sees=$3 refuses=$4
shift 4
flags=""
for dir in "$@"; do flags="$flags -I$dir"; done
# Quoted includes are looked for next to the including file first: from stdin, the current
# directory, which must hold nothing.
empty=$(mktemp -d) || exit 1
trap 'rm -rf "$empty"' EXIT
cd "$empty" || exit 1
failed=0
old_ifs=$IFS
IFS=,
for header in $sees; do
    IFS=$old_ifs
    # shellcheck disable=SC2086 # one word per flag
    if ! out=$(printf '#include "%s"\n' "$header" | "$cxx" -std=c++20 -E -x c++ $flags - 2>&1 >/dev/null); then
        echo "FAIL: \"$header\" should be found: $out"
        failed=1
    fi
done
IFS=,
for header in $refuses; do
    IFS=$old_ifs
    if [ ! -f "$root/src/$header" ] && [ ! -f "$root/$header" ]; then
        echo "FAIL: \"$header\" is in neither $root/src nor $root: nothing to refuse"
        failed=1
        continue
    fi
    # shellcheck disable=SC2086
    out=$(printf '#include "%s"\n' "$header" | "$cxx" -std=c++20 -E -x c++ $flags - 2>&1 >/dev/null)
    case $out in
    *"No such file"*) ;;
    *) echo "FAIL: \"$header\" should be refused (No such file); the preprocessor found it${out:+: $out}"
       failed=1 ;;
    esac
done
IFS=$old_ifs
[ $failed -eq 0 ] && echo "layers: $sees found, $refuses refused"
exit $failed
