#!/usr/bin/env bash
# t_profile.sh - profiles from real runs (docs/profiles.md): trace sets of
# a known profile (tests/data/traces, made by tools/make_traces.py) come
# back within 1 % per stage; check-profile's warnings and silences;
# eval --jitter, seeded.
. "$(dirname "$0")/../lib/tap.sh"

D=$(dirname "$0")/../data/traces

if ! command -v python3 >/dev/null; then
    fail "python3 not found (it compares the profiles)"
    done_testing
fi

# within KNOWN MEASURED: every stage's F, B, W and comm within 1 %.
within() {
    python3 - "$1" "$2" <<'X'
import json, sys
def stages(p):
    S = p["pp"] * p.get("vpp", 1)
    t, st = p["time"], p.get("stages") or [{}] * S
    return [{k: st[i].get(k, t[k]) for k in "FBW"} for i in range(S)]
k, m = (json.load(open(f)) for f in sys.argv[1:3])
worst = max(abs(b[x] / a[x] - 1) for a, b in zip(stages(k), stages(m))
            for x in "FBW")
worst = max(worst, abs(m["time"]["comm"] / k["time"]["comm"] - 1))
print("worst %.4f %%" % (100 * worst))
sys.exit(0 if worst <= 0.01 and len(stages(k)) == len(stages(m)) else 1)
X
}

# ---- round trips: several ranks, loop and V, interleaved, mb missing ----
for set in "loop-kernels:known4:loop" "interleaved-gpu:known8:loop" \
           "v-host:known8:v"; do
    IFS=: read -r dir known place <<<"$set"
    run "$ZBSCHED" profile --from torch-trace "$D/$dir" -o "$TMP/$dir.json"
    expect_status 0 "profile --from torch-trace $dir"
    expect_err "placement $place"
    run within "$D/$known.profile.json" "$TMP/$dir.json"
    expect_status 0 "$dir: the known profile within 1 % ($(cat "$OUT"))"
done
run grep -c '"samples": 14' "$TMP/loop-kernels.json"
[ "$(cat "$OUT")" -ge 1 ] && ok "loop-kernels: 14 samples, microbatch 3 gone" ||
    fail "loop-kernels: 14 samples expected with microbatch 3 dropped"
run grep -q '"clock": "device"' "$TMP/loop-kernels.json"
expect_status 0 "kernels give device time"
run grep -q '"clock": "host"' "$TMP/v-host.json"
expect_status 0 "annotations alone give host time"

run "$ZBSCHED" profile --from zbexec "$D/zbexec-zb-h1.trace.json" \
    -o "$TMP/zx.json"
expect_status 0 "profile --from zbexec (a --trace file)"
run within "$D/known4.profile.json" "$TMP/zx.json"
expect_status 0 "zbexec trace: the known profile within 1 % ($(cat "$OUT"))"

run "$ZBSCHED" profile --from megatron "$D/megatron-zb.log" -o "$TMP/mz.json"
expect_status 0 "profile --from megatron (zero-bubble conclusions)"
run within "$D/known4.profile.json" "$TMP/mz.json"
expect_status 0 "megatron conclusions: the known profile ($(cat "$OUT"))"

run "$ZBSCHED" generate --profile "$TMP/loop-kernels.json" --schedule zb -q \
    -o "$TMP/s.json"
expect_status 0 "generate reads a measured profile"
[ -s "$ERR" ] && fail "generate warns about the measured object: $(cat "$ERR")"

# ---- errors ---------------------------------------------------------------
mkdir -p "$TMP/three"
cp "$D/v-host/rank0.json" "$D/v-host/rank1.json" "$D/v-host/rank3.json" \
    "$TMP/three/"
run "$ZBSCHED" profile --from torch-trace --pp 4 --vpp 2 "$TMP/three" \
    -o "$TMP/x.json"
