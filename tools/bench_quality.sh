#!/usr/bin/env bash
# bench_quality.sh BENCH_QUALITY ZBSCHED OUT.md - the schedule-quality
# benchmark (tools/bench_quality.c: random grid and the
# paper's settings), its m >= 2p row on four more seeds, and whole-process
# timings of `zbsched generate`, written to OUT.md with the machine, date
# and load. `make bench` runs it.
set -eu
bin=$1 zbsched=$2 out=$3

# Best of three runs of `zbsched generate ARGS` by wall clock: "WALL CPU",
# that run's seconds, process start to exit, and its CPU seconds (user +
# system, both threads): the wall clock follows the machine's load and
# speed, the CPU seconds say how much work a row is.
best_of_3() {
    local best='' out wall user sys cpu
    for _ in 1 2 3; do
        out=$( { TIMEFORMAT='%R %U %S'
                 time "$zbsched" generate "$@" >/dev/null 2>&1; } 2>&1 )
        read -r wall user sys <<<"$out"
        cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
        if [ -z "$best" ] || awk -v a="$wall" -v b="${best%% *}" \
                'BEGIN { exit !(a < b) }'; then
            best="$wall $cpu"
        fi
    done
    echo "$best"
}

# The cost `zbsched generate ARGS` reports for its schedule (stderr).
cost_of() {
    "$zbsched" generate "$@" 2>&1 >/dev/null |
        sed -n 's/^zbsched: zb: cost \([^,]*\),.*/\1/p'
}

verdict() {     # verdict SECONDS TARGET
    awk -v s="$1" -v t="$2" 'BEGIN { print (s <= t) ? "met" : "**not met**" }'
}

