#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian packages that building and testing Portico need (only those missing).
set -euo pipefail
packages=(cmake g++ make pkg-config libgtest-dev libgmock-dev googletest
          # ninja: scripts/test.sh builds with it (keeps both cores busy, no per-target make overhead)
          ninja-build
          # mpich: its mpiexec (hydra) launches Portico jobs too; a test checks that compatibility
          mpich libmpich-dev
          # PMIx: libpmix-dev builds the PMIx bootstrap client; openmpi-bin's mpirun (Open MPI 4.1,
          # on the external PMIx 4.2 of libpmix-dev) launches Portico jobs in the launcher.pmix tests
          libpmix-dev openmpi-bin
          # clang + its runtime: the libFuzzer target; iproute2: network namespaces (multihost tests)
          clang libclang-rt-dev iproute2
          # clang-format, clang-tidy: CI fails on unformatted code (scripts/format.sh --check) and
          # on clang-tidy findings (scripts/tidy.sh)
          clang-format clang-tidy
          # a private one-node Slurm cluster for the launcher.slurm test (tests/launcher/slurm.sh)
          slurmd slurmctld slurm-client munge
          # libpsm2-dev: Debian's PSM2 headers, which the ABI test compares Portico's psm2.h with;
          # libfabric-bin: fi_info/fi_pingpong, real PSM2 clients run over Portico's libpsm2;
          # libfabric-dev: the RMA test program for libfabric's psm2 provider (RMA over PSM2 AM)
          libpsm2-dev libfabric-bin libfabric-dev
          # valgrind: callgrind counts the instructions of a hop (bench/instructions)
          valgrind
          # libopenmpi-dev: mpicc.openmpi builds the MPI program the mtl psm2 tests run
          libopenmpi-dev
          # tests/clients (opt-in): Open MPI 4.1 built from Debian's sources against Portico uses
          # Debian's hwloc, libevent and PMIx (libpmix-dev above); xz unpacks the sources
          libhwloc-dev libevent-dev xz-utils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
