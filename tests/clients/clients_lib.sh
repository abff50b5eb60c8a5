# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by the client scripts (tests/clients/*.sh): where the clients' sources and builds are
# cached, how their sources are fetched, and how a test skips or fails.
#
# Cache: ${PORTICO_CLIENTS_DIR:-$HOME/.cache/portico-clients}. Sources come from Debian's source
# packages (bookworm), fetched with `apt-get source --download-only` over a private sources list
# (the system's apt configuration is not touched; no root needed); builds are keyed by the
# client's version and by everything that changes what it compiles against (portals4.h, the
# configure recipe), so a cached build is reused until one of those changes.

clients_dir=${PORTICO_CLIENTS_DIR:-${HOME:-/tmp}/.cache/portico-clients}
clients_src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
portico_src_dir=$(cd "$clients_src_dir/../.." && pwd)

skip() {
  echo "SKIP: $*" >&2
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# fetch_debian_source PACKAGE FILE: prints the path of FILE (a file of Debian's source package
# PACKAGE, e.g. openmpi_4.1.4.orig.tar.xz), downloading the package into the cache if needed;
# skips the test when it cannot be had (no network, the release no longer carries that version).
# PORTICO_CLIENTS_SOURCES=DIR takes the files from DIR instead.
fetch_debian_source() {
  local package=$1 file=$2 dir=$clients_dir/sources
  if [ -n "${PORTICO_CLIENTS_SOURCES:-}" ]; then
    [ -f "$PORTICO_CLIENTS_SOURCES/$file" ] || skip "$file is not in PORTICO_CLIENTS_SOURCES=$PORTICO_CLIENTS_SOURCES"
    echo "$PORTICO_CLIENTS_SOURCES/$file"
    return
  fi
  if [ ! -f "$dir/$file" ]; then
    command -v apt-get >/dev/null || skip "$file is not cached in $dir and apt-get is not available to fetch it"
    mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial"
    echo "deb-src http://deb.debian.org/debian bookworm main" >"$dir/apt/sources.list"
    local apt=(apt-get -q -o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache")
    echo "fetching Debian's source package $package into $dir" >&2
    if ! "${apt[@]}" update >"$dir/apt/update.log" 2>&1 ||
      ! (cd "$dir" && "${apt[@]}" source --download-only "$package") >"$dir/apt/source-$package.log" 2>&1; then
      skip "could not fetch Debian's source package $package (see $dir/apt/*.log); put $file into $dir, or set PORTICO_CLIENTS_SOURCES"
    fi
    [ -f "$dir/$file" ] || skip "Debian's source package $package has no $file (see $dir; the scripts are written for that version)"
  fi
  echo "$dir/$file"
}

# ---- Open MPI ------------------------------------------------------------------------------
ompi_version=4.1.4
# The configure line of ompi_build.sh; change the number when that line changes, so that cached
# builds made with the old one are not reused.
ompi_recipe=1
# What Open MPI compiles against: portals4.h's declarations and macros (not its comments).
ompi_key=$( (
  cc -E -P -dD -x c "$portico_src_dir/include/portals4.h"
  echo "recipe $ompi_recipe"
) | sha256sum | cut -c1-12)
# Open MPI's build and install, and the Portico install it was built against (and finds at run
# time through its RUNPATH): ompi_build.sh refreshes the latter from a Portico build tree.
ompi_root=$clients_dir/openmpi-$ompi_version-$ompi_key
ompi_prefix=$ompi_root/prefix
ompi_portico=$ompi_root/portico

# Skips unless ompi_build.sh has built Open MPI for this portals4.h.
require_ompi() {
  [ -f "$ompi_prefix/.built" ] ||
    skip "Open MPI $ompi_version is not built for this portals4.h ($ompi_prefix): run tests/clients/ompi_build.sh <portico build dir> (ctest -R clients.ompi.build)"
  [ -f "$ompi_portico/include/portals4.h" ] || skip "no Portico installed in $ompi_portico: run tests/clients/ompi_build.sh"
}

# mpirun arguments every client job uses. rtc_hwloc_vmhole none: Open MPI 4.1.4's own daemon bug
# (it maps the hwloc topology into a hole of the address space and crashes about one start in
# twelve in hwloc_shmem_topology_write; docs/CLIENTS.md), not a Portico workaround.
# shellcheck disable=SC2034 # used by the scripts that source this file
ompi_mpirun_args=(--oversubscribe --mca rtc_hwloc_vmhole none)
# Open MPI refuses to run as root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
