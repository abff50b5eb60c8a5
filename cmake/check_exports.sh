#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# check_exports.sh NM LIBRARY VERSION_SCRIPT
# Fails unless LIBRARY's dynamic symbol table defines exactly the global names of VERSION_SCRIPT
# (plain C names, and quoted demangled names inside extern "C++" blocks), each under a version
# node of that script. Written for the simple scripts of cmake/PorticoExports.cmake: no wildcards
# among the globals.
set -euo pipefail
nm=$1 lib=$2 script=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Comments out, then every name in a global: section (up to the next local: or closing brace).
sed -e 's#/\*.*\*/##g' -e '/\/\*/,/\*\//d' "$script" | awk '
    /^[ \t]*[A-Za-z_][A-Za-z0-9_.]*[ \t]*\{/ { node = $1; sub(/\{.*/, "", node); nodes[node] = 1; next }
    /global:/ { g = 1; next }
    /local:/  { g = 0; next }
    /^[ \t]*\}/ { if (!cxx) g = 0; cxx = 0; next }
    /extern "C\+\+"/ { cxx = 1; next }
    g && /"/ { s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s); print s; next }
    g && /;/ { n = split($0, parts, ";"); for (i = 1; i <= n; i++) { s = parts[i]; gsub(/[ \t]/, "", s); if (s != "") print s } }
    END { for (n in nodes) print n > "/dev/stderr" }
' 2> "$tmp/nodes" | sort -u > "$tmp/allowed"
[ -s "$tmp/allowed" ] || { echo "FAIL: no global names found in $script"; exit 1; }

# "ADDR TYPE NAME@@NODE" (demangled); the node symbols themselves (type A) are not names.
"$nm" -D --defined-only --demangle "$lib" | awk '$2 != "A"' | cut -d' ' -f3- > "$tmp/raw"
sed -e 's/@@*[^@]*$//' "$tmp/raw" | sort -u > "$tmp/exported"

status=0
extra=$(comm -13 "$tmp/allowed" "$tmp/exported")
missing=$(comm -23 "$tmp/allowed" "$tmp/exported")
if [ -n "$extra" ]; then
    echo "FAIL: $lib exports symbols its version script does not list:"; echo "$extra" | sed 's/^/  /'; status=1
fi
if [ -n "$missing" ]; then
    echo "FAIL: $lib does not export (undefined?) names its version script lists:"; echo "$missing" | sed 's/^/  /'; status=1
fi
# Every export carries one of the script's version nodes (an unversioned one escaped the script).
while IFS= read -r line; do
    node=${line##*@}
    if [ "$node" = "$line" ] || ! grep -qxF "$node" "$tmp/nodes"; then
        echo "FAIL: '$line' is not under a version node of $script"; status=1
    fi
done < "$tmp/raw"
[ $status -eq 0 ] && echo "OK: $lib exports the $(wc -l < "$tmp/allowed") names of $(basename "$script") ($(tr '\n' ' ' < "$tmp/nodes"))"
exit $status
