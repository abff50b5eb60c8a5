#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gasnet_conduit.sh [BUILD_DIR] CONDUIT [NPROCS...]: GASNet 1.28's own network conduit built
# against the installed Portico, and GASNet's test programs run on it under portico-run.
#   CONDUIT  portals4: GASNet's Portals 4 client (PORTALS4HOME=<prefix>: portals4.h, -lportals);
#            psm: GASNet's PSM2 client (--with-psm-home: a folder with Portico's psm2.h and
#            libpsm2.so, from include/portico/psm2 and lib/portico).
#   NPROCS   default 2 4.
# Sources: GASNET128_SRC (see gasnet_common.sh); its git tree is bootstrapped with autotools,
# installed by gasnet_deps.sh. (GASNet-EX has neither conduit: its 2021.3 to 2025.8 releases ship
# ofi, ucx, ibv, udp, smp and mpi conduits, and reach Omni-Path through libfabric's psm2 provider.)
# Both conduits start through GASNet's pmi-spawner, which links the PMI-1 client library Portico
# installs (the PMI home lib/portico/pmi: include/pmi.h, lib/libpmi.so): portico-run is the PMI
# server. PSHM is off so that
# every message between processes goes through the conduit, and segments are not aligned (address
# space randomisation). The library and the tests are built once per source and Portico headers
# and kept in the cache; `PORTICO_CLIENTS_REBUILD=1` forces a rebuild. A run passes when it exits
# 0 and prints no "ERROR" line (GASNet's own rule). Results: docs/CLIENTS.md, ## GASNet.
source "$(dirname "$0")/gasnet_common.sh"
build=""
if [ -n "${1:-}" ] && [ -d "$1" ]; then
    build=$1
    shift
fi
conduit=${1:?usage: gasnet_conduit.sh [BUILD_DIR] portals4|psm [NPROCS...]}
shift
nprocs=("$@")
[ ${#nprocs[@]} -gt 0 ] || nprocs=(2 4)
case $conduit in
portals4 | psm) ;;
*) fail "unknown conduit $conduit (portals4, psm)" ;;
esac
release=gasnet1
fetch_source GASNET128_SRC gasnet-1.28 \
    "set it to a clone (or a tarball) of GASNet 1.28, e.g. git clone of the public repository evidence/axiom-evi-gasnet"
install_portico "$build"

# The PMI-1 client library the pmi-spawner links, laid out as GASNet's configure looks for it
# (--with-pmi=HOME: HOME/include/pmi.h, HOME/lib/libpmi.so).
pmi_home=$PREFIX/lib/portico/pmi
pmi_header=$pmi_home/include/pmi.h
[ -f "$pmi_header" ] && [ -e "$pmi_home/lib/libpmi.so" ] \
    || skip "$PREFIX has no PMI home lib/portico/pmi (include/pmi.h, lib/libpmi.so), which GASNet's pmi-spawner links"
