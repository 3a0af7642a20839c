# lib.sh - helpers of the emulation tests (each t_*.sh sources it): run
# zbexec-emu, the cuda backend's host side on the fake CUDA runtime and
# NCCL of tests/emu/, under mpirun with the executor's watchdog, so a
# hang fails its check within seconds instead of blocking the suite.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

: "${ZBEXEC:=build/zbexec-emu}" "${ZBSCHED:=build/zbsched}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1
# Every device item (copy, kernel, event, NCCL op) finishes 2-200 us
# after the one before it on its stream; seeded, so a failure repeats.
export ZB_EMU_LAG_US="${ZB_EMU_LAG_US:-2:200}" ZB_EMU_SEED="${ZB_EMU_SEED:-1}"
MODEL=mlp:layers=2,hidden=16,batch=4
# The watchdog's limit: a healthy run here takes well under a second an
# iteration even with 8 ranks on 2 loaded cores.
WATCH=${ZB_EMU_TIMEOUT:-20}
want='^check: within tolerance'

# emu NP GPUS TRANSPORT ARGS...: NP ranks on GPUS fake devices; stdout in
# $OUT, stderr in $ERR, status in $status. The outer limit is a backstop
# behind the watchdog.
emu() {
    local np=$1 gpus=$2 transport=$3
    shift 3
    ZB_EMU_GPUS=$gpus run timeout -k 5 $((WATCH * 3)) \
        mpirun --oversubscribe --bind-to none -np "$np" "$ZBEXEC" \
        --backend cuda --transport "$transport" --timeout "$WATCH" "$@"
}

# gen FILE FAMILY PP [zbsched-generate-args...]: m = 2 PP, the family's
# chunks and placement.
gen() {
    local f=$1 g=$2 pp=$3 extra=
    shift 3
    case $g in
    interleaved | interleaved-zb) extra="--vpp 2" ;;
    zb-v | v-half | v-min | dualpipev) extra="--vpp 2 --placement v" ;;
    esac
    # shellcheck disable=SC2086
    "$ZBSCHED" generate -q --pp "$pp" --mb $((2 * pp)) --schedule "$g" \
        $extra "$@" -o "$f" || {
        echo "zbsched generate $g --pp $pp $* failed" >&2
        exit 1
    }
}

# expect NAME: the last run exited 0 and its check passed; else the
# watchdog's words (a hang names the op it stopped at).
expect() {
    if [ "$status" -eq 0 ] && grep -qE -- "$want" "$OUT"; then
        ok "$1"
    else
        not_ok "$1$(grep -m1 -o 'watchdog: .*' "$ERR" | sed 's/^/: /')"
    fi
}

FAMILIES="gpipe 1f1b interleaved zb-h1 zb-h2 zb-v v-half v-min dualpipev
interleaved-zb zb ilp"
