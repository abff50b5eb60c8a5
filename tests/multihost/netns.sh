#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# netns.sh - network namespaces as the "hosts" of multi-machine tests, on one machine.
#
# Each invocation of `up` (or `run`) creates a set K (1..254, unique among the sets that exist)
# of N namespaces ptlK-1 .. ptlK-N, each with its own IPv4 address NET.K.i/24 on an interface
# eth0, the loopback up, and a default route via NET.K.254. All eth0s are veth pairs plugged into
# a bridge that lives in a "switch" namespace ptlK-sw (so the root namespace's firewall and
# bridge-netfilter settings do not apply to traffic between the hosts). The root namespace is
# plugged in too, through the veth ptlK-gw with address NET.K.254: programs in the root namespace
# (a launcher) reach the hosts, and the hosts reach every address of the root namespace through
# their default route. NET is 10.200 unless PORTICO_NETNS_NET says otherwise (two octets).
#
# Usage (as root, or with CAP_NET_ADMIN + CAP_SYS_ADMIN):
#   netns.sh up N             create a set of N hosts (1..250) and print, for `eval`:
#                               PORTICO_NETNS_HOSTS=ptlK-1,...    the namespace names
#                               PORTICO_NETNS_ADDRS=NET.K.1,...   their addresses (same order)
#                               PORTICO_NETNS_GATEWAY=NET.K.254   the root namespace's address
#                               PORTICO_NETNS_IFACE=ptlK-gw       ... and its interface
#                               PORTICO_NETNS_SET=ptlK            the name of the set (for `down`)
#   netns.sh down NAME...     delete namespaces (ptlK-i) or whole sets (ptlK), killing what still
#                             runs in them; deleting a set removes its switch and ptlK-gw too
#   netns.sh rsh [OPTS] HOST COMMAND...
#                             run COMMAND (its words joined with spaces, as ssh does) with
#                             `sh -c` in the namespace of HOST (a name ptlK-i or an address
#                             NET.K.i); leading ssh-style options (-x, -q, -o OPT, ...) are
#                             ignored. Usable as `portico-run --rsh "netns.sh rsh"`, and (through
#                             netns_ssh.sh) as hydra's `-launcher ssh -launcher-exec`.
#                             Exit status: COMMAND's; 255 when HOST is unknown (like ssh).
#   netns.sh run N -- COMMAND [ARGS...]
#                             `up N`, run COMMAND with the variables above in its environment,
#                             and always tear the set down (also on SIGINT/SIGTERM/SIGHUP); the
#                             exit status is COMMAND's
#   netns.sh check            exit 0 if namespaces can be created here
#
# When namespaces cannot be created (not root, no `ip`, no CAP_NET_ADMIN, no veth/bridge
# support), up/run/check print "SKIP: <reason>" and exit 77 (ctest: SKIP_RETURN_CODE 77).
# A set whose `run` was killed with SIGKILL is removed by the next `up`/`run` (the owner's pid is
# kept in $PORTICO_NETNS_STATE, default /run/portico-netns; sets made by `up` are never
# collected, `down` them).
#
# Example:
#   eval "$(netns.sh up 2)" && portico-run --hosts "$PORTICO_NETNS_ADDRS" --rsh "netns.sh rsh" \
#       -n 4 ./prog; netns.sh down "$PORTICO_NETNS_SET"
#   netns.sh run 3 -- sh -c 'portico-run --hosts "$PORTICO_NETNS_ADDRS" --rsh "netns.sh rsh" ./prog'

set -u

NET=${PORTICO_NETNS_NET:-10.200}
STATE=${PORTICO_NETNS_STATE:-/run/portico-netns}
PROG=netns.sh

die() { # status message
    rc=$1
    shift
    echo "$PROG: $*" >&2
    exit "$rc"
}

skip() {
    echo "SKIP: $*"
    exit 77
}

