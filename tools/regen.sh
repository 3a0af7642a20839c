#!/usr/bin/env bash
# regen.sh ZBSCHED - rewrite the golden files: for every
# tests/data/<case>.model.json and every family that serves it (and fits
# its limit), tests/data/<case>.<family>.json. Run on purpose (`make
# regen`), then read the diff: it is the change in behaviour.
set -eu
zbsched=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../tests/data"
rm -f -- *.*.json.tmp
for model in *.model.json; do
    case=${model%.model.json}
    # ilp is a timed search: its result may change with the machine.
    for fam in $("$zbsched" list | awk 'NR > 1 && $1 != "ilp" {print $1}'); do
        out=$case.$fam.json
        if "$zbsched" generate --profile "$model" --schedule "$fam" -q \
            -o "$out" 2>/dev/null; then
            echo "wrote tests/data/$out"
        else
            rm -f "$out"
        fi
    done
done
