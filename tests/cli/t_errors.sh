#!/usr/bin/env bash
# Bad input: one clear line on stderr, the right exit status, no output
# file left behind.
. "$(dirname "$0")/../lib/tap.sh"

run "$ZBSCHED" generate --pp 4 --mb 8 --frobnicate
expect_status 2 "unknown flag"
expect_err "unknown option '--frobnicate'"
expect_err_lines 1

run "$ZBSCHED" frobnicate
expect_status 2 "unknown command"

run "$ZBSCHED" generate --pp 0
expect_status 1 "pp 0"
expect_err "zbsched: pp must be an integer >= 1, got 0"
expect_err_lines 1

run "$ZBSCHED" generate --pp 4 --f -1
expect_status 1 "negative time"
expect_err "time.F must be a finite number > 0, got -1"

run "$ZBSCHED" generate --pp 4 --mem-limit 0.5
expect_status 1 "limit below M_B"
expect_err "memory.limit = 0.5 is below one microbatch's activations"

# A family's shape is its default; an explicit value it cannot serve is
# one line naming both.
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule interleaved --vpp 1
expect_status 1 "vpp refusal"
expect_err "interleaved needs vpp between 2 and 64, got 1"
expect_err_lines 1
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule zb-v --placement loop
expect_status 1 "placement refusal"
expect_err "zb-v needs placement 'v', got 'loop'"
expect_err_lines 1
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule zb-v --vpp 3
expect_status 1 "vpp refusal under v"
expect_err "zb-v needs vpp = 2, got 3"
expect_err_lines 1
printf '{"pp": 4, "vpp": 1, "microbatches": 8}\n' >"$TMP/vpp1.json"
run "$ZBSCHED" generate --profile "$TMP/vpp1.json" --schedule zb-v
expect_status 1 "the file's vpp is explicit too"
expect_err "zb-v needs vpp = 2, got 1"
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule 1f1b --placement v
expect_status 1 "fixed family under v"
expect_err "1f1b needs placement 'loop', got 'v'"
run "$ZBSCHED" generate --pp 4 --per layer
expect_status 2 "bad --per"
expect_err "--per must be 'rank' or 'chunk', got 'layer'"

run "$ZBSCHED" generate --pp 4 --mb 8 --schedule nope
expect_status 2 "unknown schedule"
expect_err "unknown schedule 'nope'"

printf '{\n  "pp": 4,\n  "microbatches" 8\n}\n' >"$TMP/bad.json"
run "$ZBSCHED" generate --profile "$TMP/bad.json" -o "$OUT.json"
expect_status 1 "malformed JSON"
expect_err "'$TMP/bad.json': malformed JSON at line 3, column 18"
[ ! -e "$OUT.json" ] || fail "a failed generate left $OUT.json"

printf '{"pp": 4, "microbatches": 8, "colour": "red"}\n' >"$TMP/unk.json"
run "$ZBSCHED" generate --profile "$TMP/unk.json" -q -o "$OUT.json"
expect_status 1 "unknown key is an error"
expect_err "unknown key 'colour'"

# A fixed family over the limit is refused, not written.
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule gpipe --mem-limit 1p \
    -o "$TMP/gpipe.json"
expect_status 1 "gpipe over the limit"
expect_err "gpipe needs 8 memory on rank 0 (2.00x 1F1B), above its limit 4"
[ ! -e "$TMP/gpipe.json" ] || fail "refused schedule was written"

run "$ZBSCHED" validate "$TMP/missing.json"
expect_status 1 "missing file"
expect_err "cannot open '$TMP/missing.json'"

run "$ZBSCHED" generate --profile /dev/null
expect_status 1 "empty profile"
expect_err "malformed JSON at line 1, column 1"
done_testing
