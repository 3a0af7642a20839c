#!/usr/bin/env bash
# test.sh - the whole test suite, as CI runs it: install what is missing,
# then the suite plain and with AddressSanitizer + UBSan (SAN=1). Each run
# ends with the Criterion runner's summary line. Then the fuzz targets, a
# few seconds each (`make fuzz` notes and skips them without clang;
# tools/deps.sh --fuzz installs it).
set -eu
cd "$(dirname "$0")/.."
bash tools/deps.sh
make -s -j2 test
make -s -j2 test-emu
make -s -j2 SAN=1 test
make -s -j2 fuzz FUZZ_SECONDS=5
