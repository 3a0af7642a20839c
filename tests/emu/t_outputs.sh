#!/usr/bin/env bash
# t_outputs.sh - what the cuda backend measures on a device, in the
# emulation: the trace's comm lanes in device time keep every viewer's
# rules (with the collectives' too), the report's device memory (the
# pool's high-water mark holds at least the predicted activations and
# model state), and sends' headers from pinned memory (only each
# iteration's data upload is left pageable).
. "$(dirname "$0")/lib.sh"

gen "$TMP/v.json" v-half 4
emu 4 4 nccl "$TMP/v.json" --check --model "$MODEL" --iters 3 \
    --trace "$TMP/t.json" --report "$TMP/r.json"
expect "nccl: v-half at pp 4 with a trace and a report"
if command -v python3 >/dev/null 2>&1; then
    check "trace: device-timed comm lanes keep every viewer's rules" \
        python3 "$(dirname "$0")/../lib/trace_check.py" "$TMP/t.json"
fi
check "trace: zbsched render draws it" \
    "$ZBSCHED" render "$TMP/v.json" --realized "$TMP/t.json" \
    -o "$TMP/v.svg"
grep -q '^device memory, MiB' "$OUT" || fail "stdout: the device memory table"
if command -v jq >/dev/null 2>&1; then
    check "report: the pool's high-water mark >= the prediction, each rank" \
        jq -e '.device_memory_bytes as $d | [range(0; 4)] |
               all(. as $k | $d.used_high[$k] >= $d.predicted[$k] and
                   $d.predicted[$k] > 0 and
                   $d.used_end[$k] >= $d.used_start[$k])' \
        "$TMP/r.json"
fi

gen "$TMP/d.json" zb-v 2 --dp 2 --params 1000 --zero 3
emu 4 4 nccl "$TMP/d.json" --check --model "$MODEL" --iters 2 \
    --trace "$TMP/t2.json"
expect "nccl: zb-v at p 2 x d 2, zero 3, with a trace"
if command -v python3 >/dev/null 2>&1; then
    check "trace: with the collectives in device time" \
        python3 "$(dirname "$0")/../lib/trace_check.py" "$TMP/t2.json"
fi

# The fake counts the copies from pageable memory per rank: the initial
# weights and the inputs or targets of each of 3 iterations at most.
gen "$TMP/z.json" zb 4
for t in nccl mpi; do
    gpus=$([ "$t" = nccl ] && echo 4 || echo 1)
    ZB_EMU_STATS=1 emu 4 "$gpus" "$t" "$TMP/z.json" --model "$MODEL" \
        --iters 3
    n=$(sed -n 's/.*pageable copies H2D \([0-9]*\).*/\1/p' "$ERR" |
        sort -n | tail -1)
    if [ "$status" -eq 0 ] && [ -n "$n" ] && [ "$n" -le 4 ]; then
        ok "$t: at most 4 pageable uploads a rank (headers pinned)"
    else
        not_ok "$t: pageable uploads a rank: ${n:-none counted}"
    fi
done
done_testing
