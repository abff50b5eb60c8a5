#!/bin/sh
# The jobs run on the private Slurm cluster of slurm.sh (launcher.slurm): Portals and GASNet jobs
# under srun --mpi=pmi2 and --mpi=pmix, 2 and 4 ranks, shared memory and TCP, plain srun without a
# PMI (a clear error, not N jobs of one) and an sbatch script with srun inside. Every job has a
# deadline; the first failure ends the script with its status.
#   slurm_jobs.sh CONFORMANCE_PUTGET GASNET_AM_TEST STARTUP_RANK
set -u
putget=$1 am=$2 startup=$3
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
trap 'rm -f "$out" "$out.batch"' EXIT
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

echo "=== srun without a PMI (--mpi=none): a clear error"
timeout -k 5 60 srun --mpi=none -n 2 "$startup" >"$out" 2>&1 && fail "srun --mpi=none: the ranks ran as jobs of one"
grep -q "srun --mpi=pmix or srun --mpi=pmi2" "$out" || { cat "$out"; fail "srun --mpi=none: no message naming the fix"; }
echo "all Slurm jobs passed"
