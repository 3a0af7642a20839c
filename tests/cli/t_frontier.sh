#!/usr/bin/env bash
# frontier: the table, --json read by jq (front falls as memory grows),
# the SVG (well formed; every point labelled, the labels inside the
# picture and apart; the limit drawn; the cost axis in the profile's time
# unit), --png, and the errors.
. "$(dirname "$0")/../lib/tap.sh"

for tool in jq python3; do
    command -v "$tool" >/dev/null ||
        { fail "$tool not found (tools/deps.sh installs it)"; done_testing; }
done

# labels FILE: the plot's labels as render_frontier.c sizes them (a line
# of n characters at font size s is 0.62 n s wide and 11 high, its
# baseline 8.5 below its top): each inside the viewBox, none overlapping
# another, and every point's family, placement and vpp in one of them.
# Parsing it is the well-formedness check where xmllint is missing.
labels() {
    python3 - "$1" <<'EOF'
import re, sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
_, _, W, H = map(float, root.get("viewBox").split())
boxes, lines, bad = [], [], []
for t in root.iter(ns + "text"):
    if "label" not in (t.get("class") or "").split():
        continue
    s = float(t.get("font-size"))
    x, y, text = float(t.get("x")), float(t.get("y")), t.text or ""
    b = (x, y - 8.5, x + 0.62 * s * len(text), y + 2.5, text)
    if b[0] < 0 or b[1] < 0 or b[2] > W or b[3] > H:
        bad.append("outside the viewBox: %r" % (b,))
    for o in boxes:
        if b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3]:
            bad.append("%r overlaps %r" % (text, o[4]))
    boxes.append(b)
    lines.append(text)
for c in root.iter(ns + "circle"):
    name, place, _, vpp = c.find(ns + "title").text.split()[:4]
    vpp = vpp.rstrip(":")
    want = re.compile(r"^%s \(%s, vpp ([0-9,]+)\)$" % (re.escape(name), place))
    if not any(m and vpp in m.group(1).split(",")
               for m in map(want.match, lines)):
        bad.append("no label for %s %s vpp %s" % (name, place, vpp))
print("\n".join(bad[:10]) or "%d label lines" % len(lines))
sys.exit(1 if bad else 0)
EOF
}

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
if command -v xmllint >/dev/null; then
    check "svg is well formed (xmllint)" xmllint --noout "$TMP/f.svg"
fi
grep -q 'stroke-dasharray' "$TMP/f.svg" || fail "no bound line"
run labels "$TMP/f.svg"
expect_status 0 "every point labelled, labels apart and inside"
grep -q 'class="limit"' "$TMP/f.svg" && fail "a limit line without a limit"
grep -q '>cost</text>' "$TMP/f.svg" || fail "a unitless cost axis says no unit"

# The README's question: 80 GiB with 40 GiB of model state, times in us.
Q="--pp 8 --mb 32 --per rank --time-unit us --f 14407 --b 14380 --w 9676
   --comm 1610 --m-b 1.9GiB --mem-limit 80GiB --params 2.68435456e9"
# shellcheck disable=SC2086
run "$ZBSCHED" frontier $Q --svg "$TMP/q.svg" --png "$TMP/q.png" -q
expect_status 0 "frontier --svg --png, sizes and a time unit"
run labels "$TMP/q.svg"
expect_status 0 "p 8: every point labelled, labels apart and inside"
grep -q '<line class="limit"' "$TMP/q.svg" || fail "no limit line"
grep -q '>limit 80.0 GiB (activations 40.0 GiB)</text>' "$TMP/q.svg" ||
    fail "the limit line is not labelled with the limit"
grep -q '>cost (us)</text>' "$TMP/q.svg" || fail "cost axis without its unit"
grep -q "1F1B's peak, 15.2 GiB)" "$TMP/q.svg" ||
    fail "memory axis without 1F1B's peak in GiB"
check "--png writes a PNG" sh -c "head -c 8 '$TMP/q.png' | od -An -tx1 |
    grep -q '89 50 4e 47 0d 0a 1a 0a'"

# A plain limit: its multiple of 1F1B's peak; the line where it says.
run "$ZBSCHED" frontier --pp 4 --mb 8 --effort -1 --mem-limit 1.5p \
    --svg "$TMP/l.svg"
expect_status 0 "frontier with a limit"
grep -q '>limit 6 (1.5x 1F1B)</text>' "$TMP/l.svg" || fail "plain limit label"
run labels "$TMP/l.svg"
expect_status 0 "with a limit: labels apart and inside"

run "$ZBSCHED" frontier --pp 4 --mb 8 --effort -1 --svg /nonexistent/dir/f.svg
expect_status 1 "unwritable svg"
expect_err "/nonexistent/dir/f.svg"
run env PATH=/nonexistent "$ZBSCHED" frontier --pp 4 --mb 8 --effort -1 \
    --png "$TMP/x.png"
expect_status 1 "--png without rsvg-convert"
expect_err "frontier: --png needs rsvg-convert (Debian's librsvg2-bin"
expect_err_lines 1
[ ! -e "$TMP/x.png" ] || fail "a PNG left behind without rsvg-convert"
done_testing
