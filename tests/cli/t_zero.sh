#!/usr/bin/env bash
# t_zero.sh - data parallelism with ZeRO (docs/zero.md): the PP x ZeRO
# rows of compare, generate -> validate -> eval with collectives, the
# errors, and that a profile without dp writes no trace of it.
. "$(dirname "$0")/../lib/tap.sh"

dp="--pp 4 --mb 8 --dp 4 --params 1e9 --bandwidth 1e9 --latency 0.01"

run "$ZBSCHED" compare $dp --zero-all
expect_status 0 "compare --zero-all"
expect_out "step_wgroup"
expect_out "fastest that fits:"
# 1F1B at unit times ends at 33; ZeRO-0's all-reduce adds 6(0.01 + 0.5).
expect_out "1f1b               0           33        36.06        36.06"
for z in 0 1 2 3; do
    [ "$(grep -cE "^[a-z0-9-]+ +$z " "$OUT")" -ge 4 ] ||
        fail "compare --zero-all has fewer than 4 rows for zero $z"
done
grep -q "^ilp" "$OUT" && fail "compare with dp lists the ilp row"

run "$ZBSCHED" compare $dp --zero 3 --json
expect_status 0 "compare --json with dp"
jq -e '(.rows | length > 3) and all(.rows[]; .zero == 3) and
       .fastest_that_fits.zero == "3"' "$OUT" >/dev/null ||
    fail "compare --json with --zero 3: one document, rows of stage 3"
expect_out '"schedule": "zb", "zero": 3, "cost": '
expect_out '"step_time_grouped_w": '

run "$ZBSCHED" generate $dp --zero 3 --vpp 2 --placement v -o "$TMP/v.json"
expect_status 0 "generate with zero 3"
expect_err "step time "
grep -q '{"op": "UNSHARD", "stage": 7, "start": ' "$TMP/v.json" ||
    fail "no UNSHARD of stage 7 in the schedule"
run "$ZBSCHED" validate "$TMP/v.json"
expect_status 0 "validate with collectives"
run "$ZBSCHED" eval "$TMP/v.json"
expect_status 0 "eval with collectives"
expect_out "step_time "
expect_out "total_memory"

# ilp minimises the step: zb's order meets zb_bound_step() here (the cost
# objective's optimum, cost 48, ends its step at 56.12), and the summary
# line, the solver block and step_time say the same number.
run "$ZBSCHED" generate $dp --zero 1 --vpp 2 --placement v --schedule ilp \
    --time-limit 5 -o "$TMP/ilp.json"
expect_status 0 "ilp with dp"
expect_err "ilp: optimal, step 54.06, bound 54.06,"
grep -q '"objective": 54.06, "bound": 54.06,' "$TMP/ilp.json" ||
    fail "ilp's solver block is not the step"
grep -q '"step_time": 54.06,' "$TMP/ilp.json" || fail "ilp's step_time"

# A stage whose gather is gone: the validator names the pass.
sed '/"op": "UNSHARD", "stage": 0,/d' "$TMP/v.json" >"$TMP/gatherless.json"
run "$ZBSCHED" validate "$TMP/gatherless.json"
expect_status 1 "a stage without UNSHARD"
expect_err "runs on a sharded stage: no UNSHARD"

run "$ZBSCHED" generate --pp 4 --mb 8 --zero 2 -q
expect_status 1 "zero without dp"
expect_err "zero 2 needs dp >= 2, got dp 1"
expect_err_lines 1
run "$ZBSCHED" generate $dp --zero 4 -q
expect_status 1 "zero 4"
expect_err "zero must be an integer from 0 to 3, got 4"
run "$ZBSCHED" compare --pp 4 --mb 8 --zero-all
expect_status 2 "--zero-all without dp"
expect_err "compare: --zero-all does not apply without data parallelism"

# ZeRO-2 reducing per microbatch (--reduce microbatch): compare's "2mb"
# rows, one REDUCE_GRAD per W naming its microbatch, the validator, the
# CSV round trip and the errors.
run "$ZBSCHED" compare $dp --zero-all
[ "$(grep -cE "^[a-z0-9-]+ +2mb " "$OUT")" -ge 4 ] ||
    fail "compare --zero-all has fewer than 4 rows for zero 2mb"
