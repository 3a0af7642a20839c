# lib.sh - helpers for CLI tests (git t/ style): run a command, then check
# its exit status, stdout and stderr. Source it; $ZBSCHED is the binary.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# run CMD...: captures $status, $tmp/out, $tmp/err
run() {
    "$@" >"$tmp/out" 2>"$tmp/err"
    status=$?
}

fail() {
    echo "FAIL: $*"
    echo "  stdout: $(head -c 400 "$tmp/out")"
    echo "  stderr: $(head -c 400 "$tmp/err")"
    failures=$((failures + 1))
}

expect_status() { [ "$status" -eq "$1" ] || fail "exit $status, want $1 ($2)"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "stderr lacks '$1'"; }
expect_out() { grep -qF -- "$1" "$tmp/out" || fail "stdout lacks '$1'"; }
expect_err_lines() {
    local n; n=$(wc -l <"$tmp/err")
    [ "$n" -eq "$1" ] || fail "stderr has $n lines, want $1"
}

finish() { exit $((failures > 0)); }
