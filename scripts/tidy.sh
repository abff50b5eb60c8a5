#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs clang-tidy (14, Debian 12; the checks are in .clang-tidy) over the parts of the tree that
# are clean, with every finding an error: CI runs this after the format check. It configures its
# own build directory (build-tidy, configure only: nothing is compiled) for compile_commands.json.
#
#   scripts/tidy.sh            the checks of .clang-tidy over what Portico ships and runs: the
#                              libraries, tools, benchmarks and the tests' shared support (about 4
#                              minutes on 2 cores)
#   scripts/tidy.sh --all      also the test programs (tests/): about 10 minutes. Not part of CI,
#                              which must stay within 40 minutes: the test programs are built
#                              with -Wall -Wextra -Werror and run under ASan, UBSan and TSan, which
#                              catch what bugprone-* would in them. Run it when changing tests.
#   scripts/tidy.sh --deep     also the static analyzer (clang-analyzer-*): about 5 times slower,
#                              so not part of CI; run it by hand on larger changes
#   scripts/tidy.sh FILE...    only these files (paths relative to the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

# The parts checked (HeaderFilterRegex in .clang-tidy covers all of them): all of src/, tools,
# bench, tests/support; with --all, all of tests.
dirs=(src/engine src/transport src/capi src/gasnet src/upc src/psm2 src/pmi src/bootstrap src/common src/clientkit tools bench tests/support)
# Left out, with the reason:
#   tests/conformance, tests/completion: their helpers take a std::source_location, which clang 14
#   cannot compile against libstdc++ 12 (no __builtin_source_location): add them with clang-tidy 15.
skip_re='^(tests/conformance|tests/completion)/'

tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "tidy.sh: clang-tidy not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
checks=()
case "${1:-}" in
--deep)
    checks=(--checks=clang-analyzer-*)
    shift
    ;;
--all)
    dirs+=(tests)
    shift
    ;;
esac

build=build-tidy
# Without link-time optimization: clang-tidy reads the compile commands, and GCC's LTO flags are not clang's.
cmake -S . -B "$build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DPORTICO_FUZZ=OFF -DPORTICO_LTO=OFF >/dev/null

if [ $# -gt 0 ]; then
    files=("$@")
else
    # Every translation unit of the build under the checked parts (a file built for two targets
    # is checked once).
    mapfile -t files < <(python3 - "$build/compile_commands.json" "$skip_re" "${dirs[@]}" <<'EOF'
import json, os, re, sys
db, skip, dirs = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3:]
root = os.getcwd() + "/"
seen = set()
for entry in json.load(open(db)):
    path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
    if any(path.startswith(d + "/") for d in dirs) and not skip.match(path) and path not in seen:
        seen.add(path)
        print(path)
EOF
    )
fi
[ ${#files[@]} -gt 0 ] || { echo "tidy.sh: no files to check" >&2; exit 1; }

# The compile commands are g++'s: -Wno-restrict (portico_strict, for g++ 12) is unknown to clang,
# and clang's -Wconversion includes -Wsign-conversion, g++'s does not (the build decides which
# targets get it: portico_strict's NO_SIGN_CONVERSION).
# One clang-tidy process per file, as many at a time as there are CPUs; any finding fails the run.
printf '%s\n' "${files[@]}" |
    xargs -P "$(nproc)" -n 1 "$tidy" -p "$build" --quiet --warnings-as-errors='*' \
        --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-sign-conversion "${checks[@]}"
echo "tidy.sh: ${#files[@]} files clean"
