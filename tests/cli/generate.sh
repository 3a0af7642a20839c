#!/usr/bin/env bash
# The main job and the commands around it: generate -> validate -> eval,
# compare, list.
. "$(dirname "$0")/lib.sh"

run "$ZBSCHED" generate --pp 8 --mb 32
expect_status 0 "main job"
expect_out '"format": "zbsched-schedule"'
expect_err "zb: cost 96, bubble_ratio 0.0000"
expect_err "vs 1f1b: cost 117"
cp "$tmp/out" "$tmp/zb.json"

run "$ZBSCHED" validate "$tmp/zb.json"
expect_status 0 "validate"
expect_out "is a legal zb schedule (pp 8, vpp 1, 32 microbatches)"

run "$ZBSCHED" eval "$tmp/zb.json" --json
expect_status 0 "eval"
expect_out '"cost": 96,'
expect_out '"fits_memory": true'

# Breaking the file: the validator names rank, op and position.
sed '0,/"op": "W", "stage": 3, "mb": 5/{/"op": "W", "stage": 3, "mb": 5/d}' \
    "$tmp/zb.json" >"$tmp/broken.json"
run "$ZBSCHED" validate "$tmp/broken.json"
expect_status 1 "missing W"
expect_err "rank 3: W stage 3 mb 5 is missing"

run "$ZBSCHED" compare --pp 4 --mb 8 --mem-limit 1p --m-w 0.5
expect_status 0 "compare"
expect_out "zb-h1"
grep -E '^zb-h2 .* no$' "$tmp/out" >/dev/null || fail "zb-h2 should not fit 1p"
grep -E '^zb +0\.1111 .* 27 .* yes$' "$tmp/out" >/dev/null ||
    fail "zb at 1p should cost 27 and fit"

run "$ZBSCHED" compare --pp 4 --vpp 2 --mb 8 --json
expect_status 0 "compare --json"
[ "$(grep -c '"schedule"' "$tmp/out")" -eq 3 ] ||
    fail "want 3 rows (interleaved, interleaved-zb, zb)"

run "$ZBSCHED" list
expect_status 0 "list"
for name in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v interleaved-zb zb; do
    grep -q "^$name " "$tmp/out" || fail "list lacks $name"
done

run "$ZBSCHED" generate --pp 1 --mb 4 -q
expect_status 0 "p = 1"
run "$ZBSCHED" generate --pp 8 --mb 3 -q
expect_status 0 "m < p"
run "$ZBSCHED" generate --pp 4 --mb 100000 --schedule 1f1b -q -o "$tmp/big.json"
expect_status 0 "huge m"
# An output that is not a regular file is written in place, not replaced.
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/from_fifo" &
run "$ZBSCHED" generate --pp 2 --mb 2 -q -o "$tmp/fifo"
wait
expect_status 0 "write to a FIFO"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced by a file"
grep -q '"zbsched-schedule"' "$tmp/from_fifo" || fail "nothing came through"

# The smallest limit the profile accepts (one microbatch's chunks) is
# always met: zb then runs one microbatch at a time.
run "$ZBSCHED" generate --pp 4 --vpp 2 --placement v --mb 8 --mem-limit 2 -q
expect_status 0 "least limit"
expect_out '"fits_memory": true'
finish
