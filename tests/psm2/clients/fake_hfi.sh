#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# fake_hfi.sh COMMAND...: runs COMMAND where PSM2's real clients believe an Omni-Path adapter is
# present. libfabric's psm2 provider and Open MPI's mtl psm2 look for /dev/hfi1_N (and Open MPI
# for an ACTIVE port in sysfs) before they call libpsm2; this makes both exist inside a private
# mount and network namespace (overlays on /dev and /sys/class, nothing changes outside), with
# loopback up, so that parallel tests do not share ports either. Needs root (or the right to
# unshare namespaces); without it, exits 77 (ctest's skip) naming the reason.
# PORTICO_FAKE_HFI_KEEP_NET=1 keeps the caller's network namespace (a "host" of
# tests/multihost/netns.sh, where Open MPI's daemon runs the ranks of that host).
set -euo pipefail
if [ "${PORTICO_FAKE_HFI_INSIDE:-}" != 1 ]; then
  skip() { echo "SKIP: $*" >&2; exit 77; }
  [ "$(id -u)" -eq 0 ] || skip "faking /dev/hfi1_0 needs root (private mount namespace)"
  command -v unshare >/dev/null || skip "unshare (util-linux) is missing"
  net=-n
  [ "${PORTICO_FAKE_HFI_KEEP_NET:-}" = 1 ] && net=
  unshare -m $net true 2>/dev/null || skip "this machine refuses new mount/network namespaces"
  PORTICO_FAKE_HFI_INSIDE=1 exec unshare -m $net --propagation private "$0" "$@"
fi
w=$(mktemp -d)
mount -t tmpfs tmpfs "$w"
mkdir -p "$w/dev/up" "$w/dev/work" "$w/class/up/infiniband/hfi1_0/ports/1" "$w/class/work"
touch "$w/dev/up/hfi1_0"
echo "4: ACTIVE" >"$w/class/up/infiniband/hfi1_0/ports/1/state"
echo 16 >"$w/class/up/infiniband/hfi1_0/nctxts"
echo 16 >"$w/class/up/infiniband/hfi1_0/nfreectxts"
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$w/dev/up,workdir=$w/dev/work" /dev
mount -t tmpfs tmpfs /dev/shm # this namespace's own: Portico's shared-memory rings
mount -t overlay overlay -o "lowerdir=/sys/class,upperdir=$w/class/up,workdir=$w/class/work" /sys/class
[ "${PORTICO_FAKE_HFI_KEEP_NET:-}" = 1 ] || ip link set lo up
exec "$@"
