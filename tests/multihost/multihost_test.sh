#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Multi-host tests over network namespaces; run inside `netns.sh run N -- multihost_test.sh ...`,
# which provides PORTICO_NETNS_HOSTS/ADDRS/GATEWAY/IFACE. Every job has a hard timeout.
#
#   multihost_test.sh pmi PORTICO_RUN PROGRAM NPROCS [PORTICO-RUN OPTIONS...]
#       portico-run --hosts <the namespaces' addresses> --rsh "netns.sh rsh" -n NPROCS PROGRAM
#   multihost_test.sh refuse PORTICO_RUN LAUNCHER_HELPER
#       2 ranks on the first two namespaces; from the third one (not a host of the job) a process
#       connects to the PMI port: the launcher must refuse it, say so, and the job must succeed
#   multihost_test.sh deadpeer PORTICO_RUN DEAD_PEER_PROGRAM NPROCS
#       the last rank kills itself mid-job: every survivor must report that its get to it ended
#       with PTL_NI_UNDELIVERABLE, and portico-run must exit 137 naming the dead rank (which
#       dead_peer_rank.sh reports only after the survivors did)
#   multihost_test.sh hydra MPIEXEC PROGRAM NPROCS
#       MPICH's mpiexec with its ssh launcher, through netns_ssh.sh, on the namespaces (by name);
#       -iface makes the proxies connect back to the root namespace's address on the namespaces'
#       network (hydra's default, the machine's host name, resolves to a loopback address)
set -u
dir=$(cd "$(dirname "$0")" && pwd)
netns=$dir/netns.sh
: "${PORTICO_NETNS_ADDRS:?run me with netns.sh run N -- $0 ...}"

mode=${1:-}
[ $# -gt 0 ] && shift
case $mode in
    pmi)
        run=$1 prog=$2 n=$3
        shift 3
        exec "$run" --hosts "$PORTICO_NETNS_ADDRS" --rsh "$netns rsh" -n "$n" --timeout 60 "$@" "$prog"
        ;;
    refuse)
        run=$1 helper=$2
        a1=${PORTICO_NETNS_ADDRS%%,*}
        rest=${PORTICO_NETNS_ADDRS#*,}
        a2=${rest%%,*}
        a3=${rest#*,}
        case $a3 in *,* | "$rest") echo "refuse: needs exactly 3 namespaces" >&2; exit 2 ;; esac
        err=$(mktemp) || exit 1
        "$run" --hosts "$a1,$a2" --rsh "$netns rsh" -n 2 --timeout 60 \
            "$helper" knock-from "$netns" rsh "$a3" "$helper knock-refused" 2>"$err"
        status=$?
        cat "$err" >&2
        want="refused a PMI connection from $a3:[0-9]*: not an address of this machine or of a host of the job"
        found=0
        grep -q "$want" "$err" && found=1
        rm -f "$err"
        if [ $status -ne 0 ]; then
            echo "refuse: portico-run exited with $status" >&2
            exit 1
        fi
        if [ $found -ne 1 ]; then
            echo "refuse: portico-run did not report refusing $a3" >&2
            exit 1
        fi
        echo "refuse: the connection from $a3 was refused, the job succeeded"
        ;;
    deadpeer)
        run=$1 prog=$2 n=$3
        out=$(mktemp) err=$(mktemp) reports=$(mktemp -d) || exit 1
        mkfifo "$reports/fifo" "$reports/go" || exit 1
        "$run" --hosts "$PORTICO_NETNS_ADDRS" --rsh "$netns rsh" -n "$n" --timeout 60 \
            --env DEAD_PEER_REPORT_DIR="$reports" "$dir/dead_peer_rank.sh" "$prog" "$n" >"$out" 2>"$err"
        status=$?
        cat "$out"
        cat "$err" >&2
        victim=$((n - 1))
        ok=1
        [ $status -eq 137 ] || { echo "deadpeer: portico-run exited with $status, expected 137" >&2; ok=0; }
        grep -q "rank $victim on host .* exited with code 137" "$err" ||
            { echo "deadpeer: no message naming the killed rank $victim" >&2; ok=0; }
        r=0
        while [ $r -lt $victim ]; do
            cat "$reports/rank$r" 2>/dev/null
            grep -qs "^rank $r: the get to dead rank $victim ended with PTL_NI_UNDELIVERABLE$" "$reports/rank$r" ||
                { echo "deadpeer: rank $r did not report the failure" >&2; ok=0; }
            r=$((r + 1))
        done
        rm -rf "$out" "$err" "$reports"
        [ $ok -eq 1 ] || exit 1
        echo "deadpeer: every survivor saw the failure, the launcher exited 137"
        ;;
    hydra)
        mpiexec=$1 prog=$2 n=$3
        exec timeout -k 5 60 "$mpiexec" -iface "$PORTICO_NETNS_IFACE" -n "$n" \
            -hosts "$PORTICO_NETNS_HOSTS" -launcher ssh -launcher-exec "$dir/netns_ssh.sh" "$prog"
        ;;
    *)
        echo "usage: multihost_test.sh pmi|refuse|hydra ..." >&2
        exit 2
        ;;
esac
