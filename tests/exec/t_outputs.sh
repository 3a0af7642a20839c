#!/usr/bin/env bash
# t_outputs.sh - what a run writes: the measures table, --report and
# --trace JSON, --trace-predicted, a --profile-out that zbsched accepts,
# and a short synthetic run (no timing asserted: the machine is loaded).
. "$(dirname "$0")/lib.sh"

# has_json FILE PATTERN: FILE parses as JSON (when python3 is there to
# say so) and matches PATTERN.
has_json() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" ||
            return 1
    fi
    grep -qE "$2" "$1"
}

gen "$TMP/v.json" --pp 2 --mb 4 --vpp 2 --placement v --schedule zb-v
zbexec 2 "$TMP/v.json" --model "$MODEL" --iters 3 \
    --report "$TMP/report.json" --trace "$TMP/trace.json" \
    --trace-predicted "$TMP/pred.json" --profile-out "$TMP/prof.json"
expect "outputs: measures table" 0 '^bubble_ratio +[0-9.e-]+ +[0-9.e-]+'
expect_true "outputs: --report is JSON with the realized measures" \
    has_json "$TMP/report.json" '"realized": {"cost"'
expect_true "outputs: --trace is trace-event JSON with flows" \
    has_json "$TMP/trace.json" '"ph": "f", "id": [0-9]+, "name": "F s0 mb3"'
expect_true "outputs: --trace-predicted" \
    has_json "$TMP/pred.json" '"source": "predicted"'
if command -v python3 >/dev/null 2>&1; then
    expect_true "outputs: both traces keep every viewer's rules" \
        python3 "$(dirname "$0")/../lib/trace_check.py" "$TMP/trace.json" \
        "$TMP/pred.json"
fi
expect_true "outputs: zbsched render draws the realized trace" \
    "$ZBSCHED" render "$TMP/v.json" --realized "$TMP/trace.json" \
    -o "$TMP/realized.svg"
expect_true "outputs: zbsched generate accepts --profile-out" \
    "$ZBSCHED" generate -q --profile "$TMP/prof.json" --schedule zb-v \
    -o "$TMP/again.json"

gen "$TMP/syn.json" --pp 4 --mb 8 --schedule zb-h1 --f 2 --b 2 --w 2
zbexec 4 "$TMP/syn.json" --synthetic --iters 2 --report "$TMP/syn.report"
expect "synthetic: runs and reports the realized bubble" 0 \
    '^bubble_ratio +0\.[0-9]+ +0\.[0-9]+'
expect_true "synthetic: --report says so" \
    has_json "$TMP/syn.report" '"mode": "synthetic"'
done_testing