run "$ZBSCHED" compare $dp --zero 2 --reduce microbatch --json
expect_status 0 "compare --json, reduce microbatch"
jq -e 'all(.rows[]; .zero == 2 and .reduce == "microbatch")' "$OUT" \
    >/dev/null || fail "compare --json: a row without reduce"
run "$ZBSCHED" generate $dp --zero 2 --reduce microbatch -o "$TMP/mb.json"
expect_status 0 "generate, reduce microbatch"
expect_err "with dp 4 zero 2 reduce microbatch,"
# pp 4, vpp 1, 8 microbatches: 4 x 8 of them, each naming its microbatch.
[ "$(grep -c '"op": "REDUCE_GRAD", "stage": [0-9]*, "mb": ' \
    "$TMP/mb.json")" -eq 32 ] || fail "not one REDUCE_GRAD per W"
grep -q '"reduce": "microbatch"' "$TMP/mb.json" ||
    fail "the schedule's profile does not say reduce microbatch"
run "$ZBSCHED" validate "$TMP/mb.json"
expect_status 0 "validate, reduce microbatch"
run "$ZBSCHED" eval "$TMP/mb.json"
expect_out "step_time 34.65  dp 4  zero 2 reduce microbatch (collectives"
sed '/"op": "REDUCE_GRAD", "stage": 0, "mb": 7,/d' "$TMP/mb.json" \
    >"$TMP/mb-missing.json"
run "$ZBSCHED" validate "$TMP/mb-missing.json"
expect_status 1 "a W without its REDUCE_GRAD"
expect_err "(W stage 0 mb 7) has no REDUCE_GRAD after it"
sed 's/"op": "REDUCE_GRAD", "stage": 0, "mb": 2,/"op": "REDUCE_GRAD", "stage": 0, "mb": 3,/' \
    "$TMP/mb.json" >"$TMP/mb-moved.json"
run "$ZBSCHED" validate "$TMP/mb-moved.json"
expect_status 1 "a REDUCE_GRAD naming another microbatch"
expect_err "(REDUCE_GRAD stage 0 mb 3) does not follow its microbatch's W"
run "$ZBSCHED" export --to torch-csv --format compute_comms "$TMP/mb.json" \
    -o "$TMP/mb.csv"
grep -q ',0W7,0REDUCE_GRAD7' "$TMP/mb.csv" ||
    fail "compute_comms: no REDUCE_GRAD naming its microbatch after its W"
run "$ZBSCHED" import --from torch-csv --name zb $dp --zero 2 \
    --reduce microbatch -q "$TMP/mb.csv"
expect_status 0 "import compute_comms, reduce microbatch"
cmp -s "$OUT" "$TMP/mb.json" || fail "the CSV round trip changes the schedule"
run "$ZBSCHED" import --from torch-csv $dp --zero 2 -q "$TMP/mb.csv"
expect_status 1 "import per-microbatch reduces with a step profile"
expect_err "the CSV reduces gradients per microbatch, the profile does not"
run "$ZBSCHED" generate $dp --zero 1 --reduce microbatch -q
expect_status 1 "reduce microbatch with zero 1"
expect_err "reduce microbatch needs zero >= 2 (sharded gradients), got zero 1"
expect_err_lines 1
run "$ZBSCHED" generate $dp --zero 2 --reduce layer -q
expect_status 2 "--reduce layer"
expect_err "--reduce must be \"step\" or \"microbatch\", got 'layer'"
expect_err_lines 1
echo '{"pp": 2, "microbatches": 4, "dp": 2, "zero": 2,
       "data_parallel": {"reduce": 1}}' >"$TMP/bad.json"
run "$ZBSCHED" generate --profile "$TMP/bad.json" -q
expect_status 1 "data_parallel.reduce not a string"
expect_err "data_parallel.reduce must be a string"

# Without dp nothing changes: dp 1 writes the same bytes as no dp.
run "$ZBSCHED" generate --pp 4 --mb 8 --dp 1
expect_status 0 "dp 1"
for word in '"dp"' step_time REDUCE_GRAD total_memory; do
    grep -q "$word" "$OUT" && fail "dp 1 writes $word"
done
cp "$OUT" "$TMP/dp1.json"
run "$ZBSCHED" generate --pp 4 --mb 8
cmp -s "$OUT" "$TMP/dp1.json" || fail "dp 1 changes the schedule file"
done_testing
