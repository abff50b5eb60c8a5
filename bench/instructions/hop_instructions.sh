#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hop_instructions.sh PROGRAM [ROUNDS] [SHAPE]: the instructions of one round of PROGRAM's loop,
# counted by callgrind, which this host's drifting speed does not move. PROGRAM is
#   hop_loop (SHAPE ct, the default: one ct_lat hop's software, both sides: PtlPut to itself and
#            PtlCTWait; SHAPE put: one put_lat hop's: an acked put, its PUT, SEND and ACK events),
#   am_loop  (no SHAPE: one GASNet AM Short round trip, request and reply, both sides),
#   mq_loop  (no SHAPE: one PSM2 eager message, irecv, isend and both waits, both sides).
# Runs PROGRAM for ROUNDS and for 2 x ROUNDS rounds (default 5000) and divides the difference by
# ROUNDS, so that start-up and shutdown cancel out. LD_LIBRARY_PATH picks the libraries to count
# (to compare two builds with one program). Prints one JSON line.
set -euo pipefail
loop=${1:?program: hop_loop, am_loop or mq_loop} rounds=${2:-5000} shape=${3:-}
command -v valgrind > /dev/null || { echo "hop_instructions.sh: valgrind is not installed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # rounds -> total instructions
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" "$loop" "$1" ${shape:+"$shape"} > /dev/null 2> "$tmp/log.$1" ||
        { cat "$tmp/log.$1" >&2; exit 1; }
    sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$tmp/log.$1"
}
one=$(count "$rounds")
two=$(count $((2 * rounds)))
per=$(( (two - one) / rounds ))
echo "{\"test\":\"hop_instructions\",\"value\":$per,\"unit\":\"instructions\",\"better\":\"lower\",\"program\":\"$(basename "$loop")\",\"shape\":\"${shape:-default}\",\"rounds\":$rounds,\"total_short\":$one,\"total_long\":$two}"
