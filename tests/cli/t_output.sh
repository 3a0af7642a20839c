#!/usr/bin/env bash
# t_output.sh - one command line (issue 42, item 5): -o FILE and -o - and
# --json on every command that prints a result, each --json one JSON
# document; -q silences stderr's summary the same way everywhere; an
# option a command has but that does not apply (or one of another
# command) is a usage error naming both; export infers its format from
# -o's extension.
. "$(dirname "$0")/../lib/tap.sh"

"$ZBSCHED" generate --pp 4 --mb 8 -q -o "$TMP/s.json" ||
    fail "generate for the checks below"
printf '{"pp": 2, "microbatches": 4, "time": {"F": 1, "B": 2, "W": 0.01},'\
' "memory": {"M_B": 1}}\n' >"$TMP/p.json"

# Each command: its --json is one document (jq reads exactly one value),
# and -o FILE holds what stdout would, byte for byte, with stdout empty.
cmds=(
    "list"
    "eval $TMP/s.json"
    "eval $TMP/s.json --jitter 0.1 --samples 50 --seed 3"
    "validate $TMP/s.json"
    "compare --pp 4 --mb 8 --time-limit 0 -q"
    "compare --pp 4 --mb 8 --time-limit 0 --mem-sweep 1p:2p:0.5p"
    "compare --pp 4 --mb 8 --dp 2 --zero 1 --time-limit 0 -q"
    "frontier --pp 4 --mb 8 --effort -1"
    "check-profile $TMP/p.json"
)
for c in "${cmds[@]}"; do
    run "$ZBSCHED" $c --json
    expect_status 0 "$c --json"
    [ "$(jq -s length "$OUT" 2>/dev/null)" = 1 ] ||
        fail "$c --json: not one JSON document"
    cp "$OUT" "$TMP/want"
    rm -f "$TMP/o.json"
    run "$ZBSCHED" $c --json -o "$TMP/o.json"
    expect_status 0 "$c --json -o FILE"
    [ -s "$OUT" ] && fail "$c -o FILE: wrote to stdout too"
    cmp -s "$TMP/o.json" "$TMP/want" || fail "$c -o FILE differs from stdout"
    run "$ZBSCHED" $c --json -o -
    cmp -s "$OUT" "$TMP/want" || fail "$c -o - differs from stdout"
done

# The verdict is in compare's document and table alike.
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --mem-limit 1p --json
jq -e '.fastest_that_fits.cost == 27 and (.rows | length >= 5) and
       all(.rows[]; has("schedule"))' "$OUT" >/dev/null ||
    fail "compare --json: no verdict or rows"
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --mem-limit 1p
expect_out "fastest that fits: zb-h1 (loop, vpp 1), cost 27"
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --mem-sweep 1p:2p:1p \
    --json
jq -e '.points[0].zb == 27 and .points[1].zb == 24 and
       .points[0].ilp == null' "$OUT" >/dev/null ||
    fail "compare --mem-sweep --json: want zb 27 at 1p, 24 at 2p"
run "$ZBSCHED" validate "$TMP/s.json" --json
jq -e '.valid == true and .pp == 4 and .microbatches == 8' "$OUT" \
    >/dev/null || fail "validate --json: the verdict"
jq '.profile.memory.limit = 2' "$TMP/s.json" >"$TMP/over.json"
run "$ZBSCHED" validate "$TMP/over.json" --json
expect_status 1 "validate --json of an illegal schedule"
jq -e '.valid == false and (.error | length > 0)' "$OUT" >/dev/null ||
    fail "validate --json: no false verdict with its reason"
expect_err_lines 1
run "$ZBSCHED" list --json
jq -e '[.schedules[].name] | index("zb-v") and index("1f1b")' "$OUT" \
    >/dev/null || fail "list --json: the families"
jq -e '.schedules[] | select(.name == "zb-v") | .placement == ["v"] and
       .pytorch == "ZBVZeroBubble"' "$OUT" >/dev/null ||
    fail "list --json: zb-v's columns"
run "$ZBSCHED" check-profile "$TMP/p.json" --json
jq -e '.warnings | length == 2' "$OUT" >/dev/null ||
    fail "check-profile --json: the two stages' warnings"
[ -s "$ERR" ] && fail "check-profile --json: warnings on stderr too"

# A failed command writes no -o file.
run "$ZBSCHED" eval "$TMP/over.json" -o "$TMP/e.txt"
expect_status 1 "eval over its limit"
[ -s "$TMP/e.txt" ] || fail "eval -o: the measures say by how much"
rm -f "$TMP/none.txt"
run "$ZBSCHED" compare --pp 4 --mb 3 --dp 2 --zero 9 -o "$TMP/none.txt"
[ "$status" -ne 0 ] || fail "compare with zero 9 should fail"
[ -e "$TMP/none.txt" ] && fail "a failed compare left its -o file"

# -q: the same words, the same meaning: no summary or note on stderr.
for c in "generate --pp 4 --mb 8 -o $TMP/q.json" \
         "compare --pp 4 --mb 8 --time-limit 0" \
         "frontier --pp 4 --mb 8 --effort -1" \
         "import --from torch-csv $TMP/x.csv --pp 4 --mb 8 -o $TMP/i.json"; do
    [ -e "$TMP/x.csv" ] ||
        "$ZBSCHED" export "$TMP/s.json" -o "$TMP/x.csv" 2>/dev/null
    run "$ZBSCHED" $c
    [ "$status" -eq 0 ] || fail "$c"
    [ -s "$ERR" ] || [[ $c == frontier* ]] || fail "$c: no summary to silence"
    run "$ZBSCHED" $c -q
    expect_status 0 "$c -q"
    [ -s "$ERR" ] && fail "$c -q: wrote to stderr"
