#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# psm2_mpi_pingpong.sh BUILD_DIR [ROUNDS]: Open MPI's ping-pong latency over Portico's libpsm2 next
# to Open MPI's own shared-memory BTL and Debian's libpsm2, in one run (docs/PERFORMANCE.md,
# *PSM2*).
#
# Builds bench/mpi_pingpong.c with mpicc.openmpi into a temporary directory and runs it on 2 ranks
# inside tests/psm2/clients/fake_hfi.sh (Open MPI's mtl psm2 wants /dev/hfi1_0 and an ACTIVE port
# in sysfs before it loads libpsm2; the script fakes both in private namespaces, so it needs root),
# in ROUNDS rounds (default 3), each running the three variants one after the other:
#   portico_psm2  --mca pml cm --mca mtl psm2, LD_LIBRARY_PATH=BUILD_DIR/lib/portico (Portico's
#                 libpsm2, on the Portico engine's shared memory)
#   vader         --mca pml ob1 --mca btl self,vader (Open MPI's shared-memory BTL, no PSM2)
#   debian_psm2   --mca pml cm --mca mtl psm2 with Debian's libpsm2-2 (no LD_LIBRARY_PATH) and
#                 PSM2_DEVICES=self,shm, so that it never opens the (fake) adapter
# Sizes 8 B, 1 KiB, 64 KiB, 1 MiB (MPI_PINGPONG_SIZES overrides, comma-separated bytes);
# MPI_PINGPONG_ARGS adds options of mpi_pingpong (--iters N, --reps R; default 20000 and 7);
# MPIRUN_ARGS adds options of mpirun to every variant (e.g. "--bind-to none"; Open MPI binds each
# of the 2 ranks to a core by default).
#
# Output on stdout: one JSON line per measurement,
#   {"bench":"mpi_pingpong","variant":"portico_psm2","size":8,"us":1.23,"min":..,"max":..,"round":1}
# (us: median one-way latency over the repetitions; min, max over them), a line
#   {"bench":"mpi_pingpong","variant":"debian_psm2","round":1,"error":"..."}
# for a variant that failed (its output goes to stderr; the other variants go on), and at the end
# a summary ("# "-prefixed): each variant's median over the rounds per size and the ratios
# portico_psm2 / vader and portico_psm2 / debian_psm2 (the issue's goal at 8 B: <= 1.5 x vader).
# Exit status 0 if Portico's variant ran in every round, 1 otherwise; 77 (skip) without Open MPI,
# mpicc.openmpi or the right to make namespaces.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fake=$here/../tests/psm2/clients/fake_hfi.sh

if [ "${PORTICO_FAKE_HFI_INSIDE:-}" != 1 ]; then
  [ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [ROUNDS]" >&2; exit 2; }
  build=$(cd "$1" && pwd)
  [ -f "$build/lib/portico/libpsm2.so.2" ] || { echo "$0: $build/lib/portico/libpsm2.so.2 is missing (build the psm2 target)" >&2; exit 2; }
  command -v mpirun.openmpi >/dev/null || { echo "SKIP: Open MPI (openmpi-bin) is not installed" >&2; exit 77; }
  command -v mpicc.openmpi >/dev/null || { echo "SKIP: mpicc.openmpi (libopenmpi-dev) is not installed" >&2; exit 77; }
  command -v python3 >/dev/null || { echo "$0: python3 is needed for the summary" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mpicc.openmpi -O2 -Wall -Wextra -Werror "$here/mpi_pingpong.c" -o "$tmp/mpi_pingpong"
  rc=0
  PSM2_PINGPONG_PROG=$tmp/mpi_pingpong "$fake" "$0" "$build" "${2:-3}" || rc=$?
  exit $rc
fi

# ---- inside fake_hfi.sh's namespaces ---------------------------------------------------------------
build=$1 rounds=${2:-3}
prog=$PSM2_PINGPONG_PROG
sizes=${MPI_PINGPONG_SIZES:-8,1024,65536,1048576}
read -r -a prog_args <<<"${MPI_PINGPONG_ARGS:-}"
read -r -a run_args <<<"${MPIRUN_ARGS:-}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
unset LD_LIBRARY_PATH PSM2_DEVICES

# rtc_hwloc_vmhole none: see tests/psm2/clients/ompi_multihost.sh (an Open MPI 4.1.4 start-up crash).
mpirun=(mpirun.openmpi --allow-run-as-root -np 2 --mca rtc_hwloc_vmhole none "${run_args[@]}")
variant_args() {
  case $1 in
  portico_psm2) echo "-x LD_LIBRARY_PATH=$build/lib/portico --mca pml cm --mca mtl psm2 --mca btl self" ;;
  vader) echo "--mca pml ob1 --mca btl self,vader" ;;
  debian_psm2) echo "-x PSM2_DEVICES=self,shm --mca pml cm --mca mtl psm2 --mca btl self" ;;
  esac
}

