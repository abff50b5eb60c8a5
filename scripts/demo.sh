#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds Portico and runs the demos, multi-process jobs on this machine, one for each interface
# Portico offers: Portals (portals_demo: puts, acks, counting events, a get; triggered_collectives:
# a barrier and a broadcast built only from triggered puts and counters), GASNet (gasnet_hello: an
# Active Message request and reply, a put and a get), PSM2 (psm2_hello: tagged messages through a
# matched queue) and UPC (the three programs of docs/UPC.md in the C++ front end). The programs are
# in examples/; each checks what it prints (ctest runs them: *.example.*).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target portals portico-run portals_demo triggered_collectives \
    gasnet_hello psm2_hello upc_vector_add upc_heat upc_int_sort
n=${1:-4}
run() { build/tools/portico-run/portico-run -n "$n" --timeout 60 "$@"; }
echo "== Portals: portals_demo on $n processes"
run build/examples/portals_demo
echo "== Portals: triggered_collectives on $n processes"
run build/examples/triggered_collectives 1000 4096
echo "== GASNet: gasnet_hello on $n nodes"
run build/examples/gasnet/gasnet_hello
echo "== PSM2: psm2_hello on $n processes"
run build/examples/psm2/psm2_hello
echo "== UPC (C++ front end): vector add, heat diffusion, integer sort on $n processes"
run build/examples/upc/upc_vector_add
run build/examples/upc/upc_heat
run build/examples/upc/upc_int_sort
