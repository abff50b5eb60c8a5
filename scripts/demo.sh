#!/usr/bin/env bash
# Builds Portico and runs the demo: a 4-process Portals job on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target portals portico-run portals_demo
exec build/tools/portico-run/portico-run -n "${1:-4}" --timeout 60 build/examples/portals_demo
