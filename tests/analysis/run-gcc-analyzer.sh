#!/bin/bash
# make analyze-gcc: every source in src/ through GCC's static analyzer
# (-fanalyzer, GCC 12), in parallel; findings listed in
# gcc-analyzer-suppressions.txt (false positives, with reasons) are dropped.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
CC=${GCC:-gcc}
JOBS=${JOBS:-$(nproc)}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%s\n' src/*/*.c | xargs -P "$JOBS" -I{} "$CC" -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	-Isrc -DGS_VERSION='"analyze"' -O0 -fanalyzer -fdiagnostics-plain-output -c {} -o /dev/null >"$out" 2>&1
printf 'gcc -fanalyzer: '
tests/analysis/filter.sh tests/analysis/gcc-analyzer-suppressions.txt <"$out"
