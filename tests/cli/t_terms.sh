#!/usr/bin/env bash
# The user's terms (issue 42): sizes with units, a profile's time unit in
# every summary, PyTorch's schedule names, "did you mean" for every
# mistyped name, one decimal number reader, --version.
. "$(dirname "$0")/../lib/tap.sh"

# The walkthrough's model: p 8, m 32, times in us, 1.9 GiB of activations
# per microbatch and stage, 40 GiB left for them.
MODEL="--pp 8 --mb 32 --f 14407 --b 14380 --w 9676 --comm 1610"

# ---- 1. sizes -------------------------------------------------------------
# shellcheck disable=SC2086
run "$ZBSCHED" generate $MODEL --m-b 1.9GiB --mem-limit 40GiB -o "$TMP/gib.json"
expect_status 0 "sizes with units"
expect_err "peak memory 39.9 GiB"
check "sizes are written back as sizes" \
    grep -q '"memory": {"M_B": "1.9GiB", "M_W": "1.9GiB", "limit": "40GiB"}' \
    "$TMP/gib.json"
# The same model with plain numbers (M_B's unit) gives the same schedule.
# shellcheck disable=SC2086
"$ZBSCHED" generate $MODEL --m-b 1.9 --mem-limit 40 -o "$TMP/plain.json" \
    2>/dev/null
a=$(grep -o '"predicted": {"cost": [0-9.e+]*' "$TMP/gib.json")
b=$(grep -o '"predicted": {"cost": [0-9.e+]*' "$TMP/plain.json")
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "GiB and plain give one cost"
else fail "GiB cost '$a', plain '$b'"; fi
run "$ZBSCHED" eval "$TMP/gib.json"
expect_status 0 "eval reads sizes back"
expect_out "40.0 GiB"
echo '{"pp": 4, "microbatches": 8,
      "memory": {"M_B": "1GB", "limit": "8GB"}}' >"$TMP/gb.json"
run "$ZBSCHED" generate --profile "$TMP/gb.json" -o "$TMP/gb.out.json"
expect_status 0 "profile sizes in GB"
expect_err "peak memory 7.45 GiB = 2.00x 1F1B"
check "8GB is 7.45 GiB" grep -q '"limit": "7.4505805969238281GiB"' \
    "$TMP/gb.out.json"
echo '{"pp": 2, "microbatches": 4,
      "memory": {"M_B": "1GiB", "limit": ["4GiB", null]}}' >"$TMP/arr.json"
run "$ZBSCHED" generate --profile "$TMP/arr.json" -q -o -
expect_status 0 "an array of sizes"
expect_out '"limit": ["4GiB", null]'
# A plain memory beside a size is an error, not 40 of M_B.
run "$ZBSCHED" generate --pp 4 --mb 8 --m-b 1.9 --mem-limit 40GiB -q -o -
expect_status 1 "plain M_B beside a size"
expect_err "memory.M_B = 1.9 has no unit while other memory sizes have one"
run "$ZBSCHED" generate --pp 4 --mb 8 --mem-limit 40GiB -q -o -
expect_status 1 "a size limit without M_B"
expect_err "memory.M_B (--m-b) needs one too"
run "$ZBSCHED" generate --pp 4 --mb 8 --m-b 1.9GX -q -o -
expect_status 2 "a size with a bad unit"
expect_err "--m-b: '1.9GX' is not a size"
run "$ZBSCHED" generate --pp 4 --mb 8 --m-b 1GiB --mem-limit 2p -q -o -
expect_status 0 "Np needs no unit"
printf '{"memory": {"limit": ["4GiB", 4]}}\n' >"$TMP/mix.json"
run "$ZBSCHED" generate --profile "$TMP/mix.json" -q -o -
expect_status 1 "mixed array"
expect_err "memory.limit mixes sizes and plain numbers"
# Data parallelism: a bandwidth per second needs the time unit; sizes make
# bytes_per_unit a GiB.
DP="--pp 4 --mb 8 --dp 2 --params 1e9"
# shellcheck disable=SC2086
run "$ZBSCHED" generate $DP --bandwidth 50GB/s -q -o -
expect_status 1 "bandwidth per second without a time unit"
expect_err "data_parallel.bandwidth is per second"
# shellcheck disable=SC2086
run "$ZBSCHED" generate $DP --bandwidth 50GB/s --time-unit ms --m-b 1GiB \
    -o "$TMP/dp.json"
expect_status 0 "bandwidth per second with a time unit"
check "50GB/s is 5e7 bytes per ms" grep -q '"bandwidth": 50000000,' \
    "$TMP/dp.json"
