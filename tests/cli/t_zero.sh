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
[ "$(grep -c '"zero": 3, ' "$OUT")" -eq "$(wc -l <"$OUT")" ] ||
    fail "compare --json with --zero 3: a row of another stage"
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
expect_err "--zero-all needs data parallelism"

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
