#!/usr/bin/env bash
# t_dp_mb.sh - ZeRO-2/3 reducing per microbatch (--reduce microbatch):
# p 2 x d 2 ranks reduce-scatter each W's gradient into the shard, and
# --check still matches the sequential run over the whole global batch
# (within tolerance: the sum runs over the replicas before the
# microbatches); the model state as the model counts it; the run-time
# checks behind the validator.
. "$(dirname "$0")/lib.sh"
DP="--pp 2 --mb 4 --dp 2 --params 1000 --reduce microbatch"

for zero in 2 3; do
    for g in 1f1b zb; do
        gen "$TMP/s.json" $DP --schedule "$g" --zero "$zero"
        zbexec 4 "$TMP/s.json" --check --model "$MODEL" --iters 2
        expect "check: $g at p 2 x d 2, zero $zero, reduce microbatch" 0 \
            '^check: within tolerance'
    done
done
# Two stages a rank, each with its own buffer and reduces.
gen "$TMP/v.json" $DP --schedule zb-v --vpp 2 --placement v --zero 2
zbexec 4 "$TMP/v.json" --check --model "$MODEL" --iters 2 \
    --trace "$TMP/t.json"
expect "check: zb-v, zero 2, reduce microbatch" 0 '^check: within tolerance'
# A stage's reduces reuse one async id, one after the other.
if command -v python3 >/dev/null 2>&1; then
    expect_true "trace: reduces per microbatch keep every viewer's rules" \
        python3 "$(dirname "$0")/../lib/trace_check.py" "$TMP/t.json"
fi

# The report says how the gradients were reduced.
gen "$TMP/s.json" $DP --schedule 1f1b --zero 2
zbexec 4 "$TMP/s.json" --model "$MODEL" --report "$TMP/r.json"
expect "report: reduce microbatch" 0 \
    'dp 2, zero 2, reduce microbatch \(measures of replica 0\)'
grep -q '"dp": 2, "zero": 2, "reduce": "microbatch",' "$TMP/r.json" ||
    fail "report: reduce microbatch in the JSON"

# The model state against the model (as in t_dp.sh: this MLP's
# parameters, fp32 SGD, M_B's unit in bytes). Per microbatch the run
# holds what the model counts: the shard, and one full buffer from a W to
# its reduce-scatter's end (the step's reduce keeps the shard beside the
# full gradient instead).
L=2 H=16 B=4
P=$((L * (H * H + H))) unit=$(((8 + (L + 1) * B * H) * 4))
cat >"$TMP/prof.json" <<EOF
{"pp": 2, "vpp": 1, "microbatches": 4, "placement": "loop",
 "time": {"F": 1, "B": 1, "W": 1, "comm": 0},
 "memory": {"M_B": 1},
 "dp": 2, "zero": 2,
 "data_parallel": {"params": $P, "bytes_per_unit": $unit,
                   "reduce": "microbatch",
                   "bytes": {"weights": 4, "grads": 4, "optimizer": 0}}}
EOF
gen "$TMP/m.json" --profile "$TMP/prof.json" --schedule 1f1b
zbexec 4 "$TMP/m.json" --model "$MODEL" --iters 2
if awk '/^ +model_state +total_memory$/ { on = 1; getline; next }
        on && NF == 7 { n++; if ($4 > 1e-9 || $4 < -1e-9) bad = 1 }
        END { exit bad || n != 2 }' "$OUT"; then
    ok "model_state: reduce microbatch, realized as predicted"
else
    fail "model_state: reduce microbatch, realized as predicted"
fi

# Run-time checks behind the validator (--no-validate): without the
# reduce of stage 0's first microbatch, its next W would overwrite the
# buffer that still holds that gradient.
gen "$TMP/s.json" $DP --schedule 1f1b --zero 2
cp "$TMP/s.json" "$TMP/noreduce.json"
delete_line "$TMP/noreduce.json" \
    "$(op_line "$TMP/noreduce.json" 0 '"REDUCE_GRAD", "stage": 0, "mb": 0,')"
zbexec 4 "$TMP/noreduce.json" --model "$MODEL"
expect "refused: a W whose REDUCE_GRAD is missing" 1 \
    'comes before the REDUCE_GRAD of op' "$ERR"
zbexec 4 "$TMP/noreduce.json" --model "$MODEL" --no-validate
expect "stopped: a W before the previous microbatch's reduce" fail \
    "comes before the REDUCE_GRAD of its stage's previous W" "$ERR"
cp "$TMP/s.json" "$TMP/wrongmb.json"
set_mb "$TMP/wrongmb.json" \
    "$(op_line "$TMP/wrongmb.json" 0 '"REDUCE_GRAD", "stage": 0, "mb": 1,')" 3
zbexec 4 "$TMP/wrongmb.json" --model "$MODEL" --no-validate
expect "stopped: a REDUCE_GRAD naming another microbatch" fail \
    "does not follow its microbatch's W" "$ERR"
done_testing
