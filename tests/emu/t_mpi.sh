#!/usr/bin/env bash
# t_mpi.sh - ranks sharing one GPU, --transport mpi: every family at p 2,
# 3, 4 and 8 replays with --check. A send reaches MPI only after its
# device-to-host copy, which ends a random lag later: a wait that polls
# only its own receive never issues it, and both ranks wait forever.
. "$(dirname "$0")/lib.sh"

for pp in 2 3 4 8; do
    for g in $FAMILIES; do
        [ "$g" = ilp ] && [ "$pp" -gt 3 ] && continue
        gen "$TMP/s.json" "$g" "$pp"
        emu "$pp" 1 mpi "$TMP/s.json" --check --model "$MODEL"
        expect "mpi: $g at pp $pp"
    done
done
done_testing
