#!/usr/bin/env bash
# gpu_report.sh ZBSCHED ZBEXEC_CUDA OUT.md - the report of `make test-gpu`:
# every family replayed by zbexec-cuda with --check on this machine's GPUs
# (NCCL with a GPU per rank, p = min(GPUs, 8); one GPU: p 4 ranks sharing
# it over --transport mpi), then predicted vs realized bubble ratio, peak
# activation memory and device memory per family, as a Markdown table.
set -u
zbsched=$1 zbexec=$2 out=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$gpus" -eq 0 ]; then
    echo "gpu_report.sh: nvidia-smi lists no GPU" >&2
    exit 1
fi
if [ "$gpus" -ge 2 ]; then
    pp=$((gpus < 8 ? gpus : 8)) transport=nccl
else
    pp=4 transport=mpi
fi
model=${ZB_GPU_MODEL:-mlp:layers=4,hidden=1024,batch=64}
# The MLP's own M_W / M_B, (8 + 2La) / (8 + (L+1)a) with a = batch x
# hidden floats (docs/zbexec.md, "Measures"): predicted memory is then
# the model's.
mw=$(echo "$model" | awk -F'[=,]' '{
    for (i = 1; i < NF; i++) v[$i] = $(i + 1)
    a = v["hidden"] * v["batch"]; L = v["mlp:layers"]
    printf "%.6f", (8 + 2 * L * a) / (8 + (L + 1) * a) }')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

{
    name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    echo "# zbexec-cuda on $name x $gpus"
    echo
    echo "$(date -u +%F), \`make test-gpu\`: p $pp, m $((2 * pp)),"
    echo "--transport $transport, --model $model, --m-w $mw (the model's),"
    echo "--iters 4 (measures: iterations 2-4), --check against the"
    echo "sequential CPU run (tolerance 1e-3 of the largest value)."
    echo "Device memory: the pool's used high-water mark (MiB) against"
    echo "the prediction (peak activations + model state), worst rank."
    echo
    echo "| family | check | bubble pred | bubble real | peak mem pred" \
         "| peak mem real | device pred MiB | pool used MiB | used/pred |"
    echo "|---|---|---|---|---|---|---|---|---|"
} >"$out"
for g in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v v-half v-min dualpipev \
         interleaved-zb zb; do
    case $g in
    interleaved | interleaved-zb) extra="--vpp 2" ;;
    zb-v | v-half | v-min | dualpipev) extra="--vpp 2 --placement v" ;;
    *) extra= ;;
    esac
    # shellcheck disable=SC2086
    "$zbsched" generate -q --pp "$pp" --mb $((2 * pp)) --schedule "$g" \
        --m-w "$mw" $extra -o "$tmp/s.json" || { failed=1; continue; }
    timeout -k 5 300 mpirun --oversubscribe --bind-to none -np "$pp" \
        "$zbexec" "$tmp/s.json" --backend cuda --transport "$transport" \
        --check --model "$model" --iters 4 --timeout 60 \
        >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ $st -eq 0 ] || failed=1
    awk -v g="$g" -v st="$st" '
        /^check: / { sub(/^check: /, ""); check = $0 }
        $1 == "bubble_ratio" { bp = $2; br = $3 }
        /^     busy/ { table = 1; next }
        /^device memory/ { table = 0; dev = 1; next }
        table && $1 ~ /^[0-9]+$/ {
            if ($8 > mp) mp = $8
            if ($9 > mr) mr = $9
        }
        dev && $1 ~ /^[0-9]+$/ && $3 / ($2 > 0 ? $2 : 1) >= worst {
            worst = $3 / ($2 > 0 ? $2 : 1); dp = $2; du = $3
        }
        END {
            if (st != 0) check = "FAILED (exit " st ")"
            printf "| %s | %s | %s | %s | %s | %s | %.4g | %.4g | %.3g |\n",
                g, check, bp, br, mp, mr, dp, du, worst
        }' "$tmp/out" >>"$out"
    [ $st -eq 0 ] || sed 's/^/    /' "$tmp/err" | head -5 >>"$out"
done
echo "gpu_report.sh: wrote $out" >&2
exit $failed
