#!/usr/bin/env bash
# t_pick_robust.sh - generate --robust (issue 43): the pick among zb and
# the families by the p95 makespan of eval --jitter's replays, seeded: the
# summary's p95 is what eval --jitter reports for the file written, the
# same command gives the same file, and at CV 0.2 the pick moves off the
# deterministic one; --robust's options apply only where it does.
. "$(dirname "$0")/../lib/tap.sh"

# The README's question: p 8, 32 microbatches, 80 GiB of which 40 model
# state. Deterministically zb in loop placement with vpp 4 wins (every
# shape ties on cost; the earlier shape first).
P="--pp 8 --mb 32 --per rank --time-unit us --f 14407 --b 14380 --w 9676
   --comm 1610 --m-b 1.9GiB --mem-limit 80GiB --params 2.68435456e9"
run "$ZBSCHED" generate $P -o "$TMP/det.json"
expect_status 0 "generate"
expect_err "picked zb (loop, vpp 4)"

p95_of() {  # FILE CV: eval --jitter's p95 makespan, rounded to 1 us
    "$ZBSCHED" eval "$1" --jitter "$2" --json |
        jq '.makespan.p95 | round'
}
for cv in 0.05 0.2; do
    run "$ZBSCHED" generate $P --robust --jitter $cv -o "$TMP/r$cv.json"
    expect_status 0 "generate --robust --jitter $cv"
    expect_err "robust (CV $cv, 1000 samples, seed 1): picked "
    line=$(grep "robust (CV" "$ERR")
    re='picked [^:]+: p95 makespan ([0-9]+) us, cost ([0-9]+) us; '
    re+='runner-up [^:]+: p95 makespan ([0-9]+) us, cost [0-9]+ us$'
    if ! [[ $line =~ $re ]]; then
        fail "--robust $cv: the summary lacks p95 and cost of both"
        continue
    fi
    pick=${BASH_REMATCH[1]} runner=${BASH_REMATCH[3]}
    [ "$pick" -le "$runner" ] ||
        fail "--robust $cv: the pick's p95 $pick is above" \
             "the runner-up's $runner"
    [ "${BASH_REMATCH[2]}" = 1230816 ] ||
        fail "--robust $cv: the pick's cost ${BASH_REMATCH[2]}, want 1230816"
    got=$(p95_of "$TMP/r$cv.json" $cv)
    [ "$got" = "$pick" ] ||
        fail "--robust $cv: eval --jitter says p95 $got, the summary $pick"
    # Never worse at p95 than the deterministic pick.
    det=$(p95_of "$TMP/det.json" $cv)
    [ "$pick" -le "$det" ] ||
        fail "--robust $cv: p95 $pick above the default pick's $det"
    check "--robust $cv: the schedule validates" \
        "$ZBSCHED" validate "$TMP/r$cv.json"
done
# Low noise keeps the deterministic winner; CV 0.2 moves to zb in V.
grep -q "picked zb (loop, vpp 4)" <<<"$(
    "$ZBSCHED" generate $P --robust --jitter 0.05 -o /dev/null 2>&1)" ||
    fail "--robust 0.05 should keep zb (loop, vpp 4)"
run "$ZBSCHED" generate $P --robust --jitter 0.2 -o "$TMP/again.json"
expect_err "picked zb (v, vpp 2)"
cmp -s "$TMP/again.json" "$TMP/r0.2.json" ||
    fail "--robust: the same seed gave another schedule"
run "$ZBSCHED" generate $P --robust --jitter 0.2 --seed 7 --samples 200 -q \
    -o /dev/null
expect_status 0 "--robust --seed 7 --samples 200"
[ -s "$ERR" ] && fail "--robust -q wrote to stderr"

# Without a limit --robust still chooses (zb and every family fit).
run "$ZBSCHED" generate --pp 4 --mb 8 --robust -o "$TMP/nl.json"
expect_status 0 "--robust without a limit"
expect_err "robust (CV 0.1, 1000 samples, seed 1): picked "

# Where it does not apply.
for b in "--schedule zb-h1 --robust|--robust does not apply to --schedule" \
         "--jitter 0.1|--jitter does not apply without --robust" \
         "--samples 10|--samples does not apply without --robust" \
         "--dp 2 --robust|--robust does not apply with data parallelism" \
         "--robust --samples 1.5|--samples and --seed must be whole numbers"; do
    run "$ZBSCHED" generate --pp 4 --mb 8 ${b%%|*} -o "$TMP/no.json"
    expect_status 2 "generate ${b%%|*}"
    expect_err "zbsched: generate: ${b#*|}"
    expect_err_lines 1
done
[ -e "$TMP/no.json" ] && fail "a refused --robust wrote its file"
run "$ZBSCHED" generate --pp 4 --mb 8 --robust --jitter 11 -o "$TMP/no.json"
expect_status 1 "--robust --jitter 11"
expect_err_lines 1
done_testing
