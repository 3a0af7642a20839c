#!/usr/bin/env bash
# quickstart.sh - set up and run the main job on a fresh Debian machine:
# install what is missing, build, generate the default schedule for
# pp 8, mb 32 (schedule.json) and compare it with every family.
set -eu
cd "$(dirname "$0")/.."
bash tools/deps.sh
make -s -j2
build/zbsched generate --pp 8 --mb 32 -o schedule.json
echo "zbsched: wrote schedule.json; every family for the same profile:" >&2
build/zbsched compare --pp 8 --mb 32 >&2
