#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# compare_abi.sh PORTICO_PROGRAM SYSTEM_PROGRAM [PORTICO_AUX SYSTEM_AUX]
# compare_abi.sh --skip REASON
# Runs abi_layout built against Portico's PSM2 headers and against the system's, and fails on any
# difference in their output. With the two `gcc -aux-info` files, also compares the prototypes of
# every psm2_* function (return and parameter types as the compiler saw them) and checks that each
# run read the headers it was meant to. --skip: there is no system build; exits 77 (skipped).
set -euo pipefail
if [ "${1:-}" = "--skip" ]; then
    echo "SKIP: not compared with the system's PSM2 headers: ${2:-no reason given}"
    exit 77
fi
ours=$1 theirs=$2 ours_aux=${3:-} theirs_aux=${4:-}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ours" > "$tmp/portico.txt"
"$theirs" > "$tmp/system.txt"

status=0
if ! diff -u "$tmp/system.txt" "$tmp/portico.txt" > "$tmp/layout.diff"; then
    echo "FAIL: layouts, values or types differ (- system headers, + Portico's):"
    cat "$tmp/layout.diff"
    status=1
fi
lines=$(wc -l < "$tmp/portico.txt")
[ "$lines" -gt 0 ] || { echo "FAIL: $ours printed nothing"; status=1; }

# "/* FILE:LINE:NC */ extern T psm2_f (params);" -> "FILE<tab>T psm2_f (params);", by prototype.
extract() {
    sed -n -E 's#^/\* ([^:]*):[0-9]+:[A-Z]+ \*/ (extern )?(.*\<psm2_[a-z0-9_]+ \(.*)$#\1\t\3#p' "$1" |
        sort -t$'\t' -k2
}
ours_headers='^\S*/include/portico/psm2/psm2(_mq|_am)?\.h\t'

protos=0
if [ -n "$ours_aux" ] && [ -n "$theirs_aux" ]; then
    extract "$ours_aux" > "$tmp/portico.aux"
    extract "$theirs_aux" > "$tmp/system.aux"
    # Each run must have read its own headers, or the comparison proves nothing.
    if grep -v -P "$ours_headers" "$tmp/portico.aux" > "$tmp/elsewhere"; then
        echo "FAIL: the Portico run declared psm2_* functions from other files:"
        cut -f1 "$tmp/elsewhere" | sort -u
        status=1
    fi
    if grep -q -P "$ours_headers" "$tmp/system.aux"; then
        echo "FAIL: the system run read Portico's headers"
        status=1
    fi
    cut -f2 "$tmp/portico.aux" > "$tmp/portico.protos"
    cut -f2 "$tmp/system.aux" > "$tmp/system.protos"
    if ! diff -u "$tmp/system.protos" "$tmp/portico.protos" > "$tmp/protos.diff"; then
        echo "FAIL: function prototypes differ (- system headers, + Portico's):"
        cat "$tmp/protos.diff"
        status=1
    fi
    protos=$(wc -l < "$tmp/portico.protos")
    [ "$protos" -gt 0 ] || { echo "FAIL: no psm2_* prototypes in $ours_aux"; status=1; }
else
    echo "NOTE: prototypes not compared (that needs GCC's -aux-info)"
fi

if [ $status -eq 0 ]; then
    echo "OK: $lines layout/value/type lines and $protos psm2_* prototypes identical to the system headers'"
fi
exit $status