check "bytes_per_unit is a GiB" grep -q '"bytes_per_unit": 1073741824,' \
    "$TMP/dp.json"
# 1e9 parameters at 16 bytes are 14.9 GiB of model state.
expect_err "with dp 2 zero 0"
printf '{"pp": 2, "microbatches": 4, "memory": {"M_B": "1GiB"}, "dp": 2,
  "data_parallel": {"params": 1, "bytes_per_unit": 1000}}\n' >"$TMP/bpu.json"
run "$ZBSCHED" generate --profile "$TMP/bpu.json" -q -o -
expect_status 1 "bytes_per_unit against sizes"
expect_err "data_parallel.bytes_per_unit is a GiB"

# ---- 2. time units --------------------------------------------------------
# shellcheck disable=SC2086
run "$ZBSCHED" generate $MODEL --m-b 1.9GiB --mem-limit 40GiB --time-unit us \
    -o "$TMP/us.json"
expect_status 0 "time unit"
expect_err "picked zb (loop, vpp 1): cost 1261345 us"
expect_err "lower bound 1261345 us (optimal)"
expect_err "vs 1f1b: cost 1609537 us"
if grep -q 'e+0' "$ERR"; then fail "an exponent in the summary"
else ok "no exponent in the summary"; fi
check "time_unit is written back" grep -q '"time_unit": "us"' "$TMP/us.json"
run "$ZBSCHED" eval "$TMP/us.json"
expect_status 0 "eval with a time unit"
expect_out "cost 1261345 us"
echo '{"pp": 4, "microbatches": 8, "time_unit": "s",
      "time": {"F": 0.5, "B": 0.5, "W": 0.25}}' >"$TMP/s.json"
run "$ZBSCHED" generate --profile "$TMP/s.json" -o "$TMP/s.out.json"
expect_status 0 "seconds"
expect_err "cost 11.25 s, bubble_ratio 0.1111, makespan 11.50 s"
# shellcheck disable=SC2086
run "$ZBSCHED" compare $MODEL --m-b 1.9GiB --mem-limit 40GiB --time-unit us
expect_status 0 "compare with units"
expect_out "1261345 us"
expect_out "lower bound, 1261345 us"
# The bound never prints above the cost, the gap never as -0.00%: the ILP
# bound of this model is 1261345.0000000002, its cost 1261345.
# shellcheck disable=SC2086
run "$ZBSCHED" compare $MODEL --m-b 1.9 --mem-limit 40
expect_status 0 "compare without units"
expect_out "lower bound, 1.26134e+06"
if grep -q -- '-0\.00%' "$OUT"; then fail "a gap of -0.00%"
else ok "no gap of -0.00%"; fi
printf '{"time_unit": "min"}\n' >"$TMP/min.json"
run "$ZBSCHED" generate --profile "$TMP/min.json" -q -o -
expect_status 1 "an unknown time unit"
expect_err "time_unit must be"
# Times with a unit are read into the profile's time unit, whatever the
# order of the flags or keys.
run "$ZBSCHED" generate --pp 8 --mb 32 --f 14.407ms --b 14.38ms \
    --w 9676us --comm 1.61ms --m-b 1.9GiB --mem-limit 40GiB --time-unit us \
    -o "$TMP/ms.json"
expect_status 0 "times with units"
expect_err "picked zb (loop, vpp 1): cost 1261345 us"
check "14.407ms is 14407 us" \
    grep -q '"F": 14407, "B": 14380, "W": 9676, "comm": 1610}' "$TMP/ms.json"
echo '{"pp": 2, "microbatches": 4, "time": {"F": "1ms", "B": 1, "W": 1},
      "stages": [{"B": "0.002s"}, {}], "time_unit": "us"}' >"$TMP/tu.json"
run "$ZBSCHED" generate --profile "$TMP/tu.json" -q -o -
expect_status 0 "profile times with units"
expect_out '{"F": 1000, "B": 2000, "W": 1}'
run "$ZBSCHED" generate --pp 4 --mb 8 --f 14.4ms -q -o -
expect_status 2 "a time with a unit and no time unit"
expect_err "--f: '14.4ms' has a unit: give the profile's time_unit"
run "$ZBSCHED" generate --profile "$TMP/tu.json" --time-unit ms -q -o -
expect_status 2 "--time-unit against the file's"
expect_err "--time-unit ms, but the profile says time_unit us"
run "$ZBSCHED" generate --pp 4 --mb 8 --comm fast -q -o -
expect_status 2 "a time that is no time"
expect_err "--comm: 'fast' is not a number or a time"
# render takes the profile's unit; --time-unit is the one name.
run "$ZBSCHED" render "$TMP/s.out.json" --trace "$TMP/s.trace.json"
expect_status 0 "render a trace in seconds"
check "an F of 0.5 s lasts 500000 us" grep -q '"dur": 500000[,}]' \
    "$TMP/s.trace.json"
