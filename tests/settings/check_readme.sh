#!/bin/sh
# settings.readme: the README's settings section is exactly what `portico-info --markdown`
# prints (the declarations are the source; refresh with scripts/update_readme_settings.sh).
#   check_readme.sh README PORTICO_INFO
set -eu
readme=$1
info=$2
begin='<!-- settings:begin -->'
end='<!-- settings:end -->'
if [ "$(grep -cxF "$begin" "$readme")" != 1 ] || [ "$(grep -cxF "$end" "$readme")" != 1 ]; then
    echo "$readme: expected one '$begin' line and one '$end' line" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -n "/^$begin\$/,/^$end\$/p" "$readme" | sed '1d;$d' >"$tmp/readme"
"$info" --markdown >"$tmp/generated"
if ! diff -u "$tmp/readme" "$tmp/generated" >&2; then
    echo "README.md's settings section differs from 'portico-info --markdown' (above: - README, +" \
         "generated); run scripts/update_readme_settings.sh" >&2
    exit 1
fi
echo "README settings section is up to date"
