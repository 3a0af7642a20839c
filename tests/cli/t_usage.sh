#!/usr/bin/env bash
# t_usage.sh - the command table: -h and --help for every command (exit 0,
# usage on stdout naming each option of the command's rows), every option
# the usage names is one the parser accepts, and usage errors (unknown
# option, wrong count of arguments, a bad --effort) are one line, exit 2.
. "$(dirname "$0")/../lib/tap.sh"

# The options of each command's rows (cli/cmd_*.c, cli.c's shared lists).
profile="profile pp vpp mb placement per f b w fb comm time-unit m-b m-w
         mem-limit dp zero params bandwidth latency prefetch reduce
         fsdp-units"
search="effort time-limit gap objective"
declare -A want=(
    [generate]="schedule output quiet robust jitter samples seed export-lp
                $search $profile"
    [eval]="output json jitter samples seed"
    [validate]="output json"
    [compare]="output json mem-sweep quiet zero-all $search $profile"
    [frontier]="output json quiet svg png effort $profile"
    [profile]="from output pp vpp mb placement time-unit quiet"
    [check-profile]="schedule hidden seq output json"
    [plan]="model gpu-mem pp mb vpp placement split link-bw link-latency
            gpus-per-node inter-bw dp zero dp-bw dp-latency reduce
            fsdp-units prefetch effort output schedule-out csv svg png
            quiet"
    [list]="output json"
    [render]="output png ascii width trace time-unit compare realized iter"
    [export]="to format output"
    [import]="from name output quiet $profile"
)

# An option line of a usage: "  -o, --output FILE   help" or
# "      --json   help" (the help may stand on the next line).
opt_re='^  (-([a-z]), |    )--([a-z-]+)( ([^ ]+))?( {2,}.*)?$'

run "$ZBSCHED" --help
expect_status 0 "--help"
for cmd in "${!want[@]}"; do
    grep -qE "^  $cmd +[a-z]" "$OUT" || fail "--help does not list $cmd"
done
[ "$(grep -cE '^  [a-z-]+ +[a-z]' "$OUT")" -eq "${#want[@]}" ] ||
    fail "--help lists other commands than ${!want[*]}"
run "$ZBSCHED" -h
expect_status 0 "-h"
run "$ZBSCHED"
expect_status 2 "no command"
expect_err "usage: zbsched <command>"

for cmd in "${!want[@]}"; do
    for flag in -h --help; do
        run "$ZBSCHED" "$cmd" "$flag"
        expect_status 0 "$cmd $flag"
        head -1 "$OUT" | grep -q "^usage: zbsched $cmd " ||
            fail "$cmd $flag: no usage line"
        [ -s "$ERR" ] && fail "$cmd $flag: wrote to stderr"
    done
    cp "$OUT" "$TMP/usage"
    run "$ZBSCHED" help "$cmd"
    expect_status 0 "help $cmd"
    cmp -s "$OUT" "$TMP/usage" || fail "help $cmd differs from $cmd --help"
    for opt in ${want[$cmd]} help; do
        grep -qE -- "--$opt( |$)" "$TMP/usage" ||
            fail "$cmd --help does not name --$opt"
    done
    awk 'length > 80 { bad = 1 } END { exit bad }' "$TMP/usage" ||
        fail "$cmd --help has lines over 80 columns"
    # Every option the usage names is one the parser accepts: given
    # before --help (with a value where it takes one), it is no error.
    n=0
    while IFS= read -r line <&3; do
        [[ $line =~ $opt_re ]] || continue
        n=$((n + 1))
        letter=${BASH_REMATCH[2]} long=${BASH_REMATCH[3]}
        value=(${BASH_REMATCH[5]:+x})
        run "$ZBSCHED" "$cmd" "--$long" "${value[@]}" --help
        [ "$status" -eq 0 ] || fail "$cmd: --$long is in the usage only"
        if [ -n "$letter" ]; then
            run "$ZBSCHED" "$cmd" "-$letter" "${value[@]}" --help
            [ "$status" -eq 0 ] || fail "$cmd: -$letter is in the usage only"
        fi
    done 3<"$TMP/usage"
    nwant=$(($(wc -w <<<"${want[$cmd]}") + 1))
    [ "$n" -eq "$nwant" ] ||
        fail "$cmd --help lists $n options, want $nwant"

    run "$ZBSCHED" "$cmd" --frobnicate
    expect_status 2 "$cmd --frobnicate"
    expect_err "zbsched: $cmd: unknown option '--frobnicate'"
    expect_err_lines 1
done

# Wrong counts of positional arguments.
for args in "eval" "eval a.json b.json" "validate" "export" \
            "import" "render" "generate extra" "list extra" "compare x"; do
    run "$ZBSCHED" $args
    expect_status 2 "zbsched $args"
    expect_err_lines 1
    grep -qE "missing arguments|too many arguments|unexpected argument" \
        "$ERR" || fail "zbsched $args: the error does not say why"
done
run "$ZBSCHED" eval
expect_err "zbsched: eval: missing arguments, expected FILE"
run "$ZBSCHED" list extra
expect_err "zbsched: list: unexpected argument 'extra'"
run "$ZBSCHED" generate -o
expect_status 2 "an option without its value"
expect_err "option '-o' needs a value"
run "$ZBSCHED" eval --json=yes x.json
expect_status 2 "a switch given a value"
expect_err "option '--json' takes no value"

# --effort: a finite number of seconds, for generate and compare.
for bad in abc nan inf ""; do
    run "$ZBSCHED" generate --pp 2 --mb 4 -q --effort "$bad"
    expect_status 2 "--effort '$bad'"
    expect_err_lines 1
    expect_err "--effort"
done
run "$ZBSCHED" generate --pp 4 --mb 8 -q --effort 0.01 -o "$TMP/e.json"
expect_status 0 "generate --effort 0.01"
check "validate after --effort" "$ZBSCHED" validate "$TMP/e.json"
run "$ZBSCHED" generate --pp 4 --mb 8 -q --effort -1 --schedule 1f1b
expect_status 2 "generate --effort for a fixed family"
expect_err "generate: --effort does not apply to --schedule 1f1b"
run "$ZBSCHED" compare --pp 4 --mb 8 --time-limit 0 --effort 0.01
expect_status 0 "compare --effort 0.01"
expect_out "zb "
done_testing
