#!/usr/bin/env bash
# t_fsdp.sh - FSDP units inside a stage (data_parallel.units, docs/zero.md
# "Units"): the executor gathers, frees and reduces each unit around the
# segment of a pass that uses it (zbexec/coll_units.c). p x d = 2 x 2,
# 2 x 4 and 4 x 2 ranks replay ZeRO-3 with 1, 2 and 4 units, prefetch 0 and 1,
# reducing per step and per microbatch, and --check matches the
# sequential run: exactly at d 2 reducing per step (two replicas' MPI sum
# is a + b either way round), within the tolerance of docs/zbexec.md
# otherwise (MPI's reduction order, or the per-microbatch sums); then two
# chunks a rank, units that do not divide the layers, clipping, the
# transformer; the model state realized beside the predicted; the
# run-time checks.
. "$(dirname "$0")/lib.sh"
[ "$BACKEND" = cpu ] || { echo "1..0 # skip: units run on the cpu backend"
                          exit 0; }

# Four layers a stage, so four units are a layer each.
M4=mlp:layers=4,hidden=16,batch=4

# replay NAME NP WANT GEN-ARGS...: generate, replay with --check.
replay() {
    local name=$1 np=$2 want=$3
    shift 3
    gen "$TMP/s.json" --mb 4 --params 1000 "$@"
    zbexec "$np" "$TMP/s.json" --check --model "${MODEL_UNDER_TEST:-$M4}"
    expect "check: $name" 0 "$want"
}
exact='^check: exact match'
tolerance='^check: within tolerance'

for shape in "2 2" "2 4" "4 2"; do
    set -- $shape
    p=$1 d=$2
    for k in 1 2 4; do
        for f in 0 1; do
            for red in step microbatch; do
                want=$tolerance
                [ "$d $red" = "2 step" ] && want=$exact
                gens=1f1b
                [ "$p $d" = "2 2" ] && gens="1f1b zb-h1"
                for g in $gens; do
                    replay "$g at p $p x d $d, $k units, prefetch $f, $red" \
                        $((p * d)) "$want" --pp "$p" \
                        --dp "$d" --schedule "$g" --zero 3 \
                        --fsdp-units "$k" --prefetch "$f" --reduce "$red"
                done
            done
        done
    done
done
# ZeRO-2 reducing per microbatch: units of the gradient only.
replay "ZeRO-2, 2 units, reduce microbatch, p 2 x d 2" 4 "$tolerance" \
    --pp 2 --dp 2 --schedule zb-h1 --zero 2 --fsdp-units 2 \
    --reduce microbatch
replay "ZeRO-2, 4 units, reduce microbatch, p 2 x d 4" 8 "$tolerance" \
    --pp 2 --dp 4 --schedule 1f1b --zero 2 --fsdp-units 4 \
    --reduce microbatch
# Two chunks a rank (and dualpipev's overlapped F and B).
for g in zb-v dualpipev; do
    replay "$g, 2 units" 4 "$exact" --pp 2 --dp 2 --schedule "$g" --zero 3 \
        --fsdp-units 2
    replay "$g, 4 units, prefetch 0, reduce microbatch" 4 "$tolerance" \
        --pp 2 --dp 2 --schedule "$g" --zero 3 --fsdp-units 4 --prefetch 0 \
        --reduce microbatch
done
# Units of whole layers: 3 units of 4 layers are 1, 1 and 2 layers.
replay "3 units of 4 layers" 4 "$exact" --pp 2 --dp 2 --schedule zb-h1 \
    --zero 3 --fsdp-units 3
gen "$TMP/s.json" --pp 2 --mb 4 --dp 2 --params 1000 --schedule 1f1b \
    --zero 3 --fsdp-units 4
zbexec 4 "$TMP/s.json" --model "$MODEL"
expect "refused: 4 units of 2 layers" 1 'more than the model.s 2 layers' \
    "$ERR"
# Clipping needs the global norm over shards of units, summed as the
# reference sums them; with post-validation its rollback too.
gen "$TMP/s.json" --pp 2 --mb 4 --dp 2 --params 1000 --schedule zb-h1 \
    --zero 3 --fsdp-units 4
zbexec 4 "$TMP/s.json" --check --model "$M4" --iters 3 --clip 0.05 \
    --post-validation
