#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs.spdx: every source file of the repository (C, C++, shell, CMake, Python) names its license
# (LICENSE: BSD-3-Clause) in an SPDX line among its first three lines.
#   check_spdx.sh SOURCE_DIR
set -eu
cd "$1"
missing=$(git ls-files 2>/dev/null | grep -E '\.(cpp|hpp|c|h|sh|cmake|py)$|(^|/)CMakeLists\.txt$' |
          while read -r f; do
              head -3 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause' || echo "$f"
          done)
if [ -n "$missing" ]; then
    echo "no 'SPDX-License-Identifier: BSD-3-Clause' line in the first three lines of:" >&2
    echo "$missing" >&2
    exit 1
fi
[ -f LICENSE ] || { echo "no LICENSE file" >&2; exit 1; }
echo "every source file names its license"
