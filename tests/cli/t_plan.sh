#!/usr/bin/env bash
# t_plan.sh - `zbsched plan` (docs/plan.md): the Plan JSON contract of
# docs/formats.md, the Megatron layout and torchtitan module lists parsed back
# to the plan's stages, the embedded schedule validated and re-evaluated,
# the bound and the baselines, the side files, and every bad input.
. "$(dirname "$0")/../lib/tap.sh"

EX=$(dirname "$0")/../../docs/examples
GPT=$EX/gpt-small.model.json
L8=$EX/llama3-8b.model.json
base="--pp 4 --mb 16 --gpu-mem 16GiB --link-bw 25GB/s --link-latency 10us"

run "$ZBSCHED" plan "$GPT" $base -o "$TMP/p.json" --schedule-out \
    "$TMP/s.json" --csv "$TMP/s.csv"
expect_status 0 "plan gpt-small"
expect_err "split (layers per stage): "
expect_err "rank 0: "
expect_err " GiB of 16.0 GiB (model state "
expect_err "even split (torchtitan's default): "
expect_err "min-max compute split: "
expect_err "lower bound "
expect_err "bound by "
expect_err " ms (cost; makespan "

# The contract fields (docs/formats.md, "Plan").
check "plan has the contract's fields" jq -e '
  .format == "zbsched-plan" and .version == 1 and .model == "gpt-small" and
  .pp == 4 and (.vpp | type) == "number" and
  (.placement == "loop" or .placement == "v") and .microbatches == 16 and
  .schedule_name == "zb" and .fits == true and
  (.stages | length) == .pp * .vpp and
  ([.stages[] | has("stage") and has("rank") and has("layers")] | all) and
  (.predicted | has("cost") and has("makespan") and has("bubble_ratio") and
   has("lower_bound") and has("gap")) and
  (.predicted.ranks | length) == 4 and
  ([.predicted.ranks[] | has("memory_bytes") and has("activation_bytes") and
    has("model_state_bytes")] | all) and
  (.baselines.even | has("cost") and has("fits")) and
  (.torchtitan.module_fqns_per_model_part | length) == .pp * .vpp and
  (.torchtitan.pipeline_parallel_schedule | type) == "string" and
  .torchtitan.num_pp_microbatches == 16 and
  .schedule.format == "zbsched-schedule"' "$TMP/p.json"
check "every rank within --gpu-mem" jq -e \
    '[.predicted.ranks[].memory_bytes <= .gpu_memory_bytes] | all' \
    "$TMP/p.json"

# Layers: every layer of the expanded model in exactly one stage, in
# model order; the module lists and the Megatron layout (read as Megatron
# reads it) give the same stages.
cat >"$TMP/check.py" <<'PY'
import json, re, sys
model, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
layers = []
for e in model["layers"]:
    for i in range(e.get("count", 1)):
        layers.append((e["name"].replace("{i}", str(i)), e["kind"]))
names = [n for n, _ in layers]
stages = [s["layers"] for s in plan["stages"]]
assert sum(stages, []) == names, "stages do not list the model in order"
assert [s["stage"] for s in plan["stages"]] == list(range(len(stages)))
assert plan["torchtitan"]["module_fqns_per_model_part"] == stages
assert plan["layers_per_stage"] == [len(s) for s in stages]
mg = plan["megatron"]
if sys.argv[3] == "null":
    assert mg is None, "megatron should be null"
    sys.exit(0)
lay = mg["pipeline_model_parallel_layout"].replace(",", "")
lay = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)),
             lay)
lay = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), lay)
letter = {"embedding": "E", "layer": "t", "mtp": "m", "head": "L"}
at, got = 0, []
for st in lay.split("|"):
    n = 0
    for ch in st:
        kind = layers[at][1]
        assert letter[kind] == ch, f"{ch} at {layers[at][0]}"
        while True:
            at += 1
            n += 1
            if ch not in "EL" or at == len(layers) or layers[at][1] != kind:
                break
    got.append(n)
assert at == len(layers)
assert got == [len(s) for s in stages], f"{got} vs stages"
PY
check "stages list the model; module lists and layout round-trip" \
    python3 "$TMP/check.py" "$GPT" "$TMP/p.json" layout

# The embedded schedule: legal, the same as --schedule-out, and eval
# gives the plan's cost (one link: every boundary's comm is the same).
jq '.schedule' "$TMP/p.json" >"$TMP/emb.json"
run "$ZBSCHED" validate "$TMP/emb.json"
expect_status 0 "the embedded schedule validates"
check "--schedule-out is the embedded schedule" \
    cmp <(jq -S . "$TMP/emb.json") <(jq -S . "$TMP/s.json")
