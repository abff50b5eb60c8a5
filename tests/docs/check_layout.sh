#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs.layout: README.md's "Layout" section names every folder of the tree a newcomer looks for
# (include/, each folder of src/, src/transport/, tools/, tests/, bench/, examples/, each file of
# docs/), and every path it names exists.
#   check_layout.sh SOURCE_DIR
set -eu
cd "$1"
layout=$(sed -n '/^## Layout$/,/^## /p' README.md)
status=0
for path in include $(find src src/transport tools tests bench examples -mindepth 1 -maxdepth 1 -type d | sort) \
            $(find docs -maxdepth 1 -name '*.md' | sort); do
    case "$path" in src/transport/*) ;; src/*/*) continue ;; esac
    if ! printf '%s\n' "$layout" | grep -qF "\`$path"; then
        echo "README.md's Layout does not name $path" >&2
        status=1
    fi
done
# shellcheck disable=SC2016 # the backquotes are Markdown's, not the shell's
for named in $(printf '%s\n' "$layout" | grep -oE '`(include|src|tools|tests|bench|examples|docs|scripts|cmake)(/[A-Za-z0-9_.+-]+)*/?`' |
               tr -d '`'); do
    if [ ! -e "$named" ]; then
        echo "README.md's Layout names $named, which does not exist" >&2
        status=1
    fi
done
[ $status -eq 0 ] && echo "README's Layout names every folder, and only folders that exist"
exit $status