portico_failed=0
for round in $(seq 1 "$rounds"); do
  for v in portico_psm2 vader debian_psm2; do
    read -r -a va <<<"$(variant_args "$v")"
    log=$out/$v.$round
    if "${mpirun[@]}" "${va[@]}" "$prog" --sizes "$sizes" "${prog_args[@]}" >"$log.out" 2>"$log.err" &&
      grep -q '^size ' "$log.out"; then
      awk -v v="$v" -v r="$round" '$1 == "size" {
        printf "{\"bench\":\"mpi_pingpong\",\"variant\":\"%s\",\"size\":%s,\"us\":%s,\"min\":%s,\"max\":%s,\"iters\":%s,\"reps\":%s,\"round\":%s}\n",
               v, $2, $4, $6, $8, $10, $12, r }' "$log.out" | tee -a "$out/all.json"
    else
      reason=$(grep -v '^\s*$' "$log.err" | head -3 | tr '\n\t' '  ' | sed 's/["\]/ /g' | cut -c1-300)
      printf '{"bench":"mpi_pingpong","variant":"%s","round":%s,"error":"%s"}\n' "$v" "$round" "${reason:-no result}" |
        tee -a "$out/all.json"
      { echo "--- $v, round $round failed; its output:"; cat "$log.out" "$log.err"; } >&2
      [ "$v" = portico_psm2 ] && portico_failed=1
    fi
  done
done

python3 - "$out/all.json" <<'EOF'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [l for l in lines if "us" in l]
errors = [l for l in lines if "error" in l]
variants = ["portico_psm2", "vader", "debian_psm2"]
sizes = sorted({l["size"] for l in ok})
def med(v, s):
    xs = [l["us"] for l in ok if l["variant"] == v and l["size"] == s]
    return (statistics.median(xs), min(xs), max(xs), len(xs)) if xs else None
def cell(m):
    return "%.3f [%.3f .. %.3f] (%d)" % m if m else "failed"
print("# summary: one-way latency in us, median over the rounds [min .. max of the rounds' medians] (rounds)")
print("# %-8s %-34s %-34s %-34s %-15s %s" % ("size", *variants, "portico/vader", "portico/debian"))
for s in sizes:
    m = {v: med(v, s) for v in variants}
    r1 = "%.2f" % (m["portico_psm2"][0] / m["vader"][0]) if m["portico_psm2"] and m["vader"] else "-"
    r2 = "%.2f" % (m["portico_psm2"][0] / m["debian_psm2"][0]) if m["portico_psm2"] and m["debian_psm2"] else "-"
    print("# %-8d %-34s %-34s %-34s %-15s %s" % (s, cell(m["portico_psm2"]), cell(m["vader"]), cell(m["debian_psm2"]), r1, r2))
if 8 in sizes:
    by_round = {}
    for l in ok:
        if l["size"] == 8:
            by_round.setdefault(l["round"], {})[l["variant"]] = l["us"]
    for key, other in (("vader", "vader"), ("debian", "debian_psm2")):
        rs = [d["portico_psm2"] / d[other] for d in by_round.values() if "portico_psm2" in d and other in d]
        if rs:
            print("# 8 B: portico_psm2 / %s = %.2f (median of the rounds' ratios; %.2f .. %.2f over %d rounds)%s" %
                  (key, statistics.median(rs), min(rs), max(rs), len(rs),
                   "; goal <= 1.5: %s" % ("met" if statistics.median(rs) <= 1.5 else "missed") if key == "vader" else ""))
        else:
            print("# 8 B: portico_psm2 / %s: no round with both" % key)
for v in variants:
    n = sum(1 for l in errors if l["variant"] == v)
    if n:
        print("# %s failed in %d of the rounds (see stderr)" % (v, n))
EOF
exit $portico_failed
