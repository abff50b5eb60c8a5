#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Prints what README.md's generated section NAME holds, from its source:
#   settings  `portico-info --markdown` (every setting's declaration)
#   exports   the portico_* functions src/libportals.map exports, grouped by header
#   readme_section.sh NAME [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
case "$1" in
settings)
    "${2:-$root/build}/tools/portico-info/portico-info" --markdown
    ;;
exports)
    # The map's global names of node PORTALS_4.3, each with the installed header that declares it.
    names=$(sed -n '/^PORTALS_4.3 {/,/^  local:/p' "$root/src/libportals.map" | grep -o '^ *portico_[a-z0-9_]*;' |
            tr -d ' ;' | sort)
    for n in $names; do
        if ! grep -q "[^a-z_]$n(" "$root/include/portico_runtime.h" "$root/include/portico_ext.h"; then
            echo "readme_section.sh: src/libportals.map exports $n, which no installed header declares" >&2
            exit 1
        fi
    done
    for header in portico_runtime.h portico_ext.h; do
        list=""
        for n in $names; do
            grep -q "[^a-z_]$n(" "$root/include/$header" && list="$list${list:+, }\`$n\`"
        done
        echo "- \`$header\`: $list"
    done
    ;;
*)
    echo "readme_section.sh: no generated section '$1' (settings, exports)" >&2
    exit 2
    ;;
esac
