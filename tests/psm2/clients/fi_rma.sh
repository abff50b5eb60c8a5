#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# fi_rma.sh LIBDIR PORTICO_RUN PROGRAM [shm|tcp]: fi_rma_test.c's two ranks under portico-run,
# libfabric's psm2 provider loading Portico's libpsm2 from LIBDIR (run inside fake_hfi.sh).
set -euo pipefail
libdir=$1 run=$2 prog=$3 transport=${4:-shm}
[ -x "$prog" ] || { echo "SKIP: $prog was not built (libfabric-dev is missing)" >&2; exit 77; }
export LD_LIBRARY_PATH=$libdir
[ "$transport" = tcp ] && export PORTICO_TRANSPORT=tcp
exec "$run" -n 2 --timeout 120 "$prog"
