#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ompi_multihost.sh LIBDIR PROGRAM NP: PROGRAM on NP ranks spread evenly over the hosts of
# tests/multihost/netns.sh (run me as `netns.sh run N -- ompi_multihost.sh ...`), under Open MPI's
# mpirun with the cm PML and the psm2 MTL loading Portico's libpsm2 from LIBDIR. Open MPI starts
# its daemon on each host through ompi_rsh.sh (which fakes the adapter there); ranks on one host
# reach each other through shared memory, the others over TCP. mpirun itself runs in the root
# namespace, which reaches the hosts through the set's gateway address.
set -euo pipefail
libdir=$1 prog=$2 np=$3
command -v mpirun.openmpi >/dev/null || { echo "SKIP: Open MPI (openmpi-bin) is not installed" >&2; exit 77; }
[ -x "$prog" ] || { echo "SKIP: $prog was not built (mpicc.openmpi from libopenmpi-dev is missing)" >&2; exit 77; }
: "${PORTICO_NETNS_ADDRS:?run me with netns.sh run N -- $0 ...}"
dir=$(cd "$(dirname "$0")" && pwd)
IFS=, read -ra addrs <<<"$PORTICO_NETNS_ADDRS"
per=$(((np + ${#addrs[@]} - 1) / ${#addrs[@]}))
hosts=
for a in "${addrs[@]}"; do hosts+=${hosts:+,}$a:$per; done
# Open MPI's daemons talk to mpirun over the set's network only (the root namespace has others).
# rtc_hwloc_vmhole none: Open MPI 4.1.4's daemon maps its hwloc topology into the "biggest" hole
# it sees in its address space and crashes there (SIGSEGV in hwloc_shmem_topology_write) in about
# one start in ten; without the shared topology each rank discovers its own.
net=${PORTICO_NETNS_GATEWAY%.*}.0/24
exec timeout 200 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" --host "$hosts" \
  --mca plm_rsh_agent "$dir/ompi_rsh.sh" --mca oob_tcp_if_include "$net" \
  --mca rtc_hwloc_vmhole none \
  -x LD_LIBRARY_PATH="$libdir" --mca pml cm --mca mtl psm2 --mca btl self "$prog"
