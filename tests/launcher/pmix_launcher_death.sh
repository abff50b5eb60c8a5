#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# launcher.pmix.launcher_death: Open MPI's mpirun (MPIRUN) starts 2 ranks of launcher_helper
# barrier-hang (rank 0 in pause(), outside any PMIx call; rank 1 in a fence) and is killed with
# SIGKILL; the PMIx client's lost-connection handler must end both ranks within 10 s.
# Usage: pmix_launcher_death.sh MPIRUN LAUNCHER_HELPER
set -u
mpirun=$1 helper=$2
"$mpirun" --oversubscribe --bind-to none -n 2 "$helper" barrier-hang >/dev/null 2>&1 &
m=$!
ranks=""
i=0
while [ $i -lt 200 ]; do
  ranks=$(pgrep -P "$m" -f barrier-hang | tr '\n' ' ')
  [ "$(echo $ranks | wc -w)" -ge 2 ] && break
  sleep 0.1
  i=$((i + 1))
done
if [ "$(echo $ranks | wc -w)" -lt 2 ]; then
  echo "the ranks did not start"; kill -9 "$m" 2>/dev/null; exit 1
fi
sleep 2 # let both ranks reach PMIx_Init and register the handler
kill -9 "$m"
wait "$m" 2>/dev/null
i=0
while [ $i -lt 100 ]; do
  alive=""
  for p in $ranks; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
  [ -z "$alive" ] && { echo "both ranks exited after mpirun was killed"; exit 0; }
  sleep 0.1
  i=$((i + 1))
done
echo "ranks still running 10 s after mpirun was killed:$alive"
for p in $alive; do kill -9 "$p" 2>/dev/null; done
exit 1
