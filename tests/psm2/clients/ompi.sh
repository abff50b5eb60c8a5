#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ompi.sh LIBDIR PROGRAM NP [shm|tcp]: PROGRAM on NP ranks under Open MPI's mpirun with the cm PML
# and the psm2 MTL, which load Portico's libpsm2 from LIBDIR (run inside fake_hfi.sh). The MTL
# is required (--mca mtl psm2): a job that fell back to another transport would fail instead.
set -euo pipefail
libdir=$1 prog=$2 np=$3 transport=${4:-shm}
command -v mpirun.openmpi >/dev/null || { echo "SKIP: Open MPI (openmpi-bin) is not installed" >&2; exit 77; }
[ -x "$prog" ] || { echo "SKIP: $prog was not built (mpicc.openmpi from libopenmpi-dev is missing)" >&2; exit 77; }
env=(-x LD_LIBRARY_PATH="$libdir")
# With all ranks local Open MPI sets PSM2_DEVICES=self,shm unless the user set it; "self,hfi"
# sends them through the network path (Portico's TCP transport), as PSM2's own way to ask that.
[ "$transport" = tcp ] && env+=(-x PSM2_DEVICES=self,hfi)
# rtc_hwloc_vmhole none: see ompi_multihost.sh (Open MPI 4.1.4's topology-in-a-hole crash).
exec mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" "${env[@]}" \
  --mca rtc_hwloc_vmhole none --mca pml cm --mca mtl psm2 --mca btl self "$prog"
