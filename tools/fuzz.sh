#!/usr/bin/env bash
# fuzz.sh DIR SECONDS NAME... - run each libFuzzer target DIR/fuzz_NAME
# for SECONDS from its seeds (tests/fuzz/corpus/NAME) and dictionary
# (tests/fuzz/NAME.dict); what it learns goes to DIR/corpus-NAME, a crash
# to DIR/NAME-crash-*. One line per target with its execution count;
# exits 1 when any target found a crash, leak or timeout.
set -u
dir=$1 secs=$2
shift 2
failed=0
for name in "$@"; do
    work=$dir/corpus-$name
    mkdir -p "$work"
    log=$dir/$name.log
    "$dir/fuzz_$name" "$work" "tests/fuzz/corpus/$name" \
        -dict="tests/fuzz/$name.dict" -max_total_time="$secs" \
        -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -print_final_stats=1 -artifact_prefix="$dir/$name-" >"$log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ "$status" -eq 0 ]; then
        echo "fuzz $name: ${runs:-?} runs in $secs s, nothing found"
    else
        failed=1
        echo "fuzz $name: FOUND a problem (exit $status); see $log"
        grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5
    fi
done
exit $failed
