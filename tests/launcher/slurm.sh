#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A one-node Slurm cluster on this machine for the length of one command: munged, slurmctld and
# slurmd with their state, sockets, logs and configuration in a temporary directory (nothing of
# the machine's own Slurm or munge is touched), then
#   COMMAND ARGS...   run with SLURM_CONF pointing at that cluster,
# then the daemons it started are stopped by pid, whatever happened. Exit status: the command's;
# 77 (ctest's skip) when the cluster cannot be started here (not root, Slurm or munge missing,
# a daemon that does not come up), with the reason on stderr.
#   tests/launcher/slurm.sh srun --mpi=pmi2 -n 2 ./prog
set -u
skip() { echo "SKIPPED: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "a private Slurm cluster needs root (slurmd runs jobs as their user)"
for b in munged mungekey slurmctld slurmd srun scontrol; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || skip "$b is not installed (scripts/install-deps.sh)"
done
PATH=$PATH:/usr/sbin

dir=$(mktemp -d /tmp/portico-slurm.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# The node claims 64 CPUs (config_overrides: slurmd believes the file), so that jobs of more ranks
# than this machine has cores start, as portico-run's do. Ports from the pid, so that runs at the same time do not collide.
base=$((20000 + ($$ % 2000) * 4))
host=$(hostname -s)
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 700 "$dir/munge"
mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null 2>&1 ||
    skip "mungekey could not make a key"
munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" --pid-file="$dir/munge/pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --force >/dev/null 2>&1 ||
    skip "munged did not start: $(tail -2 "$dir/log/munged.log" 2>/dev/null)"
pids="$(cat "$dir/munge/pid")"

cat >"$dir/slurm.conf" <<EOF
ClusterName=portico
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SrunPortRange=$((base + 2))-$((base + 3 + 200))
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
SlurmdParameters=config_overrides
MaxTasksPerNode=4096
NodeName=$host NodeAddr=127.0.0.1 CPUs=64 Sockets=1 CoresPerSocket=64 ThreadsPerCore=1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64
EOF
export SLURM_CONF="$dir/slurm.conf"

slurmctld -i -f "$SLURM_CONF" >/dev/null 2>&1 || skip "slurmctld did not start: $(tail -3 "$dir/log/slurmctld.log")"
i=0
while [ ! -s "$dir/slurmctld.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$dir/slurmctld.pid" ] || skip "slurmctld wrote no pid file: $(tail -3 "$dir/log/slurmctld.log")"
pids="$pids $(cat "$dir/slurmctld.pid")"
slurmd -f "$SLURM_CONF" >/dev/null 2>&1 || skip "slurmd did not start: $(tail -3 "$dir/log/slurmd.log")"
i=0
while [ ! -s "$dir/slurmd.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$dir/slurmd.pid" ] || skip "slurmd wrote no pid file: $(tail -3 "$dir/log/slurmd.log")"
pids="$pids $(cat "$dir/slurmd.pid")"

# The node must be up before a job can run on it (bounded: a daemon that never registers skips).
i=0
until scontrol show node "$host" 2>/dev/null | grep -Eq 'State=(IDLE|MIXED|ALLOCATED)'; do
    i=$((i + 1))
    [ $i -lt 300 ] || skip "the node did not come up: $(scontrol show node "$host" 2>&1 | grep -o 'State=[^ ]*') $(tail -2 "$dir/log/slurmd.log")"
    sleep 0.1
done

# Bounded below ctest's deadline, so that the daemons are always stopped by the trap above.
timeout -k 10 480 "$@"