run "$ZBSCHED" eval "$TMP/emb.json" --json
expect_status 0 "eval the embedded schedule"
cost=$(jq '.predicted.cost' "$TMP/p.json")
ecost=$(jq '.cost' "$OUT")
check "eval gives the plan's cost ($cost)" python3 -c \
    "import sys; a, b = float('$cost'), float('$ecost'); \
sys.exit(abs(a - b) > 1e-9 * a)"
check "the CSV has one row per rank" test "$(wc -l <"$TMP/s.csv")" -eq 4

# The bound: at most the cost, at least total work x m / p; the plan no
# worse than either baseline where it fits.
total=$(jq '[.layers[] | (.F + .B + .W) * (.count // 1)] | add' "$GPT")
check "lower bound <= cost" jq -e '.predicted.lower_bound <=
    .predicted.cost' "$TMP/p.json"
check "lower bound >= total work / p" jq -e --argjson t "$total" \
    '.predicted.lower_bound >= $t * 16 / 4 * (1 - 1e-12)' "$TMP/p.json"
check "gap = cost / bound - 1" jq -e '(.predicted.gap - (.predicted.cost /
    .predicted.lower_bound - 1)) | fabs < 1e-12' "$TMP/p.json"
for b in even minmax; do
    check "plan no worse than the $b split" jq -e --arg b $b \
        '(.baselines[$b].fits | not) or
         .predicted.cost <= .baselines[$b].cost * (1 + 1e-12)' "$TMP/p.json"
done

# A larger model, each shape: the layout is null under V.
run "$ZBSCHED" plan "$L8" --pp 8 --mb 32 --gpu-mem 80GiB --link-bw 50GB/s \
    -q -o "$TMP/l8.json"
expect_status 0 "plan llama3-8b"
expect_err_lines 0
check "llama3-8b: stages and layout round-trip" \
    python3 "$TMP/check.py" "$L8" "$TMP/l8.json" layout
run "$ZBSCHED" plan "$L8" --pp 8 --mb 32 --gpu-mem 80GiB --placement v -q \
    -o "$TMP/v.json"
expect_status 0 "plan --placement v"
check "V: ZBVZeroBubble, vpp 2" jq -e '.placement == "v" and .vpp == 2 and
    .torchtitan.pipeline_parallel_schedule == "ZBVZeroBubble"' "$TMP/v.json"
check "V: megatron null, module lists match" \
    python3 "$TMP/check.py" "$L8" "$TMP/v.json" null
run "$ZBSCHED" plan "$L8" --pp 4 --vpp 2 --placement loop --mb 8 \
    --gpu-mem 80GiB -q -o "$TMP/i.json"
check "loop vpp 2: Interleaved1F1B" jq -e '.vpp == 2 and
    .torchtitan.pipeline_parallel_schedule == "Interleaved1F1B"' "$TMP/i.json"

# Few microbatches, where the bubble decides: auto vpp goes past 2 (the
# layers allow up to 8 stages a rank here) and beats the plans at vpp 1
# and 2.
for v in auto 1 2; do
    run "$ZBSCHED" plan "$L8" --pp 4 --mb 4 --gpu-mem 80GiB --link-bw 50GB/s \
        --vpp $v -q -o "$TMP/b$v.json"
    expect_status 0 "plan llama3-8b pp 4 mb 4 --vpp $v"
done
check "auto vpp: a deeper shape, no worse than vpp 1 and 2" jq -e -s '
    .[0].vpp > 2 and .[0].placement == "loop" and
    .[0].predicted.cost <= .[1].predicted.cost and
    .[0].predicted.cost <= .[2].predicted.cost' "$TMP/bauto.json" \
    "$TMP/b1.json" "$TMP/b2.json"

# Where memory decides: the plan fits where the even and the min-max
# split cannot hold one microbatch on rank 0.
run "$ZBSCHED" plan "$L8" --pp 8 --mb 32 --vpp 1 --gpu-mem 25GiB -q \
    -o "$TMP/m.json"
expect_status 0 "plan llama3-8b in 25 GiB"
check "it fits where even and min-max do not" jq -e '.fits and
    (.baselines.even.fits | not) and (.baselines.minmax.fits | not) and
    .layers_per_stage[0] < .baselines.even.layers_per_stage[0]' "$TMP/m.json"

# Given splits.
run "$ZBSCHED" plan "$GPT" $base --split even -q -o "$TMP/e.json"
expect_status 0 "--split even"
check "--split even is torchtitan's" jq -e \
    '.layers_per_stage == .baselines.even.layers_per_stage' "$TMP/e.json"
