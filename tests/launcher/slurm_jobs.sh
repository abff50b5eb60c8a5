#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The jobs run on the private Slurm cluster of slurm.sh (launcher.slurm): Portals and GASNet jobs
# under srun --mpi=pmi2 and --mpi=pmix, 2 and 4 ranks, shared memory and TCP, plain srun without a
# PMI (a clear error, not N jobs of one), an sbatch script with srun inside, and jobs in which a
# rank dies (exits with 3, is killed) while the others wait: under --mpi=pmi2 (which lets such a
# job live on) the ranks' peer watch ends it, under --mpi=pmix Slurm does. Every job has a
# deadline; the first failure ends the script with its status.
#   slurm_jobs.sh CONFORMANCE_PUTGET GASNET_AM_TEST STARTUP_RANK PORTALS_RANK GASNET_EXIT_TEST
set -u
putget=$1 am=$2 startup=$3 portals_rank=$4 gasnet_exit=$5
fail() { echo "FAILED: $*" >&2; exit 1; }
job() { # description, then the command
    d=$1
    shift
    echo "=== $d"
    timeout -k 5 120 "$@" >"$out" 2>&1
    rc=$?
    [ $rc -eq 0 ] || { tail -20 "$out"; fail "$d (exit $rc)"; }
}
out=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$out" "$out.batch" "$tmp"' EXIT
for mpi in pmi2 pmix; do
    for n in 2 4; do
        job "Portals start-up, srun --mpi=$mpi -n $n" srun --mpi=$mpi -n $n "$startup"
        job "GASNet AM, srun --mpi=$mpi -n $n" srun --mpi=$mpi -n $n "$am"
        job "GASNet AM over TCP, srun --mpi=$mpi -n $n" env PORTICO_TRANSPORT=tcp srun --mpi=$mpi -n $n "$am"
    done
    job "Portals conformance (put/get), srun --mpi=$mpi -n 2" srun --mpi=$mpi -n 2 "$putget"
    job "Portals conformance (put/get) over TCP, srun --mpi=$mpi -n 2" \
        env PORTICO_TRANSPORT=tcp srun --mpi=$mpi -n 2 "$putget"
done
job "sbatch with srun --mpi=pmi2 inside" \
    sbatch --wait -n 4 -o "$out.batch" --wrap "srun --mpi=pmi2 $startup && srun --mpi=pmix $am >/dev/null"

# A job in which a rank dies must end by itself (the deadline is a hang, not a time limit), fail,
# and under pmi2 name the dead rank.
death() { # mpi, transport, expected message (pmi2), description, then the command
    mpi=$1 transport=$2 said=$3 d=$4
    shift 4
    echo "=== $d, srun --mpi=$mpi -n 4, $transport"
    start=$(date +%s)
    EXIT_TEST_DIR=$tmp PORTICO_TRANSPORT=$transport timeout -k 5 100 srun --mpi=$mpi -n 4 "$@" >"$out" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    echo "    ended with $rc after $took s"
    [ $rc -ne 124 ] && [ $took -lt 100 ] || { tail -20 "$out"; fail "$d: the job did not end"; }
    [ $rc -ne 0 ] || { tail -20 "$out"; fail "$d: the job exited with 0"; }
    if [ "$mpi" = pmi2 ]; then
        grep -q "$said" "$out" || { tail -20 "$out"; fail "$d: no message \"$said\""; }
    fi
}
killed="ended without leaving the job and without exit() (killed by a signal, crashed, or _exit); ending the job"
for mpi in pmi2 pmix; do
    for transport in shm tcp; do
        death $mpi $transport "rank 1 (pid [0-9]* on this machine) exited with code 3; ending the job" \
            "Portals: rank 1 exits with 3 after PtlNIInit, the others wait in PtlEQWait" "$portals_rank" 1 3
        death $mpi $transport "rank 1 (pid [0-9]* on this machine) $killed" \
            "Portals: rank 1 is killed after PtlNIInit" "$portals_rank" 1 kill
        death $mpi $transport "rank 3 (pid [0-9]* on this machine) $killed" \
            "GASNet: node 3 calls _exit(3), the others wait in a barrier" "$gasnet_exit" crash3
        death $mpi $transport "rank 3 (pid [0-9]* on this machine) $killed" \
            "GASNet: node 3 is killed, the others wait in a barrier" "$gasnet_exit" killed
    done
done

# Each rank alone on its "machine" (its own nid, 127.0.0.10+rank, all TCP): no rank shares a
# machine to watch; the ranks that talked with the dead one see its connections close without a
# goodbye. After the GASNet barriers every node has talked with node 3.
lost="rank 3 (on another machine) closed its connections without leaving the job; ending the job"
alone='PORTICO_NID=$((2130706442 + SLURM_PROCID)) exec "$0" "$@"'
death pmi2 tcp "$lost" "GASNet, each rank on its own nid: node 3 is killed" sh -c "$alone" "$gasnet_exit" killed
death pmi2 tcp "$lost" "GASNet, each rank on its own nid: node 3 calls _exit(3)" sh -c "$alone" "$gasnet_exit" crash3
echo "=== GASNet, each rank on its own nid, srun --mpi=pmi2 -n 4: a normal job ends with 0"
EXIT_TEST_DIR=$tmp PORTICO_TRANSPORT=tcp timeout -k 5 100 srun --mpi=pmi2 -n 4 sh -c "$alone" "$am" >"$out" 2>&1 ||
    { tail -20 "$out"; fail "GASNet AM with a nid per rank"; }

echo "=== srun without a PMI (--mpi=none): a clear error"
timeout -k 5 60 srun --mpi=none -n 2 "$startup" >"$out" 2>&1 && fail "srun --mpi=none: the ranks ran as jobs of one"
grep -q "srun --mpi=pmix or srun --mpi=pmi2" "$out" || { cat "$out"; fail "srun --mpi=none: no message naming the fix"; }
echo "all Slurm jobs passed"
