#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Like fake_rsh.sh, but behaves like ssh when it is killed: the command runs in a session of its
# own and survives the death of this script (and the launcher's SIGKILL to its process group), so
# only its PMI connection can tell it that the job is over. The exit status is the command's.
if [ $# -ne 2 ]; then
    echo "fake_rsh_detached.sh: expected HOST COMMAND, got $# arguments" >&2
    exit 255
fi
cd / || exit 255
# A background command's stdin would be /dev/null: pass ours on (it carries the rank's PMI token).
exec 3<&0
setsid env -i PATH="$PATH" HOME="${HOME:-/}" FAKE_RSH_HOST="$1" sh -c "$2" <&3 3<&- &
wait $!
