#!/usr/bin/env bash
# Robustness (docs/robustness.md): hostile or runaway input gets one
# clear line and a non-zero exit before it exhausts time or memory;
# outputs are atomic and a failed stdout is an error; JSON, terminal text
# and SVG stay valid.
. "$(dirname "$0")/../lib/tap.sh"

# Each run here must end quickly: a hang is a failure, not a stuck suite.
t() { timeout 60 "$@"; }

# ---- Limits -------------------------------------------------------------
# A huge limit is as good as none (under SAN=1 the bound's cast of it to
# a count was undefined behaviour).
for lim in 1e300 1e20p; do
    run t "$ZBSCHED" generate --pp 4 --mb 8 --mem-limit "$lim" -q -o /dev/null
    expect_status 0 "--mem-limit $lim"
done

# A file is named once in its error.
printf 'a\0b' >"$TMP/nul.json"
run "$ZBSCHED" eval "$TMP/nul.json"
expect_status 1 "a NUL byte"
expect_err "zbsched: '$TMP/nul.json' contains a NUL byte"
run "$ZBSCHED" eval "$TMP"
expect_status 1 "a directory"
expect_err "zbsched: cannot read '$TMP': Is a directory"

# An option given twice is a usage error, not a silent override.
run "$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/a.json" -o "$TMP/b.json"
expect_status 2 "-o twice"
expect_err "generate: option '--output' given twice"
[ -e "$TMP/a.json" ] || [ -e "$TMP/b.json" ] && fail "wrote a file anyway"

# An ASCII picture is held in memory: ranks x width is capped, and the
# width's range is in its message.
"$ZBSCHED" generate --pp 512 --mb 2 -q -o "$TMP/p512.json"
run t "$ZBSCHED" render "$TMP/p512.json" --ascii --width 1000000 -o /dev/null
expect_status 1 "ascii ranks x width over 64 MiB"
expect_err "is more than 64 MiB of text; at most --width 131072 here"
run t "$ZBSCHED" render "$TMP/p512.json" --ascii --width 100000000
expect_status 2 "width over its range"
expect_err "expected an integer from 40 to 1000000, got '100000000'"
run t "$ZBSCHED" generate --pp 4 --mb 8 --f 5e-324 --b 5e-324 --w 0
expect_status 1 "denormal time"
expect_err "time.F = 4.94066e-324 is out of range (0 or 1e-09 to 1e+12)"
expect_err_lines 1

run t "$ZBSCHED" generate --pp 4 --mb 8 --f 1e307 --b 1e307 --w 1e307
expect_status 1 "time that overflows a sum"
expect_err "time.F = 1e+307 is out of range"

run t "$ZBSCHED" generate --pp 4 --mb 8 --m-b 1e300
expect_status 1 "memory out of range"
expect_err "memory.M_B = 1e+300 is out of range"

# Durations the step cannot time (a pass vanishing in the sums of start
# times gave cost 0, "optimal"): every number in range, collectives too.
run t "$ZBSCHED" generate --pp 4 --mb 8 --f 1e-9 --b 1e-9 --w 1e-9 --dp 2 \
    --zero 3 --params 1 --latency 1e12 -q
expect_status 1 "collective 1e21 times a pass"
expect_err "times span more than 1e+12: a collective takes 1e+12"
expect_err_lines 1
run t "$ZBSCHED" generate --pp 4 --mb 8 --dp 2 --zero 3 --params 1 \
    --latency 1e17 -q
expect_status 1 "latency out of range"
expect_err "data_parallel.latency = 1e+17 is out of range"
run t "$ZBSCHED" generate --pp 4 --mb 8 --dp 2 --zero 3 --params 1e6 \
    --bandwidth 5e-324 -q
expect_status 1 "denormal bandwidth"
expect_err "data_parallel.bandwidth = 4.94066e-324 is out of range"
run t "$ZBSCHED" generate --pp 4 --mb 8 --dp 2 --zero 3 --params 1e11 \
    --bandwidth 1e-9 -q
expect_status 1 "a gather longer than any time"
expect_err "stage 0's gather takes 1e+20, over 1e+12"
run t "$ZBSCHED" generate --pp 4 --mb 8 --dp 2 --zero 3 --params 1e6 \
    --prefetch -1 -q
