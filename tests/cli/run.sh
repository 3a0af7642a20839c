#!/usr/bin/env bash
# Runs every tests/cli/t_*.sh and other *.sh (not this file or lib.sh)
# against $ZBSCHED; prints one line per script and a summary; fails if any
# script fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${ZBSCHED:?set ZBSCHED to the zbsched binary}"
export ZBSCHED=$(cd "$(dirname "$ZBSCHED")" && pwd)/$(basename "$ZBSCHED")
pass=0 fail=0
for t in "$here"/*.sh; do
    case $(basename "$t") in run.sh|lib.sh) continue ;; esac
    if out=$(bash "$t" 2>&1); then
        pass=$((pass + 1))
        echo "[PASS] cli/$(basename "$t")"
    else
        fail=$((fail + 1))
        echo "[FAIL] cli/$(basename "$t")"
        echo "$out" | sed 's/^/    /'
    fi
done
echo "[====] cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
