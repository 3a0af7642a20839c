#!/usr/bin/env bash
# t_transformer.sh - the transformer workload (--model transformer:...):
# its gradients against finite differences, --check over families at pp 2
# and 4 (exact on the cpu backend) and with dp 2, --profile-out, and bad
# --model values refused in one line.
. "$(dirname "$0")/lib.sh"
if [ "$BACKEND" = cpu ]; then want='^check: exact match'
else want='^check: within tolerance'; fi
TF=transformer:layers=2,hidden=16,heads=2,seq=8,ffn=32,batch=2

if [ -n "${TF_GRAD:-}" ]; then
    run "$TF_GRAD"
    expect "B and W match finite differences of the loss" 0 'input +relative'
fi

for pp in 2 4; do
    for g in 1f1b zb-h1 zb-v interleaved dualpipev zb; do
        case $g in
        interleaved) extra="--vpp 2" ;;
        zb-v | dualpipev) extra="--vpp 2 --placement v" ;;
        *) extra= ;;
        esac
        gen "$TMP/s.json" --pp "$pp" --mb $((2 * pp)) --schedule "$g" $extra
        zbexec "$pp" "$TMP/s.json" --check --model "$TF"
        expect "check: transformer, $g at pp $pp" 0 "$want"
    done
done

# The defaults, one block a stage, two iterations with a step between;
# the header names the model, the report carries its shapes.
gen "$TMP/h1.json" --pp 2 --mb 4 --schedule zb-h1
zbexec 2 "$TMP/h1.json" --check --iters 3 --model transformer \
    --report "$TMP/r.json" --profile-out "$TMP/p.json"
expect "check: transformer defaults, 3 iterations" 0 "$want"
expect "the header names the model" 0 \
    'model transformer:layers=1,hidden=64,heads=4,seq=32,ffn=256,batch=2'
expect "the report has the model's shapes" 0 '"heads": 4, "seq": 32' \
    "$TMP/r.json"
run "$ZBSCHED" generate -q --profile "$TMP/p.json" --schedule zb-h1 \
    -o "$TMP/from_profile.json"
expect "zbsched accepts the measured profile" 0

# A gradient clipped and a NaN skipped: the same steps as the reference.
zbexec 2 "$TMP/h1.json" --check --model "$TF" --clip 0.001
expect "check: transformer with clipping" 0 "$want"
zbexec 2 "$TMP/h1.json" --check --model "$TF" --inject-nan 1:2
expect "check: transformer with a NaN skipped" 0 "$want"
expect "the NaN's step is skipped" 0 '^step 1: skipped, non-finite gradient'

# Data parallelism: p 2 x d 2, the weights sharded (ZeRO-3).
gen "$TMP/dp.json" --pp 2 --mb 4 --dp 2 --params 1000 --schedule zb-h1 \
    --zero 3
zbexec 4 "$TMP/dp.json" --check --model "$TF"
expect "check: transformer at p 2 x d 2, ZeRO-3" 0 "$want"

# Bad values: one line on stderr naming the problem, exit status 2.
bad() {
    local name=$1 model=$2 pat=$3
    zbexec 2 "$TMP/h1.json" --model "$model"
    if [ "$status" -ne 2 ]; then
        not_ok "$name (status $status, expected 2)"
    elif [ "$(grep -c 'zbexec: rank 0' "$ERR")" -ne 1 ] ||
        ! grep -qE -- "$pat" "$ERR"; then
        not_ok "$name (no one-line /$pat/ in stderr)"
    else
        ok "$name"
    fi
}
bad "refused: unknown key" transformer:layers=1,depth=2 \
    "unknown key 'depth' \(expected layers, hidden, heads, seq, ffn or batch\)"
bad "refused: mlp keys only for the mlp" mlp:heads=2 \
    "--model mlp: unknown key 'heads'"
bad "refused: zero heads" transformer:heads=0 \
    'heads must be an integer in \[1, 1024\], got .0.'
bad "refused: negative seq" transformer:seq=-4 \
    'seq must be an integer in \[1, 65536\]'
bad "refused: hidden not divisible by heads" transformer:hidden=64,heads=5 \
    'hidden 64 is not divisible by heads 5'
bad "refused: unknown model" gpt:layers=2 "unknown model 'gpt:layers=2'"
bad "refused: a tensor over 2^31 floats" \
    transformer:batch=65536,seq=65536 'over the 2\^31 a buffer may hold'

# Sizes that fit the int limits but not the host: the cpu backend's
# memory check (the cuda backend's tensors are not in host memory).
if [ "$BACKEND" = cpu ]; then
    zbexec 2 "$TMP/h1.json" \
        --model transformer:layers=64,hidden=16384,heads=128,ffn=65536
    expect "refused: a model over the host's memory" 1 \
        'needs at least [0-9.]+ GiB on this rank, more than the' "$ERR"
fi

run "$ZBEXEC" --version
expect "zbexec --version" 0 '^zbexec [0-9]+\.[0-9]+\.[0-9]+$'
done_testing
