#!/usr/bin/env bash
# t_step.sh - the optimizer step: an injected NaN makes the global check
# skip the step (with post-validation: taken, then rolled back), and the
# weights after it equal the sequential reference's; clipping likewise.
. "$(dirname "$0")/lib.sh"
if [ "$BACKEND" = cpu ]; then want='^check: exact match'
else want='^check: within tolerance'; fi

gen "$TMP/step.json" --pp 4 --mb 8 --schedule zb-h1
sed 's/{"op": "STEP"}/{"op": "STEP", "post_validation": true}/' \
    "$TMP/step.json" >"$TMP/postval.json"

zbexec 4 "$TMP/postval.json" --model "$MODEL" --check --iters 2 \
    --inject-nan 1:2
expect "step: NaN rolled back (post-validation from the schedule)" 0 \
    '^step 1: skipped, non-finite gradient \(rolled back\)'
expect "step: weights after the rollback equal the reference" 0 "$want"

zbexec 4 "$TMP/step.json" --model "$MODEL" --check --iters 2 \
    --inject-nan 3:7
expect "step: NaN skipped without post-validation" 0 \
    '^step 1: skipped, non-finite gradient$'
expect "step: weights after the skip equal the reference" 0 "$want"

zbexec 4 "$TMP/step.json" --model "$MODEL" --check --iters 2 \
    --post-validation --clip 0.01
expect "step: clipping rolls back and redoes the step" 0 \
    '^step 2: clipped \(rolled back\)'
expect "step: clipped weights equal the reference" 0 "$want"
done_testing