run "$ZBSCHED" plan "$GPT" $base --split even --vpp 1 -q -o "$TMP/e1.json"
check "--split even --vpp 1: 4 4 3 4" jq -e \
    '.layers_per_stage == [4, 4, 3, 4]' "$TMP/e1.json"
run "$ZBSCHED" plan "$GPT" $base --split 3,4,4,4 -q -o "$TMP/g.json"
expect_status 0 "--split 3,4,4,4"
check "--split keeps the given split" jq -e \
    '.layers_per_stage == [3, 4, 4, 4] and .vpp == 1' "$TMP/g.json"
run "$ZBSCHED" plan "$GPT" $base --split 2,2,2,2,2,2,1,2 -q -o "$TMP/g2.json"
check "--split with pp x 2 entries sets vpp 2" jq -e '.vpp == 2' \
    "$TMP/g2.json"

run "$ZBSCHED" plan "$GPT" $base --split 1,4,5,5 -q -o "$TMP/g3.json"
expect_status 0 "--split with the embedding alone (its B is 0)"
check "--split 1,4,5,5 kept" jq -e '.layers_per_stage == [1, 4, 5, 5]' \
    "$TMP/g3.json"

# Two nodes of two ranks, a slow link between them: the plan re-times
# each boundary; eval sees the slowest link on every boundary, never
# less.
run "$ZBSCHED" plan "$GPT" $base --gpus-per-node 2 --inter-bw 1GB/s -q \
    -o "$TMP/n.json"
expect_status 0 "--gpus-per-node --inter-bw"
jq '.schedule' "$TMP/n.json" >"$TMP/n-s.json"
run "$ZBSCHED" eval "$TMP/n-s.json" --json
check "eval at the slowest link >= the plan's cost" python3 -c \
    "import json, sys; p = json.load(open('$TMP/n.json')); \
e = json.load(open('$OUT')); sys.exit(e['cost'] < p['predicted']['cost'])"

# Data parallelism: the embedded schedule holds the collectives and the
# plan's step is its step_time, at least the step without dp and longer
# than its compute by the reduce; eval gives it back; each rank's memory
# is its model state, activations and buffers, within --gpu-mem.
run "$ZBSCHED" plan "$GPT" $base --dp 4 --zero 1 -o "$TMP/dp1.json"
expect_status 0 "plan --dp 4 --zero 1"
expect_err "data parallel: dp 4, ZeRO-1, reduce step, ring 25 GB/s"
expect_err " ms incl. DP reduce "
check "dp: step >= the step without dp, > its makespan" jq -e -s '
    .[0].predicted.step >= .[1].predicted.step * (1 - 1e-12) and
    .[1].predicted.step == .[1].predicted.cost and
    .[0].predicted.step > .[0].predicted.makespan and
    .[0].predicted.gap == .[0].predicted.step / .[0].predicted.lower_bound - 1'\
    "$TMP/dp1.json" "$TMP/p.json"
check "dp: a REDUCE_GRAD per stage, no UNSHARD" jq -e '
    ([.schedule.ranks[].ops[] | select(.op == "REDUCE_GRAD")] | length) ==
    (.stages | length) and
    ([.schedule.ranks[].ops[] | select(.op == "UNSHARD")] | length) == 0' \
    "$TMP/dp1.json"
check "dp: memory is state + activations + buffers, within --gpu-mem" jq -e '
    ([.predicted.ranks[] | (.memory_bytes - .model_state_bytes -
      .activation_bytes - .buffer_bytes | fabs) < 1] | all) and
    ([.predicted.ranks[].memory_bytes <= .gpu_memory_bytes] | all)' \
    "$TMP/dp1.json"
check "dp: the baselines by step" jq -e '[.baselines[] | select(. != null
    and .fits) | .step >= .cost] | all' "$TMP/dp1.json"
eval_step() {
    jq '.schedule' "$1" >"$TMP/dps.json"
    run "$ZBSCHED" validate "$TMP/dps.json"
    expect_status 0 "$2: the embedded schedule validates"
    run "$ZBSCHED" eval "$TMP/dps.json" --json
    expect_status 0 "$2: eval the embedded schedule"
    check "$2: eval's step_time is the plan's step" python3 -c "
import json, sys
p, e = json.load(open('$1')), json.load(open('$OUT'))
a, b = p['predicted']['step'], e['step_time']
sys.exit(abs(a - b) > 1e-9 * a)"
}
eval_step "$TMP/dp1.json" "dp 4 ZeRO-1"
run "$ZBSCHED" plan "$GPT" $base --dp 4 --zero 3 --gpus-per-node 8 \
    --inter-bw 10GB/s --dp-latency 20us -o "$TMP/dp3.json"
