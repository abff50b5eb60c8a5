#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# late_rank_prober.sh PORTICO_RUN RSH HOSTS PROBER PROGRAM MODE [VIA...]
# A two-rank job (PROGRAM, a PMI program) over portico-run --hosts HOSTS (two of them: rank 1 runs
# on the second) whose second rank starts late (its remote shell waits until the prober is done),
# and an outsider on the PMI port meanwhile (pmi_prober.c: command lines as ps shows them, /proc,
# pmiids). RSH is the remote shell (fake_rsh.sh, "netns.sh rsh"); VIA, when given, is a command
# that runs a shell command string where the outsider is (such as "netns.sh rsh HOST": a host of
# the job), else it runs here. HOSTS "-": the namespaces of `netns.sh run` (PORTICO_NETNS_ADDRS).
# MODE:
#   other-user  the prober runs as another user (nobody, setpriv; needs root, else skipped) and
#               tries to take the waiting rank's place: every attempt must be refused, /proc must
#               show no token, the job must end with 0 and no rank find its place taken
#   guess       as another user, 16 random tokens: all refused, then the PMI port is closed; the
#               waiting rank cannot join, so the job must fail, saying that somebody is guessing
#   crowd       as another user, 200 silent connections held while the waiting rank starts: the
#               rank must still get in and the job end with 0
#   same-user   the prober runs as the job's user: it reads the waiting rank's token from the
#               remote shell's stdin and takes its place (the trust model's limit: the PMI port
#               keeps other users out, not the user's own processes); the job then fails
set -u
run=$1 rsh=$2 hosts=$3 prober=$4 prog=$5 mode=$6
shift 6
[ "$hosts" = - ] && hosts=${PORTICO_NETNS_ADDRS:?HOSTS - needs netns.sh run}
late_host=${hosts##*,}
if [ "$mode" != same-user ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIPPED: running the prober as another user (setpriv) needs root"; exit 77; }
    command -v setpriv > /dev/null || { echo "SKIPPED: setpriv (util-linux) is not installed"; exit 77; }
fi
command -v flock > /dev/null || { echo "SKIPPED: flock (util-linux) is not installed"; exit 77; }
tmp=$(mktemp -d)
job=""
crowd=""
cleanup() {
    [ -n "$job" ] && kill "$job" 2> /dev/null
    [ -n "$crowd" ] && kill "$crowd" 2> /dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
chmod 755 "$tmp"
cp "$prober" "$tmp/prober"
chmod 755 "$tmp/prober"
# The remote shell of the last host waits until we let go of a lock (fd 9, which nothing else
# inherits), then is RSH. (A lock, not a fifo: letting go never blocks, also when the job has
# ended before.)
exec 9> "$tmp/go"
flock 9
printf '#!/bin/sh\nif [ "$1" = "%s" ]; then flock "%s" true; fi\nexec %s "$@"\n' "$late_host" "$tmp/go" "$rsh" \
    > "$tmp/late_rsh.sh"
chmod 755 "$tmp/late_rsh.sh"
"$run" -n 2 --hosts "$hosts" --rsh "$tmp/late_rsh.sh" --timeout 60 "$prog" > "$tmp/job.out" 2>&1 9>&- &
job=$!
probe="'$tmp/prober' $mode"
[ "$mode" != same-user ] && probe="setpriv --reuid=65534 --regid=65534 --clear-groups $probe"
if [ "$mode" = crowd ]; then
    # The prober holds its connections until its stdin (a fifo we keep open) ends.
    mkfifo "$tmp/hold" "$tmp/said"
    sh -c "$probe" < "$tmp/hold" > "$tmp/said" 2>&1 9>&- &
    crowd=$!
    exec 7> "$tmp/hold"
    exec 8< "$tmp/said"
    said=""
    while IFS= read -r line <&8; do
        said="$said$line"$'\n'
        case $line in *holding*) break ;; esac
    done
    exec 9>&- # the last rank starts now, while the connections are held
    wait "$job"
    jrc=$?
    job=""
    exec 7>&- # the prober lets go and ends
    wait "$crowd"
    prc=$?
    crowd=""
    exec 8<&-
    printf '%s' "$said" > "$tmp/prober.out"
else
    if [ $# -gt 0 ]; then
        "$@" "$probe" > "$tmp/prober.out" 2>&1 9>&-
    else
        sh -c "$probe" > "$tmp/prober.out" 2>&1 9>&-
    fi
    prc=$?
    exec 9>&- # the last rank starts now
    wait "$job"
    jrc=$?
    job=""
fi
echo "--- prober $mode (exit $prc)${1:+ via $*}:"
cat "$tmp/prober.out"
echo "--- job (exit $jrc):"
cat "$tmp/job.out"
case $mode in
other-user | crowd)
    [ "$prc" = 0 ] || { echo "FAIL: the prober got in or saw a token (exit $prc)"; exit 1; }
    [ "$jrc" = 0 ] || { echo "FAIL: the job ended with $jrc"; exit 1; }
    if grep -q pmiid_in_use "$tmp/job.out"; then echo "FAIL: a rank found its place taken"; exit 1; fi
    ;;
guess)
    [ "$prc" = 0 ] || { echo "FAIL: a guess got in or the PMI port stayed open (exit $prc)"; exit 1; }
    [ "$jrc" != 0 ] || { echo "FAIL: the job ended with 0 although its last rank could not join"; exit 1; }
    grep -q 'somebody is guessing' "$tmp/job.out" || { echo "FAIL: portico-run did not say why"; exit 1; }
    ;;
same-user)
    [ "$prc" = 3 ] || { echo "FAIL: the same user's prober did not get in (exit $prc)"; exit 1; }
    [ "$jrc" != 0 ] || { echo "FAIL: the job ended with 0 although a rank's place was taken"; exit 1; }
    ;;
*)
    echo "late_rank_prober.sh: unknown mode $mode"
    exit 2
    ;;
esac
echo OK
