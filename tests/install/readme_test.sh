#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# readme_test.sh BUILD_DIR SOURCE_DIR
# The README's install instructions, run as written (test install.readme): `cmake --install` of
# the finished build into a temporary prefix, then the commands of README's "Using it", "GASNet", "UPC", "PSM2" and "PMI"
# sections, taken from README.md itself (only the placeholders /opt/portico, P and the build
# directory are replaced, so the README cannot drift from what works), with LD_LIBRARY_PATH unset;
# the GASNet and PSM2 commands build and run the demo's examples (examples/*/hello.c) too; then
# every installed program from the prefix, and the same after moving the prefix.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
readme=$src/README.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH # the point: nothing but the install's own paths finds the libraries
prefix=$tmp/portico
fail() { echo "FAIL: $*"; exit 1; }
# A bounded command: a hung rank must fail the test, not stall ctest until its timeout.
t() { timeout -k 5 30 "$@"; }

# The first indented block after the heading "## $1", the four leading spaces removed.
block() {
    awk -v h="## $1" '
        $0 == h { on = 1; next }
        on && /^## / { exit }
        on && /^    / { sub(/^    /, ""); print; got = 1; next }
        on && got && !/^$/ { exit }
        on && got && /^$/ { exit }
    ' "$readme"
}
# Runs one README line in DIR after replacing FROM by TO (which must occur: a README that changed
# its placeholders needs this test changed too).
run_line() {
    local dir=$1 line=$2 from=$3 to=$4
    [[ $line == *"$from"* ]] || fail "README line '$line' no longer contains '$from'"
    line=${line//"$from"/"$to"}
    echo "+ $line"
    (cd "$dir" && eval "timeout -k 5 60 bash -c $(printf '%q' "$line")")
}

# --- "Using it" ---------------------------------------------------------------------------------
mapfile -t using < <(block "Using it")
[ ${#using[@]} -eq 4 ] || fail "README 'Using it' should have 4 commands, found ${#using[@]}: ${using[*]}"
[[ ${using[0]} == "cmake -S . -B build "* ]] || fail "unexpected first command '${using[0]}'"
# using[0] configures and builds: that is the build under test.
run_line "$src" "${using[1]}" "cmake --install build --prefix /opt/portico" \
         "cmake --install $(printf '%q' "$build") --prefix $(printf '%q' "$prefix")" > "$tmp/install.log"
mkdir "$tmp/portals"
cp "$src/examples/portals_demo.c" "$tmp/portals/prog.c"
run_line "$tmp/portals" "${using[2]}" /opt/portico "$prefix"
run_line "$tmp/portals" "${using[3]}" /opt/portico "$prefix" > "$tmp/portals.out"
np=$(sed -n 's/.*portico-run -n \([0-9]*\).*/\1/p' <<< "${using[3]}")
ok=$(grep -c "done; 0 messages dropped" "$tmp/portals.out" || true)
[ "$ok" = "$np" ] || { cat "$tmp/portals.out"; fail "the Portals program: $ok of $np ranks finished"; }
echo "Portals program: $np ranks ok"

# A section whose commands use the prefix placeholder P: an export of PKG_CONFIG_PATH first (its
# effect must reach the next lines, so they run in one shell), portico-run last. run_section NAME
# COUNT DIR checks that shape, runs the commands in DIR with P replaced (output: DIR/out) and sets
# np to the process count of the last line.
run_section() {
    local name=$1 count=$2 dir=$3 cmds script="" l
    mapfile -t cmds < <(block "$name")
    [ ${#cmds[@]} -eq "$count" ] || fail "README '$name' should have $count commands, found ${#cmds[@]}: ${cmds[*]}"
    [[ ${cmds[0]} == "export PKG_CONFIG_PATH=P/"* && ${cmds[-1]} == "P/bin/portico-run "* ]] \
        || fail "README's $name commands no longer use the prefix placeholder P: ${cmds[*]}"
    for l in "${cmds[@]}"; do
        script+="${l//P\//$prefix/}"$'\n'
    done
    echo "+ $script"
    (cd "$dir" && timeout -k 5 120 bash -euc "$script") > "$dir/out"
    np=$(sed -n 's/.*portico-run -n \([0-9]*\).*/\1/p' <<< "${cmds[-1]}")
}

# section_runs NAME COUNT SOURCE FILE PATTERN WHAT: README's section NAME (COUNT commands) builds
# SOURCE, copied to FILE in a directory of its own, and every process of the run prints a line
# matching PATTERN.
section_runs() {
    local name=$1 count=$2 source=$3 file=$4 pattern=$5 what=$6 dir ok
    dir=$(mktemp -d "$tmp/section.XXXX")
    cp "$source" "$dir/$file"
    run_section "$name" "$count" "$dir"
    ok=$(grep -c -- "$pattern" "$dir/out" || true)
    [ "$ok" = "$np" ] || { cat "$dir/out"; fail "$what: $ok of $np processes ok"; }
    echo "$what: $np processes ok"
}

# --- "GASNet" (and the demo's GASNet example, with the same commands) ----------------------------
section_runs GASNet 3 "$src/tests/install/gasnet_prog.c" prog.c "gasnet ok" "the GASNet program"
section_runs GASNet 3 "$src/examples/gasnet/hello.c" prog.c 'my segment holds "hello from node' \
    "examples/gasnet/hello.c"

# --- "UPC" --------------------------------------------------------------------------------------
mkdir "$tmp/upc"
cp "$src/tests/install/upc_prog.c" "$tmp/upc/prog.c"
cp "$src/tests/install/upc_prog.cpp" "$tmp/upc/prog.cpp"
run_section UPC 4 "$tmp/upc"
ok=$(grep -c "upc ok" "$tmp/upc/out" || true)
okx=$(grep -c "upc++ ok" "$tmp/upc/out" || true)
[ "$ok" = "$np" ] && [ "$okx" = "$np" ] || { cat "$tmp/upc/out"; fail "the UPC programs: $ok and $okx of $np threads ok"; }
echo "UPC programs (C and C++): $np threads ok"

# --- "PSM2" (and the demo's PSM2 example) -------------------------------------------------------
section_runs PSM2 3 "$src/tests/install/psm2_prog.c" psm2_prog.c "psm2 ok" "the PSM2 program"
section_runs PSM2 3 "$src/examples/psm2/hello.c" psm2_prog.c 'received "hello from rank' "examples/psm2/hello.c"

# --- "PMI" -------------------------------------------------------------------------------------
section_runs PMI 3 "$src/tests/install/pmi_prog.c" pmi_prog.c "pmi ok" "the PMI program"
mkdir "$tmp/pmi"
cp "$src/tests/install/pmi_prog.c" "$tmp/pmi/pmi_prog.c"
# The PMI home as GASNet's configure uses it (--with-pmi=HOME: -I HOME/include, -L HOME/lib -lpmi).
home=$prefix/lib/portico/pmi
(cd "$tmp/pmi" && cc pmi_prog.c -I"$home/include" -L"$home/lib" -Wl,-rpath,"$home/lib" -lpmi -o home.out)
expect_home=$(t "$prefix/bin/portico-run" -n 2 "$tmp/pmi/home.out" | grep -c "pmi ok" || true)
[ "$expect_home" = 2 ] || fail "the PMI program built from the PMI home: $expect_home of 2 ranks ok"
echo "PMI home: ok"
# The Portals runtime's PMI as the Sandia reference implementation installs it, where Portals
# clients (GASNet's portals4-conduit) probe for it: <portals4/pmi.h> and -lportals_runtime.
sed 's|#include <pmi.h>|#include <portals4/pmi.h>|' "$tmp/pmi/pmi_prog.c" > "$tmp/pmi/runtime_prog.c"
(cd "$tmp/pmi" && cc runtime_prog.c -I"$prefix/include" -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lportals_runtime \
    -o runtime.out)
expect_runtime=$(t "$prefix/bin/portico-run" -n 2 "$tmp/pmi/runtime.out" | grep -c "pmi ok" || true)
[ "$expect_runtime" = 2 ] || fail "the PMI program built on <portals4/pmi.h> and -lportals_runtime: $expect_runtime of 2 ranks ok"
echo "Portals runtime PMI: ok"

# --- what the install holds, and every installed program ----------------------------------------
for f in include/portals4.h include/portals.h include/portico_runtime.h include/portico_ext.h \
         include/portico/gasnet/gasnet.h include/portico/gasnet/gasnet_tools.h lib/libportals.so lib/libportals.so.4 lib/libportals.so.4.3.0 \
         lib/libgasnet-portico.so lib/libgasnet-portico.so.1 lib/pkgconfig/portals4.pc \
         lib/pkgconfig/gasnet-seq.pc lib/pkgconfig/gasnet-parsync.pc lib/pkgconfig/gasnet-par.pc \
         bin/portico-run bin/portico-info bin/portico-bench bin/portals_demo bin/triggered_collectives \
         bin/gasnet_hello bin/gasnet_pingpong bin/gasnet_histogram bin/gasnet_bench bin/psm2_hello \
         include/portico/upc/upc.h include/portico/upc/upc_strict.h include/portico/upc/upc_relaxed.h \
         include/portico/upc/upc_collective.h \
         include/portico/upc_abi.h include/portico/upc.hpp lib/libportico-upc.so lib/libportico-upc.so.1 \
         lib/libportico-upc-main.a lib/pkgconfig/portico-upc.pc bin/upc_vector_add bin/upc_heat bin/upc_int_sort \
         lib/portico/libpsm2.so.2 lib/pkgconfig/libpsm2.pc include/portico/psm2/psm2.h \
         include/portico/psm2/psm2_mq.h include/portico/psm2/psm2_am.h lib/portico/pmi/include/pmi.h \
         include/portals4/pmi.h lib/libportals_runtime.so lib/libportals_runtime.so.0 \
         lib/portico/pmi/lib/libpmi.so lib/portico/pmi/lib/libpmi.so.0 lib/pkgconfig/portico-pmi.pc; do
    [ -e "$prefix/$f" ] || fail "the install lacks $f"
done

# expect COUNT PATTERN CMD...: CMD succeeds and prints COUNT lines matching PATTERN ("+": at least
# one). The whole output is read first: a reader that stops early would kill CMD with SIGPIPE.
expect() {
    local count=$1 pattern=$2 out
    shift 2
    out=$(t "$@") || { echo "$out"; fail "'$*' exited with $?"; }
    local n
    n=$(grep -c -- "$pattern" <<< "$out" || true)
    [ "$n" = "$count" ] || { [ "$count" = + ] && [ "$n" -gt 0 ]; } \
        || { echo "$out"; fail "'$*' printed no $count lines matching '$pattern'"; }
}

tools() {
    local p=$1 user=$2 run=$1/bin/portico-run
    expect + "max_pt_index" "$p/bin/portico-info"
    expect 1 '"max_pt_index":[0-9]' "$p/bin/portico-info" --json
    expect 1 "^usage: portico-run" "$p/bin/portico-bench" --help
    expect + '"test":"put_lat"' "$run" -n 2 "$p/bin/portico-bench" put_lat --short --json --iters 100 --reps 1
    expect 2 "done; 0 messages dropped" "$run" -n 2 "$p/bin/portals_demo"
    expect 1 "^triggered collectives over 2 ranks" "$run" -n 2 "$p/bin/triggered_collectives"
    expect 1 "AM Short round trip" "$run" -n 2 "$p/bin/gasnet_pingpong" 100
    expect 2 "my segment holds \"hello from node" "$run" -n 2 "$p/bin/gasnet_hello"
    expect 2 "received \"hello from rank" "$run" -n 2 "$p/bin/psm2_hello"
    expect 1 "total correct" "$run" -n 2 "$p/bin/gasnet_histogram"
    expect + '"test":"put_lat"' "$run" -n 2 "$p/bin/gasnet_bench" put_lat --short --json --iters 100 --reps 1
    expect 1 "0 wrong: OK" "$run" -n 2 "$p/bin/upc_vector_add"
    # The libraries come from this prefix, not from the build tree (whose paths the programs must
    # no longer carry).
    for b in "$p"/bin/* "$user" "$p/lib/portico/pmi/lib/libpmi.so.0"; do
        if ldd "$b" | grep -q "not found"; then ldd "$b"; fail "$b: a library is not found"; fi
        if ldd "$b" | grep -F "$build/" ; then fail "$b loads a library from the build tree"; fi
    done
    for b in portico-info gasnet_pingpong; do
        lib=$(ldd "$p/bin/$b" | awk '$1 == "libportals.so.4" { print $3 }')
        [[ $(readlink -f "$lib") == "$(readlink -f "$p/lib")"/* ]] \
            || fail "$b loads libportals.so.4 from '$lib', not from $p/lib"
    done
}
tools "$prefix" "$tmp/portals/a.out"
echo "installed programs ok"

# A moved prefix keeps working: the programs' RUNPATH is $ORIGIN-relative and the .pc files find
# the prefix from their own location.
mv "$prefix" "$tmp/moved"
tools "$tmp/moved" "$tmp/moved/bin/portico-run"
cd "$tmp/portals"
# shellcheck disable=SC2046
cc prog.c $(PKG_CONFIG_PATH="$tmp/moved/lib/pkgconfig" pkg-config --cflags --libs portals4) -o moved.out
expect 2 "done; 0 messages dropped" "$tmp/moved/bin/portico-run" -n 2 ./moved.out
echo "moved prefix ok"
echo "PASS"
