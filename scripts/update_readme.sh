#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Replaces README.md's generated sections (between <!-- NAME:begin --> and <!-- NAME:end -->) with
# what scripts/readme_section.sh prints for them (the settings' declarations, the export map).
#   scripts/update_readme.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp)
trap 'rm -f "$tmp" "$root/README.md.new"' EXIT
for section in settings exports; do
    "$root/scripts/readme_section.sh" "$section" "${1:-$root/build}" >"$tmp"
    awk -v gen="$tmp" -v begin="<!-- $section:begin -->" -v end="<!-- $section:end -->" '
        $0 == begin { print; while ((getline line < gen) > 0) print line; skip = 1; next }
        $0 == end { skip = 0 }
        !skip { print }
    ' "$root/README.md" >"$root/README.md.new"
    mv "$root/README.md.new" "$root/README.md"
done
