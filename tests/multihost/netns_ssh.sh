#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `ssh`-compatible front end of `netns.sh rsh` for launchers that want one executable, such as
# MPICH's hydra: mpiexec -launcher ssh -launcher-exec .../netns_ssh.sh -hosts ptlK-1,ptlK-2 ...
exec "$(dirname "$0")/netns.sh" rsh "$@"