expect_status 0 "plan --dp 4 --zero 3"
expect_err "ring 10 GB/s, latency 0.02000 ms"
expect_err " ms incl. DP gathers and reduce "
check "ZeRO-3: an UNSHARD and a RESHARD per stage" jq -e '
    ([.schedule.ranks[].ops[] | select(.op == "UNSHARD")] | length) ==
    (.stages | length) and
    ([.schedule.ranks[].ops[] | select(.op == "RESHARD")] | length) ==
    (.stages | length)' "$TMP/dp3.json"
eval_step "$TMP/dp3.json" "dp 4 ZeRO-3"

# Bad input: one line each, naming the problem.
bad() {
    local what=$1 want=$2 code=$3
    shift 3
    run "$ZBSCHED" plan "$@"
    expect_status "$code" "$what"
    expect_err "$want"
    expect_err_lines 1
}
bad "--split not adding up" "--split adds up to 14 layers, the model has 15" \
    1 "$GPT" $base --split 3,4,4,3
bad "--split entries not a multiple of pp" "not a multiple of --pp 4" 1 \
    "$GPT" $base --split 5,5,5
bad "--split garbage" "--split must be auto, even or layers per stage" 2 \
    "$GPT" $base --split 4,x
bad "--gpu-mem missing" "--gpu-mem is required" 2 "$GPT" --pp 4 --mb 16
bad "--gpu-mem with a bad unit" "--gpu-mem: '80GX' is not a size" 2 \
    "$GPT" --pp 4 --mb 16 --gpu-mem 80GX
bad "--link-bw without /s" "--link-bw: '50GB' is not a bandwidth" 2 \
    "$GPT" --pp 4 --mb 16 --gpu-mem 16GiB --link-bw 50GB
bad "--link-latency with a bad unit" "--link-latency: '5min' is not a time" \
    2 "$GPT" --pp 4 --mb 16 --gpu-mem 16GiB --link-latency 5min
bad "--zero without dp" "--zero 1 needs --dp >= 2" 1 "$GPT" $base --zero 1
bad "--dp-bw without --dp" "--dp-bw does not apply without --dp" 2 "$GPT" \
    $base --dp-bw 5GB/s
bad "--dp-bw at --dp 1" "--dp-bw does not apply without --dp >= 2" 2 \
    "$GPT" $base --dp 1 --dp-bw 5GB/s
bad "--dp-bw 0" "--dp-bw must be > 0, got '0'" 2 "$GPT" $base --dp 2 \
    --dp-bw 0
bad "--dp-bw without /s" "--dp-bw: '5GB' is not a bandwidth" 2 "$GPT" \
    $base --dp 2 --dp-bw 5GB
bad "--dp-bw too slow for any step" "a collective takes" 1 "$GPT" $base \
    --dp 2 --dp-bw 1B/s
bad "--dp-latency with a bad unit" "--dp-latency: '5min' is not a time" 2 \
    "$GPT" $base --dp 2 --dp-latency 5min
bad "--reduce microbatch below ZeRO-2" "--reduce microbatch needs --zero >= 2" \
    1 "$GPT" $base --dp 2 --zero 1 --reduce microbatch
bad "--prefetch below ZeRO-3" "--prefetch does not apply below --zero 3" 2 \
    "$GPT" $base --dp 2 --zero 1 --prefetch 0
bad "--pp missing" "--pp and --mb are required" 2 "$GPT" --mb 4 \
    --gpu-mem 80GiB
bad "more stages than layers" "need at least as many layers" 1 "$GPT" \
    --pp 16 --mb 16 --gpu-mem 80GiB
bad "more passes than a schedule may have" "is too large" 1 "$GPT" \
    --pp 8 --mb 100000 --gpu-mem 80GiB
bad "a layer over any GPU" "layer 'tok_embeddings' alone needs" 1 "$L8" --pp 8 \
    --mb 8 --gpu-mem 8GiB
bad "nothing fits at any split" "no split fits --gpu-mem 24.0 GiB" 1 "$L8" \
    --pp 2 --mb 8 --gpu-mem 24GiB

sed 's/"F": 0.02/"F": -1/' "$L8" >"$TMP/neg.json"
bad "a negative time" "layers[0].F must be >= 0, got -1" 1 "$TMP/neg.json" \
    --pp 8 --mb 8 --gpu-mem 80GiB
sed 's/"act_bytes"/"act_byte"/' "$L8" >"$TMP/key.json"
bad "an unknown key" "unknown key 'layers[0].act_byte'" 1 "$TMP/key.json" \
    --pp 8 --mb 8 --gpu-mem 80GiB
