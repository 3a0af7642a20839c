#!/usr/bin/env bash
# Ctrl-C in `generate --schedule ilp`: the search stops within
# about a second and the best schedule so far is written, legal; a time
# limit whose milliseconds overflow an int is accepted, an infinite one
# refused.
. "$(dirname "$0")/../lib/tap.sh"

# Not proven in minutes (zb 0.7 % above the bound), so only the signal
# ends it.
HARD="--pp 16 --mb 64 --f 1.1 --b 1.3 --w 0.7 --comm 0.13 --m-w 0.5
      --mem-limit 1.2p"

# shellcheck disable=SC2086
"$ZBSCHED" generate --schedule ilp $HARD --time-limit 2147484 \
    -o "$TMP/s.json" >"$OUT" 2>"$ERR" &
pid=$!
# Signal once the search runs: its first progress line (a second into
# it). Up to 120 s for the warm start on a loaded machine.
for _ in $(seq 1200); do
    grep -q "incumbent" "$ERR" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
grep -q "incumbent" "$ERR" && ok "search running" || fail "no progress line"
t0=$(date +%s%N)
kill -INT "$pid"
# The wait itself is bounded: a process that ignores the signal is killed
# after 60 s (and the check below fails).
( sleep 60; kill -KILL "$pid" 2>/dev/null ) &
guard=$!
wait "$pid"
status=$?
kill "$guard" 2>/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
expect_status 0 "interrupted search"
# Generous for a loaded 2-core machine; unloaded it takes well under 1 s
# (lowering and writing the schedule included).
if [ "$ms" -lt 5000 ]; then ok "exited ${ms} ms after SIGINT"
else fail "exited ${ms} ms after SIGINT, want < 5000"; fi
expect_err "ilp: interrupted, cost"
grep -q '"status": "interrupted"' "$TMP/s.json" ||
    fail "solver status in the file is not 'interrupted'"
run "$ZBSCHED" validate "$TMP/s.json"
expect_status 0 "the schedule written is legal"

run "$ZBSCHED" generate --schedule ilp --pp 4 --mb 8 --time-limit 1e400
expect_status 2 "infinite time limit"
expect_err "--time-limit: '1e400' is not a number"
expect_err_lines 1

done_testing
