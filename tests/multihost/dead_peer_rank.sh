#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# dead_peer_rank.sh PROGRAM NPROCS: how each rank of the dead-peer test starts (see dead_peer.c).
# The victim (the last rank) runs PROGRAM as a child. Once the child's NI is open, this wrapper
# stops it (SIGSTOP) and waits until every thread is stopped, lets the survivors post their gets
# (one byte each on the "go" FIFO), waits until all have posted, kills the child (SIGKILL) and
# waits until every survivor has reported its failure event before it exits with 137
# (128 + SIGKILL). So the gets meet a peer that answers nothing, and the launcher learns of the
# death only after the survivors have seen it: the test does not depend on which happens first.
prog=$1 n=$2
if [ "$PMI_RANK" != $((n - 1)) ]; then
    exec "$prog"
fi
dir=$DEAD_PEER_REPORT_DIR
exec 4<>"$dir/fifo" # held open for writing too, so that reads never see end-of-file
exec 5<>"$dir/go"
expect() { # expect WORD COUNT: COUNT lines WORD from the ranks
    i=0
    while [ $i -lt "$2" ]; do
        read -r line <&4 || exit 1
        [ "$line" = "$1" ] || { echo "dead_peer_rank: expected $1, got $line" >&2; exit 1; }
        i=$((i + 1))
    done
}
all_stopped() {
    for s in /proc/"$1"/task/*/stat; do
        read -r st <"$s" || return 1
        st=${st##*) }
        [ "${st%% *}" = T ] || return 1
    done
}
"$prog" &
child=$!
expect ready 1
kill -STOP "$child"
until all_stopped "$child"; do :; done
i=1
while [ $i -lt "$n" ]; do printf x >&5; i=$((i + 1)); done
expect posted $((n - 1))
kill -KILL "$child"
wait "$child"
expect reported $((n - 1))
exit 137
