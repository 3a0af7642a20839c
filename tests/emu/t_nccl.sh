#!/usr/bin/env bash
# t_nccl.sh - a GPU per rank, NCCL: every family at p 2-8 replays with
# --check. NCCL connects a link at its first group and that group waits
# for the peer's side; a flush that settles one link before issuing the
# next deadlocks in iteration 1 (interleaved p 2, v-half p 4, v-min p 3).
. "$(dirname "$0")/lib.sh"

for pp in 2 3 4 5 6 7 8; do
    for g in $FAMILIES; do
        # The integer program only where it answers at once.
        [ "$g" = ilp ] && [ "$pp" -gt 3 ] && continue
        gen "$TMP/s.json" "$g" "$pp"
        emu "$pp" "$pp" nccl "$TMP/s.json" --check --model "$MODEL"
        expect "nccl: $g at pp $pp"
    done
done
done_testing
