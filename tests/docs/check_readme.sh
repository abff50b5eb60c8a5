#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs.readme.SECTION: README.md's generated section SECTION is exactly what
# scripts/readme_section.sh prints from its source (refresh with scripts/update_readme.sh).
#   check_readme.sh SOURCE_DIR SECTION BUILD_DIR
set -eu
src=$1
section=$2
build=$3
readme=$src/README.md
begin="<!-- $section:begin -->"
end="<!-- $section:end -->"
if [ "$(grep -cxF "$begin" "$readme")" != 1 ] || [ "$(grep -cxF "$end" "$readme")" != 1 ]; then
    echo "$readme: expected one '$begin' line and one '$end' line" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -n "/^$begin\$/,/^$end\$/p" "$readme" | sed '1d;$d' >"$tmp/readme"
"$src/scripts/readme_section.sh" "$section" "$build" >"$tmp/generated"
if ! diff -u "$tmp/readme" "$tmp/generated" >&2; then
    echo "README.md's $section section differs from its source (above: - README, + generated);" \
         "run scripts/update_readme.sh" >&2
    exit 1
fi
echo "README $section section is up to date"
