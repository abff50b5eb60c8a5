#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gasnet_ex_compare.sh GEX_PREFIX BUILD_DIR [ROUNDS] [TEST]: the same GASNet-1 program (gasnet_bench.c)
# compiled once against GASNet-EX's smp conduit and once against Portico, run alternately on this
# machine, ROUNDS times each (default 10), TEST (default am_short_rt; any gasnet_bench test or "all").
# Prints one JSON line per result with "impl" set to "gasnet-ex-smp" or "portico".
#
# GEX_PREFIX is an install of GASNet-EX built outside this tree, e.g. from its release tarball:
#   tar xzf GASNet-2025.8.0.tar.gz && cd GASNet-2025.8.0
#   ./configure --prefix=$GEX_PREFIX --enable-smp --enable-seq --disable-par --disable-parsync \
#     --disable-mpi --disable-mpi-compat --disable-udp --disable-ibv --disable-ofi --disable-ucx
#   make -j2 seq && make install
# (GASNet-EX keeps the GASNet-1 interface the program uses.) BUILD_DIR is a Portico build with
# its bench/gasnet/gasnet_bench and tools/portico-run.
set -euo pipefail
gex=${1:?GASNet-EX install prefix} build=${2:?Portico build directory} rounds=${3:-10} test=${4:-am_short_rt}
here=$(cd "$(dirname "$0")" && pwd)
run=$build/tools/portico-run/portico-run portico_bench=$build/bench/gasnet/gasnet_bench
if [ ! -x "$run" ] || [ ! -x "$portico_bench" ]; then echo "no portico-run or gasnet_bench in $build" >&2; exit 2; fi
export PKG_CONFIG_PATH=$gex/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pkg-config --exists gasnet-smp-seq || { echo "no gasnet-smp-seq.pc under $gex/lib/pkgconfig" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2046 # pkg-config's words are separate flags
cc -O2 -w -o "$tmp/gasnet_bench_gex" "$here/gasnet_bench.c" $(pkg-config --cflags --libs gasnet-smp-seq)
tag() { sed -n "s/^{/{\"impl\":\"$1\",/p"; }
for ((i = 1; i <= rounds; i++)); do
  GASNET_PSHM_NODES=2 timeout 120 "$tmp/gasnet_bench_gex" "$test" --reps 5 --json | tag gasnet-ex-smp
  timeout 120 "$run" -n 2 "$portico_bench" "$test" --reps 5 --json | tag portico
done