# Can we make namespaces at all? (exits 77 if not)
probe() {
    command -v ip >/dev/null 2>&1 || skip "the 'ip' command (iproute2) is not installed"
    uid=$(id -u 2>/dev/null)
    [ "$uid" = 0 ] || skip "network namespaces need root (CAP_NET_ADMIN, CAP_SYS_ADMIN); uid is ${uid:-unknown}"
    case $NET in
        *[!0-9.]* | *.*.* | .* | *. | "") die 2 "PORTICO_NETNS_NET='$NET' is not two octets like 10.200" ;;
    esac
    probe_ns=ptlprobe-$$
    if ! err=$(ip netns add "$probe_ns" 2>&1); then
        skip "cannot create a network namespace: $err"
    fi
    ok=1
    if ! err=$(ip -n "$probe_ns" link add pa type veth peer name pb 2>&1); then
        ok=0
        reason="cannot create a veth pair: $err"
    elif ! err=$(ip -n "$probe_ns" link add br0 type bridge 2>&1); then
        ok=0
        reason="cannot create a bridge: $err"
    fi
    ip netns del "$probe_ns" 2>/dev/null
    [ $ok = 1 ] || skip "$reason"
}

# Kills everything still running in namespace $1, then deletes it.
delete_ns() {
    if ip netns list 2>/dev/null | grep -q "^$1\( \|$\)"; then
        pids=$(ip netns pids "$1" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        ip netns del "$1" 2>/dev/null
    fi
}

# Deletes set $1 (ptlK): hosts, switch (which takes ptlK-gw with it), state file.
# Claiming a set and deleting one (its owner's cleanup, or another run's garbage collection) hold
# $STATE/.lock: without it a collection could read a dead owner's file while a new run reuses
# that number, and delete the new run's namespaces under it (seen under a loaded parallel ctest).
delete_set() {
    mkdir -p "$STATE" && (flock 9 && delete_set_locked "$1") 9>"$STATE/.lock"
}

delete_set_locked() {
    set_name=$1
    k=${set_name#ptl}
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$set_name-[0-9sw]*\$"); do
        [ "$ns" = "$set_name-sw" ] || delete_ns "$ns"
    done
    delete_ns "$set_name-sw"
    ip link del "$set_name-gw" 2>/dev/null
    rm -f "$STATE/$k"
}

# Removes the sets whose owning `run` died without cleaning up.
collect_garbage() {
    [ -d "$STATE" ] || return 0
    for f in "$STATE"/*; do
        [ -f "$f" ] || continue
        owner=$(cat "$f" 2>/dev/null)
        case $owner in
            '' | *[!0-9]*) continue ;; # made by `up`: only `down` removes it
        esac
        kill -0 "$owner" 2>/dev/null || delete_set_locked "ptl${f##*/}"
    done
}

# Runs a setup step; on failure tears down set $K and skips (exit 77) with the reason.
step() {
    if ! err=$("$@" 2>&1); then
        delete_set "ptl$K"
        skip "cannot set up network namespaces: '$*' failed: $err"
    fi
}

# up N [OWNER_PID]: creates set K, sets HOSTS ADDRS GATEWAY IFACE.
setup() {
    n=$1
    owner=${2:-}
    case $n in
        '' | *[!0-9]*) die 2 "expected a number of hosts, got '$n'" ;;
    esac
    [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die 2 "number of hosts must be 1..250, got $n"
    probe
    mkdir -p "$STATE" || die 1 "cannot create $STATE"
    exec 9>"$STATE/.lock"
    flock 9
    collect_garbage
    # Claim a free K: `ip netns add` of the switch fails if another invocation holds it.
    start=$(( ($$ % 254) + 1 ))
    K=
    i=0
    while [ $i -lt 254 ]; do
        k=$(( ((start + i - 1) % 254) + 1 ))
        i=$((i + 1))
        [ -n "$(ip -4 route show "$NET.$k.0/24" 2>/dev/null)" ] && continue # in use here
        if ip netns add "ptl$k-sw" 2>/dev/null; then
            K=$k
            break
        fi
    done
    [ -n "$K" ] || die 1 "no free set number (ptl1..ptl254 all exist?)"
    echo "${owner:-up}" >"$STATE/$K"
    flock -u 9
    exec 9>&-
    sw=ptl$K-sw
    IFACE=ptl$K-gw
    GATEWAY=$NET.$K.254
    step ip -n "$sw" link set dev lo up
    step ip -n "$sw" link add br0 type bridge
    step ip -n "$sw" link set dev br0 up
    step ip link add "$IFACE" type veth peer name gw netns "$sw"
    step ip -n "$sw" link set dev gw master br0
    step ip -n "$sw" link set dev gw up
    step ip addr add "$GATEWAY/24" dev "$IFACE"
    step ip link set dev "$IFACE" up
    HOSTS=
    ADDRS=
    i=1
    while [ $i -le "$n" ]; do
        ns=ptl$K-$i
        addr=$NET.$K.$i
        step ip netns add "$ns"
        step ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns"
        step ip -n "$sw" link set dev "p$i" master br0
        step ip -n "$sw" link set dev "p$i" up
        step ip -n "$ns" link set dev lo up
        step ip -n "$ns" addr add "$addr/24" dev eth0
        step ip -n "$ns" link set dev eth0 up
        step ip -n "$ns" route add default via "$GATEWAY"
        HOSTS=${HOSTS:+$HOSTS,}$ns
        ADDRS=${ADDRS:+$ADDRS,}$addr
        i=$((i + 1))
    done
}

print_vars() {
    echo "PORTICO_NETNS_HOSTS=$HOSTS"
    echo "PORTICO_NETNS_ADDRS=$ADDRS"
    echo "PORTICO_NETNS_GATEWAY=$GATEWAY"
    echo "PORTICO_NETNS_IFACE=$IFACE"
    echo "PORTICO_NETNS_SET=ptl$K"
}

# The namespace of HOST (name or address), or exit 255.
namespace_of() {
    host=$1
    case $host in
        "$NET".*.*)
            rest=${host#"$NET".}
            k=${rest%%.*}
            i=${rest#*.}
            ns=ptl$k-$i
            ;;
        *) ns=$host ;;
    esac
    case $ns in
        ptl[0-9]*-[0-9]*) ;;
        *) die 255 "rsh: '$host' is not a host made by netns.sh (ptlK-i or $NET.K.i)" ;;
    esac
    [ -e "/run/netns/$ns" ] || die 255 "rsh: no namespace '$ns' for host '$host'"
    echo "$ns"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    check)
        probe
        echo "network namespaces work"
        ;;
    up)
        [ $# -eq 1 ] || die 2 "usage: netns.sh up N"
        setup "$1"
        print_vars
        ;;
    down)
        [ $# -ge 1 ] || die 2 "usage: netns.sh down NAME..."
        for name in "$@"; do
            case $name in
                ptl[0-9]*-*) delete_ns "$name" ;;
                ptl[0-9]*) delete_set "$name" ;;
                *) die 2 "down: '$name' is not a namespace or set made by netns.sh" ;;
            esac
        done
        ;;
    rsh)
        # ssh-style options before the host are ignored (hydra passes -x).
        while [ $# -gt 0 ]; do
            case $1 in
                -[bcDEeFIiJLlmOopQRSWw]) [ $# -ge 2 ] || die 255 "rsh: option $1 needs a value"; shift 2 ;;
                -*) shift ;;
                *) break ;;
            esac
        done
        [ $# -ge 2 ] || die 255 "usage: netns.sh rsh [OPTIONS] HOST COMMAND..."
        ns=$(namespace_of "$1") || exit 255
        shift
        command_string=$*
        exec ip netns exec "$ns" sh -c "$command_string"
        ;;
    run)
        [ $# -ge 3 ] && [ "$2" = "--" ] || die 2 "usage: netns.sh run N -- COMMAND [ARGS...]"
        n=$1
        shift 2
        K=
        child=
        trap '[ -n "$K" ] && delete_set "ptl$K"' EXIT
        # A signal ends COMMAND as well (it runs in the root namespace, teardown cannot reach it).
        for sig in INT:130 TERM:143 HUP:129; do
            # shellcheck disable=SC2064
            trap "[ -n \"\$child\" ] && kill -TERM \$child 2>/dev/null; exit ${sig#*:}" "${sig%:*}"
        done
        setup "$n" $$
        export PORTICO_NETNS_HOSTS="$HOSTS" PORTICO_NETNS_ADDRS="$ADDRS" \
            PORTICO_NETNS_GATEWAY="$GATEWAY" PORTICO_NETNS_IFACE="$IFACE" \
            PORTICO_NETNS_SET="ptl$K"
        # In the background (stdin kept), so that a signal to this script is handled at once.
        "$@" 0<&0 &
        child=$!
        status=0
        wait "$child" || status=$?
        exit "$status"
        ;;
    *)
        die 2 "usage: netns.sh up N | down NAME... | rsh [OPTS] HOST COMMAND... | run N -- COMMAND... | check"
        ;;
esac
