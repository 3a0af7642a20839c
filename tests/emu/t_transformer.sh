#!/usr/bin/env bash
# t_transformer.sh - the transformer workload on the emulated device: its
# kernels (tests/emu/kernels.cc runs zbexec/tf_kernels.c's loops) and the
# batched GEMMs with bf16-rounded inputs: --check within the bf16 bound on
# both transports, and the rounding visible (the loss differs from the cpu
# backend's, which build/zbexec beside zbexec-emu computes).
. "$(dirname "$0")/lib.sh"
TF=transformer:layers=2,hidden=16,heads=2,seq=8,ffn=32,batch=2

for pp in 2 4; do
    for g in 1f1b zb-h1 zb-v dualpipev; do
        gen "$TMP/s.json" "$g" "$pp"
        emu "$pp" 1 mpi "$TMP/s.json" --check --model "$TF"
        expect "transformer, mpi: $g at pp $pp"
        emu "$pp" "$pp" nccl "$TMP/s.json" --check --model "$TF"
        expect "transformer, nccl: $g at pp $pp"
    done
done

# The bound is not vacuous: bf16 rounding shows in the loss (the cpu
# backend's would equal the reference's to the last digit).
gen "$TMP/s.json" zb-h1 2
emu 2 1 mpi "$TMP/s.json" --check --model "$TF" --iters 1
ref=$(grep -m1 '^loss:' "$OUT")
run timeout -k 5 60 mpirun --oversubscribe \
    --bind-to none -np 2 "${ZBEXEC%-emu}" --backend cpu "$TMP/s.json" \
    --model "$TF" --iters 1
if [ "$status" -eq 0 ] && [ -n "$ref" ] &&
    [ "$ref" != "$(grep -m1 '^loss:' "$OUT")" ]; then
    ok "the emulated bf16 GEMMs change the loss ($ref)"
else
    not_ok "the emulated bf16 GEMMs change the loss"
fi
done_testing
