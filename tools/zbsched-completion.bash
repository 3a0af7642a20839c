# zbsched-completion.bash - bash completion for zbsched: the commands, each
# command's options and the values their rows list (loop|v, us|ms|s, ...),
# and --schedule's names. All are read from the program itself (`zbsched
# --help`, `zbsched CMD --help`, `zbsched list`), the rows its parser reads,
# so the completion cannot drift from it. Use: `. zbsched-completion.bash`,
# or install as bash-completion/completions/zbsched (make install).

# The commands of `PROG --help`, one a line.
_zbsched_commands() {
    "$1" --help 2>/dev/null | sed -nE 's/^  ([a-z][a-z-]*)  +[a-z].*$/\1/p'
}

# Each option of `PROG CMD --help` as "NAME LETTER ARG" ("-" for none):
# the lines "  -o, --output FILE   help" and "      --json   help".
_zbsched_options() {
    "$1" "$2" --help 2>/dev/null | awk '
        /^  (-[a-z], |    )--[a-z]/ {
            letter = substr($0, 3, 1) == "-" ? substr($0, 4, 1) : "-"
            s = substr($0, 9)
            match(s, /^[a-z0-9-]+/)
            name = substr(s, 1, RLENGTH)
            rest = substr(s, RLENGTH + 1)
            arg = "-"
            if (rest ~ /^ [^ ]/) {
                split(substr(rest, 2), f, " ")
                arg = f[1]
            }
            print name, letter, arg
        }'
}

_zbsched() {
    local prog=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD - 1]} cmd=${COMP_WORDS[1]:-}
    local name letter arg line words=() opts=()

    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(_zbsched_commands "$prog") help --help
                                 --version" -- "$cur"))
        return
    fi
    if [ "$cmd" = help ]; then
        COMPREPLY=($(compgen -W "$(_zbsched_commands "$prog") --man" \
                             -- "$cur"))
        return
    fi
    while read -r name letter arg; do
        [ -n "$name" ] || continue
        opts+=("--$name")
        [ "$letter" = - ] || opts+=("-$letter")
        # The value after this option: its listed alternatives, names
        # for --schedule, files for a placeholder; nothing for a number.
        if [ "$arg" != - ] &&
           { [ "$prev" = "--$name" ] || [ "$prev" = "-$letter" ]; }; then
            if [ "$name" = schedule ]; then
                words=($("$prog" list 2>/dev/null |
                       awk 'NR > 1 { print $1 }'))
            elif [[ $arg == *FILE* || $arg == OUT* ]]; then
                COMPREPLY=($(compgen -f -- "$cur"))
                return
            elif [[ $arg == *"|"* ]]; then
                words=($(tr '|' '\n' <<<"$arg" | grep -E '^[a-z][a-z_-]*$'))
            else
                return
            fi
            COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
            return
        fi
    done < <(_zbsched_options "$prog" "$cmd")
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${opts[*]}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}

complete -F _zbsched -o default zbsched
