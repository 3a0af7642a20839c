#!/usr/bin/env bash
# peers_table.sh ZBSCHED [SEEDS [FAMILIES [PMS]]] - the named families
# against their peers' orders (tools/peer_orders.py: the Zero Bubble
# repository's V-Half and V-Min, PyTorch's DualPipeV, InterleavedZeroBubble
# (loop placement) and ZBVZeroBubble (for zb-v)) on the same input: the
# Zero Bubble paper's 1.5B times (F 18.5, B 18.1, W 9.3 per stage, halved
# per chunk, comm 0.6, M_W 0.3664) and SEEDS (default 8) seeded uneven
# profiles per (p, m); PMS ("P:M ...") replaces the default (p, m) list.
# Prints one row per case (cost and peak, ours and the peer's) and a
# summary per family. Used by docs/controllable-memory.md.
set -eu
z=$1 seeds=${2:-8} fams=${3:-v-half v-min dualpipev interleaved-zb zb-v}
pms=${4:-4:6 4:8 4:16 6:12 8:8 8:16 8:32 12:24 16:32}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
profile() { # placement p m seed -> JSON (seed 0: the paper's times)
  python3 - "$@" <<'PY'
import json, random, sys
p, m, seed = map(int, sys.argv[2:])
d = {"pp": p, "vpp": 2, "microbatches": m, "placement": sys.argv[1],
     "time": {"F": 9.25, "B": 9.05, "W": 4.65, "comm": 0.6},
     "memory": {"M_B": 1, "M_W": 0.3664}}
if seed:
    r = random.Random(seed)
    d["time"]["comm"] = r.uniform(0, 0.3) if r.random() < 0.7 else 0
    d["memory"]["M_W"] = r.uniform(0.2, 1)
    d["stages"] = [{"F": r.uniform(0.5, 2), "B": r.uniform(0.5, 2.5),
                    "W": r.uniform(0.2, 1.5)} for _ in range(2 * p)]
print(json.dumps(d))
PY
}
measure() { # schedule JSON -> "cost peak"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["predicted"]
print(d["cost"], max(r["peak_memory"] for r in d["ranks"]))' "$1"
}
printf '%-14s %3s %4s %5s | %10s %6s | %10s %6s | %7s\n' family p m seed \
  ours peak peer peak "diff %"
for fam in $fams; do
  pl=v; [ $fam = interleaved-zb ] && pl=loop
  peer=$fam; [ $fam = zb-v ] && peer=zbv
  for pm in $pms; do
    set -- ${pm%:*} ${pm#*:}
    [ $fam = dualpipev ] && [ $2 -lt $((2 * $1)) ] && continue
    python3 "$here/peer_orders.py" $peer $1 $2 > "$tmp/peer.csv"
    for seed in $(seq 0 "$seeds"); do
      profile $pl $1 $2 $((seed ? 1000 * $1 + 10 * $2 + seed : 0)) \
        > "$tmp/p.json"
      "$z" import --from torch-csv --profile "$tmp/p.json" -q \
        -o "$tmp/peer.json" "$tmp/peer.csv"
      "$z" generate --profile "$tmp/p.json" --schedule $fam -q \
        -o "$tmp/ours.json"
      read -r oc ok < <(measure "$tmp/ours.json")
      read -r pc pk < <(measure "$tmp/peer.json")
      printf '%-14s %3d %4d %5d | %10.2f %6.2f | %10.2f %6.2f | %+7.2f\n' \
        $fam $1 $2 $seed $oc $ok $pc $pk \
        "$(python3 -c "print(100 * ($oc / $pc - 1))")"
    done
  done
done | tee "$tmp/rows"
awk '$1 != "family" {
    f = $1; d = $NF; n[f]++; s[f] += d
    if (d > w[f] || n[f] == 1) w[f] = d
    if (d < -1e-9) lo[f]++
    if (d > 1e-9) hi[f]++
    if ($7 > $10 + 1e-9) pk[f]++
  }
  END { for (f in n) printf "%s: %d cases, mean %+.2f %%, worst %+.2f %%, " \
    "lower %d, higher %d, peak above the peer %d\n", f, n[f], \
    s[f] / n[f], w[f], lo[f], hi[f], pk[f] }' "$tmp/rows"
