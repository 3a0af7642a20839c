#!/usr/bin/env bash
# fsdp_table.sh [ZBSCHED] - the PP x ZeRO tables of docs/zero.md ("The
# answer: PP with which ZeRO?"): per profile, ZeRO setting and link
# bandwidth, the step time (ms) and the largest per-rank memory (GiB,
# activations plus model state) of one family (FAMILY, default zb-h1).
# Rows ending p0 gather without prefetch (--prefetch 0: each unit's
# all-gather issued when its segment is reached).
set -eu
z=${1:-build/zbsched}
fam=${FAMILY:-zb-h1}
# name:flags (the profiles say units 4 and prefetch 1: every row sets its
# own units)
confs="1:--zero 1 --fsdp-units 1
2mb:--zero 2 --reduce microbatch --fsdp-units 1
3:--zero 3 --fsdp-units 1
3u2:--zero 3 --fsdp-units 2
3u4:--zero 3 --fsdp-units 4
3mbu2:--zero 3 --reduce microbatch --fsdp-units 2
3mbu4:--zero 3 --reduce microbatch --fsdp-units 4
3u2p0:--zero 3 --fsdp-units 2 --prefetch 0
3u4p0:--zero 3 --fsdp-units 4 --prefetch 0
3mbu2p0:--zero 3 --reduce microbatch --fsdp-units 2 --prefetch 0
3mbu4p0:--zero 3 --reduce microbatch --fsdp-units 4 --prefetch 0"
for prof in docs/examples/fsdp-7b.json docs/examples/fsdp-70b.json; do
  echo
  echo "$(basename "$prof") ($fam): step ms / memory GiB"
  echo
  printf '| ZeRO |'
  for bw in 12.5 25 50 100 200; do printf ' %s GB/s |' $bw; done
  echo
  echo '|---|---|---|---|---|---|'
  while IFS= read -r c; do
    name=${c%%:*} args=${c#*:}
    printf '| %s |' "$name"
    for bw in 1.25e7 2.5e7 5e7 1e8 2e8; do
      # shellcheck disable=SC2086
      "$z" generate --profile "$prof" --schedule "$fam" $args \
        --bandwidth $bw -q -o - |
        jq -r '[.predicted.step_time,
                ([.predicted.ranks[].total_memory] | max)] | @tsv' |
        awk '{ printf " %.1f / %.2f |", $1, $2 }'
    done
    echo
  done <<<"$confs"
done
