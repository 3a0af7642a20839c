#!/usr/bin/env bash
# render, export, import: SVG checked by xmllint and drawn by rsvg-convert,
# --png, time axes in the profile's unit, terminal widths, the predicted
# trace's layout read by jq (DP collectives too), PyTorch CSV round trips
# (overlap cells with spaces) and PyTorch's own 1F1B, and the errors.
. "$(dirname "$0")/../lib/tap.sh"

for tool in xmllint rsvg-convert jq; do
    command -v "$tool" >/dev/null ||
        { fail "$tool not found (tools/deps.sh installs it)"; done_testing; }
done

# PNG width and height from the IHDR chunk (bytes 16-23, big endian).
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{
    printf "%dx%d\n", $1*2^24 + $2*2^16 + $3*2^8 + $4,
                      $5*2^24 + $6*2^16 + $7*2^8 + $8 }'; }

"$ZBSCHED" generate --pp 4 --mb 8 --schedule zb-h1 --comm 0.5 \
    --mem-limit 5 -q -o "$TMP/h1.json"
"$ZBSCHED" generate --pp 4 --mb 8 --vpp 2 --placement v --schedule zb-v \
    -q -o "$TMP/v.json"
"$ZBSCHED" generate --pp 4 --mb 8 --vpp 2 --schedule interleaved -q \
    -o "$TMP/il.json"

# ---- SVG ----------------------------------------------------------------
run "$ZBSCHED" render "$TMP/h1.json" -o "$TMP/h1.svg"
expect_status 0 "render svg"
xmllint --noout "$TMP/h1.svg" 2>"$ERR" || fail "svg is not well formed"
[ "$(grep -c 'class="op"' "$TMP/h1.svg")" -eq 96 ] ||
    fail "want 96 boxes (4 ranks x 8 mb x F, B, W)"
grep -q 'class="limit"' "$TMP/h1.svg" || fail "no memory limit line"
rsvg-convert "$TMP/h1.svg" -o "$TMP/h1.png" 2>"$ERR" ||
    fail "rsvg-convert failed"
[ "$(png_size "$TMP/h1.png" | cut -dx -f1)" -eq 1200 ] ||
    fail "png width $(png_size "$TMP/h1.png"), want 1200"
[ "$(stat -c %s "$TMP/h1.png")" -gt 10000 ] || fail "png looks empty"

run "$ZBSCHED" render "$TMP/h1.json" --width 600
expect_status 0 "svg on stdout"
expect_out '<svg xmlns="http://www.w3.org/2000/svg" width="600"'
rsvg-convert "$OUT" -o "$TMP/w.png" || fail "rsvg-convert on stdout svg"
[ "$(png_size "$TMP/w.png" | cut -dx -f1)" -eq 600 ] || fail "width 600"

run "$ZBSCHED" render --compare "$TMP/h1.json" "$TMP/v.json" \
    "$TMP/il.json" -o "$TMP/cmp.svg"
expect_status 0 "compare"
xmllint --noout "$TMP/cmp.svg" || fail "compare svg is not well formed"
[ "$(grep -c '<g class="panel">' "$TMP/cmp.svg")" -eq 3 ] || fail "3 panels"
rsvg-convert "$TMP/cmp.svg" -o "$TMP/cmp.png" || fail "rsvg compare"

# ---- PNG (rsvg-convert) and the time unit --------------------------------
run "$ZBSCHED" render "$TMP/h1.json" --png "$TMP/p.png"
expect_status 0 "render --png"
[ ! -s "$OUT" ] || fail "--png alone printed an SVG too"
[ "$(png_size "$TMP/p.png")" = "$(png_size "$TMP/h1.png")" ] ||
    fail "--png is $(png_size "$TMP/p.png"), rsvg-convert of the SVG" \
         "$(png_size "$TMP/h1.png")"