bad "a missing file" "cannot open" 1 "$TMP/none.json" --pp 8 --mb 8 \
    --gpu-mem 80GiB

# The picture: the plan's split beside the even split, stage work and
# rank memory; well-formed SVG, the same from a written plan, names
# escaped, PNG through rsvg-convert.
run "$ZBSCHED" plan "$GPT" $base -q -o "$TMP/pic.json" --svg "$TMP/pic.svg" \
    --png "$TMP/pic.png"
expect_status 0 "plan --svg --png"
check "the plan's SVG is well formed" xmllint --noout "$TMP/pic.svg"
check "the PNG is a PNG" sh -c "head -c 8 '$TMP/pic.png' | od -An -tx1 |
    grep -q '89 50 4e 47 0d 0a 1a 0a'"
check "both columns: the plan's split and the even split" sh -c "
    grep -qF \"the plan's split\" '$TMP/pic.svg' &&
    grep -qF \"even split (torchtitan's default)\" '$TMP/pic.svg'"
check "a memory bar per rank and column, under the --gpu-mem line" sh -c "
    test \$(grep -c ': model state ' '$TMP/pic.svg') -eq 8 &&
    test \$(grep -c -- '>--gpu-mem 16.0 GiB<' '$TMP/pic.svg') -eq 2"
# Every stage of both splits has its F bar, showing the JSON's F.
f0=$(jq '.stages[0].F' "$TMP/pic.json")
n0=$(jq '.layers_per_stage[0]' "$TMP/pic.json")
check "an F bar per stage of both splits" test "$(grep -c \
    '): F ' "$TMP/pic.svg")" -eq $((2 * $(jq '.pp * .vpp' "$TMP/pic.json")))
check "stage 0's F bar is the plan's F ($f0)" grep -qF \
    "stage 0 (rank 0, $n0 layers): F $(printf '%.4g' "$f0") ms" "$TMP/pic.svg"
check "stage F, B, W add up to the model's work" python3 -c "
import json
m, p = json.load(open('$GPT')), json.load(open('$TMP/pic.json'))
t = sum((e['F'] + e['B'] + e['W']) * e.get('count', 1) for e in m['layers'])
for fbw in ([[s['F'], s['B'], s['W']] for s in p['stages']],
            p['baselines']['even']['stage_times']):
    assert abs(sum(map(sum, fbw)) - t) <= 1e-9 * t
assert len(p['baselines']['even']['ranks']) == 4"
run "$ZBSCHED" render "$TMP/pic.json" -o "$TMP/rend.svg"
expect_status 0 "render a plan file"
check "render of the plan file draws the same picture" \
    cmp "$TMP/pic.svg" "$TMP/rend.svg"
jq '.schedule' "$TMP/pic.json" >"$TMP/pic-s.json"
"$ZBSCHED" render - -o "$TMP/stdin.svg" <"$TMP/pic-s.json" 2>"$ERR"
status=$?
expect_status 0 "render - still reads a schedule from stdin"
run "$ZBSCHED" render "$TMP/pic.json" --ascii
expect_status 2 "render --ascii of a plan"
expect_err "is a plan: its picture takes only -o"
expect_err_lines 1
jq 'del(.stages[1].F)' "$TMP/pic.json" >"$TMP/nof.json"
run "$ZBSCHED" render "$TMP/nof.json" -o "$TMP/nof.svg"
expect_status 1 "render of a plan without a stage's F"
expect_err "stages[1].F must be a number >= 0"
expect_err_lines 1
jq '.baselines.even = null' "$TMP/pic.json" >"$TMP/noeven.json"
run "$ZBSCHED" render "$TMP/noeven.json" -o "$TMP/noeven.svg"
expect_status 0 "render of a plan without an even split"
check "its column says so" grep -qF "none in this shape" "$TMP/noeven.svg"
jq '.name = "a<b&c\"d"' "$GPT" >"$TMP/esc.model.json"
run "$ZBSCHED" plan "$TMP/esc.model.json" $base -q -o "$TMP/esc.json" \
    --svg "$TMP/esc.svg"
check "a model name with markup: the SVG is well formed" \
    xmllint --noout "$TMP/esc.svg"
check "the name is escaped" grep -qF "a&lt;b&amp;c&quot;d" "$TMP/esc.svg"
run env PATH=/nonexistent "$ZBSCHED" plan "$GPT" $base -q -o "$TMP/x.json" \
    --png "$TMP/x.png"
expect_status 1 "--png without rsvg-convert"
expect_err "--png needs rsvg-convert"
expect_err_lines 1

done_testing