run "$ZBSCHED" render "$TMP/s.out.json" --trace "$TMP/t.json" --time-unit ms
expect_status 2 "--time-unit against the profile's"
expect_err "the schedule's profile says time_unit s"
run "$ZBSCHED" render "$TMP/gib.json" --unit us --trace "$TMP/t.json"
expect_status 2 "render's old --unit"

# ---- 3. names -------------------------------------------------------------
for n in 1F1B Schedule1F1B gpipe GPipe Interleaved1F1B interleavedzerobubble \
    ZBVZeroBubble ScheduleZBVZeroBubble DualPipeV ZB-V; do
    run "$ZBSCHED" generate --pp 4 --mb 8 --per rank --schedule "$n" -q -o -
    expect_status 0 "schedule name $n"
done
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule ZBVZeroBubble -q -o -
check "ZBVZeroBubble is zb-v" grep -q '"schedule": "zb-v"' "$OUT"
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule Interleaved1F1B -q -o -
check "Interleaved1F1B is interleaved" grep -q '"schedule": "interleaved"' \
    "$OUT"
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule LoopedBFS -q -o -
expect_status 2 "LoopedBFS"
expect_err "PyTorch's 'LoopedBFS' has no zbsched family"
run "$ZBSCHED" generate --pp 4 --mb 8 --schedule zb-h3 -q -o -
expect_status 2 "a misspelt family"
expect_err "unknown schedule 'zb-h3' (did you mean 'zb-h1'?)"
run "$ZBSCHED" generate --pp 4 --mb 8 --mem-limt 1p
expect_status 2 "a misspelt flag"
expect_err "unknown option '--mem-limt' (did you mean '--mem-limit'?)"
expect_err_lines 1
run "$ZBSCHED" genrate --pp 4
expect_status 2 "a misspelt command"
expect_err "'genrate' is not a command (did you mean 'generate'?)"
# Unknown keys are errors naming the closest.
echo '{"pp": 4, "microbatches": 8,
      "time": {"F": 1, "B": 1, "W": 1, "Comm": 2}}' >"$TMP/comm.json"
run "$ZBSCHED" generate --profile "$TMP/comm.json" -q -o -
expect_status 1 "time.Comm"
expect_err "unknown key 'time.Comm' (did you mean 'time.comm'?)"
printf '{"pp": 4, "memory": {"MB": 1.9, "limit": 40}}\n' >"$TMP/mb.json"
run "$ZBSCHED" generate --profile "$TMP/mb.json" -q -o -
expect_status 1 "memory.MB"
expect_err "unknown key 'memory.MB' (did you mean 'memory.M_B'?)"
printf '{"pp": 2, "microbatches": 2, "stages": [{"F": 1, "b": 1}, {}]}\n' \
    >"$TMP/st.json"
run "$ZBSCHED" generate --profile "$TMP/st.json" -q -o -
expect_status 1 "a stage key"
expect_err "unknown key 'stages[0].b' (did you mean 'stages[0].B'?)"
printf '{"pp": 2, "microbatches": 2, "measured": {}}\n' >"$TMP/meas.json"
run "$ZBSCHED" generate --profile "$TMP/meas.json" -q -o -
expect_status 0 "\"measured\" stays accepted"
"$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/two.json"
sed 's/"predicted"/"predictd"/' "$TMP/two.json" \
    >"$TMP/pred.json"
run "$ZBSCHED" eval "$TMP/pred.json"
expect_status 1 "a schedule key"
expect_err "unknown key 'predictd' (did you mean 'predicted'?)"
sed '0,/"start"/s//"strat"/' "$TMP/two.json" >"$TMP/strat.json"
run "$ZBSCHED" eval "$TMP/strat.json"
expect_status 1 "an op key"
expect_err "(did you mean 'ranks[0].ops[0].start'?)"
sed '0,/"start": [0-9.]*/s//"start": "0"/' "$TMP/two.json" >"$TMP/ty.json"
run "$ZBSCHED" eval "$TMP/ty.json"
expect_status 1 "a typed op time"
expect_err "ranks[0].ops[0]: \"start\" must be a number"
printf '{"pp": "two"}\n' >"$TMP/two.p.json"
run "$ZBSCHED" generate --profile "$TMP/two.p.json" -q -o -
expect_status 1 "a typed profile value"
expect_err "pp must be a number"
for j in '{"memory": {"M_B": "1.9"}}' '{"memory": {"limit": "40"}}' \
    '{"time": {"F": "1", "B": 1, "W": 1}}'; do
    echo "$j" >"$TMP/q.json"
    run "$ZBSCHED" generate --profile "$TMP/q.json" -q -o -
    expect_status 1 "a number in quotes: $j"
