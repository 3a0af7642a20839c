#!/usr/bin/env bash
# t_sweep.sh - compare --mem-sweep counts model state as generate does
# (issue 42): with --params, a sweep in sizes is the GPU's whole memory,
# each point's activation budget what its model state leaves
# (zb_profile_count_state()), so each point costs what generate
# --mem-limit at that size costs; plain numbers and Np keep bounding
# activations alone.
. "$(dirname "$0")/../lib/tap.sh"

P="--pp 8 --mb 32 --per rank --time-unit us --f 14407 --b 14380 --w 9676
   --comm 1610 --m-b 1.9GiB --params 2.68435456e9"
cost_at() {     # LIMIT: generate --schedule zb's cost there
    "$ZBSCHED" generate $P --mem-limit "$1" --schedule zb -o /dev/null 2>&1 |
        sed -nE 's/^zbsched: zb: cost ([0-9]+) us.*/\1/p'
}
run "$ZBSCHED" compare --time-limit 0 $P --mem-sweep 40GiB:80GiB:20GiB --json
expect_status 0 "mem-sweep in GiB with --params"
for i in 1 2; do
    lim=$((40 + 20 * i))
    got=$(jq ".points[$i].zb" "$OUT")
    want=$(cost_at ${lim}GiB)
    [ -n "$want" ] && [ "$got" = "$want" ] ||
        fail "mem-sweep at ${lim}GiB: zb $got," \
             "generate --mem-limit ${lim}GiB $want"
done
[ "$(jq '.points[1].zb < .points[2].zb' "$OUT")" = false ] ||
    fail "mem-sweep: 60GiB should not be cheaper than 80GiB"
jq -e '.points[0].zb == null and
       (.points[0].status | test("model state 40 GiB leaves less than one"))' \
    "$OUT" >/dev/null || fail "mem-sweep at 40GiB: model state fills it"
# The same totals without model state bound activations: cheaper at 60.
run "$ZBSCHED" compare --time-limit 0 ${P/--params 2.68435456e9/} \
    --mem-sweep 60GiB:60GiB:1GiB --json
[ "$(jq '.points[0].zb' "$OUT")" -lt "$(cost_at 60GiB)" ] ||
    fail "without --params 60GiB should bound activations alone"
# Plain numbers keep their meaning: activations, in GiB here.
run "$ZBSCHED" compare --time-limit 0 $P --mem-sweep 60:60:1
expect_status 0 "mem-sweep in plain numbers"
grep -qE '^ +60 +1\.23082e\+06 ' "$OUT" ||
    fail "plain 60 bounds activations (zb 1230816)"
run "$ZBSCHED" compare --time-limit 0 $P --mem-sweep 60GiB:80:10
expect_status 2 "mixed sizes and numbers"
expect_err "give all three as sizes or none"
done_testing
