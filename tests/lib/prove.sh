#!/usr/bin/env bash
# prove.sh NAME DIR - run every DIR/t_*.sh (each sources tests/lib/tap.sh)
# in order, each in its own shell, as one TAP stream: checks renumbered
# and prefixed with their script, a script that exits non-zero without a
# failed check reported as one, the plan, then a summary line. Exits 1
# when any check or script failed (so `make test` fails).
set -u
name=$1 dir=$2
n=0 failed=0 scripts=0

# One script's TAP, renumbered into ours; its own plan is dropped; the
# last line, "#@exit S", is its exit status.
relay() {
    local script=$1 line before=$failed plan= why=
    local re='^(not )?ok [0-9]+ - (.*)$'
    while IFS= read -r line; do
        if [[ $line =~ ^#@exit\ ([0-9]+)$ ]]; then
            if [ "${BASH_REMATCH[1]}" -ne 0 ]; then
                why="exited with status ${BASH_REMATCH[1]}"
            elif [ -z "$plan" ]; then
                why="ended without done_testing"
            fi
            if [ -n "$why" ] && [ "$failed" -eq "$before" ]; then
                n=$((n + 1))
                failed=$((failed + 1))
                echo "not ok $n - $script: $why"
            fi
        elif [[ $line =~ $re ]]; then
            n=$((n + 1))
            [ -n "${BASH_REMATCH[1]}" ] && failed=$((failed + 1))
            echo "${BASH_REMATCH[1]}ok $n - $script: ${BASH_REMATCH[2]}"
        elif [[ $line =~ ^1\.\.[0-9]+$ ]]; then
            plan=$line
        elif [[ $line == '#'* ]]; then
            echo "$line"
        else
            echo "# $line"
        fi
    done
}

for t in "$dir"/t_*.sh; do
    script=$(basename "$t" .sh)
    scripts=$((scripts + 1))
    echo "# $name/$script"
    relay "$script" < <(bash "$t" 2>&1; echo "#@exit $?")
done
echo "1..$n"
echo "# $name: $scripts scripts, $n checks, $failed failed"
[ "$failed" -eq 0 ]
