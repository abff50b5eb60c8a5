#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# layout_test.sh BUILD_DIR | --prefix PREFIX
# Portico's client headers must not shadow the real ones (test install.layout).
# GASNet's own portals4-conduit is built with -I<PORTALS4HOME>/include ahead of its own headers,
# and a UPC compiler's upc.h sits in the compiler's directory, which every -I precedes: so
# <prefix>/include holds Portals and Portico's own headers only (portals4.h, portals.h,
# portico_*.h, and the portico/ folder), and gasnet.h, gasnet_tools.h and the upc*.h headers live
# in include/portico/gasnet and include/portico/upc, found through the gasnet-*.pc and
# portico-upc.pc modules. Checked on a fresh `cmake --install` of BUILD_DIR (or on PREFIX as it is):
# - <prefix>/include has nothing else at its top level (portals4/ holds the Portals runtime's
#   pmi.h, as the Sandia reference implementation installs it: never found as <pmi.h>);
# - a program compiled with -I<prefix>/include ahead of a "real" GASNet's (and UPC's) include
#   directory gets the real gasnet.h, gasnet_tools.h and upc.h, and still Portico's portals4.h;
# - the pkg-config modules still find Portico's headers (C and C++), and build a program that runs.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${1:-}" = "--prefix" ]; then
    prefix=$(cd "$2" && pwd)
else
    build=$(cd "$1" && pwd)
    prefix=$tmp/portico
    cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
fi
unset LD_LIBRARY_PATH

# --- the examples as sources, and the license ----------------------------------------------------------
for f in portals_demo.c triggered_collectives.c gasnet/hello.c psm2/hello.c upc/heat.cpp; do
    [ -f "$prefix/share/portico/examples/$f" ] || fail "$prefix/share/portico/examples/$f is not installed"
done
[ -f "$prefix/share/doc/portico/LICENSE" ] || fail "$prefix/share/doc/portico/LICENSE is not installed"

# --- nothing at the top of include/ but Portals and Portico's own ---------------------------------
extra=()
for f in "$prefix"/include/*; do
    case $(basename "$f") in
    portals4.h | portals.h | portico_runtime.h | portico_ext.h | portico | portals4) ;;
    *) extra+=("$(basename "$f")") ;;
    esac
done
[ ${#extra[@]} -eq 0 ] || fail "$prefix/include holds ${extra[*]}: -I$prefix/include would bring them into every client"
for f in portals4.h portico_runtime.h portico/gasnet/gasnet.h portico/gasnet/gasnet_tools.h portico/upc/upc.h \
         portico/upc/upc_strict.h portico/upc/upc_relaxed.h portico/upc/upc_collective.h portico/upc_abi.h \
         portico/upc.hpp; do
    [ -f "$prefix/include/$f" ] || fail "the install lacks include/$f"
done
echo "include/ holds Portals and Portico's own headers only"

# --- a real GASNet's and a real UPC's headers behind -I<prefix>/include win -----------------------
mkdir -p "$tmp/real/gasnet" "$tmp/real/upc"
cat > "$tmp/real/gasnet/gasnet.h" << 'EOF'
#define REAL_GASNET_H 1
#include <gasnet_tools.h>
EOF
echo '#define REAL_GASNET_TOOLS_H 1' > "$tmp/real/gasnet/gasnet_tools.h"
echo '#define REAL_UPC_H 1' > "$tmp/real/upc/upc.h"
cat > "$tmp/shadow.c" << 'EOF'
#include <portals4.h>
#include <gasnet.h>
#include <upc.h>
#if !defined(REAL_GASNET_H) || !defined(REAL_GASNET_TOOLS_H)
#error "Portico's gasnet.h or gasnet_tools.h shadowed the real GASNet's"
#endif
#if !defined(REAL_UPC_H)
#error "Portico's upc.h shadowed the real UPC's"
#endif
int main(void) { return PtlInit() == PTL_OK ? (PtlFini(), 0) : 1; }
EOF
cc -I"$prefix/include" -I"$tmp/real/gasnet" -I"$tmp/real/upc" "$tmp/shadow.c" -o "$tmp/shadow" \
    -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lportals 2> "$tmp/shadow.err" \
    || { cat "$tmp/shadow.err"; fail "with -I$prefix/include first, Portico's client headers were picked"; }
"$tmp/shadow" || fail "the Portals program built next to the real headers did not run"
echo "-I$prefix/include ahead of a real GASNet and UPC: theirs are used, Portico's portals4.h too"

# --- the modules find Portico's own -----------------------------------------------------------------
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cat > "$tmp/gasnet_prog.c" << 'EOF'
#include <gasnet.h>
#include <gasnet_tools.h>
#include <stdio.h>
#ifndef GASNET_CONDUIT_PORTICO
#error "not Portico's gasnet.h"
#endif
int main(int argc, char **argv) {
    if (gasnet_init(&argc, &argv) != GASNET_OK || gasnet_attach(NULL, 0, 0, 0) != GASNET_OK) return 1;
    printf("gasnet %u of %u, tools %d.%d\n", (unsigned)gasnet_mynode(), (unsigned)gasnet_nodes(),
           GASNETT_RELEASE_VERSION_MAJOR, GASNETT_RELEASE_VERSION_MINOR);
    fflush(stdout); /* before any node's exit ends the others */
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(0);
    return 0;
}
EOF
for mode in seq parsync par; do
    # shellcheck disable=SC2046
    cc "$tmp/gasnet_prog.c" $(pkg-config --cflags --libs "gasnet-$mode") -o "$tmp/gasnet_$mode" \
        || fail "gasnet-$mode.pc does not find Portico's gasnet.h"
done
out=$(timeout -k 5 60 "$prefix/bin/portico-run" -n 2 "$tmp/gasnet_par")
[ "$(grep -c '^gasnet [01] of 2, tools 1\.8' <<< "$out")" = 2 ] || { echo "$out"; fail "the GASNet program"; }
cat > "$tmp/upc_prog.cpp" << 'EOF'
#include <portico/upc.hpp>
#include <upc_collective.h>
#include <upc_relaxed.h>
int main() { return 0; }
EOF
# shellcheck disable=SC2046
c++ -std=c++20 -fsyntax-only "$tmp/upc_prog.cpp" $(pkg-config --cflags portico-upc) \
    || fail "portico-upc.pc does not find Portico's UPC headers"
echo "gasnet-*.pc and portico-upc.pc find Portico's headers"
echo "PASS"
