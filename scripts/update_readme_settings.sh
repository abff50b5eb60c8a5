#!/bin/sh
# Replaces README.md's settings section (between <!-- settings:begin --> and <!-- settings:end -->)
# with what `portico-info --markdown` prints.
#   scripts/update_readme_settings.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
info=${1:-$root/build}/tools/portico-info/portico-info
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$info" --markdown >"$tmp"
awk -v gen="$tmp" '
    $0 == "<!-- settings:begin -->" { print; while ((getline line < gen) > 0) print line; skip = 1; next }
    $0 == "<!-- settings:end -->" { skip = 0 }
    !skip { print }
' "$root/README.md" >"$root/README.md.new"
mv "$root/README.md.new" "$root/README.md"
