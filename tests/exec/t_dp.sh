#!/usr/bin/env bash
# t_dp.sh - pipeline x data parallelism: p 2 x d 2 ranks replay schedules
# with ZeRO 0-3, and --check matches the sequential run over the whole
# global batch (exactly on the cpu backend, where two replicas' MPI sum is
# a + b whichever way round; within tolerance on the cuda one); the
# realized step_time and model state beside the predicted; the wrong
# world size and the run-time checks of the collectives.
. "$(dirname "$0")/lib.sh"
DP="--pp 2 --mb 4 --dp 2 --params 1000"
if [ "$BACKEND" = cpu ]; then want='^check: exact match'
else want='^check: within tolerance'; fi

for zero in 0 1 2 3; do
    for g in 1f1b zb; do
        gen "$TMP/s.json" $DP --schedule "$g" --zero "$zero"
        zbexec 4 "$TMP/s.json" --check --model "$MODEL"
        expect "check: $g at p 2 x d 2, zero $zero" 0 "$want"
    done
done

# ZB-V (two stages a rank, each with its own collectives), three
# iterations, a NaN in one replica's microbatch (global mb 5 is replica
# 1's), clipping and post-validation's rollback: every replica takes the
# same decision from the global check.
gen "$TMP/v.json" $DP --schedule zb-v --vpp 2 --placement v --zero 3
zbexec 4 "$TMP/v.json" --check --model "$MODEL" --iters 3 --clip 0.5 \
    --post-validation --inject-nan 1:5 --trace "$TMP/t.json"
expect "check: zb-v, zero 3, NaN on replica 1, clipping, rollback" 0 \
    "$want"
grep -q '^step 1: skipped, non-finite gradient (rolled back)' "$OUT" ||
    fail "the NaN on replica 1 skips the step on every replica"
# The trace draws each collective's post and its time in flight (two
# stages' collectives overlap: async spans, not slices of one thread).
grep -q '"ph": "b", "id": [0-9]*, "name": "UNSHARD s3"' "$TMP/t.json" ||
    fail "trace: UNSHARD s3 in flight"
if command -v python3 >/dev/null 2>&1; then
    expect_true "trace: with collectives, keeps every viewer's rules" \
        python3 "$(dirname "$0")/../lib/trace_check.py" "$TMP/t.json"
fi
expect_true "trace: zbsched render draws it" \
    "$ZBSCHED" render "$TMP/v.json" --realized "$TMP/t.json" \
    -o "$TMP/realized.svg"

# More replicas than two: MPI's reduction order is its own, so the check
# allows the tolerance of the cuda backend. A stage's 544 parameters make
# shards of 182, 181 and 181: the cuda backend's NCCL path stages them in
# padded slots (reduce-scatter; all-gather out of place for ZeRO-3, in
# place after the ZeRO-1/2 step).
for zero in 1 2 3; do
    gen "$TMP/d3.json" --pp 2 --mb 4 --dp 3 --params 1000 --schedule zb-h1 \
        --zero "$zero"
    zbexec 6 "$TMP/d3.json" --check --model "$MODEL"
    expect "check: zb-h1 at p 2 x d 3, zero $zero" 0 \
        '^check: within tolerance'
done

# The report names the data parallelism; the measures are replica 0's.
gen "$TMP/s.json" $DP --schedule 1f1b --zero 1
zbexec 4 "$TMP/s.json" --model "$MODEL" --report "$TMP/r.json"
expect "report: dp 2, measures of replica 0" 0 \
    'dp 2, zero 1 \(measures of replica 0\)'
grep -q '"dp": 2, "zero": 1,' "$TMP/r.json" || fail "report: dp and zero"

# realized NAME: the realized column of measure NAME's summary row.
realized() { awk -v m="$1" '$1 == m && NF == 4 { print $3 }' "$OUT"; }

# The step with its collectives: its realized time, from the first pass
# or collective to the last completion, holds the compute's makespan.
span=$(realized makespan) step=$(realized step_time)
if [ -n "$step" ] &&
    awk -v s="$step" -v m="$span" 'BEGIN { exit !(s >= m && m > 0) }'; then
    ok "step_time: realized $step >= the compute's makespan $span"
else
    fail "step_time: realized '$step' >= the compute's makespan '$span'"
fi
[ "$(grep -c '"step_time": ' "$TMP/r.json")" -eq 3 ] ||
    fail "report: step_time predicted, realized and difference"
[ "$(grep -o '"model_state": ' "$TMP/r.json" | wc -l)" -eq 6 ] &&
    [ "$(grep -o '"total_memory": ' "$TMP/r.json" | wc -l)" -eq 6 ] ||
    fail "report: model_state and total_memory for each rank, 3 blocks"

# Without data parallelism nothing of the above appears.
gen "$TMP/one.json" --pp 2 --mb 4 --schedule 1f1b
zbexec 2 "$TMP/one.json" --model "$MODEL" --report "$TMP/one-r.json"
expect "dp 1: runs" 0
! grep -qE 'step_time|model_state|total_memory' "$OUT" "$TMP/one-r.json" ||
    fail "dp 1: no step_time, model_state or total_memory"

