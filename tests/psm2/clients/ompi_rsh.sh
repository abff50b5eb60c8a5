#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ompi_rsh.sh [ssh options] HOST COMMAND...: Open MPI's remote shell (plm_rsh_agent) for the
# multi-host namespaces of tests/multihost/netns.sh: runs COMMAND (Open MPI's daemon) on HOST
# inside fake_hfi.sh, keeping HOST's network, so that the ranks it starts see an Omni-Path
# adapter and share one /dev/shm per host.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
netns=$dir/../../multihost/netns.sh
while [ $# -gt 0 ]; do
  case $1 in
    -o | -p | -l | -i) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
exec "$netns" rsh "$host" "PORTICO_FAKE_HFI_KEEP_NET=1 $dir/fake_hfi.sh $*"