# ref_row P,M REF_S REF_COST "WALL CPU" COST TARGET: a line of the
# side-by-side with the reference.
ref_row() {
    local wall=${4%% *} cpu=${4##* }
    echo "| $1 | $2 | $3 | $wall | $cpu | $5 | $6 | $(verdict "$wall" "$6") |"
}

row() {         # row COMMAND "WALL CPU" TARGET: one line of the table
    local wall=${2%% *} cpu=${2##* }
    echo "| $1 | $wall | $cpu | $3 | $(verdict "$wall" "$3") |"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s%N)
body=$("$bin")
driver_s=$(awk -v ns="$(( $(date +%s%N) - start ))" \
    'BEGIN { printf "%.1f", ns / 1e9 }')
# The m >= 2p row of the zb gap table on other seeds: how much the
# targets' measure moves with the grid's draw alone.
other_seeds="7 3 11 5"
seed_rows=""
for seed in $other_seeds; do
    row=$("$bin" "$seed" 2>/dev/null | grep -F '| **m >= 2p** |' |
          awk -F'|' -v s="$seed" '{ printf "| %s |%s|%s|%s|%s|%s|%s|%s|\n",
              s, $3, $5, $6, $7, $8, $9, $10 }')
    seed_rows="$seed_rows$row"$'\n'
done
# The default shape, and the ones that build more candidates: a limit
# (generate then also weighs every family at it) and V placement (two
# ZB-V constructions: at the limit, and zb-v's at 1F1B's memory).
t8=$(best_of_3 --pp 8 --mb 32)
t64=$(best_of_3 --pp 64 --mb 1024)
t64l=$(best_of_3 --pp 64 --mb 1024 --mem-limit 1.5p)
t64v=$(best_of_3 --pp 64 --mb 1024 --placement v)
t64v1=$(best_of_3 --pp 64 --mb 1024 --placement v --mem-limit 1p)
t64v15=$(best_of_3 --pp 64 --mb 1024 --placement v --mem-limit 1.5p)
# The default profile meets the bound before any search; the paper's
# profiled times (Appendix D: 1.5B at p 8, 28.3B's at p 64) are what a
# user brings, and at 2p the search runs.
paper8="--f 18513 --b 18086 --w 9331 --comm 626 --m-b 1 --m-w 0.3664"
paper64="--f 10408 --b 10204 --w 7703 --comm 408 --m-b 1 --m-w 0.4324"
# (unquoted below: the flags split into words on purpose)
t8p=$(best_of_3 --pp 8 --mb 32 $paper8 --mem-limit 2p)
t8pv=$(best_of_3 --pp 8 --mb 32 $paper8 --placement v --mem-limit 2p)
t64p=$(best_of_3 --pp 64 --mb 1024 $paper64 --mem-limit 2p)
t64pv=$(best_of_3 --pp 64 --mb 1024 $paper64 --placement v --mem-limit 1.5p)
# The target "within 2 s at p 32, m 256" for the default budget, and the
# 1.5B times at p 64 under V, where ZB-V's constructions take longest.
t32p=$(best_of_3 --pp 32 --mb 256 $paper8 --mem-limit 2p)
t32pv=$(best_of_3 --pp 32 --mb 256 $paper8 --placement v --mem-limit 1.5p)
t64p8v=$(best_of_3 --pp 64 --mb 1024 $paper8 --placement v --mem-limit 1.5p)
# The issue's side-by-side with the Zero Bubble reference's heuristic:
# 1.5B's times in milliseconds, loop, 2p (the reference's figures are
# quoted from docs/bench-quality.md's table, measured on an idle box).
ref15="--f 18.5 --b 18.1 --w 9.3 --comm 0.6 --m-b 1 --m-w 0.3664 --mem-limit 2p"
r8=$(best_of_3 --pp 8 --mb 32 $ref15); c8=$(cost_of --pp 8 --mb 32 $ref15)
r32=$(best_of_3 --pp 32 --mb 256 $ref15); c32=$(cost_of --pp 32 --mb 256 $ref15)
r64=$(best_of_3 --pp 64 --mb 1024 $ref15)
c64=$(cost_of --pp 64 --mb 1024 $ref15)
# One answer in any unit: the grid's orders at every time x 1000.
scale_line=$(bash "$(dirname "$0")/scale_check.sh" "$bin" "$zbsched" 1000 |
             tail -1)
# Uneven stages (a grid instance cut to p 8, m 32, V, 1p), where ZB-V's
# room start begins better than the chosen order and gets a search too.
uneven8="$(dirname "$0")/../docs/examples/uneven-v-p8.json"
t8u=$(best_of_3 --profile "$uneven8")
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cores=$(nproc)
loaded=$(awk -v l="${load_before%% *}" -v m="${load_after%% *}" -v c="$cores" \
    'BEGIN { print (l > c / 2 || m > c / 2) ? 1 : 0 }')
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- src schedules solver include tools \
            2>/dev/null)" ]; then rev="$rev (with uncommitted changes)"; fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
{
    echo "# Schedule quality: benchmark"
    echo
    echo "How close \`zb\` (the default schedule) and the other families"
    echo "come to the proven lower bound (\`predicted.lower_bound\`,"
    echo "docs/design.md, \"Measures\"; gap = cost / bound - 1) on random"
    echo "profiles and on the Zero Bubble paper's own settings, and which of"
    echo "\`zb\`'s candidates wins, against the targets below."
    echo "Costs, bounds and gaps are deterministic for a seed; seconds are"
    echo "wall clock and vary with the machine and its load."
    echo
    echo "Reproduce:"
    echo
    echo "    make $bin $zbsched"
    echo "    bash tools/bench_quality.sh $bin $zbsched $out"
    echo
    echo "(\`make bench\` runs it after the generation and solver"
    echo "benchmarks). One grid instance's profile, for \`zbsched generate"
    echo "--profile FILE\`: \`$bin --profile K > FILE\`."
    echo
    echo "Machine: $(uname -srm); $cores cores; $cpu; $(date -u +%Y-%m-%d);" \
         "zbsched $rev; load average $load_before before the run," \
         "$load_after after; the driver took $driver_s s."
    if [ "$loaded" = 1 ]; then
        echo "The machine was loaded (shared with other work): every"
        echo "seconds figure below is inflated by it, costs and gaps are not."
    else
        echo "Timings are wall clock: other work on the machine inflates them."
    fi
    echo
    echo "$body"
    echo
    echo "## Other seeds"
    echo
    echo "The targets' measure (\`zb\`'s gap at m >= 2p, %) on grids drawn"
    echo "with other seeds (\`$bin SEED\`), the columns of the **m >= 2p**"
    echo "row above but *zb fits*: with the draw alone one grid's median"
    echo "moves by about a tenth and its worst by a few points."
    echo
    echo "| seed | instances | optimal | p50 | p90 | p99 | max | mean |"
    echo "|---|---|---|---|---|---|---|---|"
    printf "%s" "$seed_rows"
    echo
    echo "## Whole process"
    echo
    echo "\`$zbsched generate ARGS > /dev/null\` (default schedule \`zb\`,"
    echo "default profile: F = B = W = 1, comm 0, no limit unless given),"
    echo "best of three by wall clock, process start to exit, and that run's"
    echo "CPU seconds (user and system, both threads: the work, which the"
    echo "machine's load and speed move less than the wall clock). The default"
    echo "profile meets the bound before any search, so the next seven rows"
    echo "take the paper's profiled times (Appendix D: \`--f 18513 --b 18086"
    echo "--w 9331 --comm 626 --m-w 0.3664\` for 1.5B, \`--f 10408 --b 10204"
    echo "--w 7703 --comm 408 --m-w 0.4324\` for 28.3B), on which the search"
    echo "runs (the two at p 32, m 256 against the target of 2 s for the"
    echo "default budget there, held to the whole process), and the last a"
    echo "grid instance's uneven stages cut to p 8, where"
    echo "ZB-V's room start gets a search of its own. \`zb\` stops collecting"
    echo "candidates at the first that meets its cost and makespan bounds"
    echo "(an unlimited rank within 1F1B's memory; docs/model.md): at p 64, m"
    echo "1024 the list scheduler, built first, does so at 1.5p (default"
    echo "profile, and the 28.3B profile under V), and without a limit under"
    echo "V \`zb-v\`'s construction at 1F1B's memory does, after the one at"
    echo "the limit (both with their variants on a shorter copy of the"
    echo "profile: docs/model.md; the runs that would repeat a run already"
    echo "made are skipped). Above 1F1B's memory \`zb-v\`, V-Half and V-Min"
    echo "are left out where a candidate already costs less than the bound"
    echo "at 1F1B's memory (they never hold more; docs/model.md). Up to"
    echo "200 000 passes \`zb\` also builds the room start;" \
         "\`generate\`'s pick"
    echo "takes the other families' orders from \`zb\`'s candidates and"
    echo "lowers and validates only the one it keeps; the JSON at m 1024"
    echo "under V is about 60 MB."
    echo
    echo "| command | seconds | CPU s | target | |"
    echo "|---|---|---|---|---|"
    row "\`generate --pp 8 --mb 32\`" "$t8" 0.3
    row "\`generate --pp 64 --mb 1024\`" "$t64" 3
    row "\`generate --pp 64 --mb 1024 --mem-limit 1.5p\`" "$t64l" 3
    row "\`generate --pp 64 --mb 1024 --placement v\`" "$t64v" 3
    row "\`generate --pp 64 --mb 1024 --placement v --mem-limit 1p\`" \
        "$t64v1" 3
    row "\`generate --pp 64 --mb 1024 --placement v --mem-limit 1.5p\`" \
        "$t64v15" 3
    row "same, the paper's times: \`--pp 8 --mb 32\` 1.5B, \`--mem-limit 2p\`" \
        "$t8p" 0.3
    row "\`--pp 8 --mb 32\` 1.5B, \`--placement v --mem-limit 2p\`" "$t8pv" 0.3
    row "\`--pp 64 --mb 1024\` 28.3B, \`--mem-limit 2p\`" "$t64p" 3
    row "\`--pp 64 --mb 1024\` 28.3B, \`--placement v --mem-limit 1.5p\`" \
        "$t64pv" 3
    row "\`--pp 32 --mb 256\` 1.5B, \`--mem-limit 2p\`" "$t32p" 2
    row "\`--pp 32 --mb 256\` 1.5B, \`--placement v --mem-limit 1.5p\`" \
        "$t32pv" 2
    row "\`--pp 64 --mb 1024\` 1.5B, \`--placement v --mem-limit 1.5p\`" \
        "$t64p8v" 3
    row "\`--profile docs/examples/uneven-v-p8.json\` (p 8, m 32, V, uneven stages, 1p)" \
        "$t8u" 0.3
    echo
    echo "## Against the reference's heuristic"
    echo
    echo "Issue 41's side-by-side: the Zero Bubble paper's 1.5B times in"
    echo "milliseconds (\`$ref15\`), loop; \`zbsched generate\` whole"
    echo "process at the default effort, best of three as above, against the"
    echo "reference's heuristic call alone (without Python's start-up),"
    echo "measured on an idle machine of this kind (issue 41). Targets: the"
    echo "issue's."
    echo
    echo "| p, m | reference s | reference cost | zbsched s | CPU s | cost |" \
         "target s | |"
    echo "|---|---|---|---|---|---|---|---|"
    ref_row "8, 32" 0.015-0.022 1474.4 "$r8" "$c8" 0.02
    ref_row "32, 256" 0.63-0.82 11768.8 "$r32" "$c32" 0.5
    ref_row "64, 1024" 8.1 47043.9 "$r64" "$c64" 1
    echo
    echo "## One answer in any unit"
    echo
    echo "Every grid instance's profile with every time multiplied by 1000"
    echo "(\`bash tools/scale_check.sh $bin $zbsched 1000\`): \`zb\`'s"
    echo "schedule against the one at F = 1, op for op; $scale_line."
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
