#!/usr/bin/env bash
# bench_effort.sh BENCH_QUALITY OUT.md [SEED...] - what more local search
# buys: the quality benchmark's grid (tools/bench_quality.c) with `zb` at
# `--effort` 0 (the default budget), 1 and 4, on each seed (default
# 20240117 and 7), the m >= 2p row and the grid's seconds, written to
# OUT.md. `make bench-effort` runs it (about 40 min on 2 cores).
set -eu
bin=$1 out=$2
shift 2
seeds=${*:-20240117 7}
efforts="0 1 4"

rows=""
for seed in $seeds; do
    for effort in $efforts; do
        md=$("$bin" --effort "$effort" "$seed" 2>/dev/null)
        row=$(printf '%s\n' "$md" | grep -F '| **m >= 2p** |' |
              awk -F'|' '{ printf "%s|%s|%s|%s|%s|%s|%s|", $3, $5, $6, $7,
                           $8, $9, $10 }')
        zb=$(printf '%s\n' "$md" | grep -E '^\| zb \|' |
             awk -F'|' '{ printf "%s|%s|", $8, $9 }')
        rows="$rows| $seed | $effort |$row$zb"$'\n'
    done
done
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
{
    echo "# Schedule quality: what more search buys"
    echo
    echo "The grid of [bench-quality.md](bench-quality.md) with \`zb\` at"
    echo "\`--effort\` 0 (the default budget: 0.2 s at p 8, m 32, growing"
    echo "with the passes per chunk set, at most 0.5 s), 1 and 4: seconds"
    echo "of local search on the chosen order, plus the runner-up's and the"
    echo "extra start's searches where those run (their shares:"
    echo "[model.md](model.md), \"\`zb\`\"). The budget is a fixed amount"
    echo "of work, so the gaps are the same on any machine; the seconds are"
    echo "this machine's."
    echo "Gaps (%) of \`zb\` to the lower bound over the grid's instances with"
    echo "m >= 2p, the quality targets' measure; *s mean* and *s max*: one"
    echo "\`zb\` run (generate, simulate, lower, validate) over all 96, wall" \
         "clock."
    echo
    echo "Reproduce: \`make bench-effort\` (tools/bench_effort.sh)."
    echo "Machine: $(uname -srm); $(nproc) cores; $(date -u +%Y-%m-%d);" \
         "zbsched $rev; load average $(cut -d' ' -f1-3 /proc/loadavg) at" \
         "the end."
    echo
    echo "| seed | effort | instances | optimal | p50 | p90 | p99 | max |" \
         "mean | s mean | s max |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    printf "%s" "$rows"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
