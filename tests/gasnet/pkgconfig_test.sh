#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# pkgconfig_test.sh PKG_CONFIG_DIR SOURCE_DIR PORTICO_RUN NPROCS
# Builds tests/gasnet/init_test.c the way an installed GASNet client is built,
#     cc -std=c99 init_test.c $(pkg-config --cflags --libs gasnet-seq)
# (with the build tree's gasnet-seq.pc), checks that gasnet.h refuses zero or several thread
# modes, and runs the program under portico-run.
set -eu
export PKG_CONFIG_PATH=$1
src=$2
run=$3
np=$4
cc=${CC:-cc}
extra=${GASNET_TEST_CFLAGS:-} # the sanitizer flags of a sanitizer build
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for mode in seq parsync par; do
    flags=$(pkg-config --cflags --libs gasnet-$mode)
    echo "gasnet-$mode: $flags"
    echo "$flags" | grep -q -- "-DGASNET_$(echo $mode | tr a-z A-Z)" || { echo "FAIL: no mode define"; exit 1; }
done
flags=$(pkg-config --cflags --libs gasnet-seq)
# shellcheck disable=SC2086
$cc -std=c99 -pedantic -Wall -Wextra -Werror $extra -I"$src" "$src/init_test.c" $flags -o "$out/init_test"

# gasnet.h demands exactly one thread mode (#error otherwise), as GASNet's does.
inc=$(pkg-config --cflags-only-I gasnet-seq)
printf '#include <gasnet.h>\nint main(void) { return 0; }\n' > "$out/mode.c"
# shellcheck disable=SC2086
if $cc -fsyntax-only $inc "$out/mode.c" 2> "$out/err0"; then echo "FAIL: compiled without a thread mode"; exit 1; fi
grep -q "exactly one of" "$out/err0" || { cat "$out/err0"; echo "FAIL: wrong diagnostic"; exit 1; }
# shellcheck disable=SC2086
if $cc -fsyntax-only $inc -DGASNET_SEQ -DGASNET_PAR "$out/mode.c" 2> "$out/err2"; then
    echo "FAIL: compiled with two thread modes"; exit 1
fi
grep -q "exactly one of" "$out/err2" || { cat "$out/err2"; echo "FAIL: wrong diagnostic"; exit 1; }
# shellcheck disable=SC2086
$cc -fsyntax-only $inc -DGASNET_PARSYNC "$out/mode.c"
# C++ clients too.
# shellcheck disable=SC2086
${CXX:-c++} -fsyntax-only -Wall -Wextra -Werror $inc -DGASNET_PAR -x c++ "$out/mode.c"

GASNET_TEST_VAR=hello "$run" -n "$np" --timeout 60 "$out/init_test"