done
for h in generate compare frontier import profile plan; do
    "$ZBSCHED" "$h" --help >"$TMP/help"
    grep -qE -- "^  -q, --quiet +no summary, notes or progress on stderr$" \
        "$TMP/help" ||
        fail "$h -q: not the shared help line"
done

# Options that do not apply: one rule, exit 2, one line naming the
# command and the option.
# refused ARGS MESSAGE: zbsched ARGS exits 2 with the one line MESSAGE.
refused() {
    run "$ZBSCHED" $1
    expect_status 2 "$1"
    expect_err "zbsched: $2"
    expect_err_lines 1
}
refused "eval $TMP/s.json --samples 10" \
    "eval: --samples does not apply without --jitter"
refused "eval $TMP/s.json --seed 2" \
    "eval: --seed does not apply without --jitter"
refused "render $TMP/s.json --iter 1" \
    "render: --iter does not apply without --realized"
refused "generate --pp 4 --mb 8 --schedule 1f1b --effort 1" \
    "generate: --effort does not apply to --schedule 1f1b"
refused "generate --pp 4 --mb 8 --schedule zb-h1 --gap 0.1" \
    "generate: --gap does not apply to --schedule zb-h1 (only to ilp)"
refused "compare --pp 4 --mb 8 --zero-all" \
    "compare: --zero-all does not apply without data parallelism"
refused "compare --pp 4 --mb 8 --dp 2 --zero-all --mem-sweep 1p:2p:1p" \
    "compare: --zero-all does not apply to --mem-sweep"
refused "export $TMP/s.json --to json --format compute_comms" \
    "export: --format does not apply to json (only to torch-csv)"
refused "eval $TMP/s.json -q" \
    "eval: option '-q' does not apply to eval (an option of generate;"
refused "validate $TMP/s.json --effort 1" \
    "validate: option '--effort' does not apply to validate"
refused "list --mem-limit 1p" \
    "list: option '--mem-limit' does not apply to list"
mlp=$(dirname "$0")/../data/traces/zbexec-mlp.profile.json
refused "profile --from zbexec $mlp --pp 4" \
    "profile: --pp does not apply to a zbexec --profile-out file"
run "$ZBSCHED" profile --from zbexec "$mlp" -q -o "$TMP/mlp.json"
expect_status 0 "profile --from zbexec of a --profile-out file"

# A large result is not written to a terminal unasked (script(1) gives
# the command one); -o - insists, a small one or a pipe is written.
if command -v script >/dev/null; then
    on_tty() { script -qec "$*" /dev/null | tr -d '\r'; }
    on_tty "$ZBSCHED" generate --pp 8 --mb 32 -q >"$TMP/tty"
    msg="generate: 99 KiB of schedule JSON is not written to a terminal"
    grep -qF "zbsched: $msg: give -o FILE (or -o - to insist)" "$TMP/tty" ||
        fail "generate to a terminal: no refusal"
    [ "$(wc -l <"$TMP/tty")" -eq 1 ] || fail "generate to a terminal wrote more"
    on_tty "$ZBSCHED" generate --pp 8 --mb 32 -q -o - >"$TMP/tty"
    [ "$(wc -l <"$TMP/tty")" -gt 1000 ] || fail "-o - to a terminal: refused"
    on_tty "$ZBSCHED" render "$TMP/s.json" >"$TMP/tty"
    grep -q '^<svg' "$TMP/tty" || fail "a small SVG to a terminal: refused"
    on_tty "$ZBSCHED" render --ascii "$TMP/s.json" >"$TMP/tty"
    grep -q '^r0 |' "$TMP/tty" || fail "render --ascii to a terminal: refused"
    ok "large results to a terminal"
else
    skip "large results to a terminal" "no script(1)"
fi

# export: the format from -o's extension, else a line naming the formats.
run "$ZBSCHED" export "$TMP/s.json" -o "$TMP/e.csv"
expect_status 0 "export -o .csv"
head -1 "$TMP/e.csv" | grep -q '^0F0' || fail "export -o .csv: not the CSV"
run "$ZBSCHED" export "$TMP/s.json" --to torch-csv
cmp -s "$OUT" "$TMP/e.csv" || fail "export -o .csv differs from --to torch-csv"
run "$ZBSCHED" export "$TMP/s.json" -o "$TMP/e.json"
expect_status 0 "export -o .json"
cmp -s "$TMP/e.json" "$TMP/s.json" || fail "export -o .json: not the schedule"
check "the exported JSON validates" "$ZBSCHED" validate "$TMP/e.json"
for args in "" "-o $TMP/x.txt" "--to pdf"; do
    run "$ZBSCHED" export "$TMP/s.json" $args
    expect_status 2 "export $args"
    expect_err "torch-csv (.csv) or json (.json)"
    expect_err_lines 1
done
[ -e "$TMP/x.txt" ] && fail "export to .txt wrote a file"

# compare names the families the profile's shape leaves out, with why,
# and --per rank runs them all, each in its own shape.
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --json
jq -e '[.not_in_this_shape[].schedule] | index("zb-v") != null' "$OUT" \
    >/dev/null || fail "compare --json: zb-v not named as left out"
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0
expect_err "not in this shape (loop, vpp 1): interleaved, zb-v"
expect_err "--per rank (times per GPU) runs every family"
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --per rank --json
jq -e '(.not_in_this_shape | length) == 0 and
       ([.rows[].schedule] | index("zb-v") != null)' "$OUT" >/dev/null ||
    fail "compare --per rank: every family in its own shape"
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --placement v
expect_err "not in this shape (v, vpp 2): gpipe, 1f1b"
expect_err "the profile sets the shape"
done_testing
