#!/usr/bin/env bash
# bench_plan.sh ZBSCHED - the worked examples and timing benchmark of
# docs/plan.md: `zbsched plan` on the example models, one markdown row
# each (plan, torchtitan's even split and the min-max compute split:
# step and largest memory per rank), then the wall and CPU seconds. The
# step is the plan's `step`: the cost, or with --dp the schedule's
# step_time (the data-parallel reduce included).
set -eu
Z=${1:-build/zbsched}
EX=docs/examples
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

L8="$EX/llama3-8b.model.json --pp 8 --mb 32 --link-bw 50GB/s"
cases=(
  "gpt-small|$EX/gpt-small.model.json --pp 4 --mb 16 --gpu-mem 16GiB
   --link-bw 25GB/s"
  "llama3-8b, 80 GiB|$L8 --gpu-mem 80GiB"
  "llama3-8b, 80 GiB, dp 8 ZeRO-1|$L8 --gpu-mem 80GiB --dp 8 --zero 1
   --gpus-per-node 8 --inter-bw 25GB/s"
  "llama3-8b, 40 GiB|$L8 --gpu-mem 40GiB"
  "llama3-8b, 30 GiB|$L8 --gpu-mem 30GiB"
  "llama3-8b, 28 GiB|$L8 --gpu-mem 28GiB"
  "llama3-8b, 25 GiB, vpp 1|$L8 --gpu-mem 25GiB --vpp 1"
  "llama3-8b, pp 4, mb 4, 80 GiB|$EX/llama3-8b.model.json --pp 4 --mb 4
   --gpu-mem 80GiB --link-bw 50GB/s"
  "llama3-70b-tp4, vpp 5|$EX/llama3-70b-tp4.model.json --pp 8 --vpp 5
   --mb 64 --gpu-mem 80GiB --link-bw 50GB/s"
  "moe-61-mtp|$EX/moe-61-mtp.model.json --pp 16 --mb 64 --gpu-mem 80GiB
   --dp 32 --zero 1 --link-bw 50GB/s --gpus-per-node 8 --inter-bw 25GB/s"
)

printf '%s\n' "| model | plan: shape, layers per stage | plan step, peak | " \
    "even step, peak | min-max step, peak | bound (gap) | bound by | " \
    "zb runs | wall s | CPU s |" | tr -d '\n'
echo
echo "|---|---|---|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
    name=${c%%|*}
    args=${c#*|}
    # shellcheck disable=SC2086
    if ! /usr/bin/time -f "%e %U" -o "$TMP/t" "$Z" plan $args \
        -o "$TMP/p.json" 2>"$TMP/err"; then
        echo "| $name | $(grep zbsched: "$TMP/err" | tail -1) |"
        continue
    fi
    runs=$(sed -n 's/.*searched: \([0-9]*\) zb runs/\1/p' "$TMP/err")
    read -r wall cpu <"$TMP/t"
    jq -r --arg n "$name" --arg runs "$runs" --arg wall "$wall" \
        --arg cpu "$cpu" '
      def gib: . / 1073741824 * 10 | round / 10;
      def side(b): if b == null then "none"
        elif b.fits then "\(b.step * 10 | round / 10) ms, \(b.memory_bytes | gib) GiB"
        else "does not fit (\(b.memory_bytes | gib) GiB)" end;
      "| \($n) | \(.placement) vpp \(.vpp): \(.layers_per_stage | map(tostring) | join(" ")) | \(.predicted.step * 10 | round / 10) ms, \([.predicted.ranks[].memory_bytes] | max | gib) GiB | \(side(.baselines.even)) | \(side(.baselines.minmax)) | \(.predicted.lower_bound * 10 | round / 10) (\(.predicted.gap * 1000 | round / 10) %) | \(.predicted.bound_by) | \($runs) | \($wall) | \($cpu) |"' \
        "$TMP/p.json"
done