expect "check: 4 units, clipped and rolled back" 0 "$exact"
# The transformer runs its blocks unit by unit too.
MODEL_UNDER_TEST=transformer:layers=4,hidden=16,heads=2,seq=8,ffn=32,batch=2
for g in 1f1b zb-h1; do
    replay "transformer, $g, 2 units" 4 "$exact" --pp 2 --dp 2 \
        --schedule "$g" --zero 3 --fsdp-units 2
    replay "transformer, $g, 4 units, prefetch 0, reduce microbatch" 4 \
        "$tolerance" --pp 2 --dp 2 --schedule "$g" --zero 3 \
        --fsdp-units 4 --prefetch 0 --reduce microbatch
done
unset MODEL_UNDER_TEST

# The model state, with a profile of this MLP (as in t_dp.sh: its
# parameters per stage, fp32 weights and gradients, no optimizer state).
L=4 H=16 B=4
P=$((L * (H * H + H))) unit=$(((8 + (L + 1) * B * H) * 4))
cat >"$TMP/prof.json" <<EOF
{"pp": 2, "vpp": 1, "microbatches": 4, "placement": "loop",
 "time": {"F": 1, "B": 1, "W": 1, "comm": 0},
 "memory": {"M_B": 1, "M_W": 0.6},
 "dp": 2, "zero": 3,
 "data_parallel": {"params": $P, "bytes_per_unit": $unit,
                   "bytes": {"weights": 4, "grads": 4, "optimizer": 0}}}
EOF
# The executor keeps its reduced gradient shard beside the full buffer
# from the start (the model: after the reduce), P / d floats more.
shard=$(awk -v p="$P" -v u="$unit" 'BEGIN { print p / 2 * 4 / u }')
# state K PREFETCH REDUCE: rank 0's predicted and realized model_state.
state() {
    gen "$TMP/m.json" --profile "$TMP/prof.json" --schedule 1f1b \
        --fsdp-units "$1" --prefetch "$2" --reduce "$3"
    zbexec 4 "$TMP/m.json" --model "$M4" --iters 2
    awk '/^ +model_state +total_memory$/ { on = 1; getline; next }
         on && NF == 7 && $1 == 0 { print $2, $3 }' "$OUT"
}
# within A B: |A - B| < 0.01 (the report prints 4 digits).
within() {
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(a != "" &&
                                     b != "" && d < 0.01 && d > -0.01) }'
}
declare -A pred real
for k in 1 2 4; do
    for f in 0 1; do
        read -r "pred[$k$f]" "real[$k$f]" <<<"$(state "$k" "$f" step)"
        if within "${real[$k$f]}" \
            "$(awk -v a="${pred[$k$f]}" -v s="$shard" 'BEGIN {
                print a + s }')"; then
            ok "model_state, $k units, prefetch $f: realized" \
                "${real[$k$f]} = predicted ${pred[$k$f]} + shard $shard"
        else
            fail "model_state, $k units, prefetch $f: realized" \
                "'${real[$k$f]}', predicted '${pred[$k$f]}' + $shard"
        fi
    done
done
# What units save, realized: 2 units without prefetch hold one at a time
# (half the stage's weights), 4 a quarter; with prefetch 1 a pass holds
# two, so 2 units hold the whole stage and 4 what 2 hold without.
if awk -v a="${real[10]}" -v b="${real[20]}" -v c="${real[40]}" \
    'BEGIN { exit !(b < a - 0.1 && c < b - 0.1) }' &&
    within "${real[21]}" "${real[10]}" && within "${real[41]}" "${real[20]}"
then
    ok "model_state realized: 1 unit ${real[10]} > 2 units, prefetch 0" \
        "${real[20]} > 4 units ${real[40]}; prefetch 1 holds twice"
else
    fail "model_state realized: K 1 2 4 at prefetch 0 '${real[10]}'" \
        "'${real[20]}' '${real[40]}', prefetch 1 '${real[21]}' '${real[41]}'"
fi
# Reducing per microbatch each W segment's gradient (one unit) is reduced
# when the segment ends, blocking: the model holds it until its
# reduce-scatter ends on the collective stream, so the executor holds at
# most what the model predicts, exactly that with 2 units.
for k in 2 4; do
    read -r pm rm <<<"$(state "$k" 0 microbatch)"
    if { [ "$k" = 2 ] && within "$rm" "$pm"; } ||
        { [ "$k" = 4 ] && awk -v a="$rm" -v b="$pm" \
              'BEGIN { exit !(a != "" && a <= b + 0.01) }'; }; then
        ok "model_state, $k units, reduce microbatch: realized $rm," \
            "predicted $pm"
    else
        fail "model_state, $k units, reduce microbatch: realized '$rm'," \
            "predicted '$pm'"
    fi
done

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
