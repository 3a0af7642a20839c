#!/usr/bin/env bash
# t_memory.sh - model-mode memory and the measured profile: the MLP's
# passes hold what the profile's model says (realized peak_memory equals
# the prediction once the profile describes the model), a run over the
# schedule's limit fails naming the rank, --profile-out measures M_B, M_W,
# the spread and comm per pair; and synthetic mode's emulated link.
. "$(dirname "$0")/lib.sh"

# peak_diffs REPORT: the realized-minus-predicted peak_memory of each rank.
peak_diffs() {
    awk '/"difference": \{/ { getline; print }' "$1" |
        grep -oE '"peak_memory": [-0-9.e+]+' | sed 's/.*: //'
}

# all_zero VALUES...: every value is 0 within 1e-9.
all_zero() {
    [ $# -gt 0 ] || return 1
    for v in "$@"; do
        awk -v v="$v" 'BEGIN { exit !(v < 1e-9 && v > -1e-9) }' || return 1
    done
}

# One layer: B frees the output and keeps dz, M_W = M_B (the default).
gen "$TMP/one.json" --pp 4 --mb 8 --schedule zb-h1
zbexec 4 "$TMP/one.json" --model mlp:layers=1,hidden=16,batch=4 \
    --report "$TMP/one.report"
expect_true "memory: one layer, realized peak_memory = predicted" \
    all_zero $(peak_diffs "$TMP/one.report")
expect_true "memory: --report lists every live buffer's peak" \
    grep -qE '"peak_buffers": \[[0-9.e+-]+, ' "$TMP/one.report"

# Two layers: B keeps more than it frees; the measured profile says so.
zbexec 4 "$TMP/one.json" --model "$MODEL" --iters 3 \
    --profile-out "$TMP/prof.json"
expect "profile-out: per-stage spread" 0 \
    '^profile: stage 3: F [0-9.e-]+ \[[0-9.e-]+, [0-9.e-]+\] B '
expect "profile-out: comm per neighbouring pair" 0 \
    '^profile: comm ranks 2-3: [0-9.e-]+$'
expect_true "profile-out: M_W above M_B (two layers)" awk '
    /"memory"/ { match($0, /"M_B": [0-9.e-]+/); b = substr($0, RSTART + 7, RLENGTH - 7)
                 match($0, /"M_W": [0-9.e-]+/); w = substr($0, RSTART + 7, RLENGTH - 7)
                 found = w > b }
    END { exit !found }' "$TMP/prof.json"
gen "$TMP/two.json" --profile "$TMP/prof.json" --schedule zb-h1
zbexec 4 "$TMP/two.json" --model "$MODEL" --report "$TMP/two.report"
expect_true "memory: measured profile, realized peak_memory = predicted" \
    all_zero $(peak_diffs "$TMP/two.report")

# The default profile (M_W = M_B) under a limit the model outgrows.
gen "$TMP/tight.json" --pp 4 --mb 8 --schedule zb-h1 --mem-limit 1p
zbexec 4 "$TMP/tight.json" --model "$MODEL"
expect "memory: over the schedule's limit fails naming the rank" fail \
    '^zbexec: rank 0: realized peak_memory [0-9.]+ exceeds the schedule.s limit 4: .*M_W = 1\.[0-9]+ M_B until W' "$ERR"

# Synthetic mode: a transfer takes comm; without it the realized cost
# would be about 2 comm below the prediction (lower bounds only: sleeps
# never end early, whatever the load).
gen "$TMP/comm.json" --pp 2 --mb 2 --schedule 1f1b --f 1 --b 1 --w 1 \
    --comm 20
zbexec 2 "$TMP/comm.json" --synthetic --iters 2 --report "$TMP/comm.report"
expect_true "synthetic: messages take the profile's comm" awk '
    /"predicted": \{/ { match($0, /"cost": [0-9.e+-]+/); p = substr($0, RSTART + 8, RLENGTH - 8) }
    /"realized": \{/ { match($0, /"cost": [0-9.e+-]+/); r = substr($0, RSTART + 8, RLENGTH - 8) }
    END { exit !(p > 40 && r >= p - 1) }' "$TMP/comm.report"

# Stages that differ: each boundary takes its own comm (a slow first
# boundary, a free second one; the slow time on both would add about
# 400 to the cost) and each stage its own memory (the last holds 3 M_B).
cat > "$TMP/stages.profile.json" <<'X'
{"pp": 3, "microbatches": 2, "time": {"F": 1, "B": 1, "W": 1, "comm": 0},
 "stages": [{"F": 1, "B": 1, "W": 1, "comm": 200}, {"F": 1, "B": 1, "W": 1},
            {"F": 1, "B": 1, "W": 1, "M_B": 3, "M_W": 1}]}
X
gen "$TMP/stages.json" --profile "$TMP/stages.profile.json" --schedule 1f1b
zbexec 3 "$TMP/stages.json" --synthetic --iters 2 \
    --report "$TMP/stages.report"
expect_true "synthetic: each boundary takes its own comm" awk '
    /"predicted": \{/ { match($0, /"cost": [0-9.e+-]+/); p = substr($0, RSTART + 8, RLENGTH - 8) }
    /"realized": \{/ { match($0, /"cost": [0-9.e+-]+/); r = substr($0, RSTART + 8, RLENGTH - 8) }
    END { exit !(p > 400 && p < 500 && r >= p - 1 && r < p + 200) }' \
    "$TMP/stages.report"
expect_true "synthetic: each stage's own memory, realized = predicted" \
    all_zero $(peak_diffs "$TMP/stages.report")
expect "synthetic: the last stage's peak is its own M_B" 0 \
    '"peak_memory": 2\}, \{[^}]*"peak_memory": 3\}\]' "$TMP/stages.report"
done_testing
