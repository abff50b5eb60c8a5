#!/bin/sh
# dead_peer_rank.sh PROGRAM NPROCS: how each rank of the dead-peer test starts (see dead_peer.c).
# The victim (the last rank) runs PROGRAM as a child: PROGRAM kills itself mid-job, and this
# wrapper then waits until every survivor has reported its failure event (one line each on the
# FIFO in DEAD_PEER_REPORT_DIR) before it exits with 137 (128 + SIGKILL). So the launcher learns
# of the death only after the survivors have seen it, and the test does not depend on which of
# the two happens first.
prog=$1 n=$2
if [ "$PMI_RANK" != $((n - 1)) ]; then
    exec "$prog"
fi
fifo=$DEAD_PEER_REPORT_DIR/fifo
exec 4<>"$fifo" # held open for writing too, so that reads never see end-of-file
"$prog"
i=1
while [ $i -lt "$n" ]; do
    read -r line <&4 || exit 1
    i=$((i + 1))
done
exit 137
