#!/usr/bin/env bash
# frontier: the table, --json read by jq (front falls as memory grows),
# the SVG checked by xmllint, and the errors.
. "$(dirname "$0")/../lib/tap.sh"

for tool in xmllint jq; do
    command -v "$tool" >/dev/null ||
        { fail "$tool not found (tools/deps.sh installs it)"; done_testing; }
done

run "$ZBSCHED" frontier --pp 4 --mb 8 --effort -1
expect_status 0 "frontier table"
expect_out "lower bound by limit (1F1B's peak 4)"
grep -E '^v-min +v +2 +- +2 +29\.5 .* \*$' "$OUT" >/dev/null ||
    fail "v-min at half of 1F1B's memory should be on the front"

run "$ZBSCHED" frontier --pp 4 --mb 8 --effort -1 --json --svg "$TMP/f.svg"
expect_status 0 "frontier --json --svg"
jq -e '[.points[] | select(.front)] | length >= 2' "$OUT" >/dev/null ||
    fail "fewer than 2 points on the front"
jq -e '[.points[] | select(.front) | .cost] as $c |
       all(range(1; $c | length); $c[.] < $c[. - 1])' "$OUT" >/dev/null ||
    fail "the front does not fall as memory grows"
jq -e '[.points[] | select(.schedule == "dualpipev")] | length == 1' \
    "$OUT" >/dev/null || fail "no dualpipev point"
xmllint --noout "$TMP/f.svg" 2>"$ERR" || fail "svg is not well formed"
grep -q 'stroke-dasharray' "$TMP/f.svg" || fail "no bound line"

run "$ZBSCHED" frontier --pp 4 --mb 8 --effort -1 --svg /nonexistent/dir/f.svg
expect_status 1 "unwritable svg"
expect_err "/nonexistent/dir/f.svg"
done_testing