run "$ZBSCHED" render "$TMP/h1.json" --png "$TMP/p2.png" -o "$TMP/p2.svg"
expect_status 0 "render --png -o"
check "-o beside --png writes the SVG" cmp -s "$TMP/h1.svg" "$TMP/p2.svg"
check "...and the PNG" test -s "$TMP/p2.png"
run "$ZBSCHED" render "$TMP/h1.json" --ascii --png "$TMP/a.png"
expect_status 2 "--png with --ascii"
expect_err "zbsched: render: --png does not apply to --ascii"
printf 'old' >"$TMP/keep.png"
run env PATH=/nonexistent "$ZBSCHED" render "$TMP/h1.json" \
    --png "$TMP/keep.png"
expect_status 1 "--png without rsvg-convert"
expect_err "render: --png needs rsvg-convert (Debian's librsvg2-bin"
expect_err_lines 1
[ "$(cat "$TMP/keep.png")" = old ] || fail "a failed --png replaced the file"
[ -z "$(ls -A "$TMP" | grep '^\.keep')" ] || fail "temporary file left"

grep -q '>time (profile units)</text>' "$TMP/h1.svg" ||
    fail "a profile without time_unit: axis in profile units"
"$ZBSCHED" generate --pp 4 --mb 8 --schedule zb-h1 --time-unit ms \
    --f 1.5 --b 1.5 --w 1 -q -o "$TMP/ms.json"
run "$ZBSCHED" render "$TMP/ms.json" -o "$TMP/ms.svg"
expect_status 0 "render, time_unit ms"
grep -q '>time (ms)</text>' "$TMP/ms.svg" || fail "time axis not in ms"
grep -q 'cost 38 ms, bubble_ratio 0.1579, makespan 38 ms' "$TMP/ms.svg" ||
    fail "header cost in ms"
run "$ZBSCHED" render --compare "$TMP/ms.json" "$TMP/h1.json" \
    -o "$TMP/mixed.svg"
grep -q '>time (profile units)</text>' "$TMP/mixed.svg" ||
    fail "panels with and without a unit claim one"
run "$ZBSCHED" render "$TMP/ms.json" --ascii --width 80
grep -qE '^ +0 +38 ms$' "$OUT" || fail "terminal axis not in ms"
expect_out "1 column = "
tr '\n' ' ' <"$OUT" | grep -qE '1 column = [0-9.]+ ms' ||
    fail "terminal column width not in ms"

# ---- Terminal -----------------------------------------------------------
for w in 40 80 160; do
    run "$ZBSCHED" render "$TMP/v.json" --ascii --width "$w"
    expect_status 0 "ascii $w"
    awk -v w="$w" 'length($0) > w { bad = 1 } END { exit bad }' "$OUT" ||
        fail "a line is wider than $w"
    [ "$(grep -c '^r[0-9]' "$OUT")" -eq 4 ] || fail "want 4 ranks at $w"
    # The legend wraps instead of being cut at the width.
    tr '\n' ' ' <"$OUT" | grep -q '(of the F in O), \. idle; 1 column = ' ||
        fail "the legend is cut at width $w"
done
COLUMNS=64 run "$ZBSCHED" render "$TMP/h1.json" --ascii
awk 'length($0) > 64 { bad = 1 } END { exit bad }' "$OUT" ||
    fail "COLUMNS=64 not honoured"
expect_out "r0 |FFFF"

# ---- Trace --------------------------------------------------------------
run "$ZBSCHED" render "$TMP/h1.json" --trace "$TMP/trace.json"
expect_status 0 "trace"
[ ! -s "$OUT" ] || fail "--trace alone printed a picture"
jq -e '[.traceEvents[] | select(.ph == "X" and .tid == 0)] | length == 96
       and all(.args.op | IN("F", "B", "W"))' "$TMP/trace.json" >/dev/null ||
    fail "compute slices on thread 0"
jq -e '[.traceEvents[] | select(.ph == "X" and .tid >= 1)] | length == 96
       and all(.cat == "comm")' "$TMP/trace.json" >/dev/null ||
    fail "transfers on threads >= 1"
jq -e '[.traceEvents[] | select(.name == "process_name") | .args.name]
       == ["rank 0", "rank 1", "rank 2", "rank 3"]' "$TMP/trace.json" \
    >/dev/null || fail "one process per rank"
