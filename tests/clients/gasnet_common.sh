# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# gasnet_common.sh: shared by the GASNet client scripts of tests/clients (sourced, not run).
#
# Sources of other projects are never part of Portico: each script takes them from an environment
# variable, unpacks or clones them into a cache directory, and skips (exit 77) saying how to get
# them when they are absent.
#   GASNET128_SRC  GASNet 1.28 (the public repository evidence/axiom-evi-gasnet on GitHub, which
#                  holds GASNet 1.28 with its tests/ and every conduit): a git URL, a git
#                  repository or checkout, or a tarball of it.
#   PORTICO_CLIENTS_DIR  the cache (default ~/.cache/portico-clients): sources, builds, logs.
#   PORTICO_PREFIX an installed Portico to test; by default the scripts install the build tree
#                  they are given (`cmake --install`) into the cache.
# Builds are kept between runs (a stamp file per step names what it was built from).

set -euo pipefail
CLIENTS_DIR=${PORTICO_CLIENTS_DIR:-$HOME/.cache/portico-clients}
mkdir -p "$CLIENTS_DIR"
CLIENTS_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "== $*"; }

# install_portico BUILD_DIR: sets PREFIX to PORTICO_PREFIX or to a fresh install of BUILD_DIR.
install_portico() {
    if [ -n "${PORTICO_PREFIX:-}" ]; then
        PREFIX=$(cd "$PORTICO_PREFIX" && pwd)
    else
        [ -n "${1:-}" ] && [ -f "$1/CMakeCache.txt" ] || fail "give a Portico build directory or set PORTICO_PREFIX"
        PREFIX=$CLIENTS_DIR/portico-prefix
        rm -rf "$PREFIX"
        cmake --install "$1" --prefix "$PREFIX" > "$CLIENTS_DIR/portico-install.log" \
            || { tail -20 "$CLIENTS_DIR/portico-install.log"; fail "cmake --install $1"; }
    fi
    [ -x "$PREFIX/bin/portico-run" ] || fail "$PREFIX is not a Portico install (no bin/portico-run)"
    export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
    # shellcheck disable=SC2034 # used by the scripts that source this file
    RUN=$PREFIX/bin/portico-run
}

# fetch_source VAR NAME HOWTO: the source tree named by $VAR, unpacked or cloned once into
# $CLIENTS_DIR/src/NAME; sets SRC. Skips with HOWTO when $VAR is unset or does not exist.
fetch_source() {
    local var=$1 name=$2 howto=$3 from
    from=${!var:-}
    [ -n "$from" ] || skip "$var is not set: $howto"
    SRC=$CLIENTS_DIR/src/$name
    if [ -f "$SRC/.portico-source" ] && [ "$(cat "$SRC/.portico-source")" = "$from" ]; then
        return 0
    fi
    rm -rf "$SRC"
    mkdir -p "$CLIENTS_DIR/src"
    case $from in
    *://* | git@*) git clone -q "$from" "$SRC" || fail "git clone $from" ;;
    *.tar.gz | *.tgz | *.tar.xz | *.tar.bz2 | *.tar)
        [ -f "$from" ] || skip "$var=$from does not exist: $howto"
        mkdir -p "$SRC"
        tar -xf "$from" -C "$SRC" --strip-components=1 || fail "unpacking $from" ;;
    *)
        [ -e "$from" ] || skip "$var=$from does not exist: $howto"
        if git -C "$from" rev-parse --git-dir > /dev/null 2>&1; then
            git clone -q "$from" "$SRC" || fail "git clone $from"
        else
            cp -a "$from" "$SRC"
        fi ;;
    esac
    echo "$from" > "$SRC/.portico-source"
}

# need_autotools: GASNet's git tree must be bootstrapped (autoconf, automake, libtool).
need_autotools() {
    "$CLIENTS_SCRIPTS/gasnet_deps.sh" || fail "installing the autotools (tests/clients/gasnet_deps.sh)"
}

# run_case LOG TIMEOUT WANT_RC CMD...: runs CMD with a hard timeout into LOG; passes when it exits
# with WANT_RC and prints no line with "ERROR" (GASNet's own pass rule: harness.conf FailExpr).
# Prints one result line; returns 0 or 1.
run_case() {
    local log=$1 limit=$2 want=$3 rc=0 start
    shift 3
    start=$(date +%s)
    timeout -k 10 "$limit" "$@" > "$log" 2>&1 || rc=$?
    local secs=$(($(date +%s) - start)) verdict=pass why=""
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        verdict=FAIL why="timed out after ${limit}s"
    elif [ "$rc" != "$want" ]; then
        verdict=FAIL why="exit code $rc, want $want"
    elif grep -q "ERROR" "$log"; then
        verdict=FAIL why="$(grep -m1 "ERROR" "$log")"
    fi
    printf '%-6s %-40s %4ss %s\n' "$verdict" "$(basename "$log" .log)" "$secs" "$why"
    [ "$verdict" = pass ]
}