expect_status 1 "prefetch -1"
expect_err "data_parallel.prefetch must be an integer from 0 to 1048576"

run t "$ZBSCHED" generate --pp 512 --mb 32000 -q
expect_status 1 "pass cap"
expect_err "pp*vpp*microbatches = 16384000 is too large (at most 333333,"

run t "$ZBSCHED" generate --schedule interleaved-zb --pp 4 --vpp 16 --mb 4999
expect_status 1 "interleaved warm-up search cap"
expect_err "interleaved with 4999 microbatches on pp 4 (not a multiple) would"
expect_err_lines 1

run t "$ZBSCHED" compare --pp 4 --mb 8 --mem-sweep 1e17:2e17:1
expect_status 2 "sweep point cap"
expect_err "--mem-sweep '1e17:2e17:1' has 100000000000000000 points (at"

run t "$ZBSCHED" eval /dev/zero
expect_status 1 "endless input"
expect_err "zbsched: '/dev/zero': input is larger than 256 MiB (the limit of this reader)"
expect_err_lines 1

# A small CSV that names a huge microbatch asks for no huge table.
printf '0F999999\n' >"$TMP/huge.csv"
run t "$ZBSCHED" import --from torch-csv "$TMP/huge.csv"
expect_status 1 "torch csv pass cap"
expect_err "1 stages by 1000000 microbatches is too large"

# ---- Safe writes --------------------------------------------------------
run "$ZBSCHED" generate --pp 4 --mb 8 -q -o "$TMP/out.json"
expect_status 0 "generate -o"
ls -A "$TMP" | grep -q '^\.out\.json\.' && fail "temporary file left"
# The temporary file is created, never opened through a planted name.
# (LeakSanitizer cannot run under ptrace: in the sanitizer pass it would
# print a fatal error at exit, so leaks are checked by the runs above.)
if command -v strace >/dev/null; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        strace -f -e trace=openat -o "$TMP/strace" \
        "$ZBSCHED" generate --pp 4 --mb 8 -q -o "$TMP/out.json"
    grep -E "\.out\.json\.[A-Za-z0-9]{6}\".*O_CREAT\|O_EXCL" "$TMP/strace" \
        >/dev/null && ok "temporary file made with O_EXCL, random name" ||
        fail "temporary file: $(grep out.json "$TMP/strace")"
else
    skip "temporary file made with O_EXCL" "no strace"
fi

run "$ZBSCHED" generate --pp 2 --mb 2 --schedule ilp --time-limit 1 -q \
    --export-lp "$TMP/m.lp" -o "$TMP/ilp.json"
expect_status 0 "export-lp"
grep -q '^Minimize' "$TMP/m.lp" || fail "export-lp wrote no LP model"
ls -A "$TMP" | grep -q '^\.m\.lp\.' && fail "export-lp left its temp file"
# A link keeps being a link: the write goes through to its target (which
# need not exist yet), and a replaced file keeps its mode.
echo old >"$TMP/real.json" && ln -s real.json "$TMP/link.json"
run "$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/link.json"
expect_status 0 "-o through a symbolic link"
[ -L "$TMP/link.json" ] || fail "the link was replaced by a file"
grep -q zbsched-schedule "$TMP/real.json" || fail "the link's target is stale"
ln -s sub/new.json "$TMP/dangling.json" && mkdir "$TMP/sub"
run "$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/dangling.json"
expect_status 0 "-o through a link whose target does not exist yet"
grep -q zbsched-schedule "$TMP/sub/new.json" || fail "no file at the target"
chmod 600 "$TMP/real.json"
run "$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/real.json"
expect_status 0 "rewriting a private file"
[ "$(stat -c %a "$TMP/real.json")" = 600 ] ||
    fail "mode $(stat -c %a "$TMP/real.json") after rewriting a 0600 file"
ln -s loop-b "$TMP/loop-a" && ln -s loop-a "$TMP/loop-b"
run "$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/loop-a"
expect_status 1 "a loop of links"
expect_err "Too many levels of symbolic links"
mkdir "$TMP/ro" && chmod 555 "$TMP/ro"
if [ "$(id -u)" -ne 0 ]; then
    run "$ZBSCHED" generate --pp 4 --mb 8 -q -o "$TMP/ro/x.json"
    expect_status 1 "unwritable folder"
    expect_err "cannot create '$TMP/ro/x.json'"