jq -e '([.traceEvents[] | select(.ph == "s")] | length) ==
       ([.traceEvents[] | select(.ph == "f")] | length)' "$TMP/trace.json" \
    >/dev/null || fail "flow starts and ends pair up"
jq -e '[.traceEvents[] | select(.args.op == "F" and .args.stage == 1 and
        .args.mb == 0)][0] | .pid == 1 and .ts == 1500 and .dur == 1000' \
    "$TMP/trace.json" >/dev/null || fail "F s1 mb0 at 1.5 ms on rank 1"

run "$ZBSCHED" render "$TMP/h1.json" --realized "$TMP/trace.json" --ascii \
    --width 100
expect_status 0 "realized"
expect_out "zb-h1 (realized): p 4, vpp 1, m 8, cost 33"
expect_out "zb-h1 (predicted): p 4, vpp 1, m 8, cost 33"
run "$ZBSCHED" render "$TMP/h1.json" --realized "$TMP/trace.json" \
    -o "$TMP/real.svg"
expect_status 0 "realized svg"
xmllint --noout "$TMP/real.svg" || fail "realized svg is not well formed"
[ "$(grep -c 'class="op"' "$TMP/real.svg")" -eq 192 ] ||
    fail "realized and predicted: 192 boxes"

# ---- PyTorch CSV --------------------------------------------------------
for f in compute_only compute_comms; do
    for s in h1 v il; do
        run "$ZBSCHED" export "$TMP/$s.json" --to torch-csv --format "$f" \
            -o "$TMP/$s.$f.csv"
        expect_status 0 "export $s $f"
        run "$ZBSCHED" import --from torch-csv "$TMP/$s.$f.csv" -q \
            -o "$TMP/$s.$f.json" $([ "$s" = h1 ] &&
                                   echo --comm 0.5 --mem-limit 5)
        expect_status 0 "import $s $f"
        "$ZBSCHED" eval --json "$TMP/$s.json" | sed 's/"schedule": "[^"]*"//' \
            >"$TMP/a"
        "$ZBSCHED" eval --json "$TMP/$s.$f.json" |
            sed 's/"schedule": "[^"]*"//' >"$TMP/b"
        cmp -s "$TMP/a" "$TMP/b" || fail "$s $f: measures differ"
        jq -c '.ranks' "$TMP/$s.json" >"$TMP/a"
        jq -c '.ranks' "$TMP/$s.$f.json" >"$TMP/b"
        cmp -s "$TMP/a" "$TMP/b" || fail "$s $f: op lists differ"
    done
done
grep -q '^0F0,0F1,0F2,0F3,,,,0I0,0W0' "$TMP/h1.compute_only.csv" ||
    fail "compute_only grid of zb-h1"
grep -q '0W7,0REDUCE_GRAD,0RESHARD$' "$TMP/h1.compute_comms.csv" ||
    fail "compute_comms ends rank 0 with REDUCE_GRAD and RESHARD"
[ "$(grep -c '^[0-9]UNSHARD,' "$TMP/v.compute_comms.csv")" -eq 4 ] ||
    fail "compute_comms unshards first on every rank (FSDP)"
# UNSHARD, RESHARD and REDUCE_GRAD survive import and export.
for s in h1 v il; do
    "$ZBSCHED" export "$TMP/$s.compute_comms.json" --to torch-csv \
        --format compute_comms -o "$TMP/$s.again.csv"
    cmp -s "$TMP/$s.compute_comms.csv" "$TMP/$s.again.csv" ||
        fail "$s: compute_comms export, import, export differs"
done
# PyTorch reads a blank line as a rank without actions: refused here.
printf '0F0,0B0\n1F0,1B0\n\n' >"$TMP/blank.csv"
run "$ZBSCHED" import --from torch-csv "$TMP/blank.csv"
expect_status 1 "trailing blank line"
expect_err "line 3 is blank: PyTorch reads every line as a rank"

# An overlap cell with spaces reads as PyTorch reads it (each sub-action
# stripped): the same schedule as without them.
"$ZBSCHED" generate --pp 4 --mb 8 --vpp 2 --placement v --schedule dualpipev \
    -q -o "$TMP/dp.json"
