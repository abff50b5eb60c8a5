#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks the formatting (scripts/format.sh --check) and runs clang-tidy (scripts/tidy.sh, 2-4
# minutes on 2 CPUs; PORTICO_SKIP_TIDY=1 skips it), then builds Portico and runs every test: the
# normal build, then again under ASan+UBSan, then the engine's multi-threaded tests under TSan,
# then the libFuzzer target on what a TCP peer can send
# (PORTICO_FUZZ_SECONDS, default 60). Any failure fails the script. The multihost.* tests need
# root (network namespaces); elsewhere ctest lists them as skipped, with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/format.sh --check
[ "${PORTICO_SKIP_TIDY:-0}" = 1 ] || scripts/tidy.sh
jobs=$(nproc)

# Ninja for a new build directory; one made before keeps its generator (CMake refuses a change).
generator() { [ -f "$1/CMakeCache.txt" ] || echo "-GNinja"; }

run_suite() { # build-dir cmake-args... -- ctest-args...
  local dir=$1; shift
  local cmake_args=() ctest_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ctest_args=("$@")
  echo "=== $dir: configure ${cmake_args[*]:-}"
  # shellcheck disable=SC2046 # generator: no word, or one
  cmake -S . -B "$dir" $(generator "$dir") "${cmake_args[@]}" >/dev/null
  # shellcheck disable=SC2086 # BUILD_TARGETS: one word per target
  cmake --build "$dir" -j"$jobs" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
  echo "=== $dir: test"
  ctest --test-dir "$dir" -j"$jobs" --output-on-failure "${ctest_args[@]}"
}

run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo --
# Sanitizers: every test under ASan+UBSan; TSan for the engine (conformance, unit, stress, engine.* in one process).
# Not psm2.client.*: Debian's fi_pingpong and Open MPI are not built with ASan, and an instrumented
# libpsm2 cannot be loaded into them (the PSM2 conformance tests, our own programs, do run).
# Not the clients' TCP and network-namespace twins (gasnet|upc|psm2.*.tcp, multihost.gasnet|upc|
# psm2.*) nor their runs of 7 to 16 processes (.n7, .n8, .n16): their client code is that of the
# shm runs of 1 to 4 processes, which do run, and the TCP transport runs under ASan in
# conformance.tcp.*, completion.tcp.* and multihost.portals.*. Together they were 40% of this
# stage's time (eight processes under ASan on two cores), which CI's 40 minutes cannot spare.
run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DPORTICO_SANITIZE=address -DPORTICO_BENCH=OFF -- \
  -E "hydra_compat|psm2\\.client|^(gasnet|upc|psm2)\\.(.*\\.)?tcp(\\.|\$)|^(gasnet|upc|psm2)\\..*\\.n(7|8|16)\$|^multihost\\.(gasnet|upc|psm2)\\."
# It builds only those tests' programs (target engine-tests), not the client libraries.
BUILD_TARGETS=engine-tests \
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=7 suppressions=$PWD/tests/tsan.supp" \
  run_suite build-tsan -DCMAKE_BUILD_TYPE=Debug -DPORTICO_SANITIZE=thread -DPORTICO_BENCH=OFF -- -R "conformance|completion|unit|standalone|^engine\\."
# libFuzzer (clang) on the TCP handshake and frame decoder, for a bounded time. Only the fuzz
# target is built with clang.
echo "=== build-fuzz: configure (clang)"
# shellcheck disable=SC2046 # generator: no word, or one
cmake -S . -B build-fuzz $(generator build-fuzz) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPORTICO_FUZZ=ON -DPORTICO_BENCH=OFF -DPORTICO_FUZZ_SECONDS="${PORTICO_FUZZ_SECONDS:-60}" >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_frame_decoder
echo "=== build-fuzz: test"
ctest --test-dir build-fuzz --output-on-failure -R "^fuzz\."