done
printf '{"memory": {"M_B": true}}\n' >"$TMP/bool.json"
run "$ZBSCHED" generate --profile "$TMP/bool.json" -q -o -
expect_status 1 "a typed memory"
expect_err "memory.M_B must be a number or a size"

# ---- 4. numbers -----------------------------------------------------------
for v in 0x10 abc nan inf 1e999 ""; do
    run "$ZBSCHED" generate --pp "$v" --mb 8 -q -o -
    expect_status 2 "--pp '$v'"
done
expect_err "--pp: '' is not a number"
run "$ZBSCHED" generate --pp 0x10 --mb 8 -q -o -
expect_err "--pp: '0x10' is not a number"
run "$ZBSCHED" generate --schedule ilp --time-limit nan --pp 2 --mb 2 -q -o -
expect_status 2 "--time-limit nan"
expect_err "--time-limit: 'nan' is not a number"
run "$ZBSCHED" generate --pp 4 --mb 8 --dp 2 --params 0x10 -q -o -
expect_status 2 "a data-parallel flag in hex"
run "$ZBSCHED" generate --pp 4 --mb 8 --mem-limit infp -q -o -
expect_status 2 "--mem-limit infp"
run "$ZBSCHED" generate --pp 4 --mb 8 --f 1.5e0 --b .5 --w 2. -q -o -
expect_status 0 "decimal spellings"

# ---- 5. version -----------------------------------------------------------
run "$ZBSCHED" --version
expect_status 0 "--version"
if grep -qE '^zbsched [0-9]+\.[0-9]+\.[0-9]+$' "$OUT"; then
    ok "one version line"
else fail "version line: $(cat "$OUT")"; fi

# ---- 6. model state against the GPU's memory ------------------------------
# The README's first question as one command: 80 GiB per GPU, of which
# 2.68435456e9 parameters x 16 bytes (2/2/12) = 40 GiB are model state;
# the answer is the one for 40 GiB of activations.
# shellcheck disable=SC2086
run "$ZBSCHED" generate $MODEL --m-b 1.9GiB --mem-limit 80GiB \
    --params 2.68435456e9 -o "$TMP/state.json"
expect_status 0 "a total limit at dp 1"
expect_err "rank 79.9 GiB of 80.0 GiB (model state 40.0, activations 39.9)"
a=$(sed -n 's/.*zb: cost \([^,]*\),.*/\1/p' "$ERR" | head -1)
# shellcheck disable=SC2086
run "$ZBSCHED" generate $MODEL --m-b 1.9GiB --mem-limit 40GiB -o /dev/null
b=$(sed -n 's/.*zb: cost \([^,]*\),.*/\1/p' "$ERR" | head -1)
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "80 GiB with 40 of state is 40 left"
else fail "total cost '$a', activations-only cost '$b'"; fi
check "the limit is written as given" grep -q '"limit": "80GiB"' \
    "$TMP/state.json"
run "$ZBSCHED" validate "$TMP/state.json"
expect_status 0 "the schedule validates against the total"
# shellcheck disable=SC2086
run "$ZBSCHED" generate $MODEL --m-b 1.9GiB --mem-limit 40GiB \
    --params 2.68435456e9 -q -o -
expect_status 1 "model state leaves no room"
expect_err "rank 0's model state 40 GiB leaves less than one microbatch"
# A plain limit keeps bounding activations alone.
run "$ZBSCHED" generate --pp 4 --mb 8 --m-b 1 --mem-limit 8 --params 1e9 \
    -q -o -
expect_status 0 "a plain limit ignores model state"
# ZeRO frees model state for activations: at dp 4, ZeRO-0 holds 40 GiB
# (gpipe's 60.8 GiB of activations do not fit), ZeRO-1 17.5 GiB.
# shellcheck disable=SC2086
run "$ZBSCHED" compare $MODEL --m-b 1.9GiB --mem-limit 80GiB --dp 4 \
    --params 2.68435456e9 --zero-all
expect_status 0 "compare --zero-all under a total limit"
check "ZeRO-0: gpipe does not fit" grep -qE '^gpipe +0 .* no$' "$OUT"
check "ZeRO-1: gpipe fits" grep -qE '^gpipe +1 .* yes$' "$OUT"

done_testing
