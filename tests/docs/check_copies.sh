#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs.copies: where a document shows a whole example (a "(`examples/...`):" line, then a fenced
# block), the block is that file as it is (its SPDX line aside), so that the docs never show a
# program that the tests no longer build and run.
#   check_copies.sh SOURCE_DIR DOCUMENT...
set -eu
cd "$1"
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
count=0
for doc in "$@"; do
    # One file per copy: tmp/N.path holds the path, tmp/N.text the block.
    awk -v dir="$tmp" '
        match($0, /\(`examples\/[^`]+`\):$/) { path = substr($0, RSTART + 2, RLENGTH - 5); want = 1; next }
        want && /^```/ { inside = 1; want = 0; n++; print path > (dir "/" n ".path"); next }
        inside && /^```$/ { inside = 0; next }
        inside { print > (dir "/" n ".text") }
    ' "$doc"
    for p in "$tmp"/*.path; do
        [ -e "$p" ] || continue
        n=${p%.path}
        path=$(cat "$p")
        count=$((count + 1))
        if ! grep -v 'SPDX-License-Identifier' "$path" | diff -u - "$n.text" >"$tmp/diff"; then
            echo "$doc shows a copy of $path that differs from it (- file, + document):" >&2
            cat "$tmp/diff" >&2
            status=1
        fi
        rm -f "$p" "$n.text"
    done
done
[ $status -eq 0 ] && echo "$count copies of source files in the documents match their files"
exit $status
