#!/usr/bin/env bash
# deps.sh [--fuzz] - install the Debian packages zbsched needs, if any are
# missing; --fuzz: only what `make fuzz` needs (clang and its libFuzzer
# runtime), which the default build does not. As root it runs apt-get;
# otherwise it prints the command to run.
set -eu
if [ "${1:-}" = --fuzz ]; then
    packages=(clang libclang-rt-dev)
else
    packages=(build-essential pkg-config libglpk-dev glpk-utils libcjson-dev
              libcriterion-dev libopenmpi-dev openmpi-bin libopenblas-dev
              librsvg2-bin libxml2-utils jq python3)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "zbsched: missing packages; run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "zbsched: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
