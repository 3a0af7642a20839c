#!/usr/bin/env bash
# Property test of the whole pipeline, file to file: random profiles
# (shapes, time scales from 1e-3 to 1e6, per-stage times, memory limits,
# both placements) through every family but the solver's. For each
# schedule made: no command dies of a signal, the file validates, its
# JSON measures parse, cost >= lower bound when it fits its limit, and
# the pictures are drawn. PROPERTY_PROFILES sets how many (12 in CI,
# about 5 s).
. "$(dirname "$0")/../lib/tap.sh"

count=${PROPERTY_PROFILES:-12}
families=$("$ZBSCHED" list | awk 'NR > 1 && $1 != "ilp" { print $1 }')

# profile SEED: one random profile JSON on stdout (awk's generator, so a
# seed names the same profile everywhere).
profile() {
    awk -v seed="$1" 'BEGIN {
        srand(seed)
        scale = 10 ^ (int(rand() * 10) - 3)          # 1e-3 .. 1e6
        pp = 1 + int(rand() * 6); v = rand() < 0.3
        vpp = v ? 2 : (rand() < 0.5 ? 1 : 2 + int(rand() * 2))
        mb = 1 + int(rand() * 12)
        mbm = 0.5 + rand(); mw = mbm * rand()
        printf "{\"pp\": %d, \"vpp\": %d, \"microbatches\": %d, ", pp, vpp, mb
        printf "\"placement\": \"%s\", \"stages\": [", v ? "v" : "loop"
        for (s = 0; s < pp * vpp; s++)
            printf "%s{\"F\": %.6g, \"B\": %.6g, \"W\": %.6g}", s ? ", " : "",
                scale * (0.2 + 2 * rand()), scale * (0.2 + 2 * rand()),
                rand() < 0.1 ? 0 : scale * 2 * rand()
        printf "], \"time\": {\"F\": 1, \"B\": 1, \"W\": 1, \"comm\": %.6g}, ",
            rand() < 0.3 ? 0 : scale * 0.5 * rand()
        printf "\"memory\": {\"M_B\": %.6g, \"M_W\": %.6g", mbm, mw
        r = rand()
        if (r < 0.3)
            printf ", \"limit\": \"%.3gp\"", 0.5 + 2 * rand()
        else if (r < 0.6)
            printf ", \"limit\": %.6g", mbm * vpp * (1 + pp * rand())
        printf "}}\n"
    }'
}

# A status above 128 is a signal: the one thing no input may cause.
no_signal() {
    [ "$status" -lt 128 ] || fail "$1: killed by signal $((status - 128))"
}

made=0
for seed in $(seq 1 "$count"); do
    profile "$seed" >"$TMP/p$seed.json"
    failed_before=$tap_failed made_before=$made
    for fam in $families; do
        what="profile $seed ($(cut -c1-60 "$TMP/p$seed.json")...) $fam"
        f=$TMP/s.json
        rm -f "$f"
        # --effort only where it applies: zb searches, a family does not.
        effort=()
        [ "$fam" = zb ] && effort=(--effort 0.02)
        run "$ZBSCHED" generate --profile "$TMP/p$seed.json" \
            --schedule "$fam" "${effort[@]}" -q -o "$f"
        no_signal "$what: generate"
        # A family that does not serve the shape or the limit says so.
        if [ "$status" -ne 0 ]; then
            [ "$status" -eq 1 ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
                [ ! -e "$f" ] || fail "$what: refusal not one line, exit 1"
            continue
        fi
        made=$((made + 1))
        run "$ZBSCHED" validate "$f"
        no_signal "$what: validate"
        fits=$(jq '.predicted.fits_memory' "$f")
        if [ "$fits" = true ] && [ "$status" -ne 0 ]; then
            fail "$what: does not validate: $(cat "$ERR")"
        fi
        run "$ZBSCHED" eval --json "$f"
        no_signal "$what: eval"
        jq -e --argjson fits "$fits" '(.cost | type == "number") and
            (.gap | type == "number") and
            (($fits | not) or .cost >= .lower_bound * (1 - 1e-9))' \
            "$OUT" >/dev/null 2>&1 || fail "$what: eval --json"
        run "$ZBSCHED" render "$f" --ascii --width 80
        no_signal "$what: render --ascii"
        [ "$status" -eq 0 ] || fail "$what: render --ascii"
        run "$ZBSCHED" render "$f" -o "$TMP/s.svg"
        no_signal "$what: render"
        xmllint --noout "$TMP/s.svg" 2>/dev/null || fail "$what: SVG"
    done
    [ "$tap_failed" -eq "$failed_before" ] &&
        ok "profile $seed: $((made - made_before)) schedules hold"
done
# Loop vpp 1 has five families, vpp >= 2 three, v two: about 3 a profile.
[ "$made" -ge $((count * 2)) ] && ok "$made schedules from $count profiles" ||
    fail "only $made schedules from $count profiles"

done_testing
