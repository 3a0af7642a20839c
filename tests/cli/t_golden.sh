#!/usr/bin/env bash
# Golden files: every schedule in tests/data is regenerated from its model
# and must match byte for byte (`make regen` rewrites them on purpose).
. "$(dirname "$0")/../lib/tap.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
n=0
for golden in "$data"/*.json; do
    case $golden in *.model.json) continue ;; esac
    base=$(basename "$golden" .json)
    case=${base%.*} fam=${base##*.}
    run "$ZBSCHED" generate --profile "$data/$case.model.json" \
        --schedule "$fam" -q
    expect_status 0 "$base"
    cmp -s "$OUT" "$golden" ||
        fail "$base differs from its golden file" \
             "(make regen, then read the diff)"
    n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n golden files"
done_testing
