#!/usr/bin/env bash
# roundtrip.sh - names with JSON's special characters survive the one JSON
# writer: import --name with a quote and a backslash, then validate.
. "$(dirname "$0")/../lib/tap.sh"

run "$ZBSCHED" generate --pp 2 --mb 4 --schedule 1f1b -q -o "$TMP/s.json"
expect_status 0 "generate"
run "$ZBSCHED" export "$TMP/s.json" --to torch-csv -o "$TMP/s.csv"
expect_status 0 "export"
for name in 'x"y' 'a\b' 'q"\"'; do
    run "$ZBSCHED" import --from torch-csv "$TMP/s.csv" --name "$name" -q \
        -o "$TMP/i.json"
    expect_status 0 "import --name $name"
    run "$ZBSCHED" validate "$TMP/i.json"
    expect_status 0 "validate after import --name $name"
    run jq -r .schedule "$TMP/i.json"
    [ "$(cat "$OUT")" = "$name" ] ||
        fail "name '$name' came back as '$(cat "$OUT")'"
done
done_testing