expect_status 1 "a rank's trace missing"
expect_err "stage 2 (of 8: pp 4 x vpp 2) is in none of the traces"
echo '{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 0, "dur": 1}]}' \
    >"$TMP/plain.json"
run "$ZBSCHED" profile --from torch-trace "$TMP/plain.json"
expect_status 1 "a trace without PP: actions"
expect_err "'$TMP/plain.json': no \"PP:\" compute action"
run "$ZBSCHED" profile --from torch-trace "$TMP/plain.json.gz"
expect_status 1 "a compressed trace"
expect_err "gunzip it first"
run "$ZBSCHED" profile --from nsys "$TMP/plain.json"
expect_status 2 "an unknown --from"
run "$ZBSCHED" profile --from megatron "$D/megatron-minmax.log"
expect_status 1 "megatron min/max timers"
expect_err "--timing-log-option all"

# ---- fused backward: per-rank Megatron timers, PyTorch's B actions --------
run "$ZBSCHED" profile --from megatron "$D/megatron-timers.log" \
    -o "$TMP/mt.json"
expect_status 0 "profile --from megatron (timers)"
expect_err "4 ranks from 1 file"
expect_err "the backward was timed whole"
run "$ZBSCHED" check-profile "$TMP/mt.json"
expect_status 0 "check-profile of a fused profile"
expect_err "every stage: W = 0 (B 28.9 is the whole backward)"
run "$ZBSCHED" check-profile "$TMP/mt.json" --schedule 1f1b
expect_status 0 "check-profile --schedule 1f1b"
[ -s "$ERR" ] && fail "1f1b needs no split, yet: $(cat "$ERR")" ||
    ok "W = 0 is no warning for 1f1b"
run "$ZBSCHED" profile --from torch-trace "$D/fused" -o "$TMP/fused.json"
expect_status 0 "profile of PP:B (FULL_BACKWARD) actions"
expect_err "the backward was timed whole"

# ---- check-profile ---------------------------------------------------------
run "$ZBSCHED" profile -q --from megatron "$D/megatron-zb-holds-w.log" \
    -o "$TMP/hw.json"
run "$ZBSCHED" check-profile "$TMP/hw.json"
expect_status 0 "check-profile: B holding W is a warning, not a failure"
expect_err "stage 0: B 36.9 is 1.99 F (18.5) and W 0.4 only 1 % of B"
expect_err "sail-sg/zero-bubble issue #22"
expect_err "--gradient-accumulation-fusion"
expect_err_lines 2

for spec in "8 24 18522 18086 9337 601 0.3664" \
            "8 32 29802 29428 19530 577 0.4324" \
            "16 64 11307 11254 8101 379 0.4324" \
            "32 128 10408 10204 7703 408 0.4324" \
            "8 32 18.5 18.1 9.3 0.6 0.3664"; do
    # shellcheck disable=SC2086
    set -- $spec
    cat >"$TMP/paper.json" <<X
{"pp": $1, "microbatches": $2, "time": {"F": $3, "B": $4, "W": $5,
 "comm": $6}, "memory": {"M_B": 1, "M_W": $7}}
X
    run "$ZBSCHED" check-profile "$TMP/paper.json"
    expect_status 0 "paper profile pp $1, F $3"
    expect_err_lines 0
done
for spec in "18.5 18.1 9.3 2304" "29802 29428 19530 4096" \
            "11307 11254 8101 5120" "10408 10204 7703 6144"; do
    # shellcheck disable=SC2086
    set -- $spec
    echo "{\"pp\": 8, \"time\": {\"F\": $1, \"B\": $2, \"W\": $3}}" \
        >"$TMP/pf.json"
    run "$ZBSCHED" check-profile "$TMP/pf.json" --hidden "$4" --seq 1024
    expect_status 0 "paper times against the FLOPs at hidden $4"
    expect_err_lines 0