"$ZBSCHED" export "$TMP/dp.json" --to torch-csv -o "$TMP/dp.csv"
grep -q ')OVERLAP_F_B' "$TMP/dp.csv" || fail "dualpipev exports no overlap cell"
sed 's/;/ ; /g; s/(/( /g' "$TMP/dp.csv" >"$TMP/dp-spaces.csv"
grep -q '( [0-9]*F[0-9]* ; [0-9]*I[0-9]*)OVERLAP_F_B' "$TMP/dp-spaces.csv" ||
    fail "no spaced overlap cell to read"
"$ZBSCHED" import --from torch-csv "$TMP/dp.csv" -q -o "$TMP/dp-a.json"
run "$ZBSCHED" import --from torch-csv "$TMP/dp-spaces.csv" -q \
    -o "$TMP/dp-b.json"
expect_status 0 "import overlap cells with spaces"
check "spaced overlap cells give the same schedule" \
    cmp -s "$TMP/dp-a.json" "$TMP/dp-b.json"

# PyTorch's Schedule1F1B, pp 4, 8 microbatches, as its step grid prints it.
cat >"$TMP/torch1f1b.csv" <<'EOF'
0F0,0F1,0F2,,,,,,,0F3,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,,0B5,,0B6,,0B7
,1F0,1F1,,,,,1F2,1B0,1F3,1B1,1F4,1B2,1F5,1B3,1F6,1B4,1F7,1B5,,1B6,,1B7
,,2F0,,,2F1,2B0,2F2,2B1,2F3,2B2,2F4,2B3,2F5,2B4,2F6,2B5,2F7,2B6,,2B7
,,,3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3F4,3B4,3F5,3B5,3F6,3B6,3F7,3B7
EOF
run "$ZBSCHED" import --from torch-csv "$TMP/torch1f1b.csv" --name torch-1f1b
expect_status 0 "import torch 1f1b"
expect_err "torch-1f1b: cost 33, bubble_ratio 0.2727"
cp "$OUT" "$TMP/torch1f1b.json"
run "$ZBSCHED" validate "$TMP/torch1f1b.json"
expect_status 0 "validate imported"
run "$ZBSCHED" render "$TMP/torch1f1b.json" -o "$TMP/t.svg"
expect_status 0 "render imported"

# ---- Errors: one line, the right status, no output left behind ---------
run "$ZBSCHED" render "$TMP/nope.json"
expect_status 1 "missing file"
expect_err "zbsched: cannot open '$TMP/nope.json': No such file"
expect_err_lines 1
run "$ZBSCHED" render "$TMP/h1.json" "$TMP/v.json"
expect_status 2 "two files"
expect_err "zbsched: render: several schedules need --compare"
run "$ZBSCHED" render "$TMP/h1.json" --width 10 -o "$TMP/small.svg"
expect_status 2 "width"
[ ! -e "$TMP/small.svg" ] || fail "output left behind"
run "$ZBSCHED" render "$TMP/h1.json" --time-unit parsec
expect_status 2 "unit"
"$ZBSCHED" render "$TMP/v.json" --trace "$TMP/v.trace.json"
run "$ZBSCHED" render "$TMP/h1.json" --realized "$TMP/v.trace.json"
expect_status 1 "trace of another schedule"
expect_err "F stage 7 mb 0 does not run on rank 0 of this schedule"
run "$ZBSCHED" export "$TMP/h1.json" --to svg
expect_status 2 "export format"
printf '0F0,0Q0\n' >"$TMP/bad.csv"
run "$ZBSCHED" import --from torch-csv "$TMP/bad.csv" -o "$TMP/bad.json"
expect_status 1 "bad cell"
expect_err "zbsched: '$TMP/bad.csv': rank 0, step 1: '0Q0': unknown action type"
expect_err_lines 1
[ ! -e "$TMP/bad.json" ] || fail "output left behind"
run "$ZBSCHED" import --from torch-csv "$TMP/torch1f1b.csv" --mb 4
expect_status 1 "profile of another shape"
expect_err "does not match the CSV (pp 4, vpp 1, 8 microbatches"

done_testing
