# tap.sh - the one shell test harness of tests/cli and tests/exec (git's
# t/ style). Every check prints one TAP line, "ok N - what" or "not ok N -
# what" followed by "#" diagnostics; done_testing prints the plan "1..N"
# and exits 1 when any check failed. Source it at the top of a test
# script; tests/lib/prove.sh runs a folder of them as one TAP stream.
set -u
TMP=$(mktemp -d "${TMPDIR:-/tmp}/zbsched-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/out    # stdout of the last `run`
ERR=$TMP/err    # stderr of the last `run`
: >"$OUT"
: >"$ERR"
status=0        # exit status of the last `run`
tap_n=0
tap_failed=0

ok() {
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $*"
}

# not_ok WHAT: a failed check, with the last run's status and output.
not_ok() {
    tap_n=$((tap_n + 1))
    tap_failed=$((tap_failed + 1))
    echo "not ok $tap_n - $*"
    echo "#   exit status $status"
    head -c 400 "$OUT" | head -5 | sed 's/^/#   stdout: /'
    head -c 2000 "$ERR" | head -20 | sed 's/^/#   stderr: /'
}

# skip WHAT WHY: a check that cannot run here.
skip() { ok "$1 # SKIP $2"; }

# fail WHAT: for `test || fail "what went wrong"`.
fail() { not_ok "$*"; }

# run CMD...: run it; $status, $OUT and $ERR hold what it did.
run() {
    "$@" >"$OUT" 2>"$ERR"
    status=$?
}

# check WHAT CMD...: one check that CMD succeeds (its output is dropped).
check() {
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then ok "$what"; else not_ok "$what"; fi
}

# Checks of the last run.
expect_status() {
    if [ "$status" -eq "$1" ]; then ok "$2: exit $1"
    else not_ok "$2: exit $status, want $1"; fi
}
expect_out() {
    if grep -qF -- "$1" "$OUT"; then ok "stdout has '$1'"
    else not_ok "stdout lacks '$1'"; fi
}
expect_err() {
    if grep -qF -- "$1" "$ERR"; then ok "stderr has '$1'"
    else not_ok "stderr lacks '$1'"; fi
}
expect_err_lines() {
    local n
    n=$(wc -l <"$ERR")
    if [ "$n" -eq "$1" ]; then ok "stderr has $1 line(s)"
    else not_ok "stderr has $n lines, want $1"; fi
}

done_testing() {
    echo "1..$tap_n"
    exit $((tap_failed > 0))
}
