#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check_tiers.sh CTEST BUILD_DIR: every test of the build carries a tier label, and quick stands
# alone (cmake/PorticoTestTiers.cmake says what each tier means), so that `ctest -L quick` runs
# only fast tests and `ctest -LE 'root|external-client'` leaves nothing out by accident.
ctest=$1
build=$2
if [ -z "$ctest" ] || [ ! -d "$build" ]; then
    echo "usage: check_tiers.sh CTEST BUILD_DIR" >&2
    exit 1
fi
tiers="quick slow multiprocess root external-client"
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
# ctest writes Testing/Temporary/LastTest.log even for -N: list from a directory of our own that
# includes the build's tests, not from the build directory, whose log a running ctest is writing.
mkdir "$work/listing-dir" || exit 1
printf 'subdirs("%s")\n' "$(cd "$build" && pwd)" >"$work/listing-dir/CTestTestfile.cmake"

# names [ctest options]: the names of the tests ctest lists, sorted.
names() {
    "$ctest" --test-dir "$work/listing-dir" -N "$@" >"$work/listing" || { cat "$work/listing"; exit 1; }
    sed -n 's/^ *Test *#[0-9]*: //p' "$work/listing" | sort -u
}

names >"$work/all"
: >"$work/tiered"
for tier in $tiers; do
    names -L "^$tier\$" >"$work/$tier"
    cat "$work/$tier" >>"$work/tiered"
done
sort -u -o "$work/tiered" "$work/tiered"

failed=0
comm -23 "$work/all" "$work/tiered" >"$work/untiered"
if [ -s "$work/untiered" ]; then
    echo "tests without a tier label (add a rule to cmake/PorticoTestTiers.cmake or label them where they are defined; *_NOT_BUILT: build first):"
    sed 's/^/  /' "$work/untiered"
    failed=1
fi
for tier in $tiers; do
    [ "$tier" = quick ] && continue
    comm -12 "$work/quick" "$work/$tier" >"$work/both"
    if [ -s "$work/both" ]; then
        echo "tests labelled both quick and $tier (quick stands alone):"
        sed 's/^/  /' "$work/both"
        failed=1
    fi
done
for tier in $tiers; do
    printf '%s: %s tests\n' "$tier" "$(wc -l <"$work/$tier" | tr -d ' ')"
done
echo "$(wc -l <"$work/all" | tr -d ' ') tests in all"
exit $failed
