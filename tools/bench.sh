#!/usr/bin/env bash
# bench.sh BENCH_BINARY OUT.md - run the generation benchmark and write it
# with the machine it ran on. Targets: <= 10 ms at (8, 32) and
# <= 1 s at (64, 1024) for every family.
set -eu
bin=$1 out=$2
load=$(cut -d' ' -f1-3 /proc/loadavg)
table=$("$bin")
{
    echo "# Benchmarks"
    echo
    echo "## Schedule generation"
    echo
    echo "Generation = generate + lower + simulate + validate, what"
    echo "\`zbsched generate\` does before writing JSON; median wall time of"
    echo "15 runs (5 at (64, 1024)), each built from scratch (nothing is"
    echo "kept from the run before). Profile: F 1, B 1.2, W 0.8 per stage"
    echo "(halved per chunk for vpp 2), comm 0.05, M_W = M_B/2, limit 2p chunk"
    echo "activations (\`--mem-limit 2p\` at vpp 1, \`1p\`, 1F1B's memory,"
    echo "at vpp 2)."
    echo "Targets: <= 10 ms at (8, 32), <= 1 s at (64, 1024)."
    echo "Reproduce: \`make bench\` (which also writes the integer"
    echo "program's benchmark, [bench-ilp.md](bench-ilp.md))."
    echo
    echo "Machine: $(uname -srm); $(nproc) cores;" \
         "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 |
            sed 's/^ //');" \
         "$(date -u +%Y-%m-%d); load average before the run:" \
         "$load (timings are wall clock: other work inflates them)."
    echo
    echo "$table"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
