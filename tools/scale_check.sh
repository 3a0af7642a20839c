#!/usr/bin/env bash
# scale_check.sh BENCH_QUALITY ZBSCHED [FACTOR] - one answer in any unit on
# the quality grid: every grid instance's profile (bench_quality --profile
# K) as it is and with every time multiplied by FACTOR (default 1000), run
# through `zbsched generate --schedule zb`; prints, per instance, whether
# the two compute orders are identical and the cost ratio, then a count.
# Exit status 1 when any order differs.
set -eu
bq=$1 zbsched=$2 factor=${3:-1000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
same=0 differ=0
for k in $(seq 0 95); do
    "$bq" --profile "$k" >"$tmp/a.json"
    python3 - "$tmp/a.json" "$tmp/b.json" "$factor" <<'PY'
import json, sys
src, dst, k = sys.argv[1], sys.argv[2], float(sys.argv[3])
p = json.load(open(src))
for t in [p.get("time", {})] + p.get("stages", []):
    for key in ("F", "B", "W", "comm"):
        if key in t:
            t[key] *= k
json.dump(p, open(dst, "w"))
PY
    "$zbsched" generate --schedule zb --profile "$tmp/a.json" --quiet \
        -o "$tmp/a.out" 2>/dev/null
    "$zbsched" generate --schedule zb --profile "$tmp/b.json" --quiet \
        -o "$tmp/b.out" 2>/dev/null
    verdict=$(python3 - "$tmp/a.out" "$tmp/b.out" "$factor" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
k = float(sys.argv[3])
def order(s):
    return [[(o["op"], o.get("stage"), o.get("mb")) for o in r["ops"]]
            for r in s["ranks"]]
ratio = b["predicted"]["cost"] / (k * a["predicted"]["cost"])
print("same" if order(a) == order(b) else "differ", "%.12f" % ratio)
PY
)
    echo "K $k: $verdict"
    case $verdict in
        same*) same=$((same + 1)) ;;
        *) differ=$((differ + 1)) ;;
    esac
done
echo "identical orders at F = 1 and F = $factor: $same of $((same + differ))"
[ "$differ" = 0 ]
