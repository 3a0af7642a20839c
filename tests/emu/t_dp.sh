#!/usr/bin/env bash
# t_dp.sh - p 2 x d 2: the data-parallel collectives (NCCL's on one
# communicator of the replicas, or MPI's on host copies) with ZeRO 0-3,
# reduced per step and per microbatch, on both transports: --check over
# the whole global batch.
. "$(dirname "$0")/lib.sh"
DP="--dp 2 --params 1000"

for t in nccl mpi; do
    gpus=$([ "$t" = nccl ] && echo 4 || echo 1)
    for zero in 0 1 2 3; do
        for g in 1f1b zb-v; do
            gen "$TMP/s.json" "$g" 2 $DP --zero "$zero"
            emu 4 "$gpus" "$t" "$TMP/s.json" --check --model "$MODEL"
            expect "$t: $g at p 2 x d 2, zero $zero"
        done
    done
    gen "$TMP/s.json" zb 2 $DP --zero 2 --reduce microbatch
    emu 4 "$gpus" "$t" "$TMP/s.json" --check --model "$MODEL" --iters 3
    expect "$t: zb at p 2 x d 2, zero 2, reduced per microbatch, 3 iterations"
done
done_testing
