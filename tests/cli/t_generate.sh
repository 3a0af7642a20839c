#!/usr/bin/env bash
# The main job and the commands around it: generate -> validate -> eval,
# compare, list.
. "$(dirname "$0")/../lib/tap.sh"

run "$ZBSCHED" generate --pp 8 --mb 32
expect_status 0 "main job"
expect_out '"format": "zbsched-schedule"'
expect_err "zb: cost 96, bubble_ratio 0.0000"
expect_err "peak memory 15 = 1.88x 1F1B"
expect_err "no --mem-limit: zb may use up to 4x 1F1B's memory"
expect_err "vs 1f1b: cost 117"
cp "$OUT" "$TMP/zb.json"

# At 1p the same job keeps 1F1B's memory, and a limit was given.
run "$ZBSCHED" generate --pp 8 --mb 32 --mem-limit 1p
expect_status 0 "main job at 1p"
expect_err "peak memory 8 = 1.00x 1F1B"
grep -q "no --mem-limit" "$ERR" && fail "a limit was given"

# A limit and no --schedule: the best of the frontier's candidates. The
# shape is the profile's, so zb wins (it takes every family as a
# candidate); it meets the lower bounds, so no other family of the shape
# is built to tie it, and the line says why there is no runner-up.
expect_err "picked zb (loop, vpp 1): cost 103; optimal (meets the lower bound)"
# Two slower stages: zb is above the bound, and the runner-up is a family
# of the same shape.
printf '{"pp": 8, "microbatches": 32, "time": {"F": 1, "B": 1, "W": 1},
  "stages": [{"F": 1, "B": 1, "W": 1}, {"F": 2, "B": 1, "W": 1},
  {"F": 1, "B": 2.5, "W": 1}, {"F": 1, "B": 1, "W": 1},
  {"F": 1, "B": 1, "W": 1}, {"F": 1, "B": 1, "W": 1},
  {"F": 1, "B": 1, "W": 1}, {"F": 1, "B": 1, "W": 1}],
  "memory": {"M_B": 1, "M_W": 0.5, "limit": 8}}\n' > "$TMP/slow2.json"
run "$ZBSCHED" generate --profile "$TMP/slow2.json"
expect_status 0 "two slower stages"
grep -E 'picked zb \(loop, vpp 1\): cost [0-9.]+; runner-up [a-z0-9-]+ \(loop, vpp 1\)' \
    "$ERR" >/dev/null || fail "runner-up should be a loop, vpp 1 family"
run "$ZBSCHED" generate --pp 8 --mb 32 -q
grep -q "picked" "$ERR" && fail "no limit: zb as before, no pick"

# Per rank and no shape given: every shape competes on the same model;
# V wins at 1p (no bubble), the runner-up is the best loop shape's.
run "$ZBSCHED" generate --pp 4 --mb 8 --per rank --mem-limit 1p
expect_status 0 "pick among shapes"
expect_out '"placement": "v", "stage_rank"'
expect_err "picked zb (v, vpp 2): cost 24; runner-up zb (loop, vpp "
expect_err "zb: cost 24, bubble_ratio 0.0000"
run "$ZBSCHED" generate --pp 4 --mb 8 --per rank --mem-limit 1p -q
expect_status 0 "pick, quiet"
expect_err_lines 0
# A family beats zb where zb cannot follow: dualpipev's overlapped FB.
run "$ZBSCHED" generate --pp 4 --mb 8 --placement v --fb 1.2 \
    --mem-limit 1.5p
expect_out '"schedule": "dualpipev"'
expect_err "picked dualpipev (v, vpp 2): cost 45.4; runner-up zb (v, vpp 2)"
# Naming a shape fixes it: only the families of that shape compete.
run "$ZBSCHED" generate --pp 4 --mb 8 --per rank --vpp 3 --mem-limit 1p
expect_err "picked zb (loop, vpp 3)"
grep -q "(v, vpp 2)" "$ERR" && fail "a named vpp keeps the shape"

# A family runs in its own shape; ZB-V at 1p has 1F1B's memory and, with
# a per-rank profile (the same model as 1F1B's), no bubble.
run "$ZBSCHED" generate --pp 8 --mb 32 --schedule zb-v --per rank \
    --mem-limit 1p
expect_status 0 "zb-v in its own shape"
expect_out '"placement": "v", "stage_rank"'
expect_err "zb-v: cost 96, bubble_ratio 0.0000"
expect_err "peak memory 8 = 1.00x 1F1B"
run "$ZBSCHED" generate --pp 8 --mb 32 --schedule interleaved -q
expect_status 0 "interleaved in its own shape"
expect_out '"vpp": 2'

run "$ZBSCHED" validate "$TMP/zb.json"
expect_status 0 "validate"
expect_out "is a legal zb schedule (pp 8, vpp 1, 32 microbatches)"

run "$ZBSCHED" eval "$TMP/zb.json" --json
expect_status 0 "eval"
expect_out '"cost": 96,'
expect_out '"fits_memory": true'

# Breaking the file: the validator names rank, op and position.
sed '0,/"op": "W", "stage": 3, "mb": 5/{/"op": "W", "stage": 3, "mb": 5/d}' \
    "$TMP/zb.json" >"$TMP/broken.json"
run "$ZBSCHED" validate "$TMP/broken.json"
expect_status 1 "missing W"
expect_err "rank 3: W stage 3 mb 5 is missing"

