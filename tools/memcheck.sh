#!/usr/bin/env bash
# memcheck.sh ZBSCHED - the CLI's main paths under valgrind memcheck
# (`make memcheck`): every command, good input and the error paths that
# free half-built state (bad JSON, a repeated profile key, an illegal
# schedule). Any memory error or definite/indirect leak fails the run;
# one line per path, then a summary.
set -u
zb=$1
if ! command -v valgrind >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind \
            >/dev/null || exit 1
    else
        echo "memcheck: valgrind is missing (apt-get install valgrind)" >&2
        exit 1
    fi
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zbsched-memcheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0 n=0

# vg WHAT ARGS...: one path, stdout to $VG_OUT if set; its exit status is
# not checked (error paths exit 1 on purpose), only valgrind's verdict
# (status 99).
vg() {
    local what=$1
    shift
    n=$((n + 1))
    valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect \
        --show-leak-kinds=definite,indirect "$zb" "$@" \
        >"${VG_OUT:-$tmp/out}" 2>"$tmp/err"
    if [ $? -eq 99 ]; then
        failed=$((failed + 1))
        echo "FAIL $what"
        grep '^==' "$tmp/err" | head -30
    else
        echo "ok   $what"
    fi
}

p=(--pp 4 --mb 8)
for s in 1f1b zb-h1 zb-h2 zb; do
    vg "generate $s" generate "${p[@]}" --schedule "$s" -q -o "$tmp/$s.json"
done
vg "generate interleaved" generate "${p[@]}" --vpp 2 --schedule interleaved \
    -q -o "$tmp/il.json"
vg "generate zb-v" generate "${p[@]}" --vpp 2 --placement v --schedule zb-v \
    -q -o "$tmp/v.json"
vg "generate ilp" generate --pp 2 --mb 3 --schedule ilp --time-limit 1 -q \
    --export-lp "$tmp/m.lp" -o "$tmp/ilp.json"
vg "eval" eval "$tmp/zb.json"
vg "eval --json" eval --json "$tmp/v.json"
vg "validate" validate "$tmp/zb-h1.json"
vg "compare" compare "${p[@]}" --time-limit 0
vg "compare --mem-sweep" compare "${p[@]}" --time-limit 0 \
    --mem-sweep 1p:2p:0.5p
vg "list" list
vg "render svg" render "$tmp/zb.json" -o "$tmp/zb.svg"
vg "render ascii --compare" render --ascii --compare "$tmp/zb.json" \
    "$tmp/1f1b.json"
vg "render --trace" render "$tmp/zb-h1.json" --trace "$tmp/trace.json"
vg "render --realized" render "$tmp/zb-h1.json" --realized "$tmp/trace.json" \
    --ascii
vg "export" export "$tmp/v.json" --to torch-csv -o "$tmp/v.csv"
vg "import" import --from torch-csv "$tmp/v.csv" -q -o "$tmp/v2.json"

# Error paths.
printf '{"pp": 2, "stages": [{}], "stages": [{"F": 1, "B": 1, "W": 1},
 {"F": 1, "B": 1, "W": 1}], "memory": {"limit": [4], "limit": [4, 4]}}' \
    >"$tmp/dup.json"
vg "repeated profile keys" generate --profile "$tmp/dup.json" --mb 4 -q
printf '{"pp": 4, "microbatches" 8}' >"$tmp/bad.json"
vg "malformed profile" generate --profile "$tmp/bad.json"
jq '.ranks[0].ops |= .[1:]' "$tmp/zb.json" >"$tmp/illegal.json"
vg "illegal schedule" validate "$tmp/illegal.json"
printf '0F0,0Q0\n' >"$tmp/bad.csv"
vg "bad csv" import --from torch-csv "$tmp/bad.csv"
vg "bad trace" render "$tmp/zb.json" --realized "$tmp/bad.json"
VG_OUT=/dev/full vg "stdout full" list

echo "memcheck: $((n - failed)) of $n paths clean"
[ "$failed" -eq 0 ]
