#!/usr/bin/env bash
# Builds Portico and runs the demos, multi-process jobs on this machine: portals_demo (puts,
# acks, counting events, a get), triggered_collectives (a barrier and a broadcast built only from
# triggered puts and counters), and the three UPC programs of docs/UPC.md in the C++ front end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target portals portico-run portals_demo triggered_collectives \
    upc_vector_add upc_heat upc_int_sort
n=${1:-4}
echo "== portals_demo on $n processes"
build/tools/portico-run/portico-run -n "$n" --timeout 60 build/examples/portals_demo
echo "== triggered_collectives on $n processes"
build/tools/portico-run/portico-run -n "$n" --timeout 60 build/examples/triggered_collectives 1000 4096
echo "== UPC (C++ front end): vector add, heat diffusion, integer sort on $n processes"
build/tools/portico-run/portico-run -n "$n" --timeout 60 build/examples/upc/upc_vector_add
build/tools/portico-run/portico-run -n "$n" --timeout 60 build/examples/upc/upc_heat
build/tools/portico-run/portico-run -n "$n" --timeout 60 build/examples/upc/upc_int_sort
