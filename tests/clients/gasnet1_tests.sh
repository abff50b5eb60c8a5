#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gasnet1_tests.sh [BUILD_DIR] [NPROCS...]: GASNet 1.28's own test programs (tests/*.c with their
# test.h) built against Portico's installed GASNet exactly as GASNet builds a client: its tests'
# sources, `pkg-config --cflags --libs gasnet-par` of the install, and nothing else (no shim
# header); then run under portico-run on 2 and 4 processes (or NPROCS) with the arguments GASNet's
# own harness gives them (tests/upcr-harness/gasnet-tests/harness.conf). A run passes when it
# exits 0 (testexit N: with N) and prints no "ERROR" line, GASNet's own rule.
# docs/GASNET.md lists the results.
#
# Left out, as they need APIs beyond GASNet-1's core, extended and tools interfaces: testcoll*,
# testbcastperf, testexchangeperf, testgallperf, testreduceperf, testslice (collectives),
# testbarrier and testbarrierconf (gasnet_coll_init), testcore4 and testcore5 (a collective
# broadcast), testteam* (teams), testvis* and testcxx (VIS), testinternal (GASNet's internal
# diagnostics), testmpi (MPI interoperation).
#
# Sources: GASNET128_SRC (see gasnet_common.sh); skipped (77) without it.
source "$(dirname "$0")/gasnet_common.sh"
build=${1:-}
shift || true
nprocs=("$@")
[ ${#nprocs[@]} -gt 0 ] || nprocs=(2 4)
fetch_source GASNET128_SRC gasnet-1.28 \
    "set it to a clone (or a tarball) of GASNet 1.28, e.g. git clone of the public repository evidence/axiom-evi-gasnet"
[ -f "$SRC/tests/test.h" ] || fail "$SRC has no tests/test.h: not a GASNet 1.28 tree"
install_portico "$build"
pkg-config --exists gasnet-par || fail "no gasnet-par.pc in $PREFIX"

work=$CLIENTS_DIR/gasnet1-tests
rm -rf "$work"
mkdir -p "$work/inc"
# testgasnet includes <other/amxtests/testam.h> from GASNet's tree, as GASNet's build finds it
# with -I<gasnet top>; only that folder is made visible (GASNet's own gasnet.h must not be).
ln -s "$SRC/other" "$work/inc/other"

# name|arguments|environment (GASNet's harness.conf, its -par entries)
programs=(
    "testhello||"
    "testgasnet||"
    "testenv||"  # its arguments and GASNET_DUMMY are set below: they hold spaces
    "testsmall||"
    "testlarge|100 2097152|"
    "testval||"
    "testmemset|100 2097152|"
    "testam|-p 1|"
    "testcore1|1000|"
    "testcore2||"
    "testcore3||"
    "testlogGP|1000 8 65536|"
    "testmisc||"
    "testalign|100|"
    "testrand|1024|"
    "testbarrierlate||"
    "testnbr||"
    "testqueue|1 256 262144|"
    "testhsl|0|"
    "testthreads|2|"
    "testlockcontend||"
    "testcontend||GASNET_TEST_POLITE_SYNC=0"
)

cflags=(-std=gnu99 -O2 -DHAVE_PTHREAD_H -I"$SRC/tests" -I"$work/inc")
read -r -a gasnet_flags <<< "$(pkg-config --cflags --libs gasnet-par)"
built=() build_failed=()
compile() { # compile NAME SOURCE...
    local name=$1
    shift
    if cc "${cflags[@]}" "$@" "${gasnet_flags[@]}" -lm -o "$work/$name" > "$work/$name.build.log" 2>&1; then
        built+=("$name")
    else
        build_failed+=("$name")
        echo "FAIL   build $name:"
        grep -m5 "error" "$work/$name.build.log" || tail -5 "$work/$name.build.log"
    fi
}
note "building GASNet 1.28's tests against $PREFIX (gasnet-par.pc)"
for entry in "${programs[@]}" "testexit||" "testtools||"; do
    name=${entry%%|*}
    extra=()
    case $name in testlogGP | testbarrierlate) extra=("$SRC/tests/delay.c") ;; esac
    compile "$name" "$SRC/tests/$name.c" "${extra[@]}"
done
if c++ -O2 -DHAVE_PTHREAD_H -I"$SRC/tests" "$SRC/tests/testtoolscxx.cc" "${gasnet_flags[@]}" \
    -o "$work/testtoolscxx" > "$work/testtoolscxx.build.log" 2>&1; then
    built+=(testtoolscxx)
else
    build_failed+=(testtoolscxx)
fi
echo "built ${#built[@]} programs; failed: ${build_failed[*]:-none}"

pass=0 failed=() total=0
has() { [[ " ${built[*]} " == *" $1 "* ]]; }
cd "$work" || exit 1
# The tools-only programs are single processes (no gasnet_init).
for name in testtools testtoolscxx; do
    has "$name" || continue
    total=$((total + 1))
    if run_case "$work/$name.log" 300 0 "./$name"; then pass=$((pass + 1)); else failed+=("$name"); fi
done
for n in "${nprocs[@]}"; do
    for entry in "${programs[@]}"; do
        IFS='|' read -r name args env <<< "$entry"
        has "$name" || continue
        total=$((total + 1))
        argv=()
        # shellcheck disable=SC2206 # the harness's arguments are plain words
        argv=($args)
        envs=()
        [ -n "$env" ] && envs=("$env")
        if [ "$name" = testenv ]; then
            argv=("GASNet" "is" "Global Address Space Networking")
            envs=("GASNET_DUMMY=GASNet dummy value")
        fi
        if run_case "$work/$name.n$n.log" 300 0 env "${envs[@]}" "$RUN" -n "$n" "./$name" "${argv[@]}"; then
            pass=$((pass + 1))
        else
            failed+=("$name.n$n")
        fi
    done
    # testexit N ends the job with exit code N in every way GASNet-1 allows (N = 1..18 in PAR
    # mode); 4 is SIGINT turned into gasnet_exit(4), which Portico does not do (docs/GASNET.md,
    # Missing): the launcher forwards SIGINT and the ranks end with it.
    if has testexit; then
        for t in 1 2 3 5 6 7 8 9 10 11 12 13 14 15 16 17 18; do
            total=$((total + 1))
            if run_case "$work/testexit-$t.n$n.log" 120 "$t" "$RUN" -n "$n" ./testexit "$t"; then
                pass=$((pass + 1))
            else
                failed+=("testexit-$t.n$n")
            fi
        done
    fi
done
echo "GASNet 1.28 tests on Portico's GASNet: $pass of $total runs passed; built ${#built[@]}, build failures: ${#build_failed[@]}"
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "logs: $work"
echo "$pass passed, $((total - pass + ${#build_failed[@]})) failed"
[ ${#failed[@]} -eq 0 ] && [ ${#build_failed[@]} -eq 0 ]