done
run "$ZBSCHED" check-profile "$TMP/hw.json" --hidden 4096 --seq 2048
expect_err "stage 0: W/F 0.0216 where a transformer layer's FLOPs"
run "$ZBSCHED" check-profile "$D/zbexec-mlp.profile.json"
expect_status 0 "zbexec's MLP --profile-out"
expect_err_lines 0
for f in loop-kernels interleaved-gpu v-host; do
    run "$ZBSCHED" check-profile "$TMP/$f.json"
    expect_status 0 "check-profile $f"
    expect_err_lines 0
done

cat >"$TMP/bad.json" <<'X'
{"pp": 4, "time": {"F": 10, "B": 10, "W": 5},
 "stages": [{}, {}, {"F": 20}, {}], "memory": {"M_B": 1, "M_W": 3}}
X
run "$ZBSCHED" check-profile "$TMP/bad.json"
expect_status 0 "uneven stages and M_W > 2 M_B"
expect_err "stages 2 and 1 are 40 % apart"
expect_err "zbsched plan"
expect_err "M_W 3 is 3.00 M_B"
python3 - "$TMP/loop-kernels.json" >"$TMP/noisy.json" <<'X'
import json, sys
p = json.load(open(sys.argv[1]))
f = p["measured"]["entries"][1]["F"]
f["p90"] = 1.5 * f["median"]
json.dump(p, sys.stdout)
X
run "$ZBSCHED" check-profile "$TMP/noisy.json"
expect_status 0 "a wide spread"
expect_err "stage 1: F p90/median 1.50 (median 18.5, p90 27.75, 14 samples"
echo '{"pp": 0}' >"$TMP/invalid.json"
run "$ZBSCHED" check-profile "$TMP/invalid.json"
expect_status 1 "an invalid profile"
run "$ZBSCHED" check-profile "$TMP/paper.json" --schedule nope
expect_status 2 "an unknown --schedule"

# ---- eval --jitter -----------------------------------------------------------
"$ZBSCHED" generate --pp 4 --mb 8 --f 18.5 --b 18.1 --w 9.3 --comm 0.6 \
    --schedule zb-h1 -q -o "$TMP/h1.json"
run "$ZBSCHED" eval "$TMP/h1.json" --jitter 0.1 --samples 300 --seed 5
expect_status 0 "eval --jitter"
cp "$OUT" "$TMP/j1"
expect_out "jitter: CV 0.1, 300 samples, seed 5"
run "$ZBSCHED" eval "$TMP/h1.json" --jitter 0.1 --samples 300 --seed 5
cmp -s "$OUT" "$TMP/j1" && ok "the same seed prints the same numbers" ||
    fail "eval --jitter is not reproducible"
run "$ZBSCHED" eval "$TMP/h1.json" --jitter 0.1 --samples 300 --seed 5 --json
expect_status 0 "eval --jitter --json"
cp "$OUT" "$TMP/j.json"
run python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); c=j["cost"]
assert j["jitter"]["seed"] == 5, j
assert c["p95"] >= c["p50"] > c["no_noise"], c' "$TMP/j.json"
expect_status 0 "the JSON holds mean, p50, p95 above the noiseless cost"
run "$ZBSCHED" eval "$TMP/h1.json" --jitter 0 --samples 2
expect_out "cost                  456.3        456.3        456.3        456.3"
run "$ZBSCHED" eval "$TMP/h1.json" --jitter "$TMP/loop-kernels.json" \
    --samples 300
expect_status 0 "eval --jitter FILE: each stage's CV from its spread"
expect_out "jitter: CV per stage from the measured spread, 300 samples"
run "$ZBSCHED" eval "$TMP/h1.json" --jitter "$TMP/v-host.json"
expect_status 1 "eval --jitter FILE of another shape"
expect_err "the measured spread has 8 entries, the schedule 4 stages"
run "$ZBSCHED" eval "$TMP/h1.json" --jitter -1
expect_status 1 "a negative CV"
expect_err "between 0 and 10"

done_testing