run "$ZBSCHED" compare --pp 4 --mb 8 --mem-limit 1p --m-w 0.5
expect_status 0 "compare"
expect_out "zb-h1"
grep -E '^zb-h2 .* no$' "$OUT" >/dev/null || fail "zb-h2 should not fit 1p"
grep -E '^zb +0\.1111 .* 27 .* yes$' "$OUT" >/dev/null ||
    fail "zb at 1p should cost 27 and fit"
grep -E '^zb-h2 .* 7 +1\.75x .* no$' "$OUT" >/dev/null ||
    fail "zb-h2's peak should read 7 = 1.75x 1F1B"
expect_out "x1f1b: peak memory over 1F1B's activation peak (1p = 4)"

run "$ZBSCHED" compare --pp 4 --vpp 2 --mb 8 --json --time-limit 0
expect_status 0 "compare --json"
jq -e '.rows | length == 3' "$OUT" >/dev/null ||
    fail "want 3 rows (interleaved, interleaved-zb, zb)"
expect_out '"peak_vs_1f1b": '
expect_err "no --mem-limit: zb may use up to 2x 1F1B's memory"

# Per rank and no shape given: every family on the same model in its own
# shape; ZB-V matches ZB-H2's cost at 1F1B's memory; gaps within a shape.
run "$ZBSCHED" compare --pp 4 --mb 8 --per rank --mem-limit 1p --time-limit 0
expect_status 0 "compare per rank"
grep -E '^zb-v +0\.0000 .* 24 .* 4 +1\.00x +0\.00% +yes$' "$OUT" >/dev/null ||
    fail "zb-v in v 2 should cost 24 at 1p"
grep -E '^1f1b .* 33 .* 22\.22% +yes$' "$OUT" >/dev/null ||
    fail "1f1b's gap is against its own shape's bound (27)"
expect_out "each family in its own: interleaved loop 2, zb-v v 2,"
run "$ZBSCHED" compare --pp 4 --mb 8 --per rank --time-limit 0 --json
expect_out '{"schedule": "zb-v", "placement": "v", "vpp": 2, "cost": 24,'

# With the solver: its row, and every gap against the best proven bound.
run "$ZBSCHED" compare --pp 4 --mb 8 --f 1 --b 1.2 --w 0.8 --comm 0.05 \
    --m-w 0.5 --mem-limit 2p --time-limit 20
expect_status 0 "compare with ilp"
grep -E '^ilp .* yes  (optimal|feasible|heuristic)$' "$OUT" >/dev/null ||
    fail "no ilp row with a status"
expect_out "gap: cost over the best proven lower bound"

run "$ZBSCHED" compare --pp 4 --mb 8 --m-w 0.5 --mem-sweep 1p:2p:0.5p \
    --time-limit 0
expect_status 0 "mem-sweep"
grep -E '^ +4 +27 ' "$OUT" >/dev/null || fail "1p: zb 27"
grep -E '^ +8 +24 ' "$OUT" >/dev/null || fail "2p: zb 24"
run "$ZBSCHED" compare --pp 4 --mem-sweep 2p:1p:1
expect_status 2 "bad sweep"
expect_err "--mem-sweep wants FROM:TO:STEP"

run "$ZBSCHED" generate --pp 4 --mb 8 --time-limit 5
expect_status 2 "solver flag without ilp"
expect_err "generate: --time-limit does not apply to --schedule zb (only to ilp)"

run "$ZBSCHED" list
expect_status 0 "list"
for name in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v v-half v-min \
    dualpipev interleaved-zb zb; do
    grep -q "^$name " "$OUT" || fail "list lacks $name"
done
# Each family beside the PyTorch (torchtitan) schedule that runs its order.
for pair in 1f1b:1F1B gpipe:GPipe interleaved:Interleaved1F1B \
    interleaved-zb:InterleavedZeroBubble zb-v:ZBVZeroBubble \
    dualpipev:DualPipeV; do
    awk -v f="${pair%%:*}" -v t="${pair##*:}" '$1 == f && $4 == t { ok = 1 }
        END { exit !ok }' "$OUT" || fail "list: ${pair%%:*} is not ${pair##*:}"
done
awk '$1 == "zb-h1" && $4 == "-" { ok = 1 } END { exit !ok }' "$OUT" ||
    fail "list: zb-h1 has no PyTorch schedule"

run "$ZBSCHED" generate --pp 1 --mb 4 -q
expect_status 0 "p = 1"
run "$ZBSCHED" generate --pp 8 --mb 3 -q
expect_status 0 "m < p"
# The largest shape accepted (profile.h, ZB_MAX_PASSES).
run "$ZBSCHED" generate --pp 4 --mb 83333 --schedule 1f1b -q -o "$TMP/big.json"
expect_status 0 "huge m"
# An output that is not a regular file is written in place, not replaced.
mkfifo "$TMP/fifo"
cat "$TMP/fifo" >"$TMP/from_fifo" &
run "$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/fifo"
wait
expect_status 0 "write to a FIFO"
[ -p "$TMP/fifo" ] || fail "the FIFO was replaced by a file"
grep -q '"zbsched-schedule"' "$TMP/from_fifo" || fail "nothing came through"

# The smallest limit the profile accepts (one microbatch's chunks) is
# always met: zb then runs one microbatch at a time.
run "$ZBSCHED" generate --pp 4 --vpp 2 --placement v --mb 8 --mem-limit 2 -q
expect_status 0 "least limit"
expect_out '"fits_memory": true'
done_testing
