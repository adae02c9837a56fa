#!/bin/bash
# make analyze-tidy: clang-tidy (.clang-tidy at the top) over every source in
# src/, in parallel; findings listed in clang-tidy-suppressions.txt (false
# positives, with reasons) are dropped; any other finding fails.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
TIDY=${CLANG_TIDY:-clang-tidy}
JOBS=${JOBS:-$(nproc)}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Findings are "FILE:L:C: error: MSG [CHECK,-warnings-as-errors]".
printf '%s\n' src/*/*.c | xargs -P "$JOBS" -I{} "$TIDY" --quiet {} -- \
	-std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Isrc -DGS_VERSION='"analyze"' >"$out" 2>/dev/null
printf 'clang-tidy: '
tests/analysis/filter.sh tests/analysis/clang-tidy-suppressions.txt <"$out"
