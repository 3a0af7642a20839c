#!/usr/bin/env bash
# t_transformer.sh - the transformer workload on the emulated device in
# bf16: activations, their gradients and the messages stored in bf16
# (tests/emu/kernels.cc rounds every store, the GEMMs round their bf16
# outputs), fp32 weights with bf16 copies for the GEMMs, fp32 gradients.
# --check within the bf16 bound on both transports, with data parallelism
# (the copies follow the all-gathered and restored weights), the rounding
# visible (the loss differs from the cpu backend's, which build/zbexec
# beside zbexec-emu computes), the messages half the bytes of fp32 ones
# and the pool's high-water mark below what fp32 activations would take.
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

# The weights' bf16 copies are made again after every write: the step,
# a rollback (post-validation, clipped), ZeRO-1's all-gather; ZeRO-3
# gathers into a new buffer each time. (With copies left stale, the
# plain and the ZeRO-1 runs fail their check.)
gen "$TMP/s.json" zb-h1 2
emu 2 1 mpi "$TMP/s.json" --check --model "$TF" --iters 3 \
    --post-validation --clip 0.05
expect "transformer, mpi: zb-h1, clipped and rolled back each step"
for zero in 1 3; do
    gen "$TMP/d.json" zb-h1 2 --dp 2 --params 1000 --zero "$zero"
    emu 4 1 mpi "$TMP/d.json" --check --model "$TF" --iters 3
    expect "transformer, mpi: zb-h1 at p 2 x d 2, zero $zero"
    emu 4 4 nccl "$TMP/d.json" --check --model "$TF" --iters 3
    expect "transformer, nccl: zb-h1 at p 2 x d 2, zero $zero"
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
    ok "bf16 storage changes the loss ($ref)"
else
    not_ok "bf16 storage changes the loss"
fi

# Messages are bf16: each of the 4 microbatches x 3 iterations a rank
# sends carries a 32-byte header and T H = 256 bf16 entries, 544 bytes
# (fp32: 1056), plus the 4-byte message connecting its link at init.
gen "$TMP/s.json" zb-h1 2
ZB_EMU_STATS=1 emu 2 2 nccl "$TMP/s.json" --model "$TF" --iters 3
sent=$(sed -n 's/.*NCCL sent \([0-9]*\) B.*/\1/p' "$ERR" | sort -u)
if [ "$status" -eq 0 ] && [ "$sent" = $((12 * (32 + 2 * 256) + 4)) ]; then
    ok "nccl: bf16 messages, $sent bytes sent a rank"
else
    not_ok "nccl: bytes sent a rank: ${sent:-none counted}"
fi

# Memory: attention's probabilities dominate this model (seq 64), so
# one F keeps 2 x 73984 + 4096 = 152064 entries, 608256 bytes in fp32.
# Rank 0 of 1f1b at p 4 holds 4 of them at its peak: stored in fp32,
# the pool's high-water mark exceeds 4 x 608256 bytes (2.32 MiB; it was
# 3.08 MiB), in bf16 it stays below (1.65 MiB), and on every rank at or
# above the prediction, which counts the activations in their types.
MEM=transformer:layers=2,hidden=16,heads=2,seq=64,ffn=32,batch=4
"$ZBSCHED" generate -q --pp 4 --mb 8 --schedule 1f1b -o "$TMP/m.json"
emu 4 4 nccl "$TMP/m.json" --model "$MEM" --iters 3 --report "$TMP/r.json"
if [ "$status" -ne 0 ]; then
    not_ok "memory: the run failed"
elif command -v jq >/dev/null 2>&1; then
    check "memory: the pool's high-water mark below fp32 activations" \
        jq -e '.device_memory_bytes.used_high[0] <
               .realized.ranks[0].peak_memory * 608256' "$TMP/r.json"
    check "memory: the high-water mark >= the prediction, each rank" \
        jq -e '.device_memory_bytes as $d | [range(0; 4)] |
               all(. as $k | $d.used_high[$k] >= $d.predicted[$k])' \
        "$TMP/r.json"
fi
done_testing
