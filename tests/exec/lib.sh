# lib.sh - helpers of the zbexec tests (each t_*.sh sources it): run
# zbexec under mpirun with a hard time limit, make and hand-edit
# schedules; checks report through the TAP harness of tests/lib/tap.sh.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

: "${ZBEXEC:=build/zbexec}" "${ZBSCHED:=build/zbsched}" "${BACKEND:=cpu}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1
# With SAN=1: Open MPI's allocations from MPI_Init outlive MPI_Finalize in
# plugins it has unloaded, which LeakSanitizer cannot attribute or
# suppress; leak checks are off, every other ASan/UBSan check stays on.
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# Small enough for 8 ranks on 2 cores; messages still cross MPI for real.
MODEL=mlp:layers=2,hidden=16,batch=4

# The cuda backend (make test-gpu: ZBEXEC is zbexec-cuda): NCCL when
# every rank of the run has a GPU of its own, else the ranks share the
# GPUs through pinned host buffers (--transport mpi); one GPU runs every
# test that way.
if [ "$BACKEND" = cuda ]; then
    GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$GPUS" -eq 0 ]; then
        echo "tests/exec: BACKEND=cuda needs a GPU; nvidia-smi lists none" >&2
        exit 1
    fi
fi

# transport NP: the --transport argument for a run of NP ranks.
transport() {
    if [ "$BACKEND" != cuda ]; then
        echo mpi
    elif [ "$1" -le "$GPUS" ]; then
        echo nccl
    else
        echo mpi
    fi
}

# zbexec NP ARGS...: run, stdout in $OUT, stderr in $ERR, status in
# $status.
# The limit is a backstop: a hang must fail the test, never the run.
zbexec() {
    local np=$1
    shift
    run timeout -k 5 120 mpirun --oversubscribe --bind-to none -np "$np" \
        "$ZBEXEC" --backend "$BACKEND" --transport "$(transport "$np")" "$@"
}

# gen FILE zbsched-generate-args...
gen() {
    local f=$1
    shift
    "$ZBSCHED" generate -q "$@" -o "$f" || {
        echo "zbsched generate $* failed" >&2
        exit 1
    }
}

# expect NAME STATUS [PATTERN [FILE]]: the last run exited with STATUS (0,
# or "fail" for any non-zero) and FILE (stdout by default) matches PATTERN.
expect() {
    local name=$1 want=$2 pat=${3:-} file=${4:-$OUT}
    if [ "$want" = fail ] && [ "$status" -eq 0 ]; then
        not_ok "$name (expected a failure)"
    elif [ "$want" != fail ] && [ "$status" -ne "$want" ]; then
        not_ok "$name"
    elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$file"; then
        not_ok "$name (no /$pat/ in $(basename "$file"))"
    else
        ok "$name"
    fi
}

# expect_true NAME CMD...: CMD succeeds.
expect_true() {
    local name=$1
    shift
    "$@" 2>"$ERR"
    status=$?
    expect "$name" 0
}

# The op lists hold one op per line: edits work on lines of one rank.
# rank_lines FILE RANK: the line range "first last" of rank RANK's ops.
rank_lines() {
    awk -v r="$2" '
        /"rank": / { cur = $0; sub(/.*"rank": /, "", cur); sub(/,.*/, "", cur) }
        /"op": / && cur == r { if (!first) first = NR; last = NR }
        END { print first, last }' "$1"
}

# op_line FILE RANK PATTERN: the first line of RANK's ops matching PATTERN.
op_line() {
    local range
    range=$(rank_lines "$1" "$2")
    awk -v a="${range% *}" -v b="${range#* }" -v p="$3" \
        'NR >= a && NR <= b && $0 ~ p { print NR; exit }' "$1"
}

# swap_lines FILE A B: exchange lines A and B.
swap_lines() {
    [ -n "$2" ] && [ -n "$3" ] ||
        { echo "swap_lines: no such line in $1" >&2; exit 1; }
    awk -v a="$2" -v b="$3" '
        { line[NR] = $0 }
        END { t = line[a]; line[a] = line[b]; line[b] = t
              for (i = 1; i <= NR; i++) print line[i] }' "$1" >"$1.tmp" &&
        mv "$1.tmp" "$1"
}

# delete_line FILE A (A empty: the edit's pattern matched nothing).
delete_line() {
    [ -n "$2" ] || { echo "delete_line: no such line in $1" >&2; exit 1; }
    sed -i "$2d" "$1"
}

# set_mb FILE LINE MB: rewrite the microbatch of the op on LINE.
set_mb() {
    [ -n "$2" ] || { echo "set_mb: no such line in $1" >&2; exit 1; }
    sed -i "$2s/\"mb\": [0-9]*/\"mb\": $3/" "$1"
}

have_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}
