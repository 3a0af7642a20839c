#!/usr/bin/env bash
# render --trace for every family and a few shapes (whole and fractional
# times, with and without transfer time, loop and v placement) and with
# data parallelism (the collectives drawn): each file keeps the rules
# every trace viewer needs (tests/lib/trace_check.py).
. "$(dirname "$0")/../lib/tap.sh"

if ! command -v python3 >/dev/null; then
    fail "python3 not found (it runs tests/lib/trace_check.py)"
    done_testing
fi
command -v jq >/dev/null ||
    { fail "jq not found (tools/deps.sh installs it)"; done_testing; }
CHECK="python3 $(dirname "$0")/../lib/trace_check.py"

# name: generate flags | render flags
shapes=(
    "unit:--pp 4 --mb 8|"
    "paper:--pp 4 --mb 12 --f 18.5 --b 18.1 --w 9.3 --comm 0.6|--time-unit us"
    "odd:--pp 3 --mb 5 --f 1.3 --b 1.1 --w 0.7 --comm 0.15|--time-unit ms"
)
for fam in gpipe 1f1b zb-h1 zb-h2 zb interleaved interleaved-zb zb-v; do
    case $fam in
    interleaved*) place="--vpp 2" ;;
    zb-v) place="--vpp 2 --placement v" ;;
    *) place="" ;;
    esac
    for shape in "${shapes[@]}"; do
        name=${shape%%:*} rest=${shape#*:}
        gen=${rest%%|*} unit=${rest#*|}
        out=$TMP/$fam-$name.trace.json
        # shellcheck disable=SC2086
        if ! "$ZBSCHED" generate $gen $place --schedule "$fam" -q \
            -o "$TMP/s.json" 2>"$ERR" ||
            ! "$ZBSCHED" render "$TMP/s.json" --trace "$out" $unit \
            2>"$ERR"; then
            fail "$fam $name: generate or render failed"
            continue
        fi
        run $CHECK "$out"
        expect_status 0 "$fam $name: trace keeps the viewers' rules"
    done
done

# Data parallelism: each rank's collectives at the simulator's times, on
# a "collectives" thread of their own (after the transfers'), as the
# schedule JSON times them; the file still keeps the viewers' rules.
dp="--pp 2 --mb 4 --dp 2 --params 1e8 --bandwidth 10GB/s --time-unit ms"
for zero in 1 3; do
    # shellcheck disable=SC2086
    "$ZBSCHED" generate $dp --zero $zero -q -o "$TMP/dp$zero.json" &&
        "$ZBSCHED" render "$TMP/dp$zero.json" \
            --trace "$TMP/dp$zero.trace.json" ||
        fail "zero $zero: generate or render failed"
    run $CHECK "$TMP/dp$zero.trace.json"
    expect_status 0 "zero $zero: trace keeps the viewers' rules"
    # Every collective of the schedule, once, where the JSON puts it.
    jq -c '[.ranks[] | .rank as $r | .ops[] |
            select(.op | IN("REDUCE_GRAD", "UNSHARD", "RESHARD")) |
            [$r, .op, .stage, (.start * 1000 | round),
             ((.end - .start) * 1000 | round)]] | sort' "$TMP/dp$zero.json" \
        >"$TMP/want"
    jq -c '[.traceEvents[] | select(.cat == "collective") |
            [.pid, .args.op, .args.stage, .ts, .dur]] | sort' \
        "$TMP/dp$zero.trace.json" >"$TMP/got"
    check "zero $zero: collectives in the trace as in the schedule" \
        cmp -s "$TMP/want" "$TMP/got"
    check "zero $zero: the schedule has collectives" \
        jq -e 'length >= 2' "$TMP/want"
    jq -e '[.traceEvents[] | select(.cat == "collective")] as $c |
           [.traceEvents[] | select(.name == "thread_name" and
                                    .args.name == "collectives")] as $t |
           ($t | length) == 2 and
           all($c[]; . as $e | any($t[]; .pid == $e.pid and .tid == $e.tid))' \
        "$TMP/dp$zero.trace.json" >/dev/null ||
        fail "zero $zero: collectives not on each rank's collectives thread"
done
jq -e '[.traceEvents[] | select(.cat == "collective") | .args.op] |
       index("UNSHARD") != null' "$TMP/dp3.trace.json" >/dev/null ||
    fail "ZeRO-3: no UNSHARD in the trace"

# The checker finds what it is for: an end before its start, a flow end
# at its start's time, slices an ulp apart, a flow outside its category.
bad() {
    printf '{"traceEvents": [\n%s\n]}\n' "$1" >"$TMP/bad.json"
    run $CHECK "$TMP/bad.json"
    expect_status 1 "checker refuses $2"
    expect_out "$3"
}
X0='{"ph": "X", "name": "a", "cat": "c", "pid": 0, "tid": 0, "ts": 0, "dur": 1}'
X1='{"ph": "X", "name": "b", "cat": "c", "pid": 1, "tid": 0, "ts": 2, "dur": 1}'
S='{"ph": "s", "name": "t", "cat": "c", "id": 1, "pid": 0, "tid": 0, "ts": 0}'
F='{"ph": "f", "bp": "e", "name": "t", "cat": "c", "id": 1, '\
'"pid": 1, "tid": 0, "ts": 2}'
bad "$X0,$X1,$F,$S" "an end before its start" "want s then f"
bad "$X0,${X1/\"ts\": 2/\"ts\": 0},$S,${F/\"ts\": 2/\"ts\": 0}" \
    "an end at its start's time" "not after its start"
A='{"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0.1, "dur": 0.2}'
B='{"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 0.3, "dur": 1}'
bad "$A,$B" "slices an ulp apart" "overlaps"
C='"cat": "c"' FLOW='"cat": "flow"'
bad "$X0,$X1,${S/$C/$FLOW},${F/$C/$FLOW}" \
    "a flow in another category" "starts no slice of category 'flow'"
done_testing
