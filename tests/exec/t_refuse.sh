#!/usr/bin/env bash
# t_refuse.sh - never silently wrong: hand-edited schedules are refused by
# the validator before anything runs, and with --no-validate the run-time
# checks (message headers, pass order, STEP's completeness) stop them.
. "$(dirname "$0")/lib.sh"

# A swapped microbatch: rank 0 runs and sends mb 1 before mb 0.
gen "$TMP/base.json" --pp 2 --mb 4 --schedule 1f1b
cp "$TMP/base.json" "$TMP/swap.json"
for op in '"F"' '"SEND_F"'; do
    a=$(op_line "$TMP/swap.json" 0 "$op, \"stage\": 0, \"mb\": 0,")
    b=$(op_line "$TMP/swap.json" 0 "$op, \"stage\": 0, \"mb\": 1,")
    set_mb "$TMP/swap.json" "$a" 1
    set_mb "$TMP/swap.json" "$b" 0
done
zbexec 2 "$TMP/swap.json" --model "$MODEL"
expect "refused: swapped microbatch" 1 'rank 0: .*order differs' "$ERR"
zbexec 2 "$TMP/swap.json" --model "$MODEL" --no-validate
expect "stopped: swapped microbatch, by the message header" fail \
    'rank 1: .*expected F stage 0 mb 0 .* received F stage 0 mb 1 ' \
    "$ERR"

# A missing W.
gen "$TMP/now.json" --pp 2 --mb 4 --schedule zb-h1
delete_line "$TMP/now.json" \
    "$(op_line "$TMP/now.json" 0 '"W", "stage": 0, "mb": 2,')"
zbexec 2 "$TMP/now.json" --model "$MODEL"
expect "refused: missing W" 1 'W stage 0 mb 2 is missing' "$ERR"
zbexec 2 "$TMP/now.json" --model "$MODEL" --no-validate
expect "stopped: missing W, at STEP" fail 'STEP: W stage 0 mb 2 never ran' \
    "$ERR"

# Send/recv order mismatch: rank 1 posts its first two receives swapped.
gen "$TMP/order.json" --pp 2 --mb 4 --schedule zb-h2
a=$(op_line "$TMP/order.json" 1 '"RECV_F", "stage": 1, "mb": 0,')
b=$(op_line "$TMP/order.json" 1 '"RECV_F", "stage": 1, "mb": 1,')
swap_lines "$TMP/order.json" "$a" "$b"
zbexec 2 "$TMP/order.json" --model "$MODEL"
expect "refused: send/recv order mismatch" 1 'order differs' "$ERR"
zbexec 2 "$TMP/order.json" --model "$MODEL" --no-validate
expect "stopped: send/recv order mismatch, by the message header" fail \
    'rank 1: .*expected F stage 0 mb 0 .*, received F stage 0 mb 1 ' \
    "$ERR"

# A pass before its input: rank 1's first F moved before its receive.
cp "$TMP/base.json" "$TMP/early.json"
a=$(op_line "$TMP/early.json" 1 '"RECV_F", "stage": 1, "mb": 0,')
b=$(op_line "$TMP/early.json" 1 '"F", "stage": 1, "mb": 0,')
swap_lines "$TMP/early.json" "$a" "$b"
zbexec 2 "$TMP/early.json" --model "$MODEL" --no-validate
expect "stopped: F before the receive of its input" fail \
    'needs F stage 0 mb 0 from rank 0, but no receive for it was posted' \
    "$ERR"

# The wrong number of processes, usage errors, a file that is not there.
zbexec 1 "$TMP/base.json"
expect "refused: pp 2 schedule on 1 process" 1 'mpirun -np 2' "$ERR"
zbexec 2 "$TMP/base.json" --iters 0
expect "usage: --iters 0" 2 'rank 0: --iters must be' "$ERR"
zbexec 2 "$TMP/base.json" --synthetic --check
expect "usage: --synthetic with --check" 2 'need one' "$ERR"
zbexec 2 "$TMP/missing.json"
expect "refused: missing file" 1 "cannot open" "$ERR"
zbexec 2 "$TMP/base.json" --backend cpu --transport nccl
expect "usage: the cpu backend has no nccl transport" 1 \
    'the cpu backend.s transport is mpi' "$ERR"
if [ "$BACKEND" = cpu ]; then
    zbexec 2 "$TMP/base.json" --backend cuda
    expect "refused: zbexec has no cuda backend" 1 \
        "backend 'cuda' is not in this program: run zbexec-cuda" "$ERR"
fi
# The schedule on stdin: rank 0 reads it and every rank runs those bytes.
zbexec 2 - --model "$MODEL" <"$TMP/base.json"
expect "runs: the schedule on stdin" 0

# A model larger than host memory: refused with the rank and the sizes,
# before anything is allocated (it used to abort in the allocator).
if [ "$BACKEND" = cpu ]; then
    zbexec 2 "$TMP/base.json" --model mlp:layers=64,hidden=16384,batch=65536
    expect "refused: a model larger than memory" 1 \
        'rank [01]: --model mlp:layers=64,hidden=16384,batch=65536 needs at least [0-9.]+ GiB on this rank, more than the [0-9.]+ GiB available' \
        "$ERR"
fi
# ZBEXEC_CUDA (set by the Makefile where it is built) on a machine
# without a GPU.
if [ "$BACKEND" = cpu ] && [ -x "${ZBEXEC_CUDA:-}" ] && ! have_gpu; then
    run timeout -k 5 120 mpirun --oversubscribe --bind-to none -np 2 \
        "$ZBEXEC_CUDA" "$TMP/base.json"
    expect "refused: zbexec-cuda without a GPU" 1 'no CUDA device' "$ERR"
fi
done_testing
