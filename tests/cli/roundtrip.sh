#!/usr/bin/env bash
# roundtrip.sh - names with JSON's special characters survive the one JSON
# writer: import --name with a quote and a backslash, then validate.
. "$(dirname "$0")/lib.sh"

run "$ZBSCHED" generate --pp 2 --mb 4 --schedule 1f1b -q -o "$tmp/s.json"
expect_status 0 "generate"
run "$ZBSCHED" export "$tmp/s.json" --to torch-csv -o "$tmp/s.csv"
expect_status 0 "export"
for name in 'x"y' 'a\b' 'q"\"'; do
    run "$ZBSCHED" import --from torch-csv "$tmp/s.csv" --name "$name" -q \
        -o "$tmp/i.json"
    expect_status 0 "import --name $name"
    run "$ZBSCHED" validate "$tmp/i.json"
    expect_status 0 "validate after import --name $name"
    run jq -r .schedule "$tmp/i.json"
    [ "$(cat "$tmp/out")" = "$name" ] ||
        fail "name '$name' came back as '$(cat "$tmp/out")'"
done
finish
