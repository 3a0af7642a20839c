#!/usr/bin/env bash
# t_dp.sh - pipeline x data parallelism: p 2 x d 2 ranks replay schedules
# with ZeRO 0-3, and --check matches the sequential run over the whole
# global batch (exactly on the cpu backend, where two replicas' MPI sum is
# a + b whichever way round; within tolerance on the cuda one); the wrong
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
