#!/usr/bin/env bash
# t_check.sh - --check for every generator at pp 2, 4 and 8, a V-placement
# and interleaved schedules among them: loss, gradients and weights equal
# the sequential single-process run (exactly on the cpu backend).
. "$(dirname "$0")/lib.sh"
if [ "$BACKEND" = cpu ]; then want='^check: exact match'
else want='^check: within tolerance'; fi

for pp in 2 4 8; do
    for g in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v interleaved-zb zb; do
        case $g in
        interleaved | interleaved-zb) extra="--vpp 2" ;;
        zb-v) extra="--vpp 2 --placement v" ;;
        *) extra= ;;
        esac
        gen "$TMP/s.json" --pp "$pp" --mb $((2 * pp)) --schedule "$g" $extra
        zbexec "$pp" "$TMP/s.json" --check --model "$MODEL"
        expect "check: $g at pp $pp" 0 "$want"
    done
done

# The controllable-memory families, at an odd and an even pp (their
# building blocks differ by parity), and dualpipev (its FB ops run as F
# then B).
for pp in 3 4; do
    for g in v-half v-min dualpipev; do
        gen "$TMP/s.json" --pp "$pp" --mb $((2 * pp)) --schedule "$g" \
            --vpp 2 --placement v
        zbexec "$pp" "$TMP/s.json" --check --model "$MODEL"
        expect "check: $g at pp $pp" 0 "$want"
    done
done

# One rank: stage 0 is also the last stage.
gen "$TMP/one.json" --pp 1 --mb 4 --schedule zb-h1
zbexec 1 "$TMP/one.json" --check --model "$MODEL"
expect "check: pp 1" 0 "$want"

# W out of microbatch order: the gradient is still added in order.
gen "$TMP/h2.json" --pp 2 --mb 4 --schedule zb-h2
a=$(op_line "$TMP/h2.json" 0 '"W", "stage": 0, "mb": 1,')
b=$(op_line "$TMP/h2.json" 0 '"W", "stage": 0, "mb": 2,')
swap_lines "$TMP/h2.json" "$a" "$b"
run "$ZBSCHED" validate "$TMP/h2.json"
expect "validate: W out of microbatch order is still legal" 0
zbexec 2 "$TMP/h2.json" --check --model "$MODEL"
expect "check: W run out of microbatch order" 0 "$want"

# More than one iteration, a larger model (messages past MPI's eager
# limit), heterogeneous stage times in the profile.
gen "$TMP/zb.json" --pp 4 --mb 8 --schedule zb --f 1 --b 1.5 --w 0.5
zbexec 4 "$TMP/zb.json" --check --iters 3 \
    --model mlp:layers=3,hidden=96,batch=16
expect "check: 3 iterations, rendezvous-sized messages" 0 "$want"
done_testing
