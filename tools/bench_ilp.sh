#!/usr/bin/env bash
# bench_ilp.sh [SECONDS [THREADS]] - the integer-program benchmark
# (tools/bench_ilp.c), written to docs/bench-ilp.md with the
# machine it ran on. Builds the library under $BUILD (default build) and
# the driver beside it. `make bench` runs it after the generation one.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60} threads=${2:-2} build=${BUILD:-build}
out=docs/bench-ilp.md
make -s BUILD="$build" "$build/libzbsched.a"
mkdir -p "$build/tools"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Wpedantic -D_POSIX_C_SOURCE=200809L \
    -pthread \
    -Iinclude tools/bench_ilp.c "$build/libzbsched.a" -lglpk -lcjson -lm \
    -o "$build/tools/bench_ilp"
start=$(date +%s)
table=$("$build/tools/bench_ilp" "$secs" "$threads")
{
    echo "# Integer program: benchmark"
    echo
    echo "\`zb\` (the heuristic) beside \`ilp\` (docs/ilp.md) for the cost"
    echo "objective. Profile: F 1, B 1, W 1, comm 0 (unit) or F 1, B 1.2,"
    echo "W 0.8, comm 0.05 (unequal), every stage alike; M_B 1, M_W 0.5;"
    echo "limit 1p = p*M_B (1F1B's) or 2p on every rank. \`bound\` is the"
    echo "best proven lower bound (closed form, refutation or branch and"
    echo "cut), \`LB2\` the closed form alone, \`seconds\` the whole call."
    echo "Time limit $secs s, $threads solver threads."
    echo "Reproduce: \`tools/bench_ilp.sh $secs $threads\`."
    echo
    cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
    echo "Machine: $(uname -srm); $(nproc) cores; $cpu;" \
         "$(date -u +%Y-%m-%d); $(( $(date +%s) - start )) s in all."
    echo
    echo "$table"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