else
    skip "unwritable folder" "root writes anywhere"
fi

for cmd in "eval $TMP/out.json" "eval --json $TMP/out.json" "validate \
$TMP/out.json" "list" "compare --pp 2 --mb 2 --time-limit 0"; do
    run $ZBSCHED $cmd
    [ "$status" -eq 0 ] || fail "$cmd works"
    "$ZBSCHED" $cmd >/dev/full 2>"$ERR"
    status=$?
    expect_status 1 "$cmd >/dev/full"
    expect_err "cannot write to stdout: No space left on device"
done

# A reader that stops early: EPIPE is an error with exit 1, not a signal.
# The schedule (megabytes) outgrows the pipe's buffer, so the write fails.
"$ZBSCHED" generate --pp 64 --mb 1024 --effort -1 -q 2>"$ERR" | head -c 1 \
    >/dev/null
status=${PIPESTATUS[0]}
expect_status 1 "generate | head -c 1"
expect_err "cannot write to stdout: Broken pipe"

# ---- Valid JSON, text and SVG -------------------------------------------
jq '.schedule = "evil\u001b[2J\u0007\nname"' "$TMP/out.json" >"$TMP/evil.json"
run "$ZBSCHED" eval "$TMP/evil.json"
expect_status 0 "control characters in a name"
expect_out 'schedule evil\x1b[2J\x07\x0aname: pp 4'
if grep -q $'\x1b' "$OUT"; then fail "an escape reached the terminal"; fi
run "$ZBSCHED" eval --json "$TMP/evil.json"
jq -e '.schedule == "evil\\x1b[2J\\x07\\x0aname"' "$OUT" >/dev/null ||
    fail "eval --json: name not valid JSON"
run "$ZBSCHED" render "$TMP/evil.json" -o "$TMP/evil.svg"
expect_status 0 "render evil name"
xmllint --noout "$TMP/evil.svg" 2>/dev/null || fail "SVG with the name broke"
printf '{"format": "zbsched-schedule", "version": 1, "schedule": "\\u0000",' \
    >"$TMP/nul.json"
run "$ZBSCHED" eval "$TMP/nul.json"
expect_status 1 "truncated file"
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --json
expect_status 0 "compare --json"
jq -e '.rows | length > 3' "$OUT" >/dev/null || fail "compare --json parses"

# A repeated key is an error at any depth: a file that says two things
# means neither (cJSON would find the first, a person reads the last).
printf '{"pp": 2, "stages": [{"F": 1, "B": 1, "W": 1}], "stages": [{"F": 2,
 "B": 2, "W": 1}, {"F": 2, "B": 2, "W": 1}]}' >"$TMP/dup.json"
run "$ZBSCHED" generate --profile "$TMP/dup.json" --mb 4 -q
expect_status 1 "repeated profile keys"
expect_err "key 'stages' appears twice in one object"
expect_err_lines 1
printf '{"pp": 2, "memory": {"limit": [9], "limit": [8, 8]}}' \
    >"$TMP/dup2.json"
run "$ZBSCHED" generate --profile "$TMP/dup2.json" --mb 4 -q
expect_status 1 "a repeated nested key"
expect_err "key 'memory.limit' appears twice in one object"
"$ZBSCHED" generate --pp 2 --mb 2 -q -o "$TMP/s2.json"
sed 's/"ranks": \[/"ranks": [], "ranks": [/' "$TMP/s2.json" >"$TMP/dup3.json"
run "$ZBSCHED" eval "$TMP/dup3.json"
expect_status 1 "a schedule with two \"ranks\" (the first is predicted's)"
expect_err "key 'predicted.ranks' appears twice in one object"