# The model state against the model (zero.md): a profile with this MLP's
# parameters per stage (L (H^2 + H)), fp32 weights and gradients, no
# optimizer state (SGD) and its M_B unit in bytes (one F keeps 8 + (L+1)
# B H floats; its M_W is the MLP's own). ZeRO-0 holds what the model
# says, model state and total; ZeRO 1-3 hold their reduced gradient shard
# beside the full gradient, P/d floats more (docs/zbexec.md).
L=2 H=16 B=4
P=$((L * (H * H + H))) unit=$(((8 + (L + 1) * B * H) * 4))
mw=$(awk -v l=$L -v a=$((B * H)) \
    'BEGIN { print (8 + 2 * l * a) / (8 + (l + 1) * a) }')
cat >"$TMP/prof.json" <<EOF
{"pp": 2, "vpp": 1, "microbatches": 4, "placement": "loop",
 "time": {"F": 1, "B": 1, "W": 1, "comm": 0},
 "memory": {"M_B": 1, "M_W": $mw},
 "dp": 2, "zero": 0,
 "data_parallel": {"params": $P, "bytes_per_unit": $unit,
                   "bytes": {"weights": 4, "grads": 4, "optimizer": 0}}}
EOF
for zero in 0 1 2 3; do
    for g in 1f1b zb; do
        gen "$TMP/m.json" --profile "$TMP/prof.json" --schedule "$g" \
            --zero "$zero"
        zbexec 4 "$TMP/m.json" --model "$MODEL" --iters 2
        want=$(awk -v z=$zero -v p=$P -v u=$unit \
            'BEGIN { print z ? p / 2 * 4 / u : 0 }')
        # The model_state / total_memory table's rows: the rank, then
        # predicted, realized and difference of each.
        if awk -v w="$want" -v z=$zero '
            /^ +model_state +total_memory$/ { on = 1; getline; next }
            on && NF == 7 { n++
                if ($4 - w > 1e-9 || w - $4 > 1e-9) bad = 1
                if (z == 0 && ($7 > 1e-9 || $7 < -1e-9)) bad = 1 }
            END { exit bad || n != 2 }' "$OUT"; then
            ok "model_state: $g, zero $zero, realized - predicted = $want"
        else
            fail "model_state: $g, zero $zero, realized - predicted = $want"
        fi
    done
done

# --profile-out of a dp run describes this model state (the MLP's
# parameters, 4/4/0 bytes, M_B's MiB): a schedule made from it predicts
# what the run holds, model state and total, exactly at ZeRO-0.
gen "$TMP/a.json" $DP --schedule zb --zero 0
zbexec 4 "$TMP/a.json" --model "$MODEL" --iters 3 --profile-out "$TMP/po.json"
expect "profile-out: a dp run writes it" 0
grep -q "\"params\": $P, " "$TMP/po.json" &&
    grep -q '"bytes": {"weights": 4, "grads": 4, "optimizer": 0}' \
        "$TMP/po.json" ||
    fail "profile-out: the MLP's parameters and fp32 SGD's bytes"
gen "$TMP/b.json" --profile "$TMP/po.json" --schedule zb
zbexec 4 "$TMP/b.json" --model "$MODEL" --iters 2
if awk '/^ +model_state +total_memory$/ { on = 1; getline; next }
        on && NF == 7 { n++
            for (k = 4; k <= 7; k += 3)
                if ($k > 1e-12 || $k < -1e-12) bad = 1 }
        END { exit bad || n != 2 }' "$OUT"; then
    ok "profile-out: realized model_state and total_memory as predicted"
else
    fail "profile-out: realized model_state and total_memory as predicted"
fi

# The wrong world size: one line naming p x d.
zbexec 3 "$TMP/s.json" --model "$MODEL"
want='pp 2 x dp 2 = 4 ranks but 3 processes were started: '
expect "refused: 3 processes for p 2 x d 2" 1 \
    "rank 0: .*${want}run it with mpirun -np 4\$" "$ERR"
[ "$(grep -c '^zbexec:' "$ERR")" -eq 1 ] || fail "the refusal is one line"
zbexec 4 "$TMP/s.json" --synthetic
expect "refused: --synthetic with dp 2" 1 'does not emulate' "$ERR"

# Run-time checks behind the validator (--no-validate).
cp "$TMP/s.json" "$TMP/noreduce.json"
delete_line "$TMP/noreduce.json" \
    "$(op_line "$TMP/noreduce.json" 0 '"REDUCE_GRAD", "stage": 0,')"
zbexec 4 "$TMP/noreduce.json" --model "$MODEL"
expect "refused: a stage without REDUCE_GRAD" 1 'stage 0 has no REDUCE_GRAD' \
    "$ERR"
zbexec 4 "$TMP/noreduce.json" --model "$MODEL" --no-validate
expect "stopped: a stage without REDUCE_GRAD, at STEP" fail \
    'STEP: stage 0 has no REDUCE_GRAD' "$ERR"
gen "$TMP/z3.json" $DP --schedule 1f1b --zero 3
delete_line "$TMP/z3.json" \
    "$(op_line "$TMP/z3.json" 1 '"UNSHARD", "stage": 1,')"
zbexec 4 "$TMP/z3.json" --model "$MODEL" --no-validate
expect "stopped: ZeRO-3 pass without UNSHARD" fail \
    'runs on sharded weights' "$ERR"
done_testing
