#!/usr/bin/env bash
# t_fsdp.sh - FSDP units inside a stage (data_parallel.units, docs/zero.md
# "Units"): p x d = 2 x 2, 2 x 4 and 4 x 2 ranks replay ZeRO-3 schedules
# that gather each unit per pass (and ZeRO-2/3 reducing per unit per
# microbatch), and --check matches the sequential run: exactly at d 2
# reducing per step (two replicas' MPI sum is a + b either way round),
# within the tolerance of docs/zbexec.md otherwise (MPI's reduction order,
# or the per-microbatch sums); the same without prefetch (--prefetch 0:
# K = 1 places its UNSHARD at the first pass, K > 1 only issues later);
# the model state it realizes beside the predicted; the run-time check of
# a pass on sharded units.
. "$(dirname "$0")/lib.sh"
[ "$BACKEND" = cpu ] || { echo "1..0 # skip: units run on the cpu backend"
                          exit 0; }

for shape in "2 2" "2 4" "4 2"; do
    set -- $shape
    p=$1 d=$2
    for conf in "--zero 3 --fsdp-units 2" \
        "--zero 3 --fsdp-units 4 --reduce microbatch" \
        "--zero 2 --fsdp-units 2 --reduce microbatch" \
        "--zero 3 --prefetch 0" "--zero 3 --fsdp-units 2 --prefetch 0" \
        "--zero 3 --fsdp-units 4 --reduce microbatch --prefetch 0"; do
        want='^check: within tolerance'
        case "$d $conf" in
        "2 "*microbatch*) ;;
        "2 "*) want='^check: exact match' ;;
        esac
        for g in 1f1b zb-h1; do
            # shellcheck disable=SC2086
            gen "$TMP/s.json" --pp "$p" --mb 4 --dp "$d" --params 1000 \
                --schedule "$g" $conf
            zbexec $((p * d)) "$TMP/s.json" --check --model "$MODEL"
            expect "check: $g at p $p x d $d, $conf" 0 "$want"
        done
    done
done

# The model state, with a profile of this MLP (as in t_dp.sh: its
# parameters per stage, fp32 weights and gradients, no optimizer state).
# The model holds a pass's units only while in use, so 4 units predict
# less than 1; the executor gathers a pass's units into the stage's one
# buffer and frees it after the pass, so it realizes what 1 unit does.
L=2 H=16 B=4
P=$((L * (H * H + H))) unit=$(((8 + (L + 1) * B * H) * 4))
cat >"$TMP/prof.json" <<EOF
{"pp": 2, "vpp": 1, "microbatches": 4, "placement": "loop",
 "time": {"F": 1, "B": 1, "W": 1, "comm": 0},
 "memory": {"M_B": 1, "M_W": 0.6},
 "dp": 2, "zero": 3,
 "data_parallel": {"params": $P, "bytes_per_unit": $unit,
                   "bytes": {"weights": 4, "grads": 4, "optimizer": 0}}}
EOF
# state K [PREFETCH]: rank 0's predicted and realized model_state.
state() {
    gen "$TMP/m.json" --profile "$TMP/prof.json" --schedule 1f1b \
        --fsdp-units "$1" --prefetch "${2:-1}"
    zbexec 4 "$TMP/m.json" --model "$MODEL" --iters 2
    awk '/^ +model_state +total_memory$/ { on = 1; getline; next }
         on && NF == 7 && $1 == 0 { print $2, $3 }' "$OUT"
}
read -r pred1 real1 <<<"$(state 1)"
read -r pred4 real4 <<<"$(state 4)"
if awk -v a="$pred1" -v b="$pred4" -v x="$real1" -v y="$real4" \
    'BEGIN { exit !(b < a - 0.1 && x == y && x > 0) }'; then
    ok "model_state: predicted $pred4 (4 units) < $pred1, realized $real4"
else
    fail "model_state: predicted '$pred1' '$pred4', realized '$real1' '$real4'"
fi
# Without prefetch 2 units predict one unit at a time, less than with
# prefetch 1 (both units in a pass); the executor still realizes what 1
# unit does.
read -r pred2 real2 <<<"$(state 2)"
read -r pred20 real20 <<<"$(state 2 0)"
if awk -v a="$pred2" -v b="$pred20" -v x="$real1" -v y="$real20" \
    'BEGIN { exit !(b < a - 0.1 && x == y && x > 0) }'; then
    ok "model_state: predicted $pred20 (2 units, prefetch 0) < $pred2," \
        "realized $real20"
else
    fail "model_state: predicted '$pred2' '$pred20', realized '$real20'"
fi

# Behind the validator (--no-validate): a pass whose unit is missing.
gen "$TMP/z.json" --pp 2 --mb 4 --dp 2 --params 1000 --schedule 1f1b \
    --zero 3 --fsdp-units 2
delete_line "$TMP/z.json" \
    "$(op_line "$TMP/z.json" 1 '"UNSHARD", "stage": 1, "unit": 1,')"
zbexec 4 "$TMP/z.json" --model "$MODEL"
expect "refused: a unit without UNSHARD" 1 'runs on a sharded unit' "$ERR"
zbexec 4 "$TMP/z.json" --model "$MODEL" --no-validate
expect "stopped: a pass on sharded units" fail 'runs on sharded units' "$ERR"
done_testing
