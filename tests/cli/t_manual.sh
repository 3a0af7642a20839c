#!/usr/bin/env bash
# t_manual.sh - the manual page and the bash completion against --help:
# docs/zbsched.1 is what `zbsched help --man` writes now (else `make
# man`), and every option of every command's --help appears in that
# command's section of it and among the completion's offers, with its
# short letter; the completion offers the commands, --schedule's names
# from `zbsched list` and the values a row lists. `make install` puts the
# three in place.
. "$(dirname "$0")/../lib/tap.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
man=$root/docs/zbsched.1

run "$ZBSCHED" help --man
expect_status 0 "help --man"
cmp -s "$OUT" "$man" ||
    fail "docs/zbsched.1 is not what 'zbsched help --man' writes (make man)"
if command -v groff >/dev/null; then
    run groff -man -ww -z "$man"
    [ -s "$ERR" ] && fail "groff warns about docs/zbsched.1"
    ok "groff reads docs/zbsched.1"
else
    skip "groff reads docs/zbsched.1" "no groff"
fi

. "$root/tools/zbsched-completion.bash"
# complete WORD...: what the completion offers for the last word.
complete_words() {
    COMP_WORDS=("$ZBSCHED" "$@")
    COMP_CWORD=$#
    _zbsched
    printf '%s\n' "${COMPREPLY[@]}"
}

cmds=$("$ZBSCHED" --help | sed -nE 's/^  ([a-z][a-z-]*)  +[a-z].*$/\1/p')
[ "$(wc -w <<<"$cmds")" -ge 12 ] ||
    fail "--help lists $(wc -w <<<"$cmds") commands"
offered=$(complete_words "")
opt_re='^  (-([a-z]), |    )--([a-z-]+)( ([^ ]+))?( {2,}.*)?$'
for cmd in $cmds; do
    grep -qxF "$cmd" <<<"$offered" || fail "completion lacks the command $cmd"
    # This command's section of the manual page.
    awk -v h=".SS \"zbsched $cmd " 'index($0, h) == 1 { on = 1; next }
        /^\.S[SH] / { on = 0 } on' "$man" >"$TMP/section"
    [ -s "$TMP/section" ] || fail "docs/zbsched.1 has no section for $cmd"
    complete_words "$cmd" - >"$TMP/opts"
    n=0
    while IFS= read -r line; do
        [[ $line =~ $opt_re ]] || continue
        letter=${BASH_REMATCH[2]} long=${BASH_REMATCH[3]}
        n=$((n + 1))
        roff=${long//-/\\-}     # the page writes each - as \-
        grep -qF -- "\\fB\\-\\-$roff\\fR" "$TMP/section" ||
            fail "docs/zbsched.1 lacks $cmd --$long"
        grep -qxF -- "--$long" "$TMP/opts" ||
            fail "completion lacks $cmd --$long"
        if [ -n "$letter" ]; then
            grep -qF -- "\\fB\\-$letter\\fR, \\fB\\-\\-$roff\\fR" \
                "$TMP/section" || fail "docs/zbsched.1 lacks $cmd -$letter"
            grep -qxF -- "-$letter" "$TMP/opts" ||
                fail "completion lacks $cmd -$letter"
        fi
    done < <("$ZBSCHED" "$cmd" --help)
    [ "$n" -ge 1 ] || fail "$cmd --help: no option read"
    # Nothing offered that the command does not have.
    nc=$(wc -l <"$TMP/opts")
    nl=$("$ZBSCHED" "$cmd" --help | grep -cE "$opt_re")
    nletters=$("$ZBSCHED" "$cmd" --help | grep -cE '^  -[a-z], --')
    [ "$nc" -eq $((nl + nletters)) ] ||
        fail "completion offers $nc options for $cmd," \
             "--help has $((nl + nletters))"
done
ok "man page and completion checked for: $(tr '\n' ' ' <<<"$cmds")"

names=$("$ZBSCHED" list | awk 'NR > 1 { print $1 }' | sort)
[ "$(complete_words generate --schedule "" | sort)" = "$names" ] ||
    fail "--schedule completes to other names than zbsched list's"
[ "$(complete_words check-profile --schedule z | sort)" = \
  "$(grep '^z' <<<"$names")" ] || fail "--schedule z completes wrong"
[ "$(complete_words compare --placement "" | tr '\n' ' ')" = "loop v " ] ||
    fail "--placement should offer loop v"
[ "$(complete_words render --time-unit m)" = ms ] ||
    fail "--time-unit m should complete to ms"
[ "$(complete_words export --to "" | tr '\n' ' ')" = "torch-csv json " ] ||
    fail "export --to should offer torch-csv json"
[ -z "$(complete_words generate --pp "")" ] ||
    fail "--pp N should offer nothing"
[ "$(complete_words gen)" = generate ] || fail "gen should complete to generate"
[ "$(complete_words help --m)" = --man ] || fail "help --m should complete"

# make install: the program, the page and the completion, where asked.
build=$(cd "$(dirname "$ZBSCHED")" && pwd)
if command -v make >/dev/null && [ -f "$root/Makefile" ] &&
   [ "$(dirname "$build")" = "$root" ]; then
    # -o: install the binary under test as it is, never rebuild it here.
    b=$(basename "$build")
    run make -s -C "$root" BUILD="$b" -o "$b/zbsched" install \
        DESTDIR="$TMP/root" PREFIX=/usr
    expect_status 0 "make install"
    for f in bin/zbsched share/man/man1/zbsched.1 \
             share/bash-completion/completions/zbsched; do
        [ -s "$TMP/root/usr/$f" ] || fail "make install: no $f"
    done
    cmp -s "$TMP/root/usr/share/man/man1/zbsched.1" "$man" ||
        fail "make install: another man page"
else
    skip "make install" "the binary is not in a build folder of this tree"
fi
done_testing