# A schedule's own shape fields are typed and agree with its profile.
jq '.pp = "two"' "$TMP/s2.json" >"$TMP/pp-string.json"
run "$ZBSCHED" eval "$TMP/pp-string.json"
expect_status 1 "\"pp\": \"two\""
expect_err '"pp" must be an integer'
jq '.stage_rank = [0, 0]' "$TMP/s2.json" >"$TMP/stage-rank.json"
run "$ZBSCHED" validate "$TMP/stage-rank.json"
expect_status 1 "a wrong stage_rank"
expect_err '"stage_rank"[1] must be 1 under placement loop'
jq '.placement = "v"' "$TMP/s2.json" >"$TMP/placement.json"
run "$ZBSCHED" eval "$TMP/placement.json"
expect_status 1 "a placement that is not the profile's"
expect_err '"placement" must be the profile'"'"'s, "loop"'

# Nesting past cJSON's limit says so instead of naming a column.
python3 -c "print('[' * 1200 + ']' * 1200)" >"$TMP/deep.json"
run "$ZBSCHED" eval "$TMP/deep.json"
expect_status 1 "JSON nested 1200 deep"
expect_err "JSON nested deeper than 1000 levels"

# ---- Realized traces checked on read ------------------------------------
"$ZBSCHED" generate --pp 4 --mb 8 --schedule zb-h1 -q -o "$TMP/h1.json"
"$ZBSCHED" render "$TMP/h1.json" --trace "$TMP/tr.json"
X='.traceEvents[] | select(.ph == "X" and .tid == 0 and .pid == 0'
jq "(.traceEvents += [$X)][0:1])" "$TMP/tr.json" >"$TMP/dup.tr.json"
run "$ZBSCHED" render "$TMP/h1.json" --realized "$TMP/dup.tr.json" --ascii
expect_status 1 "duplicated event"
expect_err "rank 0: F stage 0 mb 0 ran twice in iteration 0"
expect_err_lines 1
jq "($X and .args.mb == 1 and .args.op == \"F\") | .ts) |= 1600" \
    "$TMP/tr.json" >"$TMP/ov.json"
run "$ZBSCHED" render "$TMP/h1.json" --realized "$TMP/ov.json" --ascii
expect_status 1 "overlapping events"
expect_err "rank 0: F stage 0 mb 2 starts at 2, before F stage 0 mb 1 ends"
jq "($X and .args.mb == 1) | .ts, .dur) |= 1e308" "$TMP/tr.json" \
    >"$TMP/inf.json"
run "$ZBSCHED" render "$TMP/h1.json" --realized "$TMP/inf.json" --ascii
expect_status 1 "overflowing event"
expect_err "its end is not a finite number"
jq "($X and .args.mb == 7 and .args.op == \"W\") | .ts) |= 1e300" \
    "$TMP/tr.json" >"$TMP/far.json"
run "$ZBSCHED" render "$TMP/h1.json" --realized "$TMP/far.json" --ascii
expect_status 1 "a scale that cannot be drawn"
expect_err "cannot be drawn (its end must lie between 1e-09 and 1e+18)"

# ---- Progress -----------------------------------------------------------
# A sweep of a few seconds shows its progress on a terminal (script(1)
# gives it one) and nothing on a pipe, where stdout is the table alone.
# Progress starts after a second, so the check holds only for a run that
# took longer (a fast machine may finish first: then nothing is owed).
if command -v script >/dev/null 2>&1; then
    t0=$(date +%s%N)
    t script -qec "$ZBSCHED frontier --pp 96 --mb 48 >/dev/null" \
        /dev/null >"$TMP/tty.txt" 2>&1
    ms=$((($(date +%s%N) - t0) / 1000000))
    if grep -q "frontier: [0-9]* of [0-9]* points" "$TMP/tty.txt"; then
        ok "frontier: progress on a terminal"
    elif [ "$ms" -lt 2500 ]; then
        skip "frontier: progress on a terminal" "the sweep took ${ms} ms"
    else
        fail "frontier: no progress on a terminal in ${ms} ms: $(head -c \
            200 "$TMP/tty.txt")"
    fi
else
    skip "frontier: progress on a terminal" "no script(1)"
fi
run t "$ZBSCHED" frontier --pp 64 --mb 32
expect_status 0 "frontier on a pipe"
[ -s "$ERR" ] && fail "frontier: stderr on a pipe: $(head -c 200 "$ERR")" ||
    ok "frontier: nothing on stderr on a pipe"

done_testing
