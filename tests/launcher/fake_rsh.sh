#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stand-in for ssh in the launcher tests: `fake_rsh.sh HOST COMMAND` runs COMMAND with sh on this
# machine, the way `ssh HOST COMMAND` runs it with the remote user's login shell: in a fresh
# environment (PATH and HOME only, plus FAKE_RSH_HOST=HOST so that a test can check the host,
# which is otherwise ignored) and in another directory (the command has to cd itself).
if [ $# -ne 2 ]; then
    echo "fake_rsh.sh: expected HOST COMMAND, got $# arguments" >&2
    exit 255
fi
cd / || exit 255
exec env -i PATH="$PATH" HOME="${HOME:-/}" FAKE_RSH_HOST="$1" sh -c "$2"
