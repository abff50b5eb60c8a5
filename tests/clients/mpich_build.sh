#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpich_build.sh: builds MPICH 4.0.2's MPI test suite (test/mpi of Debian 12's source package
# `mpich`) standalone against the Open MPI that ompi_build.sh built, for mpich_run.sh: its test
# library and the tests of pt2pt, coll, rma and comm. Cached next to that Open MPI build; a few
# minutes the first time. Skips (77) with the reason when Open MPI is not built or the sources
# cannot be had. See docs/CLIENTS.md.
set -euo pipefail
. "$(dirname "$0")/clients_lib.sh"
require_ompi
mpich_version=4.0.2
suite=$ompi_root/mpich-$mpich_version-test
[ -f "$suite/.built" ] && {
  echo "MPICH $mpich_version tests: $suite"
  exit 0
}
exec 9>"$ompi_root/lock"
flock 9
if [ ! -f "$suite/.built" ]; then
  tarball=$(fetch_debian_source mpich "mpich_$mpich_version.orig.tar.xz")
  log=$ompi_root/mpich-test-build.log
  rm -rf "$suite" "$ompi_root/mpich-$mpich_version"
  echo "building MPICH $mpich_version's test/mpi against $ompi_prefix (log: $log)" >&2
  tar -C "$ompi_root" -xf "$tarball" "mpich-$mpich_version/test/mpi"
  mv "$ompi_root/mpich-$mpich_version/test/mpi" "$suite"
  rm -rf "$ompi_root/mpich-$mpich_version"
  (
    cd "$suite"
    # Standard MPI only (no MPICH extensions), C only; Open MPI 4.1 hides the MPI-1 names that
    # MPI-3 removed unless asked, and a few tests still use them.
    ./configure --with-mpi="$ompi_prefix" --enable-strictmpi --disable-fortran --disable-cxx --disable-spawn \
      --disable-romio --disable-ft-tests --disable-perftest CPPFLAGS=-DOMPI_OMIT_MPI1_COMPAT_DECLS=0
    make -C util -j"$(nproc)"
    make -C dtpools -j"$(nproc)"
    for dir in pt2pt coll rma comm; do
      make -C "$dir" -j"$(nproc)" -k || true # a test that does not compile is reported by mpich_run.sh
    done
  ) >"$log" 2>&1 || {
    tail -40 "$log" >&2
    fail "the MPICH test suite did not configure or build (log: $log)"
  }
  touch "$suite/.built"
fi
echo "MPICH $mpich_version tests: $suite"
