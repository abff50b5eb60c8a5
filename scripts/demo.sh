#!/usr/bin/env bash
# Builds Portico and runs the demos, multi-process Portals jobs on this machine:
# portals_demo (puts, acks, counting events, a get) and triggered_collectives (a barrier and a
# broadcast built only from triggered puts and counters).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target portals portico-run portals_demo triggered_collectives
n=${1:-4}
echo "== portals_demo on $n processes"
build/tools/portico-run/portico-run -n "$n" --timeout 60 build/examples/portals_demo
echo "== triggered_collectives on $n processes"
build/tools/portico-run/portico-run -n "$n" --timeout 60 build/examples/triggered_collectives 1000 4096
