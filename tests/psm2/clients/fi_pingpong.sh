#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# fi_pingpong.sh LIBDIR MODE [shm|tcp]: Debian's fi_info and fi_pingpong over the psm2 provider,
# with Portico's libpsm2 from LIBDIR (run inside fake_hfi.sh). MODE is msg or tagged; every size
# fi_pingpong knows ('-S all'), with its data-integrity checks (-c).
set -euo pipefail
libdir=$1 mode=$2 transport=${3:-shm}
command -v fi_pingpong >/dev/null || { echo "SKIP: fi_pingpong (libfabric-bin) is not installed" >&2; exit 77; }
export LD_LIBRARY_PATH=$libdir
[ "$transport" = tcp ] && export PORTICO_TRANSPORT=tcp
# Every symbol resolves at load time against PSM2_1.0 (an unversioned library would abort here).
LD_BIND_NOW=1 fi_info -p psm2 >/tmp/fi_info.$$ 2>&1 || { cat /tmp/fi_info.$$; exit 1; }
grep -q "provider: psm2" /tmp/fi_info.$$ || { echo "fi_info lists no psm2 provider:"; cat /tmp/fi_info.$$; exit 1; }
rm -f /tmp/fi_info.$$
args=(-p psm2 -e rdm -m "$mode" -S all -I 50 -c)
out=$(mktemp)
fi_pingpong "${args[@]}" >"$out.server" 2>&1 &
server=$!
# The client retries until the server listens on its control port (no sleep as a handshake).
for _ in $(seq 600); do
  fi_pingpong "${args[@]}" 127.0.0.1 >"$out.client" 2>&1 && break
  grep -q "Connection refused\|connect" "$out.client" || { cat "$out.client"; kill $server; exit 1; }
  kill -0 $server 2>/dev/null || break
done
rc=0
wait $server || rc=$?
cat "$out.client"
[ $rc -eq 0 ] || { echo "server failed ($rc):"; cat "$out.server"; exit 1; }
# One result line per size, the largest included.
grep -Eq "^1m +50 +=50 " "$out.client" || { echo "no 1 MiB result"; exit 1; }
rm -f "$out" "$out.server" "$out.client"
