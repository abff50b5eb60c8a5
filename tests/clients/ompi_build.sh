#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ompi_build.sh PORTICO_BUILD_DIR: installs Portico from PORTICO_BUILD_DIR (cmake --install) into
# the Open MPI cache directory, and builds Open MPI 4.1.4 (the upstream tarball of Debian 12's
# source package `openmpi`) against it with its Portals 4 components (mtl, btl, osc, coll
# portals4), unless the cache already holds that build for this portals4.h. About 25 minutes on
# 2 cores the first time; then only the Portico install (seconds). Skips (77) with the reason
# when the sources cannot be had. See docs/CLIENTS.md.
set -euo pipefail
. "$(dirname "$0")/clients_lib.sh"
[ $# -eq 1 ] || fail "usage: $0 PORTICO_BUILD_DIR"
portico_build=$(cd "$1" && pwd)
[ -f "$portico_build/CMakeCache.txt" ] || fail "$portico_build is not a CMake build tree of Portico"
for tool in cc make tar xz sha256sum flock; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done

install_portico() {
  cmake --install "$portico_build" --prefix "$ompi_portico" >"$ompi_root/portico-install.log" ||
    fail "cmake --install $portico_build failed (see $ompi_root/portico-install.log)"
}

build_ompi() {
  [ -f "$ompi_prefix/.built" ] && return
  local tarball
  tarball=$(fetch_debian_source openmpi "openmpi_$ompi_version.orig.tar.xz")
  local work=$ompi_root/work log=$ompi_root/build.log
  rm -rf "$work" "$ompi_prefix"
  mkdir -p "$work"
  echo "building Open MPI $ompi_version into $ompi_prefix (log: $log)" >&2
  tar -C "$work" -xf "$tarball"
  local pmix
  pmix=$(pkg-config --variable=prefix pmix 2>/dev/null || true)
  # External hwloc, libevent and PMIx (Debian's, as Debian's own build); no Fortran, OpenSHMEM or
  # ROMIO; components that cannot serve here (other networks, monitoring, MPI-IO back ends) not
  # built, which halves the build. Open MPI links its components with -L only, hence the rpath
  # to Portico. -g: stacks and the engine's trace are readable when a job hangs.
  # shellcheck disable=SC2054 # the commas are in the values (lists of components)
  local configure=("$work/openmpi-$ompi_version/configure" --prefix="$ompi_prefix"
    --with-portals4="$ompi_portico"
    --disable-mpi-fortran --disable-oshmem --disable-io-romio
    --with-libevent=external --with-hwloc=external ${pmix:+--with-pmix="$pmix"}
    --enable-mca-no-build=btl-openib,btl-usnic,btl-ofi,btl-uct,btl-smcuda,btl-scif,btl-ugni,mtl-ofi,mtl-psm,mtl-psm2,mtl-mxm,pml-ucx,pml-yalla,pml-monitoring,pml-crcpw,pml-v,osc-ucx,osc-monitoring,coll-hcoll,coll-fca,coll-cuda,coll-monitoring,coll-ucc,common-monitoring,fs,fbtl,fcoll,sharedfp,vprotocol,topo-treematch,crcp
    CFLAGS="-O2 -g" LDFLAGS="-Wl,-rpath,$ompi_portico/lib")
  (
    cd "$work/openmpi-$ompi_version"
    echo "${configure[*]}"
    "${configure[@]}"
    make -j"$(nproc)"
    make install
    # The examples ompi_run.sh runs.
    mkdir -p "$ompi_root/examples"
    cp examples/hello_c.c examples/ring_c.c examples/connectivity_c.c "$ompi_root/examples/"
  ) >"$log" 2>&1 || {
    tail -40 "$log" >&2
    fail "the Open MPI build failed (log: $log)"
  }
  rm -rf "$work"
  touch "$ompi_prefix/.built"
}

mkdir -p "$ompi_root"
# One build or install at a time per cache directory (runs that share it wait here).
exec 9>"$ompi_root/lock"
flock 9
install_portico
build_ompi
exec 9>&-
"$ompi_prefix/bin/ompi_info" --version | head -1
echo "Open MPI: $ompi_prefix; Portico: $ompi_portico"
