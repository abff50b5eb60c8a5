#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpich_run.sh GROUP [TRANSPORT] [TEST...]: MPICH 4.0.2's MPI tests (built by mpich_build.sh)
# under the Open MPI of ompi_build.sh, over its Portals 4 components, on this machine:
#   pt2pt-mtl  pt2pt/ over pml cm + mtl portals4
#   pt2pt-btl  pt2pt/ over pml ob1 + btl portals4,self
#   coll       coll/  over coll portals4 (pml cm + mtl portals4)
#   rma        rma/   over osc portals4 (pml cm + mtl portals4)
#   comm       comm/  over coll portals4 (pml cm + mtl portals4)
# The tests are the entries of the directory's testlist.in (name, ranks, arguments), less those
# that need MPICH itself (MPIR_CVAR settings), more than 8 ranks or gigabytes of memory, MPICH's
# own expected failures (xfail=), MPI-4 features Open MPI 4.1 lacks (not built), and those
# mpich_exclude.txt lists with the reason (Open MPI limitations, each in docs/CLIENTS.md). TEST
# names, when given, run only those (e.g. `mpich_run.sh comm shm comm_idup_isend:6 ctxsplit`;
# NAME:NP picks one entry). TRANSPORT: shm (default) or tcp (PORTICO_TRANSPORT=tcp). A test passes
# when it exits 0 and prints "No Errors"; the selection of the group's component is checked on
# every run. Prints one line per test and a summary; exit 1 if any failed.
set -euo pipefail
. "$(dirname "$0")/clients_lib.sh"
group=${1:?usage: $0 pt2pt-mtl|pt2pt-btl|coll|rma|comm [shm|tcp] [TEST...]}
transport=${2:-shm}
shift $(($# >= 2 ? 2 : 1))
require_ompi
suite=$ompi_root/mpich-4.0.2-test
[ -f "$suite/.built" ] || skip "MPICH's test suite is not built: run tests/clients/mpich_build.sh (ctest -R clients.mpich.build)"
bin=$ompi_prefix/bin

cm=(--mca pml cm --mca mtl portals4 --mca mtl_base_verbose 10)
cm_selected="select: component portals4 selected"
case $group in
  pt2pt-mtl) dir=pt2pt mca=("${cm[@]}") selected=$cm_selected ;;
  pt2pt-btl)
    dir=pt2pt
    # shellcheck disable=SC2054 # btl takes a list of components
    mca=(--mca pml ob1 --mca btl portals4,self --mca btl_base_verbose 10)
    selected="select: init of component portals4 returned success"
    ;;
  coll | comm)
    dir=$group
    mca=("${cm[@]}" --mca coll_base_verbose 10)
    selected="comm_select: selecting +portals4, priority +[0-9]+, Enabled"
    ;;
  rma)
    dir=rma
    mca=("${cm[@]}" --mca osc portals4)
    selected=$cm_selected
    ;;
  *) fail "group $group: pt2pt-mtl, pt2pt-btl, coll, rma or comm" ;;
esac
case $transport in
  shm) env_args=() ;;
  tcp) env_args=(-x PORTICO_TRANSPORT=tcp) ;;
  *) fail "transport $transport: shm or tcp" ;;
esac

# Entries of mpich_exclude.txt: "GROUP DIR/NAME NP reason..." (NP * for every entry of NAME).
excluded() { # NAME NP: prints the reason if excluded
  awk -v g="$group" -v t="$dir/$1" -v n="$2" \
    '$1 !~ /^#/ && ($1 == g || $1 == "*") && $2 == t && ($3 == n || $3 == "*") { $1 = $2 = $3 = ""; sub(/^ +/, ""); print; exit }' \
    "$clients_src_dir/mpich_exclude.txt"
}

selection=("$@")
wanted() { # NAME NP: true if the command line selected this entry
  local name=$1 np=$2 w
  for w in "${selection[@]}"; do
    [ "$w" = "$name" ] || [ "$w" = "$name:$np" ] && return 0
  done
  return 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/portico-mpich.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 failed=() skipped=0
export MPITEST_RETURN_WITH_CODE=yes
while read -r name np rest; do
  case $name in '' | '#'* | @*) continue ;; esac
  if [ ${#selection[@]} -gt 0 ] && ! wanted "$name" "$np"; then continue; fi
  args=() limit=180 reason=""
  for field in $rest; do
    case $field in
      arg=*) args+=("${field#arg=}") ;;
      timeLimit=*) limit=${field#timeLimit=} ;;
      env=*) reason="needs MPICH's ${field#env=}" ;;
      xfail=*) reason="an expected failure of MPICH's own ($field)" ;;
      mem=*) reason="needs ${field#mem=} GB of memory" ;;
      strict=false) reason="not standard MPI (strict=false)" ;;
      *) ;;
    esac
  done
  [ -z "$reason" ] && [ "$np" -gt 8 ] && reason="needs $np ranks (more than 8)"
  [ -z "$reason" ] && [ ! -x "$suite/$dir/$name" ] && reason="not built (MPI-4 or a feature Open MPI 4.1 lacks)"
  [ -z "$reason" ] && reason=$(excluded "$name" "$np")
  label="$dir/$name $np${args[*]:+ ${args[*]}}"
  if [ -n "$reason" ]; then
    [ ${#selection[@]} -gt 0 ] && echo "skipped: $label: $reason"
    skipped=$((skipped + 1))
    continue
  fi
  log=$work/$name.$np.log
  rc=0
  (cd "$suite/$dir" && "$bin/mpirun" "${ompi_mpirun_args[@]}" -np "$np" --timeout "$limit" --report-state-on-timeout \
    --get-stack-traces "${env_args[@]}" "${mca[@]}" "./$name" "${args[@]}") >"$log" 2>&1 </dev/null || rc=$?
  problem=""
  if [ $rc -ne 0 ]; then
    problem="exit status $rc"
  elif ! grep -q "No Errors" "$log"; then
    problem="no 'No Errors'"
  elif ! grep -qE "$selected" "$log"; then
    problem="the group's component was not selected ('$selected' not in the output)"
  fi
  if [ -n "$problem" ]; then
    echo "FAIL: $label ($group, $transport): $problem"
    grep -v -E "mca: base:|select:|coll:base:comm_select|components_(register|open)" "$log" | tail -40 | sed 's/^/    /'
    failed+=("$label")
  else
    echo "ok: $label"
    pass=$((pass + 1))
  fi
done <"$suite/$dir/testlist"
echo "mpich $group ($transport): ${pass} passed, ${#failed[@]} failed, $skipped skipped"
for f in "${failed[@]}"; do echo "  failed: $f"; done
[ ${#failed[@]} -eq 0 ] && [ $pass -gt 0 ]
