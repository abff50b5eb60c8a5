#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Formats every C and C++ file git knows with the project's .clang-format (clang-format 14, the
# version Debian 12 ships: another version may lay code out differently). With --check it changes
# nothing and fails, listing the files, if any file is not formatted: CI runs that.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$cf" ] || { echo "format.sh: clang-format not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
if [ "${1:-}" = "--check" ]; then
    bad=()
    for f in "${files[@]}"; do
        "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    if [ ${#bad[@]} -gt 0 ]; then
        echo "format.sh: not formatted (run scripts/format.sh): ${bad[*]}" >&2
        exit 1
    fi
    echo "format.sh: ${#files[@]} files formatted"
else
    "$cf" -i "${files[@]}"
fi