# Portico's PSM2 likewise (--with-psm-home=HOME: HOME/include/psm2.h, HOME/lib/libpsm2.so).
homes=$CLIENTS_DIR/homes
rm -rf "$homes"
mkdir -p "$homes/psm2/include" "$homes/psm2/lib"
for h in "$PREFIX"/include/portico/psm2/*.h; do ln -s "$h" "$homes/psm2/include/"; done
for l in "$PREFIX"/lib/portico/libpsm2.so*; do ln -s "$l" "$homes/psm2/lib/"; done
[ -e "$homes/psm2/lib/libpsm2.so" ] || ln -s "$PREFIX/lib/portico/libpsm2.so.2" "$homes/psm2/lib/libpsm2.so"

tests=(testhello testsmall testlarge testval testmemset testam testcore1 testcore2 testcore3 testmisc testalign
    testrand testbarrierlate testnbr testqueue testhsl testthreads testlockcontend testenv testlogGP testexit)
# name arguments, as GASNet's harness.conf (-par entries); fewer iterations where a test spins for
# minutes with 4 processes on 2 cores (each process polls without yielding).
args_of() {
    local n=$1
    case $2 in
    testlarge | testmemset) echo "100 2097152" ;;
    testam) echo "-p 1" ;;
    testcore1) echo 1000 ;;
    testmisc) [ "$n" -gt 2 ] && echo 1000 || echo "" ;;
    testlogGP) echo "1000 8 65536" ;;
    testalign) [ "$n" -gt 2 ] && echo 20 || echo 100 ;;
    testrand) echo 1024 ;;
    testqueue) echo "1 256 262144" ;;
    testhsl) echo 0 ;;
    testthreads) echo 2 ;;
    testbarrierlate) [ "$n" -gt 2 ] && echo 100 || echo "" ;;
    testnbr) [ "$n" -gt 2 ] && echo 2 || echo "" ;;
    esac
}

# ---- build (cached) -------------------------------------------------------------------------------
key=$(cat "$SRC/.portico-source" "$PREFIX"/include/portals4.h "$PREFIX"/include/portico/psm2/*.h "$pmi_header" \
    | sha1sum | cut -c1-12)
work=$CLIENTS_DIR/build/$release-$conduit
stamp=$work/.portico-built
if [ "${PORTICO_CLIENTS_REBUILD:-0}" = 1 ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$key" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    start=$(date +%s)
    if [ ! -x "$SRC/configure" ]; then
        need_autotools
        note "bootstrapping GASNet 1.28 (autotools)"
        (cd "$SRC" && ./Bootstrap) > "$work/bootstrap.log" 2>&1 \
            || { tail -20 "$work/bootstrap.log"; fail "GASNet's ./Bootstrap"; }
    fi
    config=(--disable-auto-conduit-detect "--enable-$conduit" --disable-pshm --disable-aligned-segments
        --disable-mpi-compat --with-pmi="$pmi_home" --with-pmi-version=1 "--with-$conduit-spawner=pmi")
    if [ "$conduit" = psm ]; then
        config+=(--with-psm-home="$homes/psm2")
    else
        # The portals4-conduit's pmi-spawner takes PMI from the Portals runtime, where the Sandia
        # reference implementation put it and Portico installs it too (<portals4/pmi.h>,
        # -lportals_runtime); its configure finds them there, and --with-pmi is not used.
        export PORTALS4HOME=$PREFIX
    fi
    # The run path names Portico's libpsm2 where it is installed (not the home's links): its own
    # $ORIGIN-relative run path then finds libportals.
    note "configuring $release $conduit-conduit: ${config[*]}"
    (cd "$work" && "$SRC/configure" "${config[@]}" CFLAGS="-O2" \
        LDFLAGS="-Wl,-rpath,$PREFIX/lib -Wl,-rpath,$PREFIX/lib/portico -Wl,-rpath,$pmi_home/lib") \
        > "$work/configure.log" 2>&1 || { tail -30 "$work/configure.log"; fail "configure"; }
    note "building $conduit-conduit (PAR) and ${#tests[@]} tests"
    # GCC 10+ (-fno-common): test.h defines gasnett_backtrace_user, which the library also has
    # as a tentative definition; GASNet's own later releases fixed this in test.h.
    # The library first: each test's rule builds it too, and two of those at once collide.
    make -C "$work/$conduit-conduit" -j2 THREAD_MODEL=PAR "libgasnet-$conduit-par.a" "$conduit-par.mak" \
        > "$work/make.log" 2>&1 || { grep -m10 -B2 "error" "$work/make.log"; fail "make (library)"; }
    make -C "$work/$conduit-conduit" -j2 THREAD_MODEL=PAR MANUAL_LDFLAGS="-Wl,--allow-multiple-definition" \
        "${tests[@]}" >> "$work/make.log" 2>&1 || { grep -m10 -B2 "error" "$work/make.log"; fail "make (tests)"; }
    echo "$key" > "$stamp"
    echo "built in $(($(date +%s) - start)) s (configure and make, -j2)"
else
    note "using the cached build in $work"
fi

# ---- run ------------------------------------------------------------------------------------------
cd "$work/$conduit-conduit" || exit 1
export GASNET_BACKTRACE=1
[ "$conduit" = psm ] && export GASNET_PSM_ENABLE_SHM=1 # GASNet's guard against an old Intel shm bug
pass=0 total=0 failed=()
for n in "${nprocs[@]}"; do
    for t in "${tests[@]}"; do
        [ -x "./$t" ] || { failed+=("$t(not built)"); continue; }
        if [ "$t" = testexit ]; then
            for k in 1 2 3 5 6 7 8 9 10 11 12 13 14 15 16 17 18; do
                total=$((total + 1))
                if run_case "$work/testexit-$k.n$n.log" 120 "$k" "$RUN" -n "$n" ./testexit "$k"; then
                    pass=$((pass + 1))
                else
                    failed+=("testexit-$k.n$n")
                fi
            done
            continue
        fi
        total=$((total + 1))
        read -r -a argv <<< "$(args_of "$n" "$t")"
        envs=()
        if [ "$t" = testenv ]; then
            argv=("GASNet" "is" "Global Address Space Networking")
            envs=("GASNET_DUMMY=GASNet dummy value")
        fi
        if run_case "$work/$t.n$n.log" 300 0 env "${envs[@]}" "$RUN" -n "$n" "./$t" "${argv[@]}"; then
            pass=$((pass + 1))
        else
            failed+=("$t.n$n")
        fi
    done
done
echo "$release $conduit-conduit on Portico: $pass of $total runs passed (processes: ${nprocs[*]})"
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "logs: $work"
echo "$pass passed, $((total - pass)) failed"
[ ${#failed[@]} -eq 0 ]
